#!/usr/bin/env python3
"""Planted bugs: each classic mistake of tests/planted/NN-name.toml, planted
alone into the lab's reference, must be caught.

usage: tests/planted_bugs.py check [LAB...]
           (CPU) every entry still applies to the reference: its `find`
           occurs (exactly once, or `occurrence` exists); names are unique;
           each lab has its minimum (8; lab 00: 4)
       tests/planted_bugs.py run [--labs 00-vector-add,...] [--bugs NAME,...]
                                 [--jobs N] [--judge] [--source-only] [--csv FILE]
           (GPU) builds each mutant the way the grader builds a submission
           (grading/grader/trees.py), runs the lab's stage tests, or the named
           compute-sanitizer tool, and checks that it fails with `message`;
           --judge also grades the mutant's recording with the reference's
           binary (grading/grader/judge.py) and checks that the judge fails it too
           (a value that skips wb_observe would pass there). Prints one line
           per bug and a table; exit status 1 when one is not caught, 77
           without a GPU. --source-only runs only the entries that a source
           rule catches (their tests are in the lab's *_source suite, which
           reads the code): no GPU needed.
       tests/planted_bugs.py sweep [--labs ...] [--kinds bounds,...] [--jobs N]
                                   [--only FILE] [--shard K/N] [--list | --compile-only]
                                   [--csv FILE]
           (GPU) the mechanical mutation run: every classic bug of
           tests/mutation.py on every line of each reference where it applies,
           one mutant at a time, against the lab's stage and given tests
           (first failure ends a mutant's run). A mutant whose object is the
           reference's own, byte for byte, is equivalent (the compiler threw
           the change away: an extra loop trip that does nothing, an index
           past a register array's end): it is left out of the share, not
           run. So is a mutant listed in tests/planted/equivalent.toml, a
           survivor that was read and changes nothing the lab can produce
           (its line, its change, and which occurrence; `check` says when an
           entry no longer applies). Prints the survivors and the share killed
           per lab and kind; exit status 1 when a lab kills less than 95% of
           the rest. --list only counts them (CPU); --compile-only compiles
           them and names the equivalent ones, without running any (CPU).
"""
import argparse
import concurrent.futures
import csv
import functools
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "grading"))

from shared import criterion  # noqa: E402
from grader import judge  # noqa: E402
import mutation  # noqa: E402
from shared import labs  # noqa: E402
from grader import trees  # noqa: E402

PLANTED = os.path.join(ROOT, "tests", "planted")
# The sweep's survivors that were read and change nothing the lab can produce.
EQUIVALENT = os.path.join(PLANTED, "equivalent.toml")
# The sweep's bar: of the mutants that are not equivalent, the share each lab
# kills (issue 39 asks 95%).
SWEEP_BAR = 95
MINIMUM = {"00-vector-add": 4}
KINDS = {"barrier", "fence", "syncwarp", "atomic", "volatile", "bounds", "grid-stride",
         "accumulate", "index", "host-sync", "memory-order", "launch", "timing", "other"}
SANITIZERS = {"memcheck", "racecheck", "synccheck", "initcheck"}
# nvcc names its temporary files after its process (tmpxft_<pid>_<count>), and
# the object keeps one such name in its string table: the only difference
# between two compiles of the same text by the same command.
NVCC_TEMPORARY = re.compile(rb"tmpxft_[0-9a-f]{8}_[0-9a-f]{8}")
SAME_CODE = "same code"


def load(folder):
    path = os.path.join(PLANTED, folder + ".toml")
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        return tomllib.load(f).get("bug", [])


def load_equivalent():
    with open(EQUIVALENT, "rb") as f:
        return tomllib.load(f).get("equivalent", [])


def numbered(mutants):
    """Each mutant with its occurrence: the how-manyth mutant of the file
    that changes the same line text into the same text (1 for most)."""
    seen = {}
    for m in mutants:
        key = (m["before"], m["after"])
        seen[key] = seen.get(key, 0) + 1
        yield m, seen[key]


