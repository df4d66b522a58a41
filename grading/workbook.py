#!/usr/bin/env python3
"""cuda-workbook: build, test and grade the labs.

Run `grading/workbook COMMAND --help` for a command's options. With no
command, `grade` runs.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grader  # noqa: E402
import student  # noqa: E402


def main():
    parser = argparse.ArgumentParser(prog="grading/workbook", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    grader.add_commands(sub)
    student.add_commands(sub)
    args = parser.parse_args(sys.argv[1:] or ["grade"])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
