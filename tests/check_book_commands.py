#!/usr/bin/env python3
"""Runs every shell block of the book that is marked runnable, as written,
and fails if any command fails.

A block is runnable when the line before its opening fence is
    <!-- runnable -->
Only mark commands that work on a machine without a GPU.

The blocks run from the top of a scratch copy of the repository (no build
folder), with WB_BUILD_DIR, HOME and TMPDIR inside the scratch folder and
/tmp/ in a block pointed there too, so that they change nothing of the
checkout, the user's build/ (hints asked) or /tmp; the scratch folder is
removed at the end.

usage: check_book_commands.py [HANDOUTS_DIR]
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"<!-- runnable -->\n```(?:sh|bash|console)?\n(.*?)```", re.S)


def scratch_copy(scratch):
    """A copy of the repository without build folders or git; returns it and
    the environment the blocks run in."""
    def ignored(folder, names):
        top = os.path.samefile(folder, ROOT)
        return [n for n in names if n == "__pycache__" or top and (
            n in (".git", "gpu-results") or n.startswith("build") and os.path.isdir(
                os.path.join(folder, n)))]

    copy = os.path.join(scratch, "repo")
    shutil.copytree(ROOT, copy, symlinks=True, ignore=ignored)
    for folder in ("home", "tmp"):
        os.makedirs(os.path.join(scratch, folder))
    env = dict(os.environ, WB_BUILD_DIR=os.path.join(copy, "build"),
               HOME=os.path.join(scratch, "home"), TMPDIR=os.path.join(scratch, "tmp"))
    return copy, env


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    handouts = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "handouts")
    failures, count = [], 0
    scratch = tempfile.mkdtemp(prefix="wb-book-commands-")
    try:
        copy, env = scratch_copy(scratch)
        for chapter in sorted(glob.glob(os.path.join(handouts, "*.md"))):
            for block in BLOCK.findall(open(chapter).read()):
                count += 1
                failure = run_block(block, copy, env)
                name = os.path.basename(chapter)
                if failure:
                    failures.append(f"{name}: {failure}")
                else:
                    print(f"ok: {name}: {block.strip().splitlines()[0]}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for failure in failures:
        print("FAILED", failure)
    print(f"{count - len(failures)} of {count} runnable blocks succeeded")
    return 1 if failures or not count else 0


def run_block(block, copy, env):
    """Runs one block in the scratch copy; returns why it failed, or None."""
    script = block.replace("/tmp/", env["TMPDIR"] + "/")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=copy, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if proc.returncode:
        return f"exit {proc.returncode}:\n{block}\n{proc.stdout[-1500:]}"
    return None


if __name__ == "__main__":
    sys.exit(main())
