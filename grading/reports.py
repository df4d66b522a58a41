"""What the grader writes: the terminal scoreboard, Gradescope's
results.json (validated by validate_gradescope, the schema documented in
grading/README.md), JUnit XML, and a CSV/JSON row per submission."""
import csv
import json
import os
import xml.etree.ElementTree as ET

CSV_FIELDS = ["submission", "score", "max_score", "labs_built", "labs_total", "gpu_ran",
              "rejected", "per_lab"]


def make(results, seconds, source, ignored, isolation):
    report = {"submission": source, "labs": results, "execution_time": round(seconds, 1),
              "score": round(sum(r["score"] for r in results), 3),
              "max_score": round(sum(r["max_score"] for r in results), 3),
              "gpu_ran": all(r["gpu_ran"] for r in results if r["build"] == "ok"),
              "ignored": ignored, "isolation": isolation, "rejected": ""}
    return report


def rejected(reason, source):
    return {"submission": source, "labs": [], "execution_time": 0.0, "score": 0.0, "max_score": 0.0,
            "gpu_ran": False, "ignored": [], "isolation": "", "rejected": reason}


def summary_lines(report):
    lines = []
    if report["rejected"]:
        return [f"SUBMISSION REJECTED: {report['rejected']}"]
    if not report["gpu_ran"]:
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
        if perf and perf["speed_vs_reference"]:
            speed = f"{perf['student_ms']:.3f} ms = {100 * perf['speed_vs_reference']:.0f}% of ref"
        rows.append((r["lab"], r["build"], f"{passed}/{len(r['tests'])}",
                     f"{r['score']:g}/{r['max_score']:g}", speed))
    header = ("lab", "build", "tests passed", "points", "time vs reference")
    widths = [max(len(x[i]) for x in rows + [header]) for i in range(len(header))]
    print()
    for row in [header] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    print(f"\ntotal: {report['score']:g} / {report['max_score']:g}")
    for line in summary_lines(report):
        print(line)


def gradescope(report):
    tests = []
    for r in report["labs"]:
        for t in r["tests"]:
            tests.append({"name": t["name"], "score": t["score"], "max_score": t["max_score"],
                          "status": "passed" if t["status"] == "passed" else "failed",
                          "output": t["output"][-8000:], "visibility": t["visibility"]})
        if r["perf"]:
            p = r["perf"]
            tests.append({"name": f"{r['lab']}/performance ({p['test']})", "score": p["score"],
                          "max_score": p["max_score"],
                          "status": "passed" if p["score"] >= p["max_score"] else "failed",
                          "output": f"student {p['student_ms']} ms, reference {p['reference_ms']} ms",
                          "visibility": "visible"})
    leaderboard = [{"name": f"{r['lab']} ms", "value": r["perf"]["student_ms"], "order": "asc"}
                   for r in report["labs"] if r["perf"] and r["perf"]["student_ms"]]
    out = {"score": report["score"], "max_score": report["max_score"],
           "execution_time": report["execution_time"], "output": "\n".join(summary_lines(report)),
           "visibility": "visible", "tests": tests}
    if leaderboard:
        out["leaderboard"] = leaderboard
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


def junit(report):
    suites = ET.Element("testsuites", name="cuda-workbook", tests="0", failures="0")
    total = failures = 0
    for r in report["labs"]:
        s = ET.SubElement(suites, "testsuite", name=r["lab"], tests=str(len(r["tests"])))
        bad = 0
        for t in r["tests"]:
            case = ET.SubElement(s, "testcase", classname=r["lab"], name=t["test"],
                                 time=str(t.get("seconds", 0)))
            if t["status"] != "passed":
                bad += 1
                ET.SubElement(case, "failure", message=t["output"].splitlines()[0][:200] if t["output"] else "failed").text = t["output"]
        s.set("failures", str(bad))
        total += len(r["tests"])
        failures += bad
    suites.set("tests", str(total))
    suites.set("failures", str(failures))
    return ET.ElementTree(suites)


def csv_row(report):
    return {"submission": report["submission"], "score": report["score"],
            "max_score": report["max_score"],
            "labs_built": sum(r["build"] == "ok" for r in report["labs"]),
            "labs_total": len(report["labs"]), "gpu_ran": report["gpu_ran"],
            "rejected": report["rejected"],
            "per_lab": ";".join(f"{r['lab']}={r['score']:g}/{r['max_score']:g}({r['build']})"
                                for r in report["labs"])}


def write_all(report, args):
    if args.gradescope:
        os.makedirs(os.path.dirname(os.path.abspath(args.gradescope)), exist_ok=True)
        doc = gradescope(report)
        problems = validate_gradescope(doc)
        if problems:
            raise SystemExit("internal error: results.json does not validate: " + "; ".join(problems))
        with open(args.gradescope, "w") as f:
            json.dump(doc, f, indent=1)
    if args.junit:
        junit(report).write(args.junit, encoding="utf-8", xml_declaration=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if args.csv:
        new = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
        with open(args.csv, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
            if new:
                w.writeheader()
            w.writerow(csv_row(report))
