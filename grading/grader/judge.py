"""Verdicts decided outside the submission's process.

Each test (every parameter case of it) runs twice, on the same inputs (the
same fresh WB_SEED, and per timed repetition the same seeds of the
grader's):

1. record (tworuns.py): the student's test binary, in a sandbox
   (sandbox.py) whose only writable place is its private, size-limited
   /tmp, with WB_CHANNEL set to a socket of the grader's (channel.py). Each value the test reads from the
   code under test (wb_fetch / wb_observe*, see common/wb_test.h) is sent
   there; the grader writes each case's recording into its own folder and
   seals it when the case ends, and times each timed repetition with its
   own clock. What this process prints, its exit status and its own
   Criterion report decide nothing.
2. judge (tworuns.py): the reference's test binary (trusted code, built in the trusted
   tree) with WB_JUDGE pointing at those recordings and a channel of its
   own, which sends each case the seeds the submission's run of that case
   got. It runs the same test and every observation returns the
   submission's recorded value, so each check of test.c decides on the
   submission's results, with the same learner messages. Its Criterion
   report is the verdict. The judge also writes, per case, whether the
   submission's run finished and how many kernels it launched (cases.csv),
   and for timing observations the least time the work can take on this GPU
   (timings.csv); the grader's clock timed the reference's kernels in this
   run.

A test passes when the judge passes every case and the submission's process
ended within its limits.
"""
import re
import shutil
import signal
import subprocess
import tempfile

from .tworuns import run_judge, run_student


def list_tests(judge_binary):
    """[(suite, test)] from the trusted binary's --list."""
    proc = subprocess.run([judge_binary, "--list"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=60)
    tests, suite = [], None
    for line in proc.stdout.splitlines():
        head = re.match(r"^(\S+): [0-9]+ tests?$", line.strip())
        if head:
            suite = head.group(1)
        elif line.startswith(("├── ", "└── ")) and suite:
            tests.append((suite, line[4:].strip()))
    if proc.returncode != 0 or not tests:
        raise RuntimeError(f"cannot list the tests of {judge_binary}:\n{proc.stdout[-1000:]}")
    return tests


def _signal_name(status):
    try:
        return signal.Signals(-status).name
    except ValueError:
        return f"signal {-status}"


def unfinished(cases):
    """Why the submission's run of some case cannot pass, whatever the
    checks said: it failed with an error, or did not get to its end (a crash,
    exit or hang after its last result)."""
    reasons = []
    for k, case in enumerate(cases):
        if case["error"]:
            reasons.append(f"case {k + 1}: your code's run failed: {case['error']}")
        elif not case["finished"]:
            reasons.append(f"case {k + 1}: your code's run did not finish after its last result "
                           f"({case['results']} result(s)): it crashed, exited, hung or ran out of time")
    return reasons


def clock_times(timing_rows, student, reference):
    """The grader's own times of the graded series: the first timing the
    judge wrote (timings.csv: case, what, ...) names it; the reference's is
    the judge's run's first series of that name, the student's the record
    run's series in the same place (the same case and position, with the
    same name). Both per call of the reference's run's count of calls.
    Returns {label, reference_ms, student_ms, repetitions, problem}."""
    if not timing_rows or len(timing_rows[0]) < 2:
        return None
    label = timing_rows[0][1]
    for case in reference.cases:
        for place, series in enumerate(case.series):
            if series.label != label:
                continue
            times = {"label": label, "reference_ms": series.ms_per_call(),
                     "repetitions": len(series.times_ns), "student_ms": None, "problem": None}
            theirs = getattr(student.case(case.name, case.k), "series", [])
            mine = theirs[place] if place < len(theirs) else None
            if mine is None or mine.label != label:
                times["problem"] = f"the grader timed no series '{label}' in your code's run"
            elif mine.broken or series.broken:
                times["problem"] = (f"the timing's hand-shake with the grader went out of order in "
                                    f"{'your code' if mine.broken else 'the reference'}'s run of "
                                    f"'{label}' ({mine.broken or series.broken}): its times are "
                                    "not the grader's")
            elif len(mine.times_ns) != len(series.times_ns):
                times["problem"] = (f"your code's run of '{label}' finished {len(mine.times_ns)} "
                                    f"timed repetitions of {len(series.times_ns)}")
            else:
                times["student_ms"] = mine.ms_per_call(series.calls)
            return times
    return None


def run_test(student_binary, judge_binary, suite, test, limits, seed, data_dirs=(), source=None):
    """Records the student's run, judges it. Returns a dict: status (passed /
    failed / skipped), reason, output (what the student's process printed),
    judged (the judge's messages), seconds, timed_out (the student's process
    ran out of time), launches, finished cases, timings (rows of
    timings.csv), clock (clock_times: the grader's own times)."""
    # The channels' sockets live in it, and a Unix socket's path has at most
    # 107 bytes: where the temporary folder's path is too long, /tmp.
    base = tempfile.gettempdir()
    work = tempfile.mkdtemp(prefix="wbtest-", dir=base if len(base) < 64 else "/tmp")
    try:
        student, heard = run_student(student_binary, suite, test, limits, seed, work, data_dirs)
        cases, judged_run, case_rows, timing_rows, reference = run_judge(
            judge_binary, suite, test, limits, seed, heard, work, source)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {"output": student["output"], "seconds": student["seconds"],
              "timed_out": student["status"] is None,
              "judge_seconds": judged_run["seconds"],
              "launches": sum(c["launches"] for c in case_rows),
              "timings": timing_rows, "clock": clock_times(timing_rows, heard, reference),
              "cases": len(cases)}
    states = [c.get("status") for c in cases]
    messages = [m.strip() for c in cases if c.get("status") != "PASSED" for m in c.get("messages", [])]
    result["judged"] = "\n".join(messages)

    def verdict(state, reason):
        result.update(status=state, reason=reason)
        return result

    if states and all(s == "SKIPPED" for s in states):
        return verdict("skipped", messages[0] if messages else "skipped")
    if student["truncated"]:
        return verdict("failed", f"printed more than {limits['output_bytes']} bytes (the limit)")
    if student["status"] is None:
        return verdict("failed", f"timed out after {limits['wall_s']} s (hang or too slow); the "
                       "process was stopped")
    if student["status"] < 0:
        return verdict("failed", f"the test process was killed by {_signal_name(student['status'])}")
    if not states or any(s != "PASSED" for s in states):
        bad = sum(s != "PASSED" for s in states)
        detail = "; ".join(messages[:3])
        return verdict("failed", f"{bad} of {len(states)} case(s) failed" + (f": {detail}" if detail else ""))
    late = unfinished(case_rows)
    if late:
        return verdict("failed", "; ".join(late[:3]))
    return verdict("passed", "")
