#!/usr/bin/env python3
"""The labs are the folders of labs/ named NN-name (two digits, a dash, a
lowercase name) that hold a kernels.cu, in the order of their numbers: this
file is the one place that says so. meson.build runs it, grading/shared/labs.py
imports it. Adding a lab is copying a lab's folder (and its solution and
chapter) under a new NN-name: nothing else to edit.

usage: labs/list-labs.py            prints the lab folders, one per line
       labs/list-labs.py --headers  prints a digest of the headers a lab's CUDA code can
                                    include (every .h and .cuh of the lab folders and of
                                    common/), then those headers, one per line, from the
                                    repository's root (for meson.build: see there why)
"""
import hashlib
import os
import re
import sys

LABS = os.path.dirname(os.path.abspath(__file__))
FOLDER = re.compile(r"\d\d-[a-z0-9]+(-[a-z0-9]+)*")


def lab_folders(labs=LABS):
    return sorted(d for d in os.listdir(labs)
                  if FOLDER.fullmatch(d) and os.path.isfile(os.path.join(labs, d, "kernels.cu")))


def kernel_headers(labs=LABS):
    root = os.path.dirname(labs)
    folders = [os.path.join("labs", d) for d in lab_folders(labs)] + ["common"]
    return [os.path.join(folder, name) for folder in folders
            for name in sorted(os.listdir(os.path.join(root, folder)))
            if name.endswith((".h", ".cuh"))]


def digest_of(paths, root):
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.encode() + b"\0")
        with open(os.path.join(root, path), "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


if __name__ == "__main__":
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    if sys.argv[1:] == ["--headers"]:
        headers = kernel_headers()
        print("\n".join([digest_of(headers, os.path.dirname(LABS))] + headers))
    elif sys.argv[1:]:
        sys.exit(f"list-labs.py: unknown arguments {' '.join(sys.argv[1:])} (see --help)")
    else:
        print("\n".join(lab_folders()))
