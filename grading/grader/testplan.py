"""The order of a grade's tests, once every lab is built: correctness runs
may share the GPU, timing runs never do.

1. The correctness tests (every test but the timed ones) of all labs run
   side by side, `jobs` at a time (pool.py). A unit of work is one stage of
   one lab (stage2_* of a lab; a test of no stage, such as a source rule, is
   a unit of its own): its tests run one after the other in the lab's order
   in one worker, so "a stage's later tests" mean what they mean in a
   sequential grade (rubric.not_run_reason: a stage that ran out of time
   twice skips the rest), while stages and labs run in parallel.
2. Then the timed tests (rubric.timed), one at a time in the labs' order,
   with nothing else running on the GPU: their times are the grader's.

With jobs 1 every test runs one at a time, the labs in their order."""
import time

from . import pool
from . import rubric


def plan(labs):
    """labs: [(lab, [test names in the lab's order])], in the grade's order.
    Returns (units, timed): units [(lab, [the tests of one stage, in order])],
    the correctness tests; timed [(lab, test)], the timed ones."""
    units, timed = [], []
    for lab, tests in labs:
        stages = {}
        for test in tests:
            if rubric.timed(test):
                timed.append((lab, test))
            else:
                stages.setdefault(rubric.stage_of(test), []).append(test)
        units += [(lab, stage_tests) for stage_tests in stages.values()]
    return units, timed


def run(labs, jobs, run_test):
    """Runs every test of labs (as plan takes them) through run_test(lab,
    test): the correctness units `jobs` at a time, then the timed tests one
    by one. Returns the wall-clock seconds of each part."""
    units, timed = plan(labs)
    began = time.monotonic()
    pool.run(units, range(jobs), lambda unit, slot: [run_test(unit[0], test) for test in unit[1]])
    middle = time.monotonic()
    for lab, test in timed:
        run_test(lab, test)
    return {"correctness tests": round(middle - began, 1),
            "timed tests": round(time.monotonic() - middle, 1)}
