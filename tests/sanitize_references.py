#!/usr/bin/env python3
"""Every lab's reference under each compute-sanitizer tool: no findings.

usage: tests/sanitize_references.py --build DIR [--labs 00-vector-add,...]
                                    [--tools memcheck,...] [--jobs N]

Runs each lab's reference test binary (DIR/<lab>-reference, as Meson builds
it) under memcheck, racecheck (hazards only), synccheck and initcheck, on its
stage tests (the timing tests only repeat what the stage tests run; the
rubric's sanitize_skip leaves out a tool where it cannot judge), several
runs at once. Prints one line per lab and tool with the findings and the
time, and exits 1 when a tool reports anything or a test fails under it, 77
without a GPU. Each test's own .timeout is multiplied by --timeout-scale
(WB_TIMEOUT_SCALE, common/wb_test.c: spin loops slow down most under a
tool); a test that still runs past it is listed as unchecked, not as a
finding; a test that fails beside the other runs is run once more alone,
at the end, and counts only if it fails there too. The times say what `grading/workbook grade --sanitize` costs.
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "grading"))

from shared import labs  # noqa: E402
from grader import rubric  # noqa: E402

LIMIT_S = 900


def stage_filter(skipped, only=()):
    """Criterion's --filter for the stage tests less the skipped ones, or
    for the tests named in only."""
    if only:
        return "--filter=*/@(" + "|".join(sorted(only)) + ")"
    return "--filter=*/!(" + "|".join(["timing_*", "given_*"] + sorted(skipped)) + ")"


def failed_tests(report):
    """The names of the tests a run's report lists as failed (not timed out)."""
    return sorted({l.split("::", 1)[1].split(":", 1)[0] for l in report.splitlines()
                   if l.startswith("[FAIL]") and "::" in l and "Timed out" not in l})


def sanitize(binary, tool, timeout_scale, skipped=(), only=()):
    """(findings, seconds, problem or "", the tool's report) of one tool on
    one binary."""
    argv = labs.sanitizer_command(tool) + (["--racecheck-report", "hazard"] if tool == "racecheck" else [])
    argv += [binary, "--jobs=1", stage_filter(skipped, only)]
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=dict(os.environ, WB_TIMEOUT_SCALE=str(timeout_scale)),
                              errors="replace", timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        return [], time.monotonic() - start, f"did not finish within {LIMIT_S} s", ""
    seconds = time.monotonic() - start
    if "Tested: 0 " in proc.stdout:   # the rubric skips every stage test for this tool
        return [], seconds, "SKIPPED: no stage test applies (the rubric's sanitize_skip)", ""
    findings = labs.sanitizer_findings(proc.stdout)
    failing = [l.strip() for l in proc.stdout.splitlines() if "[FAIL]" in l]
    slow = [l for l in failing if "Timed out" in l]
    problem = ""
    if len(slow) < len(failing):
        problem = f"{len(failing) - len(slow)} test(s) failed under the tool: " + \
            [l for l in failing if l not in slow][0][:200]
    elif slow:   # the test's own .timeout, ten times too short under the tool: not checked
        problem = "SLOW: " + "; ".join(l.split("]", 1)[-1].strip() for l in slow)[:300]
    elif proc.returncode not in (0, 99):
        problem = f"exit status {proc.returncode}: {proc.stdout[-300:]}"
    report = "\n".join(l for l in proc.stdout.splitlines() if l.startswith("=========") or "[FAIL]" in l)
    return findings, seconds, problem, report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="a Meson build folder with the references built")
    parser.add_argument("--labs", help="comma-separated lab folders (default: all)")
    parser.add_argument("--tools", default=",".join(labs.SANITIZER_TOOLS),
                        help="comma-separated tools (default: all four)")
    parser.add_argument("--jobs", type=int, default=4,
                        help="runs at once (default 4: more slow each other past the tests' timeouts)")
    parser.add_argument("--timeout-scale", type=float, default=10,
                        help="multiply each test's own timeout by this (default 10)")
    parser.add_argument("--show", action="store_true",
                        help="print the tool's full report of each run with findings")
    args = parser.parse_args()
    if not labs.gpu_listed():
        print("skipped: no GPU (nvidia-smi -L)")
        return 77
    folders = args.labs.split(",") if args.labs else None
    runs = [(name, tool) for folder, name in labs.all_labs() if not folders or folder in folders
            for tool in args.tools.split(",")]
    missing = sorted({n for n, _ in runs if not os.path.exists(os.path.join(args.build, f"{n}-reference"))})
    if missing:
        print(f"not built in {args.build}: " + ", ".join(f"{n}-reference" for n in missing))
        return 1
    _, lab_rubrics = rubric.load()
    counts = {"bad": 0, "unchecked": 0}

    def report_run(name, tool, findings, seconds, problem, report):
        slow = problem.startswith("SLOW: ")
        retried = problem.startswith(("RETRIED: ", "SKIPPED: "))   # clean, and said
        counts["bad"] += bool(findings or (problem and not slow and not retried))
        counts["unchecked"] += slow
        verdict = ("FINDINGS" if findings else "unchecked" if slow
                   else "skipped" if problem.startswith("SKIPPED: ") else "clean" if retried
                   else "PROBLEM" if problem else "clean")
        print(f"{verdict:8} {name:12} {tool:9} {seconds:6.0f} s  "
              + (problem or "; ".join(findings[:3]))[:400], flush=True)
        if args.show and (findings or problem):
            print(report[:6000], flush=True)

    retries = []   # tests that failed beside the other runs: once more, alone, at the end
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(sanitize, os.path.join(args.build, f"{n}-reference"), t,
                               args.timeout_scale,
                               lab_rubrics.get(n, {}).get("sanitize_skip", {}).get(t, [])): (n, t)
                   for n, t in runs}
        for future in concurrent.futures.as_completed(futures):
            name, tool = futures[future]
            findings, seconds, problem, report = future.result()
            failed = failed_tests(report) if problem and not findings else []
            if failed:
                retries.append((name, tool, failed, seconds))
            else:
                report_run(name, tool, findings, seconds, problem, report)
    for name, tool, failed, first in retries:
        findings, seconds, problem, report = sanitize(os.path.join(args.build, f"{name}-reference"),
                                                      tool, args.timeout_scale, only=failed)
        if not problem and not findings:
            problem = f"RETRIED: {', '.join(failed)} failed beside the other runs, passed alone"
        report_run(name, tool, findings, first + seconds, problem, report)
    bad, unchecked = counts["bad"], counts["unchecked"]
    print(f"{len(runs) - bad - unchecked} of {len(runs)} runs clean, {bad} with findings or "
          f"failures, {unchecked} with tests that ran past their own timeout under the tool "
          "(not checked: run those alone)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
