"""The JUnit XML report of a grade (reports.py writes it): one test suite
per lab, one case per test; a test that did not run (no usable GPU, or it
skipped itself) is <skipped/>, a test that ran and failed, or that a failed
build kept from running, is <failure/>."""
import xml.etree.ElementTree as ET


def first_line(text, default):
    return text.splitlines()[0][:200] if text else default


def tree(report):
    """The XML tree of a report whose text is already XML-safe (reports.cleaned)."""
    suites = ET.Element("testsuites", name="cuda-workbook")
    total = failures = skipped = 0
    if report["rejected"]:   # a rejected or failed submission: one failing case that says why
        s = ET.SubElement(suites, "testsuite", name="submission", tests="1", failures="1", skipped="0")
        case = ET.SubElement(s, "testcase", classname="submission", name="submission")
        ET.SubElement(case, "failure", message=report["rejected"][:200]).text = report["rejected"]
        total = failures = 1
    for r in report["labs"]:
        s = ET.SubElement(suites, "testsuite", name=r["lab"], tests=str(len(r["tests"])))
        bad = not_run = 0
        for t in r["tests"]:
            case = ET.SubElement(s, "testcase", classname=r["lab"], name=t["test"],
                                 time=str(t.get("seconds", 0)))
            if t.get("skipped"):
                not_run += 1
                ET.SubElement(case, "skipped", message=first_line(t["skipped"], "not run"))
            elif t["status"] != "passed":
                bad += 1
                ET.SubElement(case, "failure", message=first_line(t["output"], "failed")).text = t["output"]
        s.set("failures", str(bad))
        s.set("skipped", str(not_run))
        total += len(r["tests"])
        failures += bad
        skipped += not_run
    suites.set("tests", str(total))
    suites.set("failures", str(failures))
    suites.set("skipped", str(skipped))
    return ET.ElementTree(suites)
