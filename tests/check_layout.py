#!/usr/bin/env python3
"""Checks that every lab has the same set of files, so that knowing one lab
means knowing all.

usage: check_layout.py SOURCE_ROOT LAB...
"""
import os
import sys

LAB_FILES = ["lab.h", "kernels.cu", "test.c", "hints.txt"]


def problems_of(root, lab):
    found = []
    for name in LAB_FILES:
        if not os.path.isfile(os.path.join(root, "labs", lab, name)):
            found.append(f"labs/{lab}/{name} is missing")
    if not os.path.isfile(os.path.join(root, "solutions", lab, "kernels.cu")):
        found.append(f"solutions/{lab}/kernels.cu (the reference) is missing")
    if not os.path.isfile(os.path.join(root, "handouts", f"{lab}.md")):
        found.append(f"handouts/{lab}.md (the lab's chapter) is missing")
    skeleton = os.path.join(root, "labs", lab, "kernels.cu")
    if os.path.isfile(skeleton) and "TODO" not in open(skeleton).read():
        found.append(f"labs/{lab}/kernels.cu has no TODO: is it the solution?")
    return found


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    root, labs = sys.argv[1], sys.argv[2:]
    problems = [p for lab in labs for p in problems_of(root, lab)]
    on_disk = sorted(d for d in os.listdir(os.path.join(root, "labs"))
                     if os.path.isdir(os.path.join(root, "labs", d)))
    for lab in on_disk:
        if lab not in labs:
            problems.append(f"labs/{lab} is not a lab: a lab folder is named NN-name (lowercase) "
                            "and holds a kernels.cu (labs/list-labs.py)")
    for p in problems:
        print(p)
    if not problems:
        print(f"{len(labs)} labs, each with its skeleton, reference, test, hints and handout")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