def equivalent_problems(folders):
    """What is wrong with tests/planted/equivalent.toml's entries of these
    labs: a missing key, or no mutant of the reference (any more) with that
    line, change and occurrence."""
    problems = []
    made = {}   # lab: {(before, after): how many of its mutants make that change}
    for i, e in enumerate(load_equivalent(), 1):
        missing = [k for k in ("lab", "before", "after", "why") if k not in e]
        if missing:
            problems.append(f"equivalent.toml, entry {i}: missing {', '.join(missing)}")
            continue
        if e["lab"] not in folders:
            continue
        if e["lab"] not in made:
            with open(os.path.join(ROOT, "solutions", e["lab"], "kernels.cu")) as f:
                made[e["lab"]] = {(m["before"], m["after"]): occurrence
                                  for m, occurrence in numbered(mutation.mutants(f.read()))}
        count = made[e["lab"]].get((e["before"], e["after"]), 0)
        where = f"equivalent.toml, {e['lab']}: {e['before']}  =>  {e['after']}"
        if count == 0:
            problems.append(f"{where}: no mutant of the reference makes this change now")
        elif count > 1 and "occurrence" not in e:
            problems.append(f"{where}: {count} mutants make this change: say which with occurrence")
        elif int(e.get("occurrence", 1)) > count:
            problems.append(f"{where}: occurrence {e['occurrence']}, but {count} mutants make it")
    return problems


def mutate(reference, bug):
    """The reference's text with the bug planted; raises ValueError when the
    entry does not apply."""
    find, occurrence = bug["find"], int(bug.get("occurrence", 0))
    count = reference.count(find)
    if count == 0:
        raise ValueError("its find text is not in the reference")
    if occurrence == 0 and count != 1:
        raise ValueError(f"its find text occurs {count} times: say which with occurrence")
    if occurrence > count:
        raise ValueError(f"occurrence {occurrence}, but the text occurs {count} times")
    at = -1
    for _ in range(max(occurrence, 1)):
        at = reference.index(find, at + 1)
    return reference[:at] + bug["replace"] + reference[at + len(find):]


def check(folders):
    problems = []
    for folder in folders:
        bugs = load(folder)
        with open(os.path.join(ROOT, "solutions", folder, "kernels.cu")) as f:
            reference = f.read()
        names = [b.get("name") for b in bugs]
        if len(bugs) < MINIMUM.get(folder, 8):
            problems.append(f"{folder}: {len(bugs)} planted bugs, at least {MINIMUM.get(folder, 8)} wanted")
        for bug in bugs:
            where = f"{folder}/{bug.get('name')}"
            missing = [k for k in ("name", "kind", "find", "replace", "caught_by", "message")
                       if k not in bug]
            if missing:
                problems.append(f"{where}: missing {', '.join(missing)}")
                continue
            if names.count(bug["name"]) > 1:
                problems.append(f"{where}: the name is used twice")
            if bug["kind"] not in KINDS:
                problems.append(f"{where}: unknown kind {bug['kind']}")
            if bug["caught_by"] not in SANITIZERS | {"test"}:
                problems.append(f"{where}: caught_by must be test or one of {sorted(SANITIZERS)}")
            try:
                if mutate(reference, bug) == reference:
                    problems.append(f"{where}: the replacement changes nothing")
            except ValueError as e:
                problems.append(f"{where}: {e}")
        print(f"{folder}: {len(bugs)} planted bugs")
    problems += equivalent_problems(folders)
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


def compiled_bytes(obj):
    """An object's bytes with nvcc's temporary file names blanked (same
    length, so nothing moves): equal for two compiles whose machine code,
    host and device, is the same."""
    with open(obj, "rb") as f:
        return NVCC_TEMPORARY.sub(b"tmpxft_00000000_00000000", f.read())


def names_message(bug, text):
    """Whether text holds the bug's message, or one of its alternatives (a|b)."""
    return any(alt in text for alt in bug["message"].split("|"))


