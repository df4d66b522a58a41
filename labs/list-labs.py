#!/usr/bin/env python3
"""The labs are the folders of labs/ named NN-name (two digits, a dash, a
lowercase name) that hold a kernels.cu, in the order of their numbers: this
file is the one place that says so. meson.build runs it, grading/shared/labs.py
imports it. Adding a lab is copying a lab's folder (and its solution and
chapter) under a new NN-name: nothing else to edit.

usage: labs/list-labs.py     prints the lab folders, one per line
"""
import os
import re
import sys

LABS = os.path.dirname(os.path.abspath(__file__))
FOLDER = re.compile(r"\d\d-[a-z0-9]+(-[a-z0-9]+)*")


def lab_folders(labs=LABS):
    return sorted(d for d in os.listdir(labs)
                  if FOLDER.fullmatch(d) and os.path.isfile(os.path.join(labs, d, "kernels.cu")))


if __name__ == "__main__":
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    print("\n".join(lab_folders()))
