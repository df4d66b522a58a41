"""--sanitize: a passing test run again under compute-sanitizer's tools,
recorded and judged as usual (grader.py), each tool's findings."""
from shared import labs
from . import judge


def sanitize(binary, reference_bin, t, lim, seed, data_dirs, source, tools, stuck):
    """compute-sanitizer's findings on one passing test, tool by tool, with
    the student's binary in its sandbox (record mode, judged as usual). A
    tool that ran out of time on an earlier test of the lab (stuck, a set
    this adds to) is not run again: it counts as a finding, as it did
    there, so that code that hangs under a tool costs one limit per lab,
    not one per test."""
    findings = []
    for tool in tools:
        if tool in stuck:
            findings.append(f"{tool}: not run, it did not finish on an earlier test of this lab")
            continue
        # Ten times the time, for the process and for each test's own
        # .timeout (WB_TIMEOUT_SCALE, common/wb_test.c).
        wrapped = dict(lim, wall_s=lim["wall_s"] * 10, cpu_s=lim["cpu_s"] * 10,
                       env={"WB_TIMEOUT_SCALE": "10"},
                       wrapper=labs.sanitizer_command(tool)
                       + (["--racecheck-report", "hazard"] if tool == "racecheck" else []))
        run = judge.run_test(binary, reference_bin, t["suite"], t["test"], wrapped, seed,
                             data_dirs, source)
        lines = labs.sanitizer_findings(run["output"])
        if run["timed_out"]:
            stuck.add(tool)
            findings.append(f"{tool}: did not finish within {wrapped['wall_s']} s")
        elif lines:
            findings.append(f"{tool}: " + " / ".join(lines[:3]))
    return findings