@functools.lru_cache(maxsize=None)
def source_tests(folder):
    """The names of the lab's tests that read its code (WB_SOURCE_RULES_TEST
    or Test in a *_source suite: wb_test.h, "source rules"); no GPU needed."""
    with open(os.path.join(ROOT, "labs", folder, "test.c")) as f:
        text = f.read()
    return set(re.findall(r"(?:WB_SOURCE_RULES_TEST|Test)\(\s*\w+_source\s*,\s*(\w+)", text))


def caught_by_source_rule(folder, bug):
    """Whether every test the entry names reads the code (no GPU needed)."""
    named = [t for t in bug.get("test", "").split("|") if t]
    return bug["caught_by"] == "test" and bool(named) and set(named) <= source_tests(folder)


def tests_of(bug):
    """Which of the lab's tests a planted bug runs against: its stage tests,
    or, for a cheat on the graded time, its timing tests."""
    return "timing" if bug["kind"] == "timing" else "stage"


def run_in_process(binary, bug, work, source, sweep=False):
    """The lab's stage tests (or the sanitizer) on the mutant, whose
    kernels.cu, preprocessed, is at source (Workspace.rule_source); returns
    (caught, message shown). A sweep runs the given tests too, and stops at
    the first failure."""
    report = os.path.join(work, "report.json")
    tool = bug["caught_by"]
    if tool != "test":
        return run_sanitizer(binary, bug, work)
    argv = [binary, "--jobs=1", f"--json={report}"]
    env = dict(os.environ, WB_KERNELS_PREPROCESSED=source)
    if sweep:
        argv += ["--filter=*/@(stage|given)*", "--fail-fast"]
    else:
        argv += [f"--filter=*/{tests_of(bug)}*"]
        # A cheat on the timed runs is run strict, as the grader runs timings
        # (a gap between the clocks fails instead of warning).
        if tests_of(bug) == "timing":
            env["WB_STRICT_TIMING"] = "1"
    try:
        proc = subprocess.run(argv, cwd=work, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=300 if sweep else 900)
    except subprocess.TimeoutExpired:
        if sweep:   # Criterion's own timeouts are shorter: the mutant hangs the binary
            return True, "the run hung (300 s)"
        return False, "the run took more than 900 s"
    try:
        data = criterion.load_report(report)
    except (OSError, ValueError):
        # A sweep counts a binary that stopped with a failure but without its
        # report (a crash, --fail-fast) as killed: the student sees it fail.
        return sweep and proc.returncode != 0, f"no report (exit {proc.returncode}): {proc.stdout[-300:]}"
    messages = [(t["name"], m) for s in data["test_suites"] for t in s["tests"]
                if t["status"] in ("FAILED", "ERRORED") for m in t.get("messages", []) or [t["status"]]]
    if not messages:
        return False, "not caught: every stage test passed"
    wanted = [(n, m) for n, m in messages if names_message(bug, m)]
    name, text = (wanted or messages)[0]
    return bool(wanted), f"{name}: {text.strip()}"


def run_sanitizer(binary, bug, work):
    """The bug's sanitizer tool on the tests it names (all stage tests when
    it names none): caught when the tool reports an error or a hazard."""
    findings = []
    for test in bug.get("test", "stage*").split("|"):
        argv = labs.sanitizer_command(bug["caught_by"]) + [binary, "--jobs=1", f"--filter=*/{test}"]
        try:
            proc = subprocess.run(argv, cwd=work, env=dict(os.environ, WB_TIMEOUT_SCALE="10"),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, errors="replace", timeout=600)
        except subprocess.TimeoutExpired:
            return False, f"{bug['caught_by']} on {test} took more than 600 s"
        findings += labs.sanitizer_findings(proc.stdout)
        if findings:
            break
    wanted = [l for l in findings if names_message(bug, l)]
    if findings:
        return True, (wanted or findings)[0]
    return False, f"{bug['caught_by']} reported nothing"


