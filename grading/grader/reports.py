"""What the grader writes: the terminal scoreboard, Gradescope's results.json
(validate_gradescope; schema in grading/README.md), JUnit XML (junitxml.py),
CSV and JSON.

Whatever the compiler, the test or the submission printed, every file
written here parses: text loses the characters XML 1.0 forbids (they are
written as escapes such as \\x1b), JSON has no NaN or Infinity (null in the
full report; 0 in Gradescope's score fields, which must be numbers, with a
note saying so), the CSV has no 'nan'; a submission the grader could not
grade still gets every report (failed)."""
import csv
import json
import math
import os
import re

from . import junitxml

CSV_FIELDS = ["submission", "score", "max_score", "labs_built", "labs_total", "gpu_ran",
              "rejected", "per_lab"]
FAILED = "the grader failed on this submission: "
# XML 1.0 allows tab, newline, carriage return and these ranges only: not
# the other control characters (a terminal's colour codes, NUL), nor lone
# surrogates (the bytes of output that was not UTF-8), nor U+FFFE and U+FFFF.
NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def safe_text(text):
    """text with what XML 1.0 forbids written as Python escapes (\\x1b)."""
    return NOT_XML.sub(lambda m: repr(m.group())[1:-1], text)


def finite(value, default=0.0):
    """value if it is a finite number, else default (NaN, infinity, None)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return value if ok else default


def cleaned(value, non_finite, replaced, where="report"):
    """A copy of value (dicts, lists, strings, numbers) with every string made
    safe_text and every NaN or infinity replaced by non_finite; where each
    replacement was made is appended to the list replaced."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        replaced.append(where)
        return non_finite
    if isinstance(value, dict):
        return {k: cleaned(v, non_finite, replaced, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [cleaned(v, non_finite, replaced, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def make(results, seconds, source, ignored, isolation):
    built = [r for r in results if r["build"] == "ok"]   # none built: no GPU test ran
    return {"submission": source, "labs": results, "execution_time": round(seconds, 1),
            "score": round(sum(r["score"] for r in results), 3),
            "max_score": round(sum(r["max_score"] for r in results), 3),
            "gpu_ran": bool(built) and all(r["gpu_ran"] for r in built),
            "ignored": ignored, "isolation": isolation, "rejected": ""}


def rejected(reason, source):
    return {"submission": source, "labs": [], "execution_time": 0.0, "score": 0.0, "max_score": 0.0,
            "gpu_ran": False, "ignored": [], "isolation": "", "rejected": reason}


def failed(reason, source):
    """The report of a submission that the grader could not grade (it raised,
    or the instructor's tree is broken): every report is still written, and
    says so, so that no submission is left without one."""
    return rejected(FAILED + str(reason), source)


def summary_lines(report):
    lines = []
    if report["rejected"].startswith(FAILED):
        return [report["rejected"]]
    if report["rejected"]:
        return [f"SUBMISSION REJECTED: {report['rejected']}"]
    if not report["gpu_ran"] and any(r["build"] == "ok" for r in report["labs"]):
        lines.append("NOTE: no usable GPU here: the labs were built, but GPU tests were NOT run "
                     "(they score nothing here).")
    for r in report["labs"]:
        if r["message"]:
            lines.append(f"{r['lab']}: {r['message']}")
    checked = [(r["lab"], t) for r in report["labs"] for t in r["tests"] if "sanitizer" in t]
    if checked:
        found = [f"{lab}/{t['test']}: {finding}" for lab, t in checked for finding in t["sanitizer"]]
        lines.append(f"compute-sanitizer ran on {len(checked)} passing test(s): "
                     + (f"{len(found)} finding(s)" if found else "no findings"))
        lines += ["  " + f[:300] for f in found]
    if report["ignored"]:
        lines.append("ignored files in the submission: " + ", ".join(report["ignored"][:10]))
    lines.append("isolation: " + report["isolation"])
    return lines


def print_scoreboard(report):
    rows = []
    for r in report["labs"]:
        passed = sum(t["status"] == "passed" for t in r["tests"])
        perf = r["perf"]
        speed = "-"
        if perf and finite(perf["speed_vs_reference"]) and finite(perf["student_ms"]):
            speed = f"{perf['student_ms']:.3f} ms = {100 * perf['speed_vs_reference']:.0f}% of ref"
        seconds = " ".join(f"{phase} {s:g}" for phase, s in r.get("phases", {}).items())
        rows.append((r["lab"], r["build"], f"{passed}/{len(r['tests'])}",
                     f"{r['score']:g}/{r['max_score']:g}", speed, seconds or "-"))
    header = ("lab", "build", "tests passed", "points", "time vs reference", "seconds per phase")
    widths = [max(len(x[i]) for x in rows + [header]) for i in range(len(header))]
    print()
    for row in [header] + rows:
        print(safe_text("  ".join(c.ljust(w) for c, w in zip(row, widths))))
    print(f"\ntotal: {report['score']:g} / {report['max_score']:g}")
    if report.get("phases_s"):
        print("wall time: " + ", ".join(f"{part} {s:g} s" for part, s in report["phases_s"].items())
              + f" ({report['jobs']} at a time)")
    for line in summary_lines(report):
        print(safe_text(line))   # a strict UTF-8 terminal cannot write lone surrogates


def gradescope(report):
    tests = []
    for r in report["labs"]:
        for t in r["tests"]:
            tests.append({"name": t["name"], "score": t["score"], "max_score": t["max_score"],
                          "status": "passed" if t["status"] == "passed" else "failed",
                          "output": t["output"][-8000:], "visibility": t["visibility"]})
        if (p := r["perf"]):
            tests.append({"name": f"{r['lab']}/performance ({p['test']})", "score": p["score"],
                          "max_score": p["max_score"],
                          "status": "passed" if p["score"] >= p["max_score"] else "failed",
                          "output": f"student {p['student_ms']} ms, reference {p['reference_ms']} ms",
                          "visibility": "visible"})
    # Only real times: a NaN or 0 ms would lead an ascending leaderboard.
    leaderboard = [{"name": f"{r['lab']} ms", "value": r["perf"]["student_ms"], "order": "asc"}
                   for r in report["labs"] if r["perf"] and finite(r["perf"]["student_ms"]) > 0]
    out = {"score": report["score"], "max_score": report["max_score"],
           "execution_time": report["execution_time"], "output": "\n".join(summary_lines(report)),
           "visibility": "visible", "tests": tests}
    if leaderboard:
        out["leaderboard"] = leaderboard
    replaced = []
    out = cleaned(out, 0, replaced, "results")
    if replaced:
        out["output"] += ("\nNOTE: not a finite number (NaN or infinity), written as 0: "
                          + ", ".join(replaced[:10]))
    return out


def validate_gradescope(doc):
    """The schema of our results.json (grading/README.md); returns the list of
    problems, empty when valid."""
    problems = []

    def need(obj, key, kinds, where):
        if key not in obj:
            problems.append(f"{where}: missing {key}")
        elif not isinstance(obj[key], kinds) or isinstance(obj[key], bool):
            problems.append(f"{where}: {key} has type {type(obj[key]).__name__}")

    if not isinstance(doc, dict):
        return ["top level is not an object"]
    for key in ("score", "max_score", "execution_time"):
        need(doc, key, (int, float), "results")
    need(doc, "output", str, "results")
    need(doc, "tests", list, "results")
    allowed = {"score", "max_score", "execution_time", "output", "tests", "leaderboard", "visibility",
               "stdout_visibility", "extra_data", "output_format"}
    problems += [f"results: unknown key {k}" for k in doc if k not in allowed]
    for i, t in enumerate(doc.get("tests", []) if isinstance(doc.get("tests"), list) else []):
        where = f"tests[{i}]"
        if not isinstance(t, dict):
            problems.append(f"{where}: not an object")
            continue
        for key in ("score", "max_score"):
            need(t, key, (int, float), where)
        for key in ("name", "output", "status", "visibility"):
            need(t, key, str, where)
        if t.get("status") not in ("passed", "failed"):
            problems.append(f"{where}: status {t.get('status')!r}")
        if t.get("visibility") not in ("visible", "hidden", "after_due_date", "after_published"):
            problems.append(f"{where}: visibility {t.get('visibility')!r}")
        if isinstance(t.get("score"), (int, float)) and isinstance(t.get("max_score"), (int, float)) \
                and not 0 <= t["score"] <= t["max_score"]:
            problems.append(f"{where}: score outside 0..max_score")
    for i, e in enumerate(doc.get("leaderboard", [])):
        if not isinstance(e, dict) or "name" not in e or "value" not in e:
            problems.append(f"leaderboard[{i}]: needs name and value")
    return problems


def csv_row(report):
    """One CSV row; a score that is not a finite number (NaN, or null in a
    JSON report read back) is written as 0, never 'nan'."""
    return {"submission": safe_text(report["submission"]), "score": finite(report["score"]),
            "max_score": finite(report["max_score"]),
            "labs_built": sum(r["build"] == "ok" for r in report["labs"]),
            "labs_total": len(report["labs"]), "gpu_ran": report["gpu_ran"],
            "rejected": safe_text(report["rejected"]),
            "per_lab": ";".join(f"{r['lab']}={finite(r['score']):g}/{finite(r['max_score']):g}"
                                f"({r['build']})" for r in report["labs"])}


def write_all(report, args):
    """Every report asked for. JSON is written with allow_nan=False: a NaN
    that got past cleaned() raises here rather than writing invalid JSON."""
    if args.gradescope:
        os.makedirs(os.path.dirname(os.path.abspath(args.gradescope)), exist_ok=True)
        doc = gradescope(report)
        problems = validate_gradescope(doc)
        if problems:   # the grader's bug, reported as such rather than left without a file
            doc = gradescope(failed("internal error: results.json does not validate: "
                                    + "; ".join(problems), report["submission"]))
        with open(args.gradescope, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, allow_nan=False)
    if args.junit:
        junitxml.tree(cleaned(report, 0, [])).write(args.junit, encoding="utf-8", xml_declaration=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(cleaned(report, None, []), f, indent=1, allow_nan=False)
    if args.csv:
        new = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
        with open(args.csv, "a", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
            if new:
                w.writeheader()
            w.writerow(csv_row(report))
