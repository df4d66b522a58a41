"""The autograder. Per submission: a private workspace with the trusted
tree (trees.py), built once; per lab, the student's kernels.cu compiled in a
sandbox, checked (objcheck.py) and linked with the trusted test; each test
recorded in a sandbox and judged by the reference's binary (judge.py);
scored with the rubric; reports written (reports.py). grading/README.md
documents the design and its threat model."""
import os
import secrets
import shutil
import signal
import sys
import time
import traceback

from shared import labs
from . import devicecode
from . import judge
from .phases import Phases
from . import reports
from . import rubric
from . import sandbox
from . import sanitizing
from . import submission
from . import trees

class GraderError(Exception):
    """The grader (not the submission) could not grade: the trusted tree
    does not build, the reference fails its own test, ..."""


# --------------------------------------------------------------- one lab
def student_source(folder, files, notes):
    """The submission's kernels.cu for the lab, or the skeleton (with a note)
    when the submission has none."""
    data = files.get((folder, "kernels.cu")) if files is not None else None
    if data is None:
        with open(os.path.join(labs.ROOT, "labs", folder, "kernels.cu"), "rb") as f:
            data = f.read()
        if files is not None:
            notes[folder] = "not in the submission: graded the skeleton"
    return data


def grade_lab(ws, folder, name, source, defaults, lab_rubric, args, seed, notes, spent, phases):
    """One lab's result. spent: {"tests_s": seconds} that the submission's
    test runs and their judging took so far, over all its labs (the
    rubric's submission_wall_s), updated here. phases (phases.Phases) says
    how far it is and times each phase."""
    began = time.monotonic()
    phases.begin_lab(name)
    result = {"lab": name, "folder": folder, "build": "ok", "message": notes.get(folder, ""),
              "tests": [], "score": 0.0, "max_score": 0.0, "gpu_ran": True, "perf": None,
              "launches": 0}
    hidden = set(lab_rubric.get("hidden", []))
    perf = lab_rubric.get("performance") if defaults.get("run_timing", True) else None
    ok, output = ws.build_trusted(name)
    if not ok:
        raise GraderError(f"the reference of {name} does not build (the instructor's tree):\n"
                          + labs.compiler_messages(output))
    reference_bin = os.path.join(ws.build, f"{name}-reference")
    tests = judge.list_tests(reference_bin)
    if not defaults.get("run_timing", True):
        tests = [(suite, test) for suite, test in tests if not test.startswith("timing_")]
    for suite, test in tests:
        result["tests"].append({"name": f"{name}/{test}", "test": test, "suite": suite,
                                "score": 0.0, "max_score": rubric.test_points(defaults, lab_rubric, test),
                                "status": "failed", "output": "",
                                "visibility": "after_due_date" if test in hidden else "visible"})
    if perf:
        result["max_score"] += float(perf["points"])
    result["max_score"] += sum(t["max_score"] for t in result["tests"])
    phases.expect_tests(name, len(result["tests"]))

    # Without compute-sanitizer, --sanitize checks nothing, says so and costs nothing.
    sanitize = args.sanitize and shutil.which("compute-sanitizer")
    if args.sanitize and not sanitize:
        result["message"] = "; ".join(filter(None, [result["message"], "compute-sanitizer is not "
                                                    "installed here: --sanitize checked nothing"]))
    build, message, binaries = trees.build_student(ws, folder, name, source, hidden)
    if build != "ok":
        phases.built(name, build, time.monotonic() - began)
        result.update(build=build, message=message, gpu_ran=False)   # no test ran at all
        for t in result["tests"]:
            t["output"] = "not run: the lab " + message if build == "failed" else "not run: " + message
        phases.end_lab(name, result)
        return result

    _, reference_obj = ws.kernels_command(folder, name, side="reference")
    result["kernels"] = devicecode.lab_kernels(binaries["object"], os.path.join(ws.build, reference_obj),
                                               os.path.join(ws.src, "labs", folder, "given.cuh"))
    phases.built(name, build, time.monotonic() - began)
    timings, timeouts, stuck_tools = {}, {}, set()
    for t in result["tests"]:
        skip = rubric.not_run_reason(defaults, t["test"], timeouts, spent["tests_s"])
        phases.before_test(name, t["test"])
        if skip:
            t.update(status="failed", output=skip)
            phases.test_done(name, t["test"])
            continue
        lim = rubric.limits_for(defaults, t["test"])
        binary = binaries["hidden" if t["visibility"] != "visible" else "visible"]
        got = judge.run_test(binary, reference_bin, t["suite"], t["test"], lim, seed,
                             ws.data_dirs(folder), ws.rule_source(folder))
        spent["tests_s"] += got["seconds"] + got["judge_seconds"]
        phases.test_done(name, t["test"], got)
        if got["timed_out"]:
            stage = rubric.stage_of(t["test"])
            timeouts[stage] = timeouts.get(stage, 0) + 1
        if got["status"] == "skipped":
            # The judge skipped the test: without a usable GPU, or a test of
            # the lab skipped itself (its reason says why).
            result["gpu_ran"] = result["gpu_ran"] and "GPU test skipped" not in got["reason"]
            t.update(status="failed", output="not run: " + got["reason"], skipped=got["reason"])
            continue
        t["seconds"] = got["seconds"]
        result["launches"] += got["launches"]
        text = "passed" if got["status"] == "passed" else f"FAILED: {got['reason']}"
        if got["status"] == "passed":
            t.update(status="passed", score=t["max_score"])
            if sanitize and not t["test"].startswith("timing_"):   # timing tests repeat stage work
                sanitize_began = time.monotonic()
                findings = t["sanitizer"] = sanitizing.sanitize(
                    binary, reference_bin, t, lim, seed, ws.data_dirs(folder), ws.rule_source(folder),
                    rubric.sanitizer_tools(lab_rubric, t["test"]), stuck_tools)
                phases.add(name, "sanitize", time.monotonic() - sanitize_began)
                if findings:
                    text += "\nsanitizer: " + "; ".join(findings)
                    t["score"] = max(0.0, t["score"] * (1 - defaults["sanitize_penalty"] * len(findings)))
        # Hidden tests show the verdict only, not what the student's code printed.
        shown = "" if t["visibility"] != "visible" else got["output"][-3000:]
        t["output"] = text + ("\n\nwhat your code's test process printed:\n" + shown if shown else "")
        if perf and t["test"] == perf["test"]:
            timings = {"rows": got["timings"], "clock": got["clock"]}
    rubric.apply_prerequisites(result["tests"], lab_rubric)
    if rubric.gpu_work_missing(defaults, lab_rubric, result):
        result["message"] = (result["message"] + "; " if result["message"] else "") + \
            "no GPU work: " + result["gpu_work"]
    if perf:
        result["perf"] = rubric.score_performance(perf, result["tests"], timings)
    result["score"] = sum(t["score"] for t in result["tests"]) + (result["perf"] or {}).get("score", 0.0)
    phases.end_lab(name, result)
    return result