def run_judged(ws, binary, folder, name, bug, source):
    """Grades the mutant like a submission, test by test; True when the judge
    fails at least one stage test (a timing cheat: one timing test)."""
    reference = os.path.join(ws.build, f"{name}-reference")
    named = bug.get("test", "").split("|")
    tests = sorted(judge.list_tests(reference), key=lambda st: st[1] not in named)
    kind_of_test = tests_of(bug)
    for suite, test in tests:
        if not test.startswith(kind_of_test):
            continue
        limits = {"wall_s": 300, "cpu_s": 600, "output_bytes": 1000000}
        got = judge.run_test(binary, reference, suite, test, limits, "1234", ws.data_dirs(folder),
                             source)
        if got["status"] == "failed":
            return True, f"{test}: {got['reason'][:200]}"
    return False, f"the judge passes every {kind_of_test} test"


def timed_out(shown):
    """Whether a run's message is a test stopped by its timeout, or a test
    binary that ended without its report (Criterion's runner fails that way
    when a test ends just as its timeout fires): with other mutants' spin
    loops sharing the GPU, a correct wait can take that long."""
    return "timed out" in shown or "invalid state 'timeout'" in shown or shown.startswith("no report")


def mutant_runs(folders, make_jobs, jobs, judged=False, sweep=False, compile_only=False):
    """Builds the trusted trees of the labs, then compiles, links and runs
    each mutant that make_jobs(folder, reference text) lists as (bug,
    mutated text), jobs at a time. Yields (folder, bug, verdict, message,
    judge's message) as they finish; verdict is caught, NOT CAUGHT, NOT
    JUDGED or no compile, and in a sweep SAME_CODE: the mutant's object is
    the unchanged reference's, compiled the same way (not run)."""
    selected = [(f, n) for f, n in labs.all_labs() if f in folders]
    work, unchanged = [], {}
    with trees.Workspace() as ws:
        ws.configure(selected)
        for folder, name in selected:
            ok, output = ws.build_trusted(name)
            if not ok:
                raise SystemExit(f"{folder}: the trusted build fails:\n{output[-2000:]}")
            with open(os.path.join(ROOT, "solutions", folder, "kernels.cu")) as f:
                reference = f.read()
            work += [(folder, name, bug, text) for bug, text in make_jobs(folder, reference)]
            if sweep:
                ok, output, obj = ws.compile_student(folder, name, reference.encode(),
                                                     tag=f"unchanged-{folder}")
                if not ok:
                    raise SystemExit(f"{folder}: the reference does not compile as a "
                                     f"submission:\n{output[-2000:]}")
                unchanged[folder] = compiled_bytes(obj)

        def one(job):
            folder, name, bug, source = job
            tag = f"planted-{folder}-{bug['name']}"
            ok, output, obj = ws.compile_student(folder, name, source.encode(), tag=tag)
            if ok:
                binary = os.path.join(os.path.dirname(obj), "test-binary")
                ok, output, binary = ws.link_student(folder, name, obj, binary)
            if not ok:
                return folder, bug, "no compile", output[-300:], ""
            if sweep and compiled_bytes(obj) == unchanged[folder]:
                shutil.rmtree(os.path.dirname(obj), ignore_errors=True)
                return folder, bug, SAME_CODE, "the object is the reference's, byte for byte", ""
            if compile_only:
                shutil.rmtree(os.path.dirname(obj), ignore_errors=True)
                return folder, bug, "compiled", "the object differs from the reference's", ""
            with tempfile.TemporaryDirectory() as scratch:
                caught, shown = run_in_process(binary, bug, scratch,
                                               ws.rule_source(folder, tag), sweep)
            judge_says = None
            if judged and bug["caught_by"] == "test":
                judge_says = run_judged(ws, binary, folder, name, bug,
                                        ws.rule_source(folder, tag))
            shutil.rmtree(os.path.dirname(obj), ignore_errors=True)
            verdict = "caught" if caught and (judge_says is None or judge_says[0]) else \
                "NOT JUDGED" if caught else "NOT CAUGHT"
            return folder, bug, verdict, shown, judge_says[1] if judge_says else ""

        random.Random(1).shuffle(work)   # a run cut short has seen some of every lab
        # Timing cheats are judged by timings, which other processes on the
        # GPU would disturb: they run one at a time, after the others.
        alone = [j for j in work if tests_of(j[2]) == "timing"]
        shared = [j for j in work if tests_of(j[2]) != "timing"]
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(one, j): j for j in shared}
            # yielded as they finish, so that a run cut short still shows its results
            for done in concurrent.futures.as_completed(futures):
                result = done.result()
                if jobs > 1 and result[2] == "NOT CAUGHT" and timed_out(result[3]):
                    alone.append(futures[done])   # again below, with the GPU to itself
                    continue
                yield result
        for job in alone:
            folder, bug, verdict, shown, judge_says = one(job)
            if tests_of(bug) != "timing":
                shown = f"(run again alone: a test timed out beside {jobs - 1} other mutants) {shown}"
            yield folder, bug, verdict, shown, judge_says


