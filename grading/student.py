"""The student's loop: status, watch, hint and run (see `grading/workbook --help`).

Stages: a lab's work is numbered stage 0, 1, 2, ... Its Criterion tests named
`stageN_...` check stage N, and its hints.txt has a `[stage N]` section for
each. `status` reads the same result files the grader writes
(build/results/<lab>-<side>/criterion.json and the timing CSVs next to it).
"""
import csv
import ctypes
import ctypes.util
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys

import criterion
import labs

RESULTS = os.path.join(labs.BUILD, "results")
HINTS_SEEN = os.path.join(labs.BUILD, "hints-seen.json")
STAGE_TEST = re.compile(r"^stage(\d+)_")


# ------------------------------------------------------------------ output
class Style:
    """ANSI colour on a terminal, plain text when piped or NO_COLOR is set."""
    on = sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"

    @classmethod
    def paint(cls, code, text):
        return f"\033[{code}m{text}\033[0m" if cls.on else text

    green = classmethod(lambda cls, t: cls.paint("32", t))
    red = classmethod(lambda cls, t: cls.paint("31", t))
    yellow = classmethod(lambda cls, t: cls.paint("33", t))
    bold = classmethod(lambda cls, t: cls.paint("1", t))
    dim = classmethod(lambda cls, t: cls.paint("2", t))


def lab_or_exit(name):
    found = labs.find_lab(name)
    if not found:
        sys.exit(f"unknown lab '{name}'; the labs are: "
                 + ", ".join(lab for _, lab in labs.all_labs()))
    return found


