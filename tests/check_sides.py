#!/usr/bin/env python3
"""Checks that a lab's tests can fail: the reference passes all of them and
the skeleton fails every test that scores in grading/rubric.toml (a test
that passes on the skeleton must be `given`, score 0, or be `scored_with` a
test that fails on it).

usage: check_sides.py LAB STUDENT_TEST_BINARY REFERENCE_TEST_BINARY

Exit status 0 when both hold, 1 when not, 77 (meson's "skipped") when every
test was skipped because there is no usable GPU.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grading"))
from shared import criterion  # noqa: E402
from grader import rubric  # noqa: E402

SKIPPED = 77


def run_criterion(binary):
    """Runs a Criterion binary one test at a time; returns its JSON report."""
    with tempfile.TemporaryDirectory() as tmp:
        data, output = criterion.run(binary, tmp)
    if data is None:
        sys.exit(f"{binary} wrote no readable report:\n{output[-3000:]}")
    return data, output


def failing_tests(data):
    return [f"{suite['name']}/{test['name']}: {test['status']}"
            for suite in data.get("test_suites", [])
            for test in suite.get("tests", [])
            if test["status"] in ("FAILED", "ERRORED")]


def main():
    if len(sys.argv) != 4 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    lab, student, reference = sys.argv[1:]
    ref, ref_log = run_criterion(reference)
    defaults, lab_rubrics = rubric.load()
    lab_rubric = lab_rubrics.get(lab, {})
    unknown = rubric.unknown_test_names(
        lab_rubric, {t["name"] for suite in ref.get("test_suites", []) for t in suite.get("tests", [])})
    if unknown:
        print(f"{lab}: grading/rubric.toml names tests that {lab} does not have: " + ", ".join(unknown))
        return 1
    if ref["skipped"] and not (ref["passed"] or ref["failed"] or ref["errored"]):
        said = [m for suite in ref.get("test_suites", []) for t in suite.get("tests", [])
                for m in t.get("messages", []) if m.strip()]
        print(f"skipped: {lab}: " + (said[0].strip() if said else "every GPU test was skipped (no usable GPU)"))
        return SKIPPED
    ok = True
    bad = failing_tests(ref)
    if bad or not ref["passed"]:
        print(f"{lab}: the REFERENCE fails {len(bad)} test(s):", *bad, sep="\n  ")
        print(ref_log[-4000:])
        ok = False
    else:
        print(f"{lab}: reference passes all {ref['passed']} tests; what they printed:")
        print(ref_log[-6000:])   # the timing tables, kept in meson's test log
    stu, _ = run_criterion(student)
    bad = failing_tests(stu)
    # A parameterized test is one entry per case: it passes when no case fails.
    failed = {line.split(":")[0].split("/", 1)[1] for line in bad}
    passed = {t["name"] for suite in stu.get("test_suites", []) for t in suite.get("tests", [])
              if t["status"] == "PASSED"} - failed
    # As the grader scores (rubric.apply_prerequisites): a test `scored_with`
    # another scores only when that one passes too.
    scoring_passes = sorted(
        name for name in passed
        if rubric.test_points(defaults, lab_rubric, name) > 0
        and lab_rubric.get("scored_with", {}).get(name, name) in passed)
    if not bad:
        print(f"{lab}: the SKELETON passes every test ({stu['passed']} passed): "
              "its tests cannot fail")
        ok = False
    elif scoring_passes:
        print(f"{lab}: the SKELETON passes tests that score in grading/rubric.toml: "
              + ", ".join(scoring_passes) + " (make them fail on it, or mark them given / scored_with)")
        ok = False
    else:
        print(f"{lab}: skeleton fails {len(bad)} of "
              f"{stu['passed'] + len(bad)} tests, and every test that scores, as it should")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
