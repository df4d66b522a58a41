"""The rubric (grading/rubric.toml) and the scoring rules that read it:
points per test, limits, tests that score only with another, GPU work
required, performance points. grading/README.md explains each key."""
import fnmatch
import math
import os
import tomllib

from shared import labs

DEFAULT = os.path.join(labs.ROOT, "grading", "rubric.toml")


class RubricError(Exception):
    """The rubric cannot be read or is not valid TOML (one line: which and why)."""


def load(path=DEFAULT):
    """(defaults, {lab name: its section}) of a rubric file."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise RubricError(f"cannot read the rubric {path}: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        raise RubricError(f"{path} is not valid TOML: {e}")
    defaults = {"test_points": 1, "timing_points": 0, "wall_s": 60, "timing_wall_s": 180,
                "cpu_s": 90, "output_bytes": 1000000, "sanitize_penalty": 0.5,
                "require_gpu": True, "run_timing": True, "stage_timeouts": 2,
                "submission_wall_s": 3600}
    defaults.update(data.get("defaults", {}))
    return defaults, data.get("labs", {})


def test_points(defaults, lab_rubric, test):
    if test in lab_rubric.get("given", []):
        return 0.0
    if test in lab_rubric.get("tests", {}):
        return float(lab_rubric["tests"][test])
    return float(defaults["timing_points"] if timed(test) else defaults["test_points"])


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


def sanitizer_tools(lab_rubric, test):
    """The compute-sanitizer tools that apply to a test: all four, less
    those the rubric's `sanitize_skip = {tool = [tests]}` names for it (a
    name may be a pattern: "stage*")."""
    skip = lab_rubric.get("sanitize_skip", {})
    return [tool for tool in labs.SANITIZER_TOOLS
            if not any(fnmatch.fnmatchcase(test, pattern) for pattern in skip.get(tool, []))]


def unknown_test_names(lab_rubric, names):
    """What a lab's rubric names that is not among names (the tests of the
    lab's binary): a test renamed or removed leaves a rule that applies to
    nothing. A sanitize_skip pattern must match at least one test."""
    scored = lab_rubric.get("scored_with", {})
    named = set(lab_rubric.get("tests", {})) | set(lab_rubric.get("given", [])) \
        | set(scored) | set(scored.values())
    if "performance" in lab_rubric:
        named.add(lab_rubric["performance"]["test"])
    unknown = sorted(named - set(names))
    for tool, patterns in sorted(lab_rubric.get("sanitize_skip", {}).items()):
        unknown += [f"{p} (sanitize_skip.{tool})" for p in patterns
                    if not any(fnmatch.fnmatchcase(n, p) for n in names)]
    return unknown


def timed(test):
    """Whether a test is timed (timing_*): its limits are timing_wall_s, it
    runs alone on the GPU (testplan.py) and is not sanitized."""
    return test.startswith("timing_")


def limits_for(defaults, test, wrapper=()):
    wall = defaults["timing_wall_s"] if timed(test) else defaults["wall_s"]
    return {"wall_s": int(wall), "cpu_s": int(max(defaults["cpu_s"], wall + 10)),
            "output_bytes": int(defaults["output_bytes"]), "wrapper": list(wrapper)}


def stage_of(test):
    """The stage a test checks ("stage2" of stage2_fan_in), or its own name
    for a test of no stage (timing_..., a source rule)."""
    return test.split("_", 1)[0] if test.startswith("stage") else test


def not_run_reason(defaults, test, timeouts, spent_s):
    """Why a test is not started, or None: its stage already had
    `stage_timeouts` tests run out of time (code that hangs hangs in every
    test of the stage: waiting for each would make one submission take
    hours), or the submission's tests have used its `submission_wall_s`
    (spent_s: the seconds its tests' runs and their judging took so far,
    builds and sanitizer runs not counted). timeouts: {stage: tests timed
    out so far}."""
    stage = stage_of(test)
    if timeouts.get(stage, 0) >= defaults["stage_timeouts"]:
        return (f"not run: {timeouts[stage]} tests of {stage} already ran out of time (the code "
                "hangs or is far too slow there)")
    if spent_s > defaults["submission_wall_s"]:
        return (f"not run: the submission's tests took more than {defaults['submission_wall_s']} s "
                "in all (the grader's time for one submission)")
    return None


def gpu_work_missing(defaults, lab_rubric, result):
    """The rule `require_gpu`: the lab's passing tests score nothing when
    its code shows no GPU work (and the GPU was there). The evidence, first
    what the submission cannot write: its compiled device code
    (devicecode.py: where the reference's kernels.cu defines kernels of its
    own, the student's object must hold at least one), then the launches its
    test processes counted. True when the rule applied."""
    if not (defaults.get("require_gpu", True) and lab_rubric.get("require_gpu", True)
            and result["gpu_ran"]):
        return False
    kernels = result.get("kernels") or {}
    if kernels.get("reference") and kernels.get("student") == []:
        why = ("your kernels.cu defines no kernel (its compiled device code holds none of its own): "
               "the work must run on the GPU")
    elif result["launches"] == 0:
        why = "your code launched no kernel in any test of this lab (the work must run on the GPU)"
    else:
        return False
    for t in result["tests"]:
        if t["status"] == "passed" and t["max_score"] > 0:
            t.update(status="failed", score=0.0, output=f"no points: {why}\n\n" + t["output"])
    result["gpu_work"] = why
    return True


def score_performance(perf, tests, timings):
    """Performance points: only when every correctness test of the lab
    passed and the timing test itself passed, from the grader's own clock
    (judge.clock_times: timings["clock"]) on a time no faster than the GPU
    can do the work (the judge's floor, timings["rows"]);
    `points * min(1, speed / full_at)` with speed = reference ms / student ms.
    The times the process reported itself are never scored."""
    out = {"test": perf["test"], "reference_ms": None, "student_ms": None,
           "speed_vs_reference": None, "score": 0.0, "max_score": float(perf["points"]), "why": ""}
    failing = [t["test"] for t in tests if t["status"] != "passed" and t["max_score"] > 0]
    if failing:
        out["why"] = "no performance points: not every correctness test passes (" + ", ".join(failing[:4]) + ")"
        return out
    # The timing test scores nothing itself, but its checks (the results of
    # its timed runs) must hold too.
    timed = [t for t in tests if t["test"] == perf["test"]]
    if timed and timed[0]["status"] != "passed":
        out["why"] = f"no performance points: {perf['test']} did not pass (its timed runs were not all right)"
        return out
    rows = timings.get("rows") or []
    if not rows:
        out["why"] = f"no performance points: {perf['test']} recorded no timing"
        return out
    problem = timing_problem(rows[0], timings.get("clock"))
    if problem:
        out["why"] = "no performance points: " + problem
        return out
    reference_ms, student_ms = timings["clock"]["reference_ms"], timings["clock"]["student_ms"]
    ratio = reference_ms / student_ms
    out.update(reference_ms=reference_ms, student_ms=student_ms, speed_vs_reference=ratio,
               score=round(float(perf["points"]) * min(1.0, ratio / float(perf.get("full_at", 0.5))), 3))
    return out


def timing_problem(row, clock):
    """Why a graded time cannot be scored, or None. row: the judge's
    timings.csv row (case, what, reference ms, student ms as the process
    reported them, warmup, repetitions, floor ms): only its floor is used.
    clock: the grader's own times (judge.clock_times)."""
    try:
        floor_ms = float(row[6])
    except (IndexError, ValueError):
        return "no timing was recorded"
    if not clock:
        return "the grader timed no repetitions of this timing"
    if clock.get("problem"):
        return clock["problem"]
    student_ms, reference_ms = clock.get("student_ms"), clock.get("reference_ms")
    if student_ms is None or not math.isfinite(student_ms) or student_ms <= 0:
        return "the grader's time of your code's run is not usable"
    if math.isfinite(floor_ms) and floor_ms > 0 and student_ms < floor_ms / 1.1:
        return (f"the time ({student_ms:.4g} ms) is faster than this GPU can do the work "
                f"({floor_ms:.4g} ms at its copy bandwidth / FP32 peak, less 10%)")
    if reference_ms is None or not math.isfinite(reference_ms) or reference_ms <= 0:
        return "the reference's time is not usable"
    return None