# ------------------------------------------------------------------- hints
def read_hints(folder):
    """{stage: (title, [hint, ...])} from labs/<folder>/hints.txt."""
    path = os.path.join(labs.ROOT, "labs", folder, "hints.txt")
    stages, current = {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
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


def hint(args):
    folder, name = lab_or_exit(args.lab)
    stages = read_hints(folder)
    if args.stage not in stages:
        sys.exit(f"{name} has no stage {args.stage}; its stages are: "
                 + ", ".join(str(s) for s in sorted(stages)))
    title, hints = stages[args.stage]
    seen = {}
    if os.path.exists(HINTS_SEEN):
        with open(HINTS_SEEN) as f:
            seen = json.load(f)
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
    os.makedirs(labs.BUILD, exist_ok=True)
    with open(HINTS_SEEN, "w") as f:
        json.dump(seen, f)
    return 0


# ------------------------------------------------------------------ status
def load_report(name, side):
    path = os.path.join(RESULTS, f"{name}-{side}", "criterion.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def tests_by_stage(report):
    """{stage or None: [test dicts]} from a Criterion JSON report."""
    stages = {}
    for suite in report.get("test_suites", []):
        for test in suite.get("tests", []):
            match = STAGE_TEST.match(test["name"])
            stage = int(match.group(1)) if match else None
            stages.setdefault(stage, []).append(dict(test, suite=suite["name"]))
    return stages


def stage_times(name, side):
    """{stage: median ms} from the timing CSVs a side wrote: rows whose first
    cell names a stage ("3" or "stage 3") and a column whose header starts
    with "time"."""
    times = {}
    folder = os.path.join(RESULTS, f"{name}-{side}")
    if not os.path.isdir(folder):
        return times
    for file in sorted(os.listdir(folder)):
        if not file.endswith(".csv"):
            continue
        with open(os.path.join(folder, file)) as f:
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
    stages = read_hints(folder)
    report = load_report(name, "student")
    by_stage = tests_by_stage(report) if report else {}
    mine, reference = stage_times(name, "student"), stage_times(name, "reference")
    states = []
    for stage, (title, _) in sorted(stages.items()):
        tests = by_stage.get(stage, []) + by_stage.get(None, [])
        statuses = {t["status"] for t in tests if not t["name"].startswith("timing")}
        if report is None or not statuses:
            state, detail = "not run", ""
        elif statuses == {"SKIPPED"}:
            state, detail = "skipped", "no GPU"
        elif statuses & {"FAILED", "ERRORED"}:
            bad = next(t for t in tests if t["status"] in ("FAILED", "ERRORED"))
            message = (bad.get("messages") or [bad["status"].lower()])[0]
            state, detail = "failing", f"{bad['name']}: {message}"
        else:
            state, detail = "passing", ""
            if stage in mine and stage in reference and mine[stage] > 0:
                ratio = reference[stage] / mine[stage]
                detail = f"{100 * ratio:.0f}% of the reference's speed"
                if ratio >= 1 - within / 100:
                    state = "fast"
        states.append((stage, title, state, detail))
    return states


MARKS = {"fast": ("★", Style.green), "passing": ("✔", Style.green),
         "failing": ("✘", Style.red), "skipped": ("-", Style.yellow),
         "not run": ("·", Style.dim)}


def progress_bar(done, total, width=30):
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + f"] {done}/{total} stages"


def run_before_status(chosen):
    """status --run: builds and tests the chosen labs (all when None);
    returns the labs that do not compile, after printing why. Their old test
    results are removed, so that status cannot show a result of code that is
    no longer there."""
    broken = []
    for _, name in labs.all_labs():
        if chosen is not None and name not in chosen:
            continue
        built, _, output = run_lab_tests(name)
        if not built:
            broken.append(name)
            shutil.rmtree(os.path.join(RESULTS, f"{name}-student"), ignore_errors=True)
            print(Style.red(f"{name} does not compile:"))
            print("\n".join("  " + l for l in labs.compiler_messages(output, 8).splitlines()))
    return broken


def status(args):
    broken = []
    if args.run:
        chosen = [lab_or_exit(n)[1] for n in args.lab] if args.lab else None
        broken = run_before_status(chosen)
    rows, next_step, done, total = [], None, 0, 0
    for folder, name in labs.all_labs():
        for stage, title, state, detail in stage_states(folder, name, args.within):
            total += 1
            done += state in ("passing", "fast")
            mark, paint = MARKS[state]
            rows.append(f"  {paint(mark)} {name:<12} stage {stage:<2} {title[:40]:<40} "
                        f"{paint(state)}{'  ' + detail[:70] if detail else ''}")
            if next_step is None and state in ("not run", "failing"):
                next_step = (name, stage, state)
    print(Style.bold("cuda-workbook progress"))
    print("\n".join(rows))
    print("\n" + progress_bar(done, total))
    skipped = sum(r.count("skipped") for r in rows)
    if skipped:
        stages = "1 stage was" if skipped == 1 else f"{skipped} stages were"
        print(Style.yellow(f"{stages} not tested: this machine has no usable GPU."))
    if next_step:
        name, stage, state = next_step
        verb = "fix" if state == "failing" else "do"
        print(f"Next: {verb} {name} stage {stage}: `grading/workbook watch {name}` "
              f"while you edit, `grading/workbook hint {name} {stage}` when stuck.")
    elif total and done == total:
        print(Style.green("Every stage passes. Well done."))
    if broken:
        print(Style.red("Does not compile: " + ", ".join(broken) + " (the messages are above)."))
    return 1 if broken else 0


# -------------------------------------------------------------- run / watch
def run_lab_tests(name):
    """Builds and runs one lab's student tests; returns (built, report, output)."""
    ok, output = labs.build_target(f"{name}-student")
    if not ok:
        return False, None, output
    report, output = criterion.run(os.path.join(labs.BUILD, f"{name}-student"),
                                        os.path.join(RESULTS, f"{name}-student"))
    return True, report, output


def first_failure(report):
    for suite in report.get("test_suites", []):
        for test in suite.get("tests", []):
            if test["status"] in ("FAILED", "ERRORED"):
                return test, suite["name"]
    return None, None


def timing_tables(output):
    """The results tables a test run printed (blocks of lines with '|')."""
    blocks, current = [], []
    for line in output.splitlines():
        rule = current and line.strip() and set(line.strip()) <= set("-+")   # ---+--- under a header
        if ("|" in line and not line.startswith("[")) or rule:
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return "\n\n".join("\n".join(b) for b in blocks)


def report_once(name):
    """One build-and-test round as watch shows it: the first failure only, or
    the timing tables once everything passes."""
    built, report, output = run_lab_tests(name)
    if not built:
        print(Style.red("does not compile:"))
        print("\n".join("  " + l for l in labs.compiler_messages(output, 8).splitlines()))
        return False
    if report is None:
        print(Style.red("the test program crashed:"))
        print(output[-1500:])
        return False
    if report["skipped"] and not (report["passed"] or report["failed"] or report["errored"]):
        reason = first_message(report)
        print(Style.yellow(f"compiles; GPU tests not run: {reason}"))
        return True
    test, suite = first_failure(report)
    if test:
        bad = report["failed"] + report["errored"]
        print(Style.red(f"✘ {suite}::{test['name']} ({bad} failing)"))
        for message in test.get("messages") or [test["status"].lower()]:
            print("  " + message)
        return False
    print(Style.green(f"✔ all {report['passed']} tests pass"))
    tables = timing_tables(output)
    if tables:
        print(tables)
    return True


def first_message(report):
    for suite in report.get("test_suites", []):
        for test in suite.get("tests", []):
            if test.get("messages"):
                return test["messages"][0]
    return "skipped"


class Inotify:
    """The Linux inotify C API through ctypes: blocks in select() until a file
    in the watched folders is written or replaced (no polling)."""
    CLOSE_WRITE, MOVED_TO, CREATE = 0x8, 0x80, 0x100

    def __init__(self, folders):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        for folder in folders:
            if libc.inotify_add_watch(self.fd, folder.encode(),
                                      self.CLOSE_WRITE | self.MOVED_TO | self.CREATE) < 0:
                raise OSError(ctypes.get_errno(), f"cannot watch {folder}")

    def wait(self):
        """Returns the names of the files that changed (after a short quiet
        period, so that an editor's write-rename-chmod counts once)."""
        names = set()
        timeout = None
        while True:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return names
            data = os.read(self.fd, 65536)
            offset = 0
            while offset < len(data):
                _, _, _, length = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16: offset + 16 + length].rstrip(b"\0").decode()
                offset += 16 + length
                if name and not name.startswith(".") and not name.endswith("~"):
                    names.add(name)
            timeout = 0.2 if names else None


def next_lab_to_work_on():
    for folder, name in labs.all_labs():
        if any(state in ("not run", "failing")
               for _, _, state, _ in stage_states(folder, name, within=100)):
            return name
    return labs.all_labs()[0][1]


def watch(args):
    name = lab_or_exit(args.lab)[1] if args.lab else next_lab_to_work_on()
    folder = lab_or_exit(name)[0]
    watched = [os.path.join(labs.ROOT, "labs", folder)]
    print(Style.bold(f"Watching labs/{folder}/ (Ctrl-C to stop)."))
    try:
        notifier = Inotify(watched)
        report_once(name)
        while True:
            changed = notifier.wait()
            changed = {n for n in changed if os.path.exists(os.path.join(watched[0], n))}
            if any(n.endswith((".cu", ".h", ".c")) for n in changed):
                print(Style.dim(f"\n── {', '.join(sorted(changed))} changed: rebuilding ──"))
                report_once(name)
                if args.once:
                    return 0
    except KeyboardInterrupt:
        print("\nStopped watching.")
    return 0


def run(args):
    folder, name = lab_or_exit(args.lab)
    side = "reference" if args.reference else "student"
    if args.reference and not os.path.isdir(os.path.join(labs.ROOT, "solutions")):
        sys.exit("error: no reference in this copy (the student copy has no solutions/): "
                 f"run `grading/workbook run {name}` for yours; its tables show the yardsticks")
    target = f"{name}-bench-{side}"
    if not os.path.isfile(os.path.join(labs.ROOT, "labs", folder, "bench.c")):
        sys.exit(f"{name} has no benchmark program (labs/{folder}/bench.c)")
    ok, output = labs.build_target(target)
    if not ok:
        print(output[-3000:])
        return 1
    command = [os.path.join(labs.BUILD, target)]
    for option in ("stage", "n", "block"):
        value = getattr(args, option)
        if value is not None:
            command += [f"--{option}", str(value)]
    # The tables go where `status` and `handouts/book fill` look for them.
    results = os.path.join(RESULTS, f"{name}-{side}-bench")
    os.makedirs(results, exist_ok=True)
    status_code = subprocess.call(command + args.extra,
                                  env=dict(os.environ, WB_RESULTS_DIR=results))
    if status_code == 77:
        print("(skipped: no usable GPU here)")
        return 0
    return status_code


def sanitize(args):
    """The lab's tests under compute-sanitizer, one tool after another: the
    mistakes the tests cannot see on every GPU (a missing barrier, a race in
    shared memory, an access out of bounds that lands in memory the program
    owns). The grader runs the same tools (`grade --sanitize`)."""
    folder, name = lab_or_exit(args.lab)
    if not shutil.which("compute-sanitizer"):
        print("compute-sanitizer is not on PATH: it comes with the CUDA toolkit "
              "(its bin folder, next to nvcc)", file=sys.stderr)
        return 2
    ok, output = labs.build_target(f"{name}-student")
    if not ok:
        print(Style.red("does not compile:"))
        print(labs.compiler_messages(output))
        return 1
    binary = os.path.join(labs.BUILD, f"{name}-student")
    found = 0
    for tool in args.tool or labs.SANITIZER_TOOLS:
        argv = labs.sanitizer_command(tool) + [binary, "--jobs=1", f"--filter=*/{args.test}"]
        print(Style.bold(f"== {tool}: " + " ".join(argv[-3:])), flush=True)
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace")
        lines = [l for l in proc.stdout.splitlines() if l.startswith("=========")]
        print("\n".join(lines[:40]) if lines else "no findings")
        found += proc.returncode == 99
    print(Style.red(f"{found} tool(s) reported errors") if found else Style.green("no findings"))
    return 1 if found else 0


def add_commands(sub):
    s = sub.add_parser("status", help="every lab and stage with its state, and what to do next")
    s.add_argument("--run", action="store_true", help="re-run every lab's tests first")
    s.add_argument("--lab", action="append", metavar="LAB",
                   help="with --run: re-run only this lab's tests (repeatable)")
    s.add_argument("--within", type=float, default=20.0, metavar="PCT",
                   help="'fast' means within PCT%% of the reference's speed (default 20)")
    s.set_defaults(func=status)

    w = sub.add_parser("watch", help="rebuild and re-test a lab each time one of its files is saved")
    w.add_argument("lab", nargs="?", help="the lab (default: the first one not yet passing)")
    w.add_argument("--once", action="store_true", help="stop after the first change (for scripts)")
    w.set_defaults(func=watch)

    h = sub.add_parser("hint", help="the next hint for a stage of a lab (no penalty, no network)")
    h.add_argument("lab")
    h.add_argument("stage", type=int)
    group = h.add_mutually_exclusive_group()
    group.add_argument("--step", type=int, metavar="K", help="show hints 1 to K")
    group.add_argument("--all", action="store_true", help="show every hint of the stage")
    h.set_defaults(func=hint)

    z = sub.add_parser("sanitize", help="the lab's tests under compute-sanitizer (memcheck, racecheck, "
                       "synccheck, initcheck)")
    z.add_argument("lab")
    z.add_argument("--tool", action="append", choices=labs.SANITIZER_TOOLS,
                   help="only this tool (repeatable; default: all four)")
    z.add_argument("--test", default="stage*",
                   help="Criterion's test name or glob (default stage*: the stage tests)")
    z.set_defaults(func=sanitize)

    r = sub.add_parser("run", help="one stage at one size, outside the test suite")
    r.add_argument("lab")
    r.add_argument("--stage", type=int)
    r.add_argument("--n", type=int, help="problem size")
    r.add_argument("--block", type=int, help="threads per block")
    r.add_argument("--reference", action="store_true", help="run the reference instead of yours")
    r.add_argument("extra", nargs="*", help="further options for the lab's benchmark (after --)")
    r.set_defaults(func=run)