# ------------------------------------------------------------ submission
def grade_submission(args, phases):
    """Grades one submission; returns the report dict (reports.py)."""
    selected = [labs.find_lab(n) for n in args.lab] if args.lab else labs.all_labs()
    defaults, lab_rubrics = rubric.load(args.rubric)
    seed = args.seed or str(secrets.randbits(63))
    start = time.monotonic()
    notes = {}
    files = None
    if args.submission:
        try:
            files, ignored = submission.read(args.submission, [f for f, _ in labs.all_labs()])
        except submission.Rejected as e:
            return reports.rejected(str(e), args.submission)
        if ignored:
            notes["_ignored"] = ignored
    spent = {"tests_s": 0.0}
    with trees.Workspace(keep=args.keep) as ws:
        ws.configure(selected)
        configure_s = time.monotonic() - start
        phases.say("grade", f"the trusted tree of {len(selected)} lab(s) configured ({configure_s:.1f} s)")
        results = [grade_lab(ws, folder, name, student_source(folder, files, notes), defaults,
                             lab_rubrics.get(name, {}), args, seed, notes, spent, phases)
                   for folder, name in selected]
    report = reports.make(results, time.monotonic() - start, args.submission or "labs/",
                          notes.get("_ignored", []), sandbox.note())
    report["seed"] = seed
    report["configure_s"] = round(configure_s, 1)   # each lab's phases are in its entry
    return report


