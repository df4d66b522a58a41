"""The autograder: build each lab against the student's files, run its tests
and report per lab."""
import os
import sys

import labs


def grade(args):
    selected = labs.all_labs()
    if args.lab:
        found = [labs.find_lab(name) for name in args.lab]
        unknown = [name for name, lab in zip(args.lab, found) if lab is None]
        if unknown:
            sys.exit(f"unknown lab(s): {', '.join(unknown)}; the labs are: "
                     + ", ".join(name for _, name in selected))
        selected = found
    rows, failed = [], False
    for folder, name in selected:
        target = f"{name}-student"
        ok, output = labs.build_target(target)
        if not ok:
            errors = [l for l in output.splitlines() if "error" in l][:10]
            rows.append((name, "FAILED", "-", "-", "-"))
            print(f"\n{name}: does not compile:\n  " + "\n  ".join(errors))
            failed = True
            continue
        data, output = labs.run_criterion(os.path.join(labs.BUILD, target),
                                          os.path.join(labs.BUILD, "results", target))
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


def add_commands(sub):
    g = sub.add_parser("grade", help="build and test the student files in labs/ (default)")
    g.add_argument("--lab", action="append", help="only this lab (repeatable)")
    g.set_defaults(func=grade)
