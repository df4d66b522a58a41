"""The student's progress: every lab's stages from its hints.txt, each
stage's state from the last test results (build/results/<lab>-<side>/: the
Criterion JSON report and the timing CSVs, as the grader writes them), and
one word for a whole lab (status.py and watching.py show them).

Stages: a lab's work is numbered stage 0, 1, 2, ... Its Criterion tests named
`stageN_...` check stage N, and its hints.txt has a `[stage N]` section for
each.
"""
import csv
import re
from pathlib import Path

from shared import labs
from . import skeleton
from .testruns import RESULTS, load_report

STAGE_TEST = re.compile(r"^stage(\d+)_")
LOCATION = re.compile(r"^\S+:\d+: ")   # where the assertion is: "../common/wb_rules.c:262: "


def read_hints(folder):
    """{stage: (title, [hint, ...])} from labs/<folder>/hints.txt."""
    stages, current = {}, None
    for line in (Path(labs.ROOT) / "labs" / folder / "hints.txt").read_text().splitlines():
        if line.startswith("#") or (not line.strip() and current is None):
            continue
        header = re.match(r"^\[stage (\d+)\]\s*(.*)$", line)
        if header:
            current = int(header.group(1))
            stages[current] = (header.group(2).strip(), [])
        elif current is not None and re.match(r"^\d+\.\s", line):
            stages[current][1].append(re.sub(r"^\d+\.\s+", "", line))
        elif current is not None and line.startswith(" ") and stages[current][1]:
            stages[current][1][-1] += " " + line.strip()
    return stages


# ------------------------------------------------------------ test results
def tests_by_stage(report):
    """{stage or None: [test dicts]} from a Criterion JSON report."""
    stages = {}
    for suite in report.get("test_suites", []):
        for test in suite.get("tests", []):
            match = STAGE_TEST.match(test["name"])
            stage = int(match.group(1)) if match else None
            stages.setdefault(stage, []).append(dict(test, suite=suite["name"]))
    return stages


def first_message(test):
    """What a failed test says, in its first line that says something: not
    where the assertion is, not the name of the file it is about."""
    for message in test.get("messages") or []:
        text = LOCATION.sub("", message).strip()
        if text and not text.endswith(":"):
            return text
    return test["status"].lower()


def skip_reason(tests):
    """Why tests were skipped, as the first of them said ("no usable GPU: ...")."""
    for test in tests:
        for message in test.get("messages") or []:
            return re.sub(r"^GPU test skipped:\s*", "", message)
    return "no usable GPU"


def stage_times(name, side):
    """{stage: median ms} from the timing CSVs a side wrote: rows whose first
    cell names a stage ("3" or "stage 3") and a column whose header starts
    with "time"."""
    times = {}
    folder = RESULTS / f"{name}-{side}"
    for file in sorted(folder.glob("*.csv")) if folder.is_dir() else []:
        with open(file) as f:
            rows = list(csv.reader(f))
        if not rows:
            continue
        header = rows[0]
        time_col = next((i for i, h in enumerate(header) if h.lower().startswith("time")), None)
        if time_col is None or not header[0].lower().startswith("stage"):
            continue
        for row in rows[1:]:
            match = re.match(r"^(?:stage\s*)?(\d+)\b", row[0].strip().lower())
            try:
                if match and row != header:
                    times[int(match.group(1))] = float(row[time_col])
            except (ValueError, IndexError):
                continue
    return times


def lowest_failure(report):
    """(test, suite) of the failed test of the lowest stage (a test of no
    stage, which checks every stage, counts as the lowest), or (None, None)."""
    failed = [(test, suite["name"]) for suite in report.get("test_suites", [])
              for test in suite.get("tests", []) if test["status"] in ("FAILED", "ERRORED")]
    if not failed:
        return None, None
    return min(failed, key=lambda entry: int(STAGE_TEST.match(entry[0]["name"]).group(1))
               if STAGE_TEST.match(entry[0]["name"]) else -1)


def stage_states(folder, name, within):
    """[(stage, title, state, detail)] for every stage in hints.txt. A stage
    of a lab whose kernels.cu is still the skeleton is "not started" rather
    than failing or not run (its GPU tests skipped stay "skipped": why they
    did not run matters more)."""
    report = load_report(name, "student")
    by_stage = tests_by_stage(report) if report else {}
    mine, reference = stage_times(name, "student"), stage_times(name, "reference")
    states = []
    for stage, (title, _) in sorted(read_hints(folder).items()):
        tests = by_stage.get(stage, []) + by_stage.get(None, [])
        statuses = {t["status"] for t in tests if not t["name"].startswith("timing")}
        if report is None or not statuses:
            state, detail = "not run", ""
        elif statuses & {"FAILED", "ERRORED"}:
            bad = next(t for t in tests if t["status"] in ("FAILED", "ERRORED"))
            state, detail = "failing", f"{bad['name']}: {first_message(bad)}"
        elif "SKIPPED" in statuses:   # a stage is passing only when all of its tests ran
            state, detail = "skipped", skip_reason(tests)
        else:
            state, detail = "passing", ""
            if stage in mine and stage in reference and mine[stage] > 0:
                ratio = reference[stage] / mine[stage]
                detail = f"{100 * ratio:.0f}% of the reference's speed"
                if ratio >= 1 - within / 100:
                    state = "fast"
        states.append((stage, title, state, detail))
    if any(s in ("failing", "not run") for _, _, s, _ in states) and skeleton.untouched(folder):
        states = [(stage, title, "not started" if state in ("failing", "not run") else state,
                   "" if state in ("failing", "not run") else detail)
                  for stage, title, state, detail in states]
    return states


def lab_state(states):
    """One word for a whole lab: passing when every stage passes; else its
    stages' least advanced state."""
    found = {state for _, _, state, _ in states}
    if found <= {"passing", "fast"}:
        return "passing"
    return next(s for s in ("not started", "failing", "skipped", "not run") if s in found)
