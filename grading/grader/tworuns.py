"""The two runs of a test (judge.py decides the verdict from them): record,
the student's test binary in its sandbox, each observation sent to the
grader's channel and kept as the case's recording; then judge, the
reference's test binary reading those recordings, whose Criterion report,
cases.csv and timings.csv the verdict is made of.
"""
import csv
import os

from shared import criterion
from . import channel
from . import sandbox


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


def record_view(binary, data_dirs, listening):
    """The record run's sandbox: the binary, its libraries, the lab's data
    files and the channel's folder, read-only, and the GPU. Its only
    writable place is its private /tmp, memory of at most sandbox.TMP_BYTES
    (its working folder: Criterion's own report goes there and decides
    nothing)."""
    return sandbox.view_args(ro=[binary, *sandbox.library_dirs(binary), *data_dirs, listening],
                             gpu=True, chdir="/tmp")


def run_student(binary, suite, test, limits, seed, work, data_dirs=()):
    """The record run in a sandbox that sees the binary, its libraries, the
    lab's data files (data_dirs, read-only) and the grader's channel;
    returns (sandbox.run's dict, the channel, closed: its cases)."""
    recording = os.path.join(work, "recording")
    listening = os.path.join(work, "student")
    os.makedirs(recording)
    os.makedirs(listening)
    # Without a sandbox (sandbox.note says what is lost) the process works
    # in a folder of its own, not in the machine's /tmp.
    scratch = "/tmp" if sandbox.available()[0] else os.path.join(work, "scratch")
    os.makedirs(scratch, exist_ok=True)
    heard = channel.Channel(listening, f"{suite}.{test}", record_dir=recording)
    try:
        view = record_view(binary, data_dirs, listening)
        argv = list(limits.get("wrapper", [])) + [binary, f"--filter={suite}/{test}", "--jobs=1",
                                                   "--verbose", f"--json={scratch}/report.json"]
        # WB_RECORD marks the record step, where the source rules decide
        # nothing and do not run (common/wb_rules.c): the judge runs them.
        env = sandbox.minimal_env(WB_CHANNEL=heard.path, WB_RECORD=1, WB_SEED=seed,
                                  **limits.get("env", {}))
        run = sandbox.run(argv, cwd=scratch, env=env, wall_s=limits["wall_s"],
                          cpu_s=limits["cpu_s"], file_bytes=channel.RECORD_BYTES,
                          output_bytes=limits["output_bytes"], sandbox=view)
    finally:
        heard.close()
    return run, heard


def run_judge(judge_binary, suite, test, limits, seed, student, work, source=None):
    """The judge run (trusted binary, not sandboxed) on the recordings and
    seeds of student (run_student's channel); returns (cases from its
    Criterion report, its run (sandbox.run's dict), cases.csv rows,
    timings.csv rows, its channel, closed). source: the submission's
    kernels.cu as its compile saw it (trees.Workspace.rule_source), which
    the lab's source rules read (wb_test.h)."""
    out = os.path.join(work, "judge")
    os.makedirs(out)
    report = os.path.join(out, "report.json")
    heard = channel.Channel(out, f"{suite}.{test}", seeds=student.seeds())
    env = dict(os.environ, WB_JUDGE=student.record_dir, WB_JUDGE_OUT=out, WB_SEED=seed,
               WB_RESULTS_DIR=out, WB_CHANNEL=heard.path, **limits.get("env", {}))
    if source:
        env["WB_KERNELS_PREPROCESSED"] = source
    try:
        run = sandbox.run([judge_binary, f"--filter={suite}/{test}", "--jobs=1", "--verbose",
                           f"--json={report}"], cwd=out, env=env,
                          wall_s=limits["wall_s"] * 2, cpu_s=limits["cpu_s"] * 2,
                          output_bytes=limits["output_bytes"])
    finally:
        heard.close()
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
        _read_csv(os.path.join(out, "timings.csv")), heard
