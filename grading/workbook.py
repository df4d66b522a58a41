#!/usr/bin/env python3
"""cuda-workbook: build, test and grade the labs.

usage: grading/workbook [COMMAND] [options]

commands:
  grade [--lab NAME]...   build every lab against the student files in labs/,
                          run its tests and print a per-lab summary (default)
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("WB_BUILD_DIR", os.path.join(ROOT, "build"))


def all_labs():
    """Lab folders in the order meson.build lists them, with their test names."""
    text = open(os.path.join(ROOT, "meson.build")).read()
    block = re.search(r"all_labs = \[(.*?)\]", text, re.S).group(1)
    labs = re.findall(r"'([0-9]{2}-[a-z0-9-]+)'", block)
    return [(folder, folder[3:]) for folder in labs]


def build_target(target):
    """Builds one target; returns (ok, compiler output)."""
    proc = subprocess.run(["ninja", "-C", BUILD, target], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace")
    return proc.returncode == 0, proc.stdout


def run_tests(binary, results_dir):
    """Runs a Criterion test binary one test at a time; returns its JSON report."""
    os.makedirs(results_dir, exist_ok=True)
    report = os.path.join(results_dir, "criterion.json")
    env = dict(os.environ, WB_RESULTS_DIR=results_dir)
    proc = subprocess.run([binary, "--jobs=1", f"--json={report}"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace")
    with open(os.path.join(results_dir, "output.txt"), "w") as f:
        f.write(proc.stdout)
    try:
        with open(report) as f:
            return json.load(f), proc.stdout
    except (OSError, ValueError):
        return None, proc.stdout


def grade(args):
    labs = all_labs()
    if args.lab:
        names = {name for _, name in labs} | {folder for folder, _ in labs}
        unknown = [lab for lab in args.lab if lab not in names]
        if unknown:
            sys.exit(f"unknown lab(s): {', '.join(unknown)}; the labs are: "
                     + ", ".join(name for _, name in labs))
        labs = [(f, n) for f, n in labs if n in args.lab or f in args.lab]
    rows, failed = [], False
    for folder, name in labs:
        target = f"{name}-student"
        ok, output = build_target(target)
        if not ok:
            errors = [l for l in output.splitlines() if "error" in l][:10]
            rows.append((name, "FAILED", "-", "-", "-"))
            print(f"\n{name}: does not compile:\n  " + "\n  ".join(errors))
            failed = True
            continue
        data, output = run_tests(os.path.join(BUILD, target),
                                 os.path.join(BUILD, "results", target))
        if data is None:
            rows.append((name, "ok", "?", "crashed", "?"))
            print(f"\n{name}: the test binary crashed:\n{output[-2000:]}")
            failed = True
            continue
        bad = data["failed"] + data["errored"]
        failed |= bad > 0
        rows.append((name, "ok", str(data["passed"]), str(bad), str(data["skipped"])))
    header = ("lab", "build", "passed", "failed", "skipped")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    print()
    for row in [header] + rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(prog="grading/workbook", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    g = sub.add_parser("grade", help="build and test the student files in labs/")
    g.add_argument("--lab", action="append", help="only this lab (repeatable)")
    args = parser.parse_args(sys.argv[1:] or ["grade"])
    return grade(args)


if __name__ == "__main__":
    sys.exit(main())
