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
import tomllib
import traceback

import judge
import labs
import objcheck
import reports
import sandbox
import submission
import trees

DEFAULT_RUBRIC = os.path.join(labs.ROOT, "grading", "rubric.toml")


class GraderError(Exception):
    """The grader (not the submission) could not grade: the trusted tree
    does not build, the reference fails its own test, ..."""


# ------------------------------------------------------------------ rubric
def load_rubric(path):
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        sys.exit(f"error: cannot read the rubric {path}: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        sys.exit(f"error: {path} is not valid TOML: {e}")
    defaults = {"test_points": 1, "timing_points": 0, "wall_s": 60, "timing_wall_s": 180,
                "cpu_s": 90, "output_bytes": 1000000, "sanitize_penalty": 0.5,
                "require_gpu": True, "run_timing": True}
    defaults.update(data.get("defaults", {}))
    return defaults, data.get("labs", {})


def test_points(defaults, lab_rubric, test):
    if test in lab_rubric.get("given", []):
        return 0.0
    if test in lab_rubric.get("tests", {}):
        return float(lab_rubric["tests"][test])
    return float(defaults["timing_points"] if test.startswith("timing_") else defaults["test_points"])


def apply_prerequisites(tests, lab_rubric):
    """Rubric `scored_with = {test = other}`: a test that doing nothing passes
    (an empty input launches nothing) scores only once `other` passes too,
    so that the untouched skeleton scores nothing."""
    passed = {t["test"] for t in tests if t["status"] == "passed"}
    for t in tests:
        other = lab_rubric.get("scored_with", {}).get(t["test"])
        if other and t["status"] == "passed" and other not in passed:
            t.update(status="failed", score=0.0,
                     output=f"passes, but scores only once {other} passes too (doing nothing "
                            f"passes this test)\n\n" + t["output"])


def limits_for(defaults, test, wrapper=()):
    wall = defaults["timing_wall_s"] if test.startswith("timing_") else defaults["wall_s"]
    return {"wall_s": int(wall), "cpu_s": int(max(defaults["cpu_s"], wall + 10)),
            "output_bytes": int(defaults["output_bytes"]), "wrapper": list(wrapper)}


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


def build_student(ws, folder, name, source):
    """(status, message, binary): status "ok", "failed" (does not compile or
    link) or "rejected" (the static check)."""
    ok, output, obj = ws.compile_student(folder, name, source)
    if not ok:
        return "failed", "does not compile:\n" + labs.compiler_messages(output), None
    _, reference_obj = ws.kernels_command(folder, name, side="reference")
    problems = objcheck.problems(obj, os.path.join(ws.build, reference_obj))
    if problems:
        return "rejected", "rejected: " + "; ".join(problems), None
    ok, output, binary = ws.link_student(folder, name, obj)
    if not ok:
        return "failed", "does not link:\n" + labs.compiler_messages(output), None
    return "ok", "", binary


def sanitize(binary, reference_bin, t, lim, seed, data_dirs):
    """compute-sanitizer's findings on one passing test, tool by tool, with
    the student's binary in its sandbox (record mode, judged as usual)."""
    if not shutil.which("compute-sanitizer"):
        return ["compute-sanitizer not installed: not checked"]
    findings = []
    for tool in labs.SANITIZER_TOOLS:
        wrapped = dict(lim, wall_s=lim["wall_s"] * 10, cpu_s=lim["cpu_s"] * 10,
                       wrapper=labs.sanitizer_command(tool)
                       + (["--racecheck-report", "hazard"] if tool == "racecheck" else []))
        run = judge.run_test(binary, reference_bin, t["suite"], t["test"], wrapped, seed,
                             data_dirs)
        lines = labs.sanitizer_findings(run["output"])
        if run["reason"].startswith("timed out"):
            findings.append(f"{tool}: did not finish within {wrapped['wall_s']} s")
        elif lines:
            findings.append(f"{tool}: " + " / ".join(lines[:3]))
    return findings


def grade_lab(ws, folder, name, source, defaults, lab_rubric, args, seed, notes):
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
                                "score": 0.0, "max_score": test_points(defaults, lab_rubric, test),
                                "status": "failed", "output": "",
                                "visibility": "after_due_date" if test in hidden else "visible"})
    if perf:
        result["max_score"] += float(perf["points"])
    result["max_score"] += sum(t["max_score"] for t in result["tests"])

    build, message, binary = build_student(ws, folder, name, source)
    if build != "ok":
        result.update(build=build, message=message, gpu_ran=False)   # no test ran at all
        for t in result["tests"]:
            t["output"] = "not run: the lab " + message if build == "failed" else "not run: " + message
        return result

    timings = {}
    for t in result["tests"]:
        lim = limits_for(defaults, t["test"])
        got = judge.run_test(binary, reference_bin, t["suite"], t["test"], lim, seed,
                             ws.data_dirs(folder))
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
            if args.sanitize:
                findings = t["sanitizer"] = sanitize(binary, reference_bin, t, lim, seed,
                                                     ws.data_dirs(folder))
                if findings:
                    text += "\nsanitizer: " + "; ".join(findings)
                    t["score"] = max(0.0, t["score"] * (1 - defaults["sanitize_penalty"] * len(findings)))
        # Hidden tests show the verdict only, not what the student's code printed.
        shown = "" if t["visibility"] != "visible" else got["output"][-3000:]
        t["output"] = text + ("\n\nwhat your code's test process printed:\n" + shown if shown else "")
        if perf and t["test"] == perf["test"]:
            timings = {"rows": got["timings"], "wall": got["seconds"], "judge": got["judge_seconds"]}
    apply_prerequisites(result["tests"], lab_rubric)
    if defaults.get("require_gpu", True) and lab_rubric.get("require_gpu", True) \
            and result["gpu_ran"] and result["launches"] == 0:
        for t in result["tests"]:
            if t["status"] == "passed" and t["max_score"] > 0:
                t.update(status="failed", score=0.0,
                         output="no points: your code launched no kernel in any test of this lab "
                                "(the work must run on the GPU)\n\n" + t["output"])
        result["message"] = (result["message"] + "; " if result["message"] else "") + \
            "no kernel was launched: the rubric requires GPU work"
    if perf:
        result["perf"] = score_performance(perf, result["tests"], timings)
    result["score"] = sum(t["score"] for t in result["tests"]) + (result["perf"] or {}).get("score", 0.0)
    return result


