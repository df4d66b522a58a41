"""The student's commands (see `grading/workbook --help`): status and watch
(status.py, watching.py), hint, run, sanitize and reset (skeleton.py).

    ui.py        colour, lines fitted to the terminal, lab names
    buildmessages.py  a failed build's messages at the student's paths
    builddir.py  build/: configure (labs, GPU architectures), build the tests
    progress.py  hints, stage states from the test results
    status.py    status: the stages' rows, a progress bar, what to do next
    testruns.py  a lab's tests built and run, their results kept and reused
    watching.py  watch: inotify, or polling where its events do not arrive
    skeleton.py  reset: a lab's skeleton back, the whole file or one stage
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

from shared import labs
from . import builddir
from . import progress
from . import skeleton
from . import status
from .ui import Style, fail, lab_or_exit, show_compiler_messages
from . import watching

HINTS_SEEN = Path(labs.BUILD) / "hints-seen.json"


def hint(args):
    folder, name = lab_or_exit(args.lab)
    stages = progress.read_hints(folder)
    if args.stage not in stages:
        fail(f"{name} has no stage {args.stage}; its stages are: "
             + ", ".join(str(s) for s in sorted(stages)))
    title, hints = stages[args.stage]
    try:
        seen = json.loads(HINTS_SEEN.read_text())
    except (OSError, ValueError):
        seen = {}
    key = f"{name}/{args.stage}"
    if args.all:
        upto = len(hints)
    elif args.step:
        upto = min(args.step, len(hints))
    else:   # one more than last time
        upto = min(seen.get(key, 0) + 1, len(hints))
    print(Style.bold(f"{name}, stage {args.stage}: {title}"))
    for number, text in enumerate(hints[:upto], 1):
        print(f"\n{Style.yellow(f'hint {number} of {len(hints)}')}: {text}")
    if upto < len(hints):
        print(Style.dim(f"\nRun the same command again for hint {upto + 1}."))
    seen[key] = max(upto, seen.get(key, 0))
    HINTS_SEEN.parent.mkdir(parents=True, exist_ok=True)
    HINTS_SEEN.write_text(json.dumps(seen))
    return 0


def run(args):
    """One stage at one size through the lab's benchmark program; the
    options every benchmark takes are passed on (common/bench.h)."""
    folder, name = lab_or_exit(args.lab)
    side = "reference" if args.reference else "student"
    if args.reference and not (Path(labs.ROOT) / "solutions").is_dir():
        fail("no reference in this copy (the student copy has no solutions/): run "
             f"`grading/workbook run {name}` for yours; its tables show the yardsticks")
    if not (Path(labs.ROOT) / "labs" / folder / "bench.c").is_file():
        fail(f"{name} has no benchmark program (labs/{folder}/bench.c)")
    builddir.configure()
    builddir.add_labs([name])
    target = f"{name}-bench-{side}"
    ok, output = labs.build_target(target)
    if not ok:
        print(Style.red(f"{target} does not compile:"))
        show_compiler_messages(output, folder)
        return 1
    command = [str(Path(labs.BUILD) / target)]
    for option in ("stage", "n", "block", "reps"):
        value = getattr(args, option)
        if value is not None:
            command += [f"--{option}", str(value)]
    # The tables go where `status` and `handouts/book fill` look for them.
    results = Path(labs.BUILD) / "results" / f"{name}-{side}-bench"
    results.mkdir(parents=True, exist_ok=True)
    for table in results.glob("*.csv"):   # this run's tables only
        table.unlink()
    exit_status = subprocess.call(command + args.extra,
                                  env=dict(os.environ, WB_RESULTS_DIR=str(results)))
    if exit_status == 77:
        print("(skipped: no usable GPU here; the line above says why)")
        return 0
    return exit_status


def sanitize(args):
    """The lab's tests under compute-sanitizer, one tool after another: the
    mistakes the tests cannot see on every GPU (a missing barrier, a race in
    shared memory, an access out of bounds that lands in memory the program
    owns). The grader runs the same tools (`grade --sanitize`)."""
    folder, name = lab_or_exit(args.lab)
    if not shutil.which("compute-sanitizer"):
        fail("compute-sanitizer is not on PATH: it comes with the CUDA toolkit (its bin folder, "
             "next to nvcc)")
    builddir.configure()
    builddir.add_labs([name])
    ok, output = labs.build_target(f"{name}-student")
    if not ok:
        print(Style.red("does not compile:"))
        show_compiler_messages(output, folder)
        return 1
    binary = str(Path(labs.BUILD) / f"{name}-student")
    found = 0
    for tool in args.tool or labs.SANITIZER_TOOLS:
        argv = labs.sanitizer_command(tool) + [binary, "--jobs=1", f"--filter=*/{args.test}"]
        print(Style.bold(f"== {tool}: " + " ".join(argv[-3:])), flush=True)
        # Ten times each test's timeout, and the sizes the tests keep for the
        # tools (wb_under_sanitizer): spin loops run far slower under them.
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace", env=dict(os.environ, WB_TIMEOUT_SCALE="10"))
        lines = [l for l in proc.stdout.splitlines() if l.startswith("=========")]
        # racecheck reports a race between lanes of one warp as a warning,
        # which leaves the exit status 0: the report's lines decide.
        findings = proc.returncode == 99 or labs.sanitizer_findings(proc.stdout)
        print("\n".join(lines[:40]) if findings else "no findings")
        found += bool(findings)
    print(Style.red(f"{found} tool(s) reported errors") if found else Style.green("no findings"))
    return 1 if found else 0


def add_commands(sub):
    status.add_command(sub)
    watching.add_command(sub)

    h = sub.add_parser("hint", help="the next hint for a stage of a lab (no penalty, no network)",
                       description="Prints the stage's hints one more each time it is asked "
                       "(remembered in build/hints-seen.json), from a nudge to nearly the answer. "
                       "For example: `grading/workbook hint vector-add 0`, "
                       "`grading/workbook hint 04 2 --all`.")
    h.add_argument("lab", help="the lab: its name, its folder or its number "
                   "(vector-add, 00-vector-add or 00)")
    h.add_argument("stage", type=int, help="the stage's number, as status shows it "
                   "(0 for `vector-add stage 0`)")
    group = h.add_mutually_exclusive_group()
    group.add_argument("--step", type=int, metavar="K", help="show hints 1 to K")
    group.add_argument("--all", action="store_true", help="show every hint of the stage")
    h.set_defaults(func=hint)

    z = sub.add_parser("sanitize", help="the lab's tests under compute-sanitizer (memcheck, racecheck, "
                       "synccheck, initcheck)", description=sanitize.__doc__)
    z.add_argument("lab")
    z.add_argument("--tool", action="append", choices=labs.SANITIZER_TOOLS,
                   help="only this tool (repeatable; default: all four)")
    z.add_argument("--test", default="stage*",
                   help="Criterion's test name or glob (default stage*: the stage tests)")
    z.set_defaults(func=sanitize)

    r = sub.add_parser("run", help="one stage at one size through the lab's benchmark program",
                       description="Builds and runs the lab's benchmark program (labs/NN-name/"
                       "bench.c) with the options given; its tables go to build/results/. Every "
                       "benchmark takes --stage, --n, --block and --reps, or says why it does "
                       "not; `grading/workbook run LAB -- --help` lists a lab's own options.")
    r.add_argument("lab")
    r.add_argument("--stage", type=int, help="only this stage (default: every stage)")
    r.add_argument("--n", type=int, help="problem size (default: the lab's)")
    r.add_argument("--block", type=int, help="threads per block (default: the lab's)")
    r.add_argument("--reps", type=int, help="timed runs (default: the lab's)")
    r.add_argument("--reference", action="store_true", help="run the reference instead of yours")
    r.add_argument("extra", nargs="*", help="further options for the lab's benchmark (after --)")
    r.set_defaults(func=run)

    skeleton.add_command(sub)
