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

import devicecode
import judge
import labs
import reports
import rubric
import sandbox
import submission
import trees

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


def sanitize(binary, reference_bin, t, lim, seed, data_dirs, source, tools, stuck):
    """compute-sanitizer's findings on one passing test, tool by tool, with
    the student's binary in its sandbox (record mode, judged as usual). A
    tool that ran out of time on an earlier test of the lab (stuck, a set
    this adds to) is not run again: it counts as a finding, as it did
    there, so that code that hangs under a tool costs one limit per lab,
    not one per test."""
    findings = []
    for tool in tools:
        if tool in stuck:
            findings.append(f"{tool}: not run, it did not finish on an earlier test of this lab")
            continue
        # Ten times the time, for the process and for each test's own
        # .timeout (WB_TIMEOUT_SCALE, common/wb_test.c).
        wrapped = dict(lim, wall_s=lim["wall_s"] * 10, cpu_s=lim["cpu_s"] * 10,
                       env={"WB_TIMEOUT_SCALE": "10"},
                       wrapper=labs.sanitizer_command(tool)
                       + (["--racecheck-report", "hazard"] if tool == "racecheck" else []))
        run = judge.run_test(binary, reference_bin, t["suite"], t["test"], wrapped, seed,
                             data_dirs, source)
        lines = labs.sanitizer_findings(run["output"])
        if run["timed_out"]:
            stuck.add(tool)
            findings.append(f"{tool}: did not finish within {wrapped['wall_s']} s")
        elif lines:
            findings.append(f"{tool}: " + " / ".join(lines[:3]))
    return findings


def grade_lab(ws, folder, name, source, defaults, lab_rubric, args, seed, notes, spent):
    """One lab's result. spent: {"tests_s": seconds} that the submission's
    test runs and their judging took so far, over all its labs (the
    rubric's submission_wall_s), updated here."""
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

    # Without compute-sanitizer, --sanitize checks nothing, says so and costs nothing.
    sanitizing = args.sanitize and shutil.which("compute-sanitizer")
    if args.sanitize and not sanitizing:
        result["message"] = "; ".join(filter(None, [result["message"], "compute-sanitizer is not "
                                                    "installed here: --sanitize checked nothing"]))
    build, message, binaries = trees.build_student(ws, folder, name, source, hidden)
    if build != "ok":
        result.update(build=build, message=message, gpu_ran=False)   # no test ran at all
        for t in result["tests"]:
            t["output"] = "not run: the lab " + message if build == "failed" else "not run: " + message
        return result

    _, reference_obj = ws.kernels_command(folder, name, side="reference")
    result["kernels"] = devicecode.lab_kernels(binaries["object"], os.path.join(ws.build, reference_obj),
                                               os.path.join(ws.src, "labs", folder, "given.cuh"))
    timings, timeouts, stuck_tools = {}, {}, set()
    for t in result["tests"]:
        skip = rubric.not_run_reason(defaults, t["test"], timeouts, spent["tests_s"])
        if skip:
            t.update(status="failed", output=skip)
            continue
        lim = rubric.limits_for(defaults, t["test"])
        binary = binaries["hidden" if t["visibility"] != "visible" else "visible"]
        got = judge.run_test(binary, reference_bin, t["suite"], t["test"], lim, seed,
                             ws.data_dirs(folder), ws.rule_source(folder))
        spent["tests_s"] += got["seconds"] + got["judge_seconds"]
        if got["timed_out"]:
            stage = rubric.stage_of(t["test"])
            timeouts[stage] = timeouts.get(stage, 0) + 1
        if got["status"] == "skipped":
            # The judge skipped the test: without a usable GPU, or a test of
            # the lab skipped itself (its reason says why).
            result["gpu_ran"] = result["gpu_ran"] and "GPU test skipped" not in got["reason"]
            t.update(status="failed", output="not run: " + got["reason"])
            continue
        t["seconds"] = got["seconds"]
        result["launches"] += got["launches"]
        text = "passed" if got["status"] == "passed" else f"FAILED: {got['reason']}"
        if got["status"] == "passed":
            t.update(status="passed", score=t["max_score"])
            if sanitizing and not t["test"].startswith("timing_"):   # timing tests repeat stage work
                findings = t["sanitizer"] = sanitize(binary, reference_bin, t, lim, seed,
                                                     ws.data_dirs(folder),
                                                     ws.rule_source(folder),
                                                     rubric.sanitizer_tools(lab_rubric, t["test"]),
                                                     stuck_tools)
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
    return result


# ------------------------------------------------------------ submission
def grade_submission(args):
    """Grades one submission; returns the report dict (reports.py)."""
    selected = labs.all_labs()
    if args.lab:
        found = [labs.find_lab(n) for n in args.lab]
        unknown = [n for n, lab in zip(args.lab, found) if lab is None]
        if unknown:
            sys.exit(f"error: unknown lab(s): {', '.join(unknown)}; the labs are: "
                     + ", ".join(n for _, n in selected))
        selected = found
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
        results = [grade_lab(ws, folder, name, student_source(folder, files, notes), defaults,
                             lab_rubrics.get(name, {}), args, seed, notes, spent)
                   for folder, name in selected]
    report = reports.make(results, time.monotonic() - start, args.submission or "labs/",
                          notes.get("_ignored", []), sandbox.note())
    report["seed"] = seed
    return report


def grade(args):
    # Stopped by a batch, Slurm or Ctrl-C: leave through the normal exits, so
    # that the workspace is removed and every report is still written.
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit("stopped by SIGTERM"))
    # Whatever goes wrong, every report asked for is written and says so.
    try:
        report = grade_submission(args)
    except SystemExit as e:   # a sys.exit with a message (the instructor's tree, the options)
        report = reports.failed(e.code, args.submission or "labs/")
    except rubric.RubricError as e:
        report = reports.failed(f"error: {e}", args.submission or "labs/")
    except Exception as e:
        traceback.print_exc()
        report = reports.failed(f"{type(e).__name__}: {e}", args.submission or "labs/")
    reports.print_scoreboard(report)
    reports.write_all(report, args)
    return 0 if report["score"] >= report["max_score"] and not report.get("rejected") else 1


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
    g = sub.add_parser("grade", help="build and test the student files (default: this checkout's labs/)")
    add_grade_options(g)
    g.set_defaults(func=grade)
    import batch
    batch.add_commands(sub)
