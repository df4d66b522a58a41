#!/usr/bin/env python3
"""Prints "N passed, N failed[, N skipped]" from a meson testlog.json, after
the reasons the skipped tests gave (their "skipped: ..." lines).

usage: summarize.py BUILD/meson-logs/testlog.json
Exit status 1 when any test failed or timed out.
"""
import json
import re
import sys

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
counts = {"passed": 0, "failed": 0, "skipped": 0}
reasons = {}   # reason -> how many tests gave it
with open(sys.argv[1]) as log:
    for line in log:
        if not line.strip():
            continue
        entry = json.loads(line)
        result = entry["result"]
        if result in ("OK", "EXPECTEDFAIL"):
            counts["passed"] += 1
        elif result == "SKIP":
            counts["skipped"] += 1
            output = (entry.get("stdout") or "") + (entry.get("stderr") or "")
            said = [l.strip() for l in output.splitlines() if l.strip().lower().startswith("skipped")]
            # "skipped: vector-add: GPU test skipped: no usable GPU: ..." (sides-<lab>)
            # says the same as a lab's own "skipped: no usable GPU: ...": count them together.
            reason = re.sub(r"^skipped:\s*(?:[\w-]+: GPU test skipped:\s*)?", "", said[-1],
                            flags=re.I) if said else "(no reason printed)"
            reasons[reason] = reasons.get(reason, 0) + 1
        else:
            counts["failed"] += 1
for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
    print(f"{count} test(s) skipped: {reason}")
summary = f"{counts['passed']} passed, {counts['failed']} failed"
if counts["skipped"]:
    summary += f", {counts['skipped']} skipped"
print(summary)
sys.exit(1 if counts["failed"] else 0)
