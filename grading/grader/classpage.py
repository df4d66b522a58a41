"""The class at a glance: one self-contained HTML page that a batch (local
or Slurm) writes beside its CSV (grades.csv -> grades.html). Inline CSS and
SVG, no script and nothing fetched, so it opens anywhere, offline.

What it shows: the score distribution of each lab (from the CSV's rows, so
the figures match the CSV), each test's failure rate with its most common
first message, the sanitizer's findings, the speed against the reference,
and a link to each submission's report (its log and JSON in the logs
folder). The figures carry their numbers as data-* attributes, which
tests/grader/test_grader.py compares with the CSV in headless Chromium.
"""
import html
import json
import math
import os
import re
import time
import urllib.parse
from collections import Counter

BINS = 10   # score bins of 10 % each; full marks fall in the last one
PER_LAB = re.compile(r"([^=;]+)=([^/;]+)/([^(;]+)\(([^)]*)\)")
STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: 70em; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
.note { background: #fff4d6; border-left: 4px solid #e0a800; padding: .5em 1em; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { padding: .2em .7em; text-align: left; border-bottom: 1px solid #eee; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.figures { display: flex; flex-wrap: wrap; gap: 1.5em; }
figure { margin: 0; } figcaption { font-weight: bold; }
svg text { font-size: 10px; fill: #444; }
.bin { fill: #3b7dd8; } .speed { fill: #2a9d5c; } .reference { stroke: #c33; stroke-dasharray: 4 2; }
.bar { display: inline-block; height: .8em; background: #d9534f; }
"""


def esc(value):
    return html.escape(str(value), quote=True)


def lab_scores(rows):
    """{lab: [score / max_score]} from the CSV rows' per_lab cells."""
    scores = {}
    for row in rows:
        for lab, score, max_score, _ in PER_LAB.findall(row["per_lab"]):
            if float(max_score) > 0:
                scores.setdefault(lab, []).append(float(score) / float(max_score))
    return scores


def bin_counts(fractions):
    counts = [0] * BINS
    for fraction in fractions:
        counts[min(BINS - 1, max(0, int(fraction * BINS)))] += 1
    return counts


def histogram(lab, fractions):
    """An SVG bar per 10 % of the score, each with its count."""
    counts = bin_counts(fractions)
    width, height, bar = 260, 120, 24
    tallest = max(counts) or 1
    top = 14   # room for the count above the tallest bar
    parts = [f'<svg width="{width}" height="{top + height + 20}" role="img" aria-label="{esc(lab)} scores">']
    for i, count in enumerate(counts):
        h = round(height * count / tallest)
        x = 10 + i * (bar + 1)
        parts.append(f'<rect class="bin" data-lab="{esc(lab)}" data-bin="{i}" data-count="{count}" '
                     f'x="{x}" y="{top + height - h}" width="{bar}" height="{h}">'
                     f'<title>{i * 10}-{i * 10 + 10}%: {count}</title></rect>')
        if count:
            parts.append(f'<text x="{x + bar / 2}" y="{top + height - h - 2}" text-anchor="middle">{count}</text>')
    parts.append(f'<text x="10" y="{top + height + 14}">0%</text>'
                 f'<text x="{10 + BINS * (bar + 1)}" y="{top + height + 14}" text-anchor="end">100%</text></svg>')
    return f"<figure><figcaption>{esc(lab)} ({len(fractions)})</figcaption>{''.join(parts)}</figure>"


def speed_chart(lab, speeds):
    """One bar per submission (sorted), its speed against the reference's;
    the dashed line is the reference (100%)."""
    speeds = sorted(speeds, key=lambda s: -s[1])
    height, bar, top = 120, 14, max(2.0, max(s for _, s in speeds))
    parts = [f'<svg width="{20 + len(speeds) * (bar + 2)}" height="{height + 20}">']
    for i, (name, speed) in enumerate(speeds):
        h = round(height * speed / top)
        parts.append(f'<rect class="speed" data-lab="{esc(lab)}" data-submission="{esc(name)}" '
                     f'data-speed="{speed:.4f}" x="{10 + i * (bar + 2)}" y="{height - h}" width="{bar}" '
                     f'height="{h}"><title>{esc(name)}: {100 * speed:.0f}% of the reference</title></rect>')
    y, right = height - round(height / top), 20 + len(speeds) * (bar + 2)
    parts.append(f'<line class="reference" x1="0" x2="{right}" y1="{y}" y2="{y}"/>'
                 f'<text x="{right}" y="{y - 3}" text-anchor="end">reference (100%)</text></svg>')
    return f"<figure><figcaption>{esc(lab)}</figcaption>{''.join(parts)}</figure>"


def load_reports(rows, rows_dir):
    """{submission: its JSON report} for the rows whose report is there."""
    found = {}
    for row in rows:
        try:
            with open(os.path.join(rows_dir, row["submission"] + ".json")) as f:
                found[row["submission"]] = json.load(f)
        except (OSError, ValueError):
            continue
    return found


def test_outcomes(reports):
    """{lab/test: {"passed", "failed", "not run", "messages": Counter}}."""
    tests = {}
    for report in reports.values():
        for lab in report.get("labs", []):
            for t in lab["tests"]:
                entry = tests.setdefault(f"{lab['lab']}/{t['test']}",
                                         {"passed": 0, "failed": 0, "not run": 0, "messages": Counter()})
                if t.get("skipped") or t["output"].startswith("not run"):
                    entry["not run"] += 1
                elif t["status"] == "passed":
                    entry["passed"] += 1
                else:
                    entry["failed"] += 1
                    first = (t["output"].splitlines() or ["failed"])[0]
                    entry["messages"][re.sub(r"^FAILED:\s*", "", first)[:160]] += 1
    return tests


def failure_table(tests):
    ranked = sorted(tests.items(), key=lambda kv: (-kv[1]["failed"] / max(1, kv[1]["failed"] + kv[1]["passed"]),
                                                   kv[0]))
    out = ["<table><tr><th>test</th><th>failed</th><th>rate</th><th>did not run</th>"
           "<th>most common first message</th></tr>"]
    for name, e in ranked:
        ran = e["failed"] + e["passed"]
        rate = e["failed"] / ran if ran else 0.0
        message, count = (e["messages"].most_common(1) or [("", 0)])[0]
        out.append(f'<tr class="test" data-test="{esc(name)}" data-failed="{e["failed"]}" data-ran="{ran}" '
                   f'data-not-run="{e["not run"]}"><td>{esc(name)}</td><td class="num">{e["failed"]}/{ran}</td>'
                   f'<td><span class="bar" style="width:{round(100 * rate)}px"></span> {100 * rate:.0f}%</td>'
                   f'<td class="num">{e["not run"]}</td>'
                   f'<td>{esc(message)}{f" ({count}x)" if count else ""}</td></tr>')
    return "".join(out) + "</table>"


def sanitizer_table(reports):
    findings = Counter()
    for report in reports.values():
        for lab in report.get("labs", []):
            for t in lab["tests"]:
                for finding in t.get("sanitizer", []):
                    findings[(f"{lab['lab']}/{t['test']}", finding.split(":")[0])] += 1
    checked = any("sanitizer" in t for r in reports.values() for lab in r.get("labs", []) for t in lab["tests"])
    if not checked:
        return "<p>No test ran under compute-sanitizer in this batch (grade with --sanitize).</p>"
    if not findings:
        return "<p>compute-sanitizer ran and found nothing.</p>"
    return ("<table><tr><th>test</th><th>tool</th><th>submissions with findings</th></tr>"
            + "".join(f"<tr><td>{esc(t)}</td><td>{esc(tool)}</td><td class='num'>{n}</td></tr>"
                      for (t, tool), n in sorted(findings.items())) + "</table>")


def speeds_by_lab(reports):
    speeds = {}
    for name, report in sorted(reports.items()):
        for lab in report.get("labs", []):
            speed = (lab.get("perf") or {}).get("speed_vs_reference")
            if isinstance(speed, (int, float)) and math.isfinite(speed) and speed > 0:
                speeds.setdefault(lab["lab"], []).append((name, float(speed)))
    return speeds


def submission_rows(rows, rows_dir, page_dir):
    out = ["<table><tr><th>submission</th><th>score</th><th>labs built</th><th>GPU ran</th>"
           "<th>rejected or failed</th><th>report</th></tr>"]
    for row in rows:
        links = []
        for ext in (".log", ".json"):
            path = os.path.join(rows_dir, row["submission"] + ext)
            if os.path.exists(path):
                href = urllib.parse.quote(os.path.relpath(path, page_dir))
                links.append(f'<a class="report" href="{esc(href)}">{ext[1:]}</a>')
        out.append(f'<tr class="submission" data-submission="{esc(row["submission"])}" '
                   f'data-score="{esc(row["score"])}"><td>{esc(row["submission"])}</td>'
                   f'<td class="num">{esc(row["score"])}/{esc(row["max_score"])}</td>'
                   f'<td class="num">{esc(row["labs_built"])}/{esc(row["labs_total"])}</td>'
                   f'<td>{esc(row["gpu_ran"])}</td><td>{esc(row["rejected"][:200])}</td>'
                   f'<td>{" ".join(links) or "none"}</td></tr>')
    return "".join(out) + "</table>"


def page(rows, rows_dir, page_dir, csv_name):
    reports = load_reports(rows, rows_dir)
    no_gpu = not any(str(r["gpu_ran"]) == "True" for r in rows)
    speeds = speeds_by_lab(reports)
    body = [f"<h1>The class at a glance: {len(rows)} submissions</h1>",
            f"<p>From <a href=\"{esc(urllib.parse.quote(csv_name))}\">{esc(csv_name)}</a>, "
            f"written {esc(time.strftime('%Y-%m-%d %H:%M %Z'))}.</p>"]
    if no_gpu:
        body.append('<p class="note" id="no-gpu">The GPU tests did not run in this batch (no usable '
                    "GPU where it ran): the scores count nothing but builds, and there are no "
                    "timings.</p>")
    body.append("<h2>Score distribution per lab</h2><div class=\"figures\">"
                + "".join(histogram(lab, fractions) for lab, fractions in lab_scores(rows).items())
                + "</div>")
    body.append("<h2>Tests: failure rate and most common first message</h2>"
                + failure_table(test_outcomes(reports)))
    body.append("<h2>Sanitizer findings</h2>" + sanitizer_table(reports))
    body.append("<h2>Speed against the reference</h2>"
                + ("<div class=\"figures\">" + "".join(speed_chart(lab, s) for lab, s in speeds.items())
                   + "</div>" if speeds else "<p>No graded timing in this batch.</p>"))
    body.append("<h2>Submissions</h2>" + submission_rows(rows, rows_dir, page_dir))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>cuda-workbook: {len(rows)} submissions</title><style>{STYLE}</style></head>"
            f"<body>{''.join(body)}</body></html>\n")


def page_path(csv_path):
    return os.path.splitext(csv_path)[0] + ".html"


def write(rows, rows_dir, csv_path):
    """Writes the page beside the CSV; returns its path."""
    path = page_path(csv_path)
    folder = os.path.dirname(os.path.abspath(path))
    with open(path, "w", encoding="utf-8") as f:
        f.write(page(rows, os.path.abspath(rows_dir), folder, os.path.basename(csv_path)))
    return path
