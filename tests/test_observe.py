#!/usr/bin/env python3
"""The observations (common/wb_test.h) on the CPU: tests/test_observe.c is
recorded with "results" set through the environment, then judged by the
same binary without them; the judge must pass exactly the cases whose
recorded results are right, and say why the others fail.

usage: test_observe.py TEST_OBSERVE_BINARY
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grading"))
from grader import channel  # noqa: E402
from shared import criterion  # noqa: E402
from grader import judge  # noqa: E402
from grader import tworuns  # noqa: E402

# name: (environment of the recorded run, {test: expected status}, text the
# judge's message must hold for the first failing test)
SCENARIOS = {
    "right results": ({}, {}, None),
    "a wrong int": ({"WB_TEST_ANSWER": "41"}, {"an_int": "FAILED"}, "got 41, expected 42"),
    "a wrong buffer": ({"WB_TEST_NUDGE": "1"}, {"a_buffer": "FAILED"}, "element 2"),
    "a wrong message": ({"WB_TEST_MESSAGE": "no error"}, {"a_message": "FAILED"}, "does not say"),
    "a crash": ({"WB_TEST_CRASH": "1"}, {"ends_early": "FAILED"}, "ended before it produced 'second'"),
    "a crash after the results": ({"WB_TEST_CRASH_LATE": "1"}, {"ends_late": "FAILED"}, "did not finish"),
    "another path": ({"WB_TEST_OTHER_PATH": "1"}, {"takes_another_path": "FAILED"}, "went another way"),
    "a late error": ({"WB_TEST_LATE_ERROR": "1"}, {"fails_after_its_results": "FAILED"},
                     "a CUDA call failed after the results"),
    "every case off": ({"WB_TEST_CASE_OFFSET": "1"}, {"cases_in_order": "FAILED"}, "got 11, expected 10"),
    # A wrong result, then the right one sent again after the case's end: from
    # atexit, from a child the case left behind, from a worker begun anew.
    "rewritten after its end": ({"WB_TEST_SEALED_ANSWER": "41", "WB_TEST_REWRITE": "1"},
                                {"sealed": "FAILED"}, "got 41, expected 42"),
}


def run(binary, env, report, cases_csv=None):
    """{test: {status, messages}}, as the grader would judge it: Criterion's
    verdict, then a case whose recording ends with an error or unfinished
    fails too (judge.unfinished, from the judge's cases.csv)."""
    subprocess.run([binary, "--jobs=1", f"--json={report}"], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=120)
    data = criterion.load_report(report)
    verdicts = {}
    for t in (t for s in data["test_suites"] for t in s["tests"]):
        seen = verdicts.setdefault(t["name"], {"status": "PASSED", "messages": []})
        if t["status"] != "PASSED":
            seen["status"] = t["status"]
        seen["messages"] += t.get("messages", [])
    if cases_csv:
        by_test = {}
        for case in tworuns.read_cases(cases_csv):
            by_test.setdefault(case["case"].split(".", 1)[1], []).append(case)
        for test, cases in by_test.items():
            late = judge.unfinished(cases)
            if late and test in verdicts:
                verdicts[test]["status"] = "FAILED"
                verdicts[test]["messages"] += late
    return verdicts


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip())
        return 2
    binary = sys.argv[1]
    problems = []
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WB_")}
    for name, (produced, expected, text) in SCENARIOS.items():
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            record, out = os.path.join(tmp, "record"), os.path.join(tmp, "out")
            os.makedirs(record)
            os.makedirs(out)
            # The grader's channel, as tworuns.run_student opens it (for every test).
            heard = channel.Channel(tmp, None, record_dir=record)
            try:
                run(binary, dict(clean, WB_CHANNEL=heard.path, WB_SEED="7", **produced),
                    os.path.join(tmp, "recorded.json"))
            finally:
                heard.close()
            # The judge's run has a channel of its own too (tworuns.run_judge).
            judging = channel.Channel(out, None, seeds=heard.seeds())
            try:
                verdicts = run(binary, dict(clean, WB_JUDGE=record, WB_JUDGE_OUT=out, WB_SEED="7",
                                            WB_CHANNEL=judging.path),
                               os.path.join(tmp, "judged.json"), os.path.join(out, "cases.csv"))
            finally:
                judging.close()
            if len(judging.cases) != len(heard.cases):
                problems.append(f"{name}: the judge's run began {len(judging.cases)} cases, "
                                f"the record run {len(heard.cases)}")
        for test in ("an_int", "a_buffer", "a_message", "ends_early", "ends_late", "takes_another_path",
                     "fails_after_its_results", "cases_in_order", "sealed"):
            want = expected.get(test, "PASSED")
            got = verdicts.get(test, {}).get("status", "missing")
            if got != want:
                problems.append(f"{name}: {test} judged {got}, expected {want}")
            elif want == "FAILED" and text and not any(text in m for m in verdicts[test].get("messages", [])):
                problems.append(f"{name}: {test}'s message lacks '{text}': {verdicts[test].get('messages')}")
        print(f"{name}: {'ok' if not any(p.startswith(name + ':') for p in problems) else 'WRONG'}")
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
