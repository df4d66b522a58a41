#!/usr/bin/env python3
"""Prints "N passed, N failed[, N skipped]" from a meson testlog.json.

usage: summarize.py BUILD/meson-logs/testlog.json
Exit status 1 when any test failed or timed out.
"""
import json
import sys

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
counts = {"passed": 0, "failed": 0, "skipped": 0}
with open(sys.argv[1]) as log:
    for line in log:
        if not line.strip():
            continue
        result = json.loads(line)["result"]
        if result in ("OK", "EXPECTEDFAIL"):
            counts["passed"] += 1
        elif result == "SKIP":
            counts["skipped"] += 1
        else:
            counts["failed"] += 1
summary = f"{counts['passed']} passed, {counts['failed']} failed"
if counts["skipped"]:
    summary += f", {counts['skipped']} skipped"
print(summary)
sys.exit(1 if counts["failed"] else 0)
