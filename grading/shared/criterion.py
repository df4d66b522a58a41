"""Criterion, as the workbook runs it and reads its JSON report: the one
place that knows the report's shape and the repair its 2.4 version needs."""
import glob
import json
import os
import subprocess


def load_report(path):
    """Criterion 2.4's JSON report, which writes its assertion messages
    without escaping quotes or backslashes: where it does not parse, each
    line of a "messages" list is re-quoted, then it is parsed again."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        pass
    lines, inside = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith('"messages": ['):
            inside = not stripped.endswith("]") and not stripped.endswith("],")
        elif inside and stripped.startswith("]"):
            inside = False
        elif inside and stripped.startswith('"'):
            body = stripped[1:].rstrip(",")
            body = body[:-1] if body.endswith('"') else body
            line = json.dumps(body) + ("," if stripped.endswith(",") else "")
        lines.append(line)
    return json.loads("\n".join(lines))


def all_tests(report):
    """Every test entry of a report, over all its suites."""
    return [t for s in report.get("test_suites", []) for t in s.get("tests", [])]


def cases(report_path, suite, test):
    """The report's entries of one test (one per parameter case)."""
    data = load_report(report_path)
    return [t for s in data["test_suites"] if s["name"] == suite for t in s["tests"]
            if t["name"] == test]


def run(binary, results_dir, extra_args=(), timeout=None):
    """Runs a Criterion test binary one test at a time with its tables going
    to results_dir; returns (report dict or None, combined output)."""
    os.makedirs(results_dir, exist_ok=True)
    report = os.path.join(results_dir, "criterion.json")
    # The tables are appended to while the tests run: start them empty, so
    # that they hold this run's rows only.
    for old in glob.glob(os.path.join(results_dir, "*.csv")) + glob.glob(report):
        os.remove(old)
    env = dict(os.environ, WB_RESULTS_DIR=results_dir)
    proc = subprocess.run([binary, "--jobs=1", f"--json={report}", *extra_args], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", timeout=timeout)
    with open(os.path.join(results_dir, "output.txt"), "w") as f:
        f.write(proc.stdout)
    try:
        return load_report(report), proc.stdout
    except (OSError, ValueError):
        return None, proc.stdout