EXIT_STATUSES = """exit status: 0 graded, whatever the score (a rejected submission is graded: 0
points, and says why); 1 the grader could not grade (the instructor's tree does
not build, the rubric does not load, the grade was stopped, the grader raised):
every report asked for is still written and says so; 2 a mistake in the command
line (an unknown lab, an unknown option): nothing is graded."""


def grade(args):
    unknown = [name for name in args.lab or [] if labs.find_lab(name) is None]
    if unknown:
        print(f"error: unknown lab {', '.join(unknown)}; the labs are: "
              + ", ".join(name for _, name in labs.all_labs()), file=sys.stderr)
        return 2
    phases = Phases([name for _, name in (map(labs.find_lab, args.lab) if args.lab else labs.all_labs())])
    # Stopped by a batch, Slurm or Ctrl-C: leave through the normal exits, so
    # that the workspace is removed and every report is still written, with
    # what was done before.
    stopped = []

    def stop(number, frame):
        stopped.append(signal.Signals(number).name)
        sys.exit(f"stopped by {stopped[0]}")
    handlers = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGINT)}
    # Whatever goes wrong, every report asked for is written and says so.
    try:
        report = grade_submission(args, phases)
    except SystemExit as e:   # a sys.exit with a message (the instructor's tree, a signal)
        done = f"; done before it stopped: {phases.what_was_done()}" if stopped else ""
        report = reports.failed(f"{e.code}{done}", args.submission or "labs/")
    except rubric.RubricError as e:
        report = reports.failed(f"error: {e}", args.submission or "labs/")
    except Exception as e:
        traceback.print_exc()
        report = reports.failed(f"{type(e).__name__}: {e}", args.submission or "labs/")
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    phases.finish()
    reports.print_scoreboard(report)
    reports.write_all(report, args)
    return 1 if report["rejected"].startswith(reports.FAILED) else 0


def add_grade_options(g):
    g.add_argument("--lab", action="append", help="only this lab (repeatable)")
    g.add_argument("--submission", metavar="PATH",
                   help="grade this directory (mirroring labs/), .zip or .tar.gz instead of labs/")
    g.add_argument("--rubric", default=rubric.DEFAULT, help="rubric file (default grading/rubric.toml)")
    g.add_argument("--gradescope", metavar="FILE", help="write a Gradescope results.json")
    g.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    g.add_argument("--json", metavar="FILE", help="write the full report as JSON")
    g.add_argument("--csv", metavar="FILE", help="append one CSV row per submission")
    g.add_argument("--sanitize", action="store_true",
                   help="also run passing tests under compute-sanitizer (memcheck, racecheck, synccheck, initcheck)")
    g.add_argument("--keep", action="store_true", help="keep the temporary build directory")
    g.add_argument("--seed", help="the inputs' seed (default: a fresh random one, printed in the "
                   "report so that a failure replays with WB_SEED=...)")


def add_commands(sub):
    g = sub.add_parser("grade", help="build and test the student files (default: this checkout's labs/)",
                       description="Grades one submission (default: this checkout's labs/); says "
                       "on stderr what it has done as it goes (one line per lab and phase).",
                       epilog=EXIT_STATUSES)
    add_grade_options(g)
    g.set_defaults(func=grade)
    from . import batch
    batch.add_commands(sub)
