"""Verdicts decided outside the submission's process.

Each test (every parameter case of it) runs twice, on the same inputs (the
same fresh WB_SEED):

1. record: the student's test binary, in a sandbox (sandbox.py) whose only
   writable place is a scratch folder, with WB_RECORD set. Each value the
   test reads from the code under test (wb_fetch / wb_observe*, see
   common/wb_test.h) is written to a recording, one file per case. What this
   process prints, its exit status and its own Criterion report decide
   nothing.
2. judge: the reference's test binary (trusted code, built in the trusted
   tree) with WB_JUDGE pointing at a copy of the recording. It runs the
   same test and every observation returns the submission's recorded value,
   so each check of test.c decides on the submission's results, with the
   same learner messages. Its Criterion report is the verdict. The judge
   also writes, per case, whether the submission's run finished and how many
   kernels it launched (cases.csv), and for timing observations the
   reference's time, the submission's and the least time the work can take
   on this GPU (timings.csv).

A test passes when the judge passes every case and the submission's process
ended within its limits.
"""
import csv
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile

import criterion
import sandbox

RECORD_BYTES = 2 << 30      # the most a case's recording may hold


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


def _copy_recording(source, target):
    """Copies the regular files of the recording (no links, nothing else)
    into a folder of the grader's, so that the judge reads only data: no
    more than RECORD_BYTES in all (the files past it are left out, and the
    cases they held fail as unrecorded). A FIFO is opened without waiting
    for a writer (O_NONBLOCK) and skipped like any other special file; a
    link in the record folder's own place is not followed."""
    os.makedirs(target, exist_ok=True)
    try:   # the folder itself, not a link the submission put in its place
        folder = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    left = RECORD_BYTES
    try:
        for name in sorted(os.listdir(folder)):
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                continue
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
            except OSError:
                continue
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > left:
                os.close(fd)
                continue
            left -= info.st_size
            with os.fdopen(fd, "rb") as f, open(os.path.join(target, name), "wb") as out:
                shutil.copyfileobj(f, out)
    finally:
        os.close(folder)


def _read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.reader(f))


def read_cases(path):
    """cases.csv, which the judge writes at the end of each case: [{case,
    results, finished, launches, error}]. The error (the submission's own
    message) is the rest of the line."""
    cases = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split(",", 4)
                if len(parts) == 5 and parts[1].isdigit() and parts[3].isdigit():
                    cases.append({"case": parts[0], "results": int(parts[1]),
                                  "finished": parts[2] == "1", "launches": int(parts[3]),
                                  "error": parts[4]})
    return cases


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


def run_student(binary, suite, test, limits, seed, work, data_dirs=()):
    """The record run in a sandbox that sees the binary, its libraries and
    the lab's data files (data_dirs, read-only); returns sandbox.run's dict
    plus the recording folder."""
    scratch = os.path.join(work, "student")
    record = os.path.join(scratch, "record")
    os.makedirs(record)
    view = sandbox.view_args(ro=[binary, *sandbox.library_dirs(binary), *data_dirs],
                             rw=[scratch], gpu=True, chdir=scratch)
    argv = list(limits.get("wrapper", [])) + [binary, f"--filter={suite}/{test}", "--jobs=1",
                                               "--verbose", f"--json={scratch}/report.json"]
    # WB_STRICT_TIMING: a time that missed work fails the timing test
    # (common/timing.c); the grader's timings have the GPU to themselves.
    env = sandbox.minimal_env(WB_RECORD=record, WB_SEED=seed, WB_STRICT_TIMING=1,
                              **limits.get("env", {}))
    run = sandbox.run(argv, cwd=scratch, env=env, wall_s=limits["wall_s"], cpu_s=limits["cpu_s"],
                      file_bytes=RECORD_BYTES, output_bytes=limits["output_bytes"], sandbox=view)
    run["record"] = record
    return run


def run_judge(judge_binary, suite, test, limits, seed, recording, work, source=None):
    """The judge run (trusted binary, not sandboxed); returns (cases from its
    Criterion report, its run (sandbox.run's dict), cases.csv rows,
    timings.csv rows). source: the submission's kernels.cu as its compile
    saw it (trees.Workspace.rule_source), which the lab's source rules read
    (wb_test.h)."""
    out = os.path.join(work, "judge")
    os.makedirs(out)
    report = os.path.join(out, "report.json")
    env = dict(os.environ, WB_JUDGE=recording, WB_JUDGE_OUT=out, WB_SEED=seed,
               WB_RESULTS_DIR=out, WB_STRICT_TIMING="1", **limits.get("env", {}))
    if source:
        env["WB_KERNELS_PREPROCESSED"] = source
    run = sandbox.run([judge_binary, f"--filter={suite}/{test}", "--jobs=1", "--verbose",
                       f"--json={report}"], cwd=out, env=env,
                      wall_s=limits["wall_s"] * 2, cpu_s=limits["cpu_s"] * 2,
                      output_bytes=limits["output_bytes"])
    try:
        cases = criterion.cases(report, suite, test)
    except (OSError, ValueError, KeyError, TypeError):
        # The judge is trusted code, but it runs on the submission's results:
        # results that send it astray fail the test, they do not stop grading.
        cases = [{"status": "FAILED", "messages": [
            "the judge could not finish judging your results ("
            + ("it ran out of time" if run["status"] is None else f"exit {run['status']}")
            + "): " + run["output"][-600:]]}]
    return cases, run, read_cases(os.path.join(out, "cases.csv")), \
        _read_csv(os.path.join(out, "timings.csv"))


def run_test(student_binary, judge_binary, suite, test, limits, seed, data_dirs=(), source=None):
    """Records the student's run, judges it. Returns a dict: status (passed /
    failed / skipped), reason, output (what the student's process printed),
    judged (the judge's messages), seconds, timed_out (the student's process
    ran out of time), launches, finished cases, timings (rows of
    timings.csv)."""
    work = tempfile.mkdtemp(prefix="wbtest-")
    try:
        student = run_student(student_binary, suite, test, limits, seed, work, data_dirs)
        recording = os.path.join(work, "recording")
        _copy_recording(student["record"], recording)
        cases, judged_run, case_rows, timing_rows = run_judge(
            judge_binary, suite, test, limits, seed, recording, work, source)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {"output": student["output"], "seconds": student["seconds"],
              "timed_out": student["status"] is None,
              "judge_seconds": judged_run["seconds"],
              "launches": sum(c["launches"] for c in case_rows),
              "timings": timing_rows, "cases": len(cases)}
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
