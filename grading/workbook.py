#!/usr/bin/env python3
"""cuda-workbook: build, test and grade the labs.

Run `grading/workbook COMMAND --help` for a command's options. With no
command, `status --run` runs with the options given: build your labs in
build/ (only what changed), run their tests and show your progress:
    grading/workbook                       every lab in build/
    grading/workbook vector-add            one lab (or --lab vector-add)
    grading/workbook --labs 00-vector-add,reduction   build only these from now on
    grading/workbook --gpu-arch auto       rebuild for the GPU present
Grading is `grading/workbook grade`.
"""
import argparse
import importlib
import os
import sys

# grading/ holds three packages: student/ (the student's commands), grader/
# (the autograder and the release) and shared/ (what both use).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from student import commands, ui  # noqa: E402

# Instructor commands by module; the student copy (`release`) leaves the
# grader package out, and its commands then say so instead of "invalid choice".
INSTRUCTOR = {"grader.grade": ("grade", "batch"), "grader.release": ("release",)}


def optional(module):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name not in (module, module.split(".")[0]):   # the package or the module missing
            raise
        return None


def not_in_this_copy(args):
    print(f"error: `grading/workbook {args.command}` is an instructor command and is not part of "
          "this student copy (no reference in this copy: solutions/ and the grader are left out). "
          "Use `grading/workbook status --run` to build and test your labs.", file=sys.stderr)
    return 2


def main():
    parser = argparse.ArgumentParser(prog="grading/workbook", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module, names in INSTRUCTOR.items():
        loaded = optional(module)
        if loaded:
            loaded.add_commands(sub)
            continue
        for command in names:
            stub = sub.add_parser(command, help="(instructors only: not in this copy)",
                                  description="An instructor command: not in this student copy.")
            stub.set_defaults(func=not_in_this_copy)
    commands.add_commands(sub)
    # A student's loop first, here as in the student copy: build what changed
    # in build/, run the tests, show the progress. Grading is `grade`.
    default = ["status", "--run"]
    argv = sys.argv[1:]
    if argv[:1] == ["help"]:
        argv = ["--help"]
    first = argv[0] if argv else ""
    if first not in sub.choices and first not in ("-h", "--help"):
        if first and not first.startswith("-"):   # a lab, or a typo: exits with the labs
            ui.lab_or_exit(first, commands=list(sub.choices))
        argv = default + argv   # `grading/workbook --lab vector-add`, `grading/workbook vector-add`
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command == "run":   # the lab's own options, with or without `--`
        args.extra = [a for a in unknown if a != "--"] + args.extra
        unknown = []
    if unknown and getattr(args, "func", None) is not not_in_this_copy:
        parser.error("unrecognized arguments: " + " ".join(unknown))
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
