#!/usr/bin/env python3
"""The order of a grade's tests (grading/grader/testplan.py, pool.py) with a
fake judge, no GPU and no build, in about two seconds: two made-up labs
graded through the grader's own LabGrade (labgrade.py) with --jobs 1 and
--jobs 4. Checks that the verdicts and scores are the same both ways (a
stage that ran out of time twice skips its later tests in both), that the
tests of one stage run one after the other in their order, that the timed
tests run alone after every other test, that with 4 jobs tests did run side
by side (at most 4), and that the phase lines (phases.py) come per lab in
their order with the right counts. Then pool.run: an exception in one item
is raised in the caller and stops the items not started.

usage: test_plan.py
"""
import argparse
import io
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grading"))
from grader import labgrade  # noqa: E402
from grader import phases  # noqa: E402
from grader import pool  # noqa: E402
from grader import rubric  # noqa: E402
from grader import testplan  # noqa: E402

# Each lab's tests in their order, and what the fake judge says of each.
LABS = {
    "alpha": {"stage0_a": "timeout", "stage0_b": "timeout", "stage0_c": "pass", "stage0_d": "pass",
              "stage1_a": "pass", "stage1_b": "pass", "alpha_source": "pass", "timing_big": "pass"},
    "beta": {"stage0_a": "pass", "stage0_b": "pass", "stage0_c": "pass", "stage1_a": "fail",
             "stage2_a": "pass", "stage2_b": "pass", "timing_small": "pass", "timing_tiny": "fail"},
}
RUN_S = 0.04   # each fake test's run


class FakeWorkspace:
    build = src = "/nonexistent"

    def kernels_command(self, folder, name, side="student"):
        return "", "kernels.o"

    def data_dirs(self, folder):
        return []

    def rule_source(self, folder):
        return ""


def fake_judge(runs, lock):
    """judge.run_test's stand-in: sleeps, keeps (lab, test, start, end)."""
    def run_test(binary, reference, suite, test, limits, seed, data_dirs, source):
        began = time.monotonic()
        time.sleep(RUN_S)
        with lock:
            runs.append((suite, test, began, time.monotonic()))
        outcome = LABS[suite][test]
        return {"seconds": RUN_S, "judge_seconds": RUN_S / 2, "timed_out": outcome == "timeout",
                "status": "passed" if outcome == "pass" else "failed", "reason": outcome,
                "launches": 1, "output": "", "timings": [], "clock": None}
    return run_test


def grade(jobs):
    """The two labs graded as grade.py does once the trusted tree is built:
    (results, runs, the phase lines)."""
    runs, lock = [], threading.Lock()
    labgrade.judge.run_test = fake_judge(runs, lock)
    labgrade.judge.list_tests = lambda reference: [(lab, test) for lab in [os.path.basename(reference)[:-10]]
                                                   for test in LABS[lab]]   # <lab>-reference
    labgrade.trees.build_student = lambda ws, folder, name, source, hidden: ("ok", "", {
        "object": "kernels.o", "visible": name, "hidden": name})
    labgrade.devicecode.lab_kernels = lambda *objects: {}
    defaults = dict(rubric.load()[0], timing_points=1)
    said = io.StringIO()
    progress = phases.Phases(list(LABS), stream=said)
    args = argparse.Namespace(sanitize=False)
    spent = {"tests_s": 0.0}
    graded = [labgrade.LabGrade(FakeWorkspace(), name, name, b"", "", defaults, {}, args, "1", spent, progress)
              for name in LABS]
    pool.run(graded, range(jobs), lambda lab, slot: lab.build())
    testplan.run([(lab, lab.tests_to_run()) for lab in graded], jobs, lambda lab, test: lab.run_test(test))
    results = [lab.finish() for lab in graded]
    return results, runs, said.getvalue().splitlines()


def verdicts(results):
    return [(r["lab"], r["score"], [(t["test"], t["status"], t["score"], t["output"][:60]) for t in r["tests"]])
            for r in results]