def run(args):
    if not args.source_only and not labs.gpu_listed():
        print("skipped: no GPU (nvidia-smi -L); --source-only runs the entries a source rule "
              "catches")
        return 77
    folders = chosen_labs(args)
    wanted = args.bugs.split(",") if args.bugs else None

    def planted(folder, reference):
        return [(bug, mutate(reference, bug)) for bug in load(folder)
                if (not wanted or bug["name"] in wanted)
                and (not args.source_only or caught_by_source_rule(folder, bug))]

    rows, failed = [], 0
    for folder, bug, verdict, shown, judge_says in mutant_runs(folders, planted, args.jobs,
                                                               judged=args.judge):
        failed += verdict != "caught"
        line = f"{verdict:10} {folder}/{bug['name']} ({bug['kind']}, by {bug['caught_by']}): {shown[:300]}"
        if args.judge:
            line += f" | judge: {judge_says[:160]}"
        print(line, flush=True)
        rows.append([folder, bug["name"], bug["kind"], bug["caught_by"], verdict,
                     shown[:500], judge_says[:300]])
    write_csv(args.csv, ["lab", "bug", "kind", "caught_by", "verdict", "message", "judge"], rows)
    print(f"{len(rows) - failed} of {len(rows)} planted bugs caught")
    return 1 if failed else 0


def sweep(args):
    folders = chosen_labs(args)
    kinds = set(args.kinds.split(",")) if args.kinds else None
    only = None
    if args.only:
        with open(args.only) as f:
            only = {line.split()[0] for line in f if line.strip()}

    try:
        shard, shards = (int(x) for x in args.shard.split("/")) if args.shard else (1, 1)
    except ValueError:
        shard, shards = 0, 0
    if not 1 <= shard <= shards:
        print(f"--shard {args.shard}: K/N with 1 <= K <= N", file=sys.stderr)
        return 2

    equivalent = {(e["lab"], e["before"], e["after"], int(e.get("occurrence", 1))): e["why"]
                  for e in load_equivalent()}
    read = {}   # lab: the mutants left out as equivalent by reading

    def generated(folder, reference, listing=False):
        found = [(dict(m, caught_by="test", message="",
                       equivalent=equivalent.get((folder, m["before"], m["after"], occurrence))),
                  m["text"])
                 for m, occurrence in numbered(mutation.mutants(reference))
                 if (not kinds or m["kind"] in kinds)
                 and (only is None or f"{folder}/{m['name']}" in only)][shard - 1::shards]
        if listing:
            return found
        for m, _ in found:
            if m["equivalent"]:
                read[folder] = read.get(folder, 0) + 1
                print(f"{'read':8} {folder}/{m['name']}: {m['before']}  =>  {m['after']}  | "
                      f"equivalent: {m['equivalent']}", flush=True)
        return [(m, text) for m, text in found if not m["equivalent"]]

    if args.list:
        for folder in folders:
            with open(os.path.join(ROOT, "solutions", folder, "kernels.cu")) as f:
                found = generated(folder, f.read(), listing=True)
            print(f"{folder}: {len(found)} mutants")
            for m, _ in found:
                print(f"  {m['name']:28} {m['before']}  =>  {m['after']}"
                      + ("  (equivalent, read)" if m["equivalent"] else ""))
        return 0
    if not args.compile_only and not labs.gpu_listed():
        print("skipped: no GPU (nvidia-smi -L); --compile-only names the equivalent mutants")
        return 77
    rows, tally, same = [], {}, {}
    for folder, m, verdict, shown, _ in mutant_runs(folders, generated, args.jobs, sweep=True,
                                                    compile_only=args.compile_only):
        rows.append([folder, m["name"], m["kind"], verdict, m["before"], m["after"], shown[:400]])
        if verdict in ("no compile", "compiled"):
            continue
        if verdict == SAME_CODE:
            same[folder] = same.get(folder, 0) + 1
            print(f"{'same':8} {folder}/{m['name']}: {m['before']}  =>  {m['after']}  | {shown}",
                  flush=True)
            continue
        for key in (folder, f"{folder} {m['kind']}"):
            killed, total = tally.get(key, (0, 0))
            tally[key] = (killed + (verdict == "caught"), total + 1)
        print(f"{'killed' if verdict == 'caught' else 'SURVIVED':8} {folder}/{m['name']}: "
              f"{m['before']}  =>  {m['after']}  | {shown[:160]}", flush=True)
    write_csv(args.csv, ["lab", "mutant", "kind", "verdict", "before", "after", "message"], rows)
    if args.compile_only:
        compiled = sum(r[3] == "compiled" for r in rows)
        print(f"{sum(same.values())} equivalent (the reference's own object), "
              f"{sum(read.values())} read as equivalent (tests/planted/equivalent.toml), "
              f"{compiled} to run on a GPU")
        return 0
    print(f"{'lab / kind':32} killed")
    for key in sorted(tally):
        killed, total = tally[key]
        print(f"{key:32} {killed:4} of {total:4}  {100.0 * killed / total:5.1f}%")
    for folder in sorted(same):
        print(f"{folder}: {same[folder]} more compile to the reference's own object (equivalent, "
              "left out)")
    for folder in sorted(read):
        print(f"{folder}: {read[folder]} more were read as equivalent (tests/planted/"
              "equivalent.toml, not run)")
    weakest = min((100.0 * k / t for key, (k, t) in tally.items() if " " not in key), default=100)
    return 0 if weakest >= SWEEP_BAR else 1


