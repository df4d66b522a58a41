#!/usr/bin/env python3
"""Planted bugs: checks that a classic mistake gets the learner message that
names it.

usage: planted_bug.py make REFERENCE.cu OUT.cu OLD NEW
           copy the reference with OLD replaced by NEW (OLD must occur)
       planted_bug.py check TEST_BINARY EXPECTED_TEXT
           run the tests; pass when one fails with EXPECTED_TEXT in its
           message; exit 77 (skipped) without a GPU
"""
import json
import os
import subprocess
import sys
import tempfile


def make(reference, out, old, new):
    source = open(reference).read()
    if old not in source:
        sys.exit(f"planted_bug: '{old}' not found in {reference}")
    with open(out, "w") as f:
        f.write(source.replace(old, new))
    return 0


def check(binary, expected):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.json")
        subprocess.run([binary, "--jobs=1", f"--json={path}"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        report = json.load(open(path))
    if report["skipped"] and not (report["passed"] or report["failed"] or report["errored"]):
        print("skipped: no usable GPU")
        return 77
    messages = [m for suite in report["test_suites"] for test in suite["tests"]
                if test["status"] in ("FAILED", "ERRORED") for m in test.get("messages", [])]
    if not messages:
        print("the planted bug was not caught: every test passed")
        return 1
    if not any(expected in m for m in messages):
        print(f"no failure message says '{expected}'; the first was:\n  {messages[0]}")
        return 1
    print(f"caught, with the message '{expected}'")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "make" and len(sys.argv) == 6:
        sys.exit(make(*sys.argv[2:]))
    if len(sys.argv) >= 2 and sys.argv[1] == "check" and len(sys.argv) == 4:
        sys.exit(check(*sys.argv[2:]))
    print(__doc__.strip())
    sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