def score_performance(perf, tests, timings):
    """Performance points: only when every correctness test of the lab
    passed, from a timing the judge recorded that is finite, positive, no
    faster than the GPU can do the work and consistent with the process's
    wall-clock time; `points * min(1, speed / full_at)` with speed =
    reference ms / student ms."""
    out = {"test": perf["test"], "reference_ms": None, "student_ms": None,
           "speed_vs_reference": None, "score": 0.0, "max_score": float(perf["points"]), "why": ""}
    failing = [t["test"] for t in tests if t["status"] != "passed" and t["max_score"] > 0]
    if failing:
        out["why"] = "no performance points: not every correctness test passes (" + ", ".join(failing[:4]) + ")"
        return out
    rows = timings.get("rows") or []
    if not rows:
        out["why"] = f"no performance points: {perf['test']} recorded no timing"
        return out
    problem = judge.timing_problem(rows[0], timings["wall"], timings["judge"])
    if problem:
        out["why"] = "no performance points: " + problem
        return out
    reference_ms, student_ms = float(rows[0][2]), float(rows[0][3])
    ratio = reference_ms / student_ms
    out.update(reference_ms=reference_ms, student_ms=student_ms, speed_vs_reference=ratio,
               score=round(float(perf["points"]) * min(1.0, ratio / float(perf.get("full_at", 0.5))), 3))
    return out


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
    defaults, rubric = load_rubric(args.rubric)
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
    with trees.Workspace(keep=args.keep) as ws:
        ws.configure(selected)
        results = [grade_lab(ws, folder, name, student_source(folder, files, notes), defaults,
                             rubric.get(name, {}), args, seed, notes)
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
    g.add_argument("--rubric", default=DEFAULT_RUBRIC, help="rubric file (default grading/rubric.toml)")
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
