#!/usr/bin/env python3
"""Runs every shell block of the book that is marked runnable, exactly as
written, from the top of the repository, and fails if any command fails.

A block is runnable when the line before its opening fence is
    <!-- runnable -->
Only mark commands that work on a machine without a GPU.

usage: check_book_commands.py [HANDOUTS_DIR]
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"<!-- runnable -->\n```(?:sh|bash|console)?\n(.*?)```", re.S)


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    handouts = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "handouts")
    failures, count = [], 0
    for chapter in sorted(glob.glob(os.path.join(handouts, "*.md"))):
        for block in BLOCK.findall(open(chapter).read()):
            count += 1
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=600)
            name = os.path.basename(chapter)
            if proc.returncode:
                failures.append(f"{name}: exit {proc.returncode}:\n{block}\n{proc.stdout[-1500:]}")
            else:
                print(f"ok: {name}: {block.strip().splitlines()[0]}")
    for failure in failures:
        print("FAILED", failure)
    print(f"{count - len(failures)} of {count} runnable blocks succeeded")
    return 1 if failures or not count else 0


if __name__ == "__main__":
    sys.exit(main())
