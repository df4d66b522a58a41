"""Running untrusted test code: one Criterion test per process, with a
wall-clock limit, a CPU-time limit, an output cap and no network, and a
verdict the student's code has a hard time forging (see grading/README.md,
"Threat model").

The verdict of a test is PASSED only when all of these hold:
  - the runner exited with status 0 before the wall-clock limit;
  - the Criterion JSON report exists in a directory created for this one
    run (mkdtemp, mode 0700) and did not exist before the run;
  - it lists exactly as many instances of the test as the reference binary
    did, each PASSED, with at least as many assertions as the reference's
    (an early exit(0) inside a test reports PASSED with fewer assertions).
Everything else, including a report that does not parse, is a failure with
a reason. What the process prints is kept for the student, never parsed.
"""
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import time

_UNSHARE = None


def unshare_prefix():
    """`unshare` arguments giving a new network namespace (no network), or []
    where not permitted. Not a PID namespace: Criterion's runner listens on
    /tmp/criterion_<pid>.sock, and every test would be PID 1 there."""
    global _UNSHARE
    if _UNSHARE is None:
        _UNSHARE = []
        if os.environ.get("WB_GRADER_NO_UNSHARE") != "1" and shutil.which("unshare"):
            prefix = ["unshare", "--net"]
            try:
                ok = subprocess.run(prefix + ["true"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, timeout=20).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            if ok:
                _UNSHARE = prefix
    return _UNSHARE


def isolation_note():
    if unshare_prefix():
        return "each test in its own process and session, no network"
    return ("each test in its own process; WARNING: no network namespace "
            "(unshare not permitted here), so tests could reach the network")


def run_limited(argv, cwd, env, wall_s, cpu_s, output_bytes):
    """Runs argv with limits; returns (exit status or None on timeout,
    output text, seconds, truncated)."""
    out_path = os.path.join(cwd, "output.txt")

    def limits():
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
        # Writes past the cap fail instead of killing the test with SIGXFSZ:
        # the output is cut, the test goes on and is judged on its merits.
        resource.setrlimit(resource.RLIMIT_FSIZE, (output_bytes, output_bytes))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    start = time.monotonic()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(unshare_prefix() + argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=limits, start_new_session=True)
        try:
            status = proc.wait(timeout=wall_s)
        except subprocess.TimeoutExpired:
            status = None
        # Whatever it left behind in its session goes too.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
    seconds = time.monotonic() - start
    with open(out_path, "rb") as f:
        data = f.read(output_bytes + 1)
    truncated = len(data) >= output_bytes
    return status, data[:output_bytes].decode("utf-8", "replace"), seconds, truncated


def list_tests(reference_binary):
    """[(suite, test)] from the trusted reference binary's --list."""
    proc = subprocess.run([reference_binary, "--list"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=60)
    tests, suite = [], None
    for line in proc.stdout.splitlines():
        head = re.match(r"^(\S+): [0-9]+ tests?$", line.strip())
        if head:
            suite = head.group(1)
        elif line.startswith(("├── ", "└── ")) and suite:
            tests.append((suite, line[4:].strip()))
    if proc.returncode != 0 or not tests:
        raise RuntimeError(f"cannot list the tests of {reference_binary}:\n{proc.stdout[-1000:]}")
    return tests


def _signal_name(status):
    try:
        return signal.Signals(-status).name
    except ValueError:
        return f"signal {-status}"


def run_test(binary, suite, test, limits, expected=None, extra_env=None):
    """Runs one test of binary in a fresh directory. expected: the reference's
    result for the same test ({"instances": n, "assertions": [..]}), or None
    when this is the reference. Returns a dict: status (passed / failed /
    skipped), reason, output, seconds, instances, assertions, results_dir."""
    work = tempfile.mkdtemp(prefix="wbtest-")
    report_dir = tempfile.mkdtemp(prefix="r", dir=work)
    results_dir = tempfile.mkdtemp(prefix="t", dir=work)
    report = os.path.join(report_dir, "report.json")
    env = {k: v for k, v in os.environ.items() if k.startswith(("PATH", "CUDA_", "LD_LIBRARY", "HOME", "LANG", "WB_SEED"))}
    env["WB_RESULTS_DIR"] = results_dir
    env.update(extra_env or {})
    argv = list(limits.get("wrapper", [])) + [binary, f"--filter={suite}/{test}", "--jobs=1",
                                               "--verbose", f"--json={report}"]
    status, output, seconds, truncated = run_limited(
        argv, work, env, limits["wall_s"], limits["cpu_s"], limits["output_bytes"])
    result = {"output": output, "seconds": round(seconds, 3), "results_dir": results_dir,
              "work": work, "instances": 0, "assertions": []}
    def verdict(state, reason):
        result.update(status=state, reason=reason)
        return result

    if truncated:
        result["output"] += f"\n[grader: output cut at {limits['output_bytes']} bytes]"
        return verdict("failed", f"printed more than {limits['output_bytes']} bytes (the limit)")

    if status is None:
        return verdict("failed", f"timed out after {limits['wall_s']} s (hang or too slow); the process was killed")
    if status < 0:
        return verdict("failed", f"the test process was killed by {_signal_name(status)}")
    try:
        with open(report) as f:
            data = json.load(f)
        instances = [t for s in data["test_suites"] if s["name"] == suite
                     for t in s["tests"] if t["name"] == test]
    except (OSError, ValueError, KeyError, TypeError):
        return verdict("failed", f"the test binary exited (status {status}) without a valid report: "
                       "it crashed, or exited early (exit() before main finished)")
    result["instances"] = len(instances)
    result["assertions"] = [int(t.get("assertions", 0)) for t in instances]
    states = [t.get("status") for t in instances]
    messages = [m for t in instances for m in t.get("messages", []) if t.get("status") != "PASSED"]
    if states and all(s == "SKIPPED" for s in states):
        return verdict("skipped", "; ".join(messages[:1]) or "skipped")
    if not states or any(s != "PASSED" for s in states):
        bad = sum(s != "PASSED" for s in states)
        detail = "; ".join(m.strip() for m in messages[:3])
        return verdict("failed", f"{bad} of {len(states)} case(s) failed" + (f": {detail}" if detail else ""))
    if status != 0:
        return verdict("failed", f"the test binary exited with status {status} although its report says passed")
    if expected is not None:
        if len(instances) != expected["instances"]:
            return verdict("failed", f"{len(instances)} case(s) reported, the test has {expected['instances']}")
        short = [i for i, (got, want) in enumerate(zip(sorted(result["assertions"]),
                                                       sorted(expected["assertions"]))) if got < want]
        if short:
            return verdict("failed", "the test ended before its checks ran (exit() or return from the "
                           "student's code inside the test)")
    return verdict("passed", "")
