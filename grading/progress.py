"""The student's progress: every lab's stages from its hints.txt, each
stage's state from the last test results (build/results/<lab>-<side>/: the
Criterion JSON report and the timing CSVs, as the grader writes them), and
`status`, which can build and run the tests first (testruns.py).

Stages: a lab's work is numbered stage 0, 1, 2, ... Its Criterion tests named
`stageN_...` check stage N, and its hints.txt has a `[stage N]` section for
each.
"""
import csv
import re
from pathlib import Path

import builddir
import labs
import testruns
from testruns import RESULTS, load_report
from ui import Style, lab_or_exit

STAGE_TEST = re.compile(r"^stage(\d+)_")
LOCATION = re.compile(r"^\S+:\d+: ")   # where the assertion is: "../common/wb_rules.c:262: "


def read_hints(folder):
    """{stage: (title, [hint, ...])} from labs/<folder>/hints.txt."""
    stages, current = {}, None
    for line in (Path(labs.ROOT) / "labs" / folder / "hints.txt").read_text().splitlines():
        if line.startswith("#") or (not line.strip() and current is None):
            continue
        header = re.match(r"^\[stage (\d+)\]\s*(.*)$", line)
        if header:
            current = int(header.group(1))
            stages[current] = (header.group(2).strip(), [])
        elif current is not None and re.match(r"^\d+\.\s", line):
            stages[current][1].append(re.sub(r"^\d+\.\s+", "", line))
        elif current is not None and line.startswith(" ") and stages[current][1]:
            stages[current][1][-1] += " " + line.strip()
    return stages


# ------------------------------------------------------------ test results
def tests_by_stage(report):
    """{stage or None: [test dicts]} from a Criterion JSON report."""
    stages = {}
    for suite in report.get("test_suites", []):
        for test in suite.get("tests", []):
            match = STAGE_TEST.match(test["name"])
            stage = int(match.group(1)) if match else None
            stages.setdefault(stage, []).append(dict(test, suite=suite["name"]))
    return stages


def first_message(test):
    """What a failed test says, in its first line that says something: not
    where the assertion is, not the name of the file it is about."""
    for message in test.get("messages") or []:
        text = LOCATION.sub("", message).strip()
        if text and not text.endswith(":"):
            return text
    return test["status"].lower()


def skip_reason(tests):
    """Why tests were skipped, as the first of them said ("no usable GPU: ...")."""
    for test in tests:
        for message in test.get("messages") or []:
            return re.sub(r"^GPU test skipped:\s*", "", message)
    return "no usable GPU"


def stage_times(name, side):
    """{stage: median ms} from the timing CSVs a side wrote: rows whose first
    cell names a stage ("3" or "stage 3") and a column whose header starts
    with "time"."""
    times = {}
    folder = RESULTS / f"{name}-{side}"
    for file in sorted(folder.glob("*.csv")) if folder.is_dir() else []:
        with open(file) as f:
            rows = list(csv.reader(f))
        if not rows:
            continue
        header = rows[0]
        time_col = next((i for i, h in enumerate(header) if h.lower().startswith("time")), None)
        if time_col is None or not header[0].lower().startswith("stage"):
            continue
        for row in rows[1:]:
            match = re.match(r"^(?:stage\s*)?(\d+)\b", row[0].strip().lower())
            try:
                if match and row != header:
                    times[int(match.group(1))] = float(row[time_col])
            except (ValueError, IndexError):
                continue
    return times


def stage_states(folder, name, within):
    """[(stage, title, state, detail)] for every stage in hints.txt."""
    report = load_report(name, "student")
    by_stage = tests_by_stage(report) if report else {}
    mine, reference = stage_times(name, "student"), stage_times(name, "reference")
    states = []
    for stage, (title, _) in sorted(read_hints(folder).items()):
        tests = by_stage.get(stage, []) + by_stage.get(None, [])
        statuses = {t["status"] for t in tests if not t["name"].startswith("timing")}
        if report is None or not statuses:
            state, detail = "not run", ""
        elif statuses & {"FAILED", "ERRORED"}:
            bad = next(t for t in tests if t["status"] in ("FAILED", "ERRORED"))
            state, detail = "failing", f"{bad['name']}: {first_message(bad)}"
        elif "SKIPPED" in statuses:   # a stage is passing only when all of its tests ran
            state, detail = "skipped", skip_reason(tests)
        else:
            state, detail = "passing", ""
            if stage in mine and stage in reference and mine[stage] > 0:
                ratio = reference[stage] / mine[stage]
                detail = f"{100 * ratio:.0f}% of the reference's speed"
                if ratio >= 1 - within / 100:
                    state = "fast"
        states.append((stage, title, state, detail))
    return states