def chosen_labs(args):
    return args.labs.split(",") if args.labs else [f for f, _ in labs.all_labs()]


def write_csv(path, header, rows):
    if path:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(sorted(rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="(CPU) the entries still apply to the references")
    c.add_argument("labs", nargs="*")
    r = sub.add_parser("run", help="(GPU) every planted bug is caught")
    r.add_argument("--labs", help="comma-separated lab folders (default: all)")
    r.add_argument("--jobs", type=int, default=4, help="mutants run at once (default 4)")
    r.add_argument("--bugs", help="comma-separated bug names: only these (default: all)")
    r.add_argument("--judge", action="store_true", help="also check that the judge fails each mutant")
    r.add_argument("--source-only", action="store_true",
                   help="only the entries a source rule catches (no GPU needed)")
    r.add_argument("--csv", help="write the table here")
    w = sub.add_parser("sweep", help="(GPU) the share of generated mutants the tests kill")
    w.add_argument("--labs", help="comma-separated lab folders (default: all)")
    w.add_argument("--kinds", help="comma-separated kinds (default: all; tests/mutation.py)")
    w.add_argument("--jobs", type=int, default=6, help="mutants run at once (default 6)")
    w.add_argument("--list", action="store_true", help="only list the mutants (no GPU needed)")
    w.add_argument("--compile-only", action="store_true",
                   help="compile the mutants and name those whose object is the reference's "
                        "(equivalent), without running any (no GPU needed)")
    w.add_argument("--only", metavar="FILE",
                   help="only the mutants named in FILE, one LAB/NAME per line (the survivors of a run)")
    w.add_argument("--shard", metavar="K/N",
                   help="only every N-th mutant of each lab, starting at the K-th: a sweep in N "
                        "parts that together cover every mutant once (for 10-minute commands)")
    w.add_argument("--csv", help="write every mutant's verdict here")
    args = parser.parse_args()
    if args.command == "check":
        return check(args.labs or [f for f, _ in labs.all_labs()])
    return sweep(args) if args.command == "sweep" else run(args)


if __name__ == "__main__":
    sys.exit(main())