def order_problems(runs, jobs):
    problems = []
    timed = [r for r in runs if rubric.timed(r[1])]
    others = [r for r in runs if not rubric.timed(r[1])]
    for lab, tests in LABS.items():
        for stage in {rubric.stage_of(t) for t in tests if not rubric.timed(t)}:
            ran = sorted((r for r in others if r[0] == lab and rubric.stage_of(r[1]) == stage), key=lambda r: r[2])
            if [r[1] for r in ran] != [t for t in tests if rubric.stage_of(t) == stage and t in {x[1] for x in ran}]:
                problems.append(f"jobs {jobs}: {lab} {stage} ran out of order: {[r[1] for r in ran]}")
            if any(later[2] < earlier[3] for earlier, later in zip(ran, ran[1:])):
                problems.append(f"jobs {jobs}: {lab} {stage}: a test began before the one before it ended")
    for lab, test, began, ended in timed:
        beside = [r[:2] for r in runs if r[1] != test and r[2] < ended and r[3] > began]
        if beside:
            problems.append(f"jobs {jobs}: timed {lab}/{test} ran beside {beside}")
        if others and began < max(r[3] for r in others):
            problems.append(f"jobs {jobs}: timed {lab}/{test} began before the correctness tests ended")
    if [r[:2] for r in sorted(timed, key=lambda r: r[2])] != \
            [(lab, t) for lab, tests in LABS.items() for t in tests if rubric.timed(t)]:
        problems.append(f"jobs {jobs}: the timed tests did not run in the labs' order")
    most = max(sum(1 for r in others if r[2] <= moment < r[3]) for moment in [r[2] for r in others])
    if most > jobs or (jobs > 1 and most < 2):
        problems.append(f"jobs {jobs}: {most} tests ran at the same time at most")
    return problems


def line_problems(lines, jobs):
    problems = []
    wanted = {"alpha": ["build ok", "tests 3/7 passed, 2 did not run", "judge", "timing", "done: 4/8 points"],
              "beta": ["build ok", "tests 5/6 passed", "judge", "timing", "done: 6/8 points"]}
    for lab, steps in wanted.items():
        said = [line.split("] ", 1)[1][len(lab) + 2:] for line in lines if line.split("] ", 1)[1].startswith(lab + ":")]
        if [s for s in said if not any(s.startswith(step) for step in steps)] or \
                [next((s for s in said if s.startswith(step)), None) for step in steps] != \
                [s for s in said if any(s.startswith(step) for step in steps)]:
            problems.append(f"jobs {jobs}: {lab}'s lines {said} are not {steps} in that order")
    return problems


def pool_problems():
    started, problems = [], []

    def work(item, slot):
        started.append(item)
        time.sleep(0.02)
        if item == 2:
            raise ValueError("item 2")
    try:
        pool.run(range(20), range(2), work)
        problems.append("pool.run: the exception of item 2 was not raised")
    except ValueError:
        pass
    if len(started) > 5:
        problems.append(f"pool.run: {len(started)} items started, after one raised")
    return problems


def main():
    sequential, runs_1, lines_1 = grade(1)
    side_by_side, runs_4, lines_4 = grade(4)
    problems = order_problems(runs_1, 1) + order_problems(runs_4, 4)
    problems += line_problems(lines_1, 1) + line_problems(lines_4, 4) + pool_problems()
    if verdicts(sequential) != verdicts(side_by_side):
        problems.append(f"verdicts differ:\n jobs 1: {verdicts(sequential)}\n jobs 4: {verdicts(side_by_side)}")
    skipped = [t["test"] for t in sequential[0]["tests"] if "already ran out of time" in t["output"]]
    if skipped != ["stage0_c", "stage0_d"]:
        problems.append(f"alpha: the tests left out after two time-outs are {skipped}, not stage0_c, stage0_d")
    for problem in problems:
        print("FAIL:", problem)
    print("\n".join(lines_4))
    print(f"test plan: {'ok' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