# ------------------------------------------------------------------ status
MARKS = {"fast": ("★", Style.green), "passing": ("✔", Style.green),
         "failing": ("✘", Style.red), "skipped": ("-", Style.yellow),
         "not run": ("·", Style.dim)}


def progress_bar(done, total, width=30, unit="stages"):
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + f"] {done}/{total} {unit}"


def chosen_labs(args):
    """The labs `status --run` builds and tests: those named (added to the
    build if need be), else those --labs set, else every lab in the build."""
    lab_list = None
    if args.labs is not None:
        lab_list = [] if args.labs == "all" else [n for n in args.labs.split(",") if n]
    builddir.configure(lab_list, args.gpu_arch)
    named = [lab_or_exit(n)[1] for n in (args.lab or []) + (args.labs_named or [])]
    if named:
        builddir.add_labs(named)
        return named
    return [name for _, name in builddir.labs_in_build()]


def status(args):
    broken = []
    if args.run or args.rerun or args.lab or args.labs_named or args.labs is not None \
            or args.gpu_arch:
        broken = testruns.build_and_test(chosen_labs(args), args.rerun)
    rows, next_step, done, total, reasons = [], None, 0, 0, {}
    for folder, name in labs.all_labs():
        for stage, title, state, detail in stage_states(folder, name, args.within):
            total += 1
            done += state in ("passing", "fast")
            mark, paint = MARKS[state]
            shown = detail if state != "skipped" else ""   # the reason goes below, once
            rows.append(f"  {paint(mark)} {name:<12} stage {stage:<2} {title[:40]:<40} "
                        f"{paint(state)}{'  ' + shown[:70] if shown else ''}")
            if state == "skipped":
                reasons[detail] = reasons.get(detail, 0) + 1
            if next_step is None and state in ("not run", "failing", "skipped"):
                next_step = (name, stage, state)
    print(Style.bold("cuda-workbook progress"))
    print("\n".join(rows))
    print("\n" + progress_bar(done, total))
    for reason, count in reasons.items():
        stages = "1 stage was" if count == 1 else f"{count} stages were"
        print(Style.yellow(f"{stages} not tested: {reason}"))
    outside = [n for _, n in labs.all_labs() if n not in {m for _, m in builddir.labs_in_build()}]
    if outside and builddir.options():
        print(Style.dim(f"Not in {builddir.BUILD.name}/: {', '.join(outside)} "
                        "(`grading/workbook --labs all` builds every lab)."))
    if broken:
        print(f"Next: make {broken[0]} compile (the compiler's messages are above), then "
              f"`grading/workbook watch {broken[0]}` while you edit.")
    elif next_step:
        name, stage, state = next_step
        verb = {"failing": "fix", "not run": "do", "skipped": "write"}[state]
        where = " (its tests run where there is a GPU)" if state == "skipped" else ""
        print(f"Next: {verb} {name} stage {stage}{where}: `grading/workbook watch {name}` "
              f"while you edit, `grading/workbook hint {name} {stage}` when stuck.")
    elif total and done == total:
        print(Style.green("Every stage passes. Well done."))
    if broken:
        print(Style.red("Does not compile: " + ", ".join(broken) + " (the messages are above)."))
    return 1 if broken else 0


def add_command(sub):
    s = sub.add_parser("status", help="every lab and stage with its state, and what to do next "
                       "(`grading/workbook` alone is `status --run`)",
                       description="Every lab and stage: not run, failing, passing, or passing "
                       "within PCT% of the reference's speed; a progress bar and what to do next. "
                       "With --run, first builds the labs' tests (only what changed) and runs them; "
                       "LAB, --lab, --labs, --gpu-arch and --rerun imply --run.")
    s.add_argument("labs_named", nargs="*", metavar="LAB",
                   help="only these labs (added to the build if it lacks them)")
    s.add_argument("--run", action="store_true", help="build and run the tests first")
    s.add_argument("--rerun", action="store_true",
                   help="run the tests even of labs where nothing changed since their last run "
                        "(a race may show in one run and not in another)")
    s.add_argument("--lab", action="append", metavar="LAB", help="the same as LAB (repeatable)")
    s.add_argument("--labs", metavar="LIST",
                   help="build only these labs from now on, e.g. "
                        "00-vector-add,reduction (meson's -Dlabs; 'all' for every lab)")
    s.add_argument("--gpu-arch", metavar="ARCH",
                   help="build for these GPU architectures from now on "
                        "(meson's -Dgpu_arch: 'auto' for the GPU present, or e.g. '8.6 9.0')")
    s.add_argument("--within", type=float, default=20.0, metavar="PCT",
                   help="'fast' means within PCT%% of the reference's speed (default 20)")
    s.set_defaults(func=status)
