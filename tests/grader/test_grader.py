#!/usr/bin/env python3
"""The grader's own test: grades lab 00's reference, skeleton and hostile
submissions (hostile.py) as a batch and checks every verdict.

  test_grader.py cpu   no GPU needed: submission formats and rejections,
                       compile/static verdicts, results.json schema, JUnit,
                       the static check on the honest corpus (honest.py)
                       and on hostile.STATIC_CASES
  test_grader.py gpu   on a GPU (exit 77 without): every hostile and honest
                       case, plus a batch of >= 20 submissions and its CSV
Prints the verdict table. --out DIR keeps the CSV and reports there."""
import argparse
import contextlib
import csv
import glob
import html.parser
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import xml.etree.ElementTree as ET
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "grading"))
from grader import batch  # noqa: E402
import honest  # noqa: E402
import hostile  # noqa: E402
from shared import labs  # noqa: E402
from grader import objcheck  # noqa: E402
from grader import reports  # noqa: E402
from grader import rubric  # noqa: E402

WORKBOOK = [sys.executable, os.path.join(ROOT, "grading", "workbook.py")]
RUBRIC = os.path.join(HERE, "rubric-fast.toml")
LAB = "00-vector-add"


def put(folder, text):
    os.makedirs(os.path.join(folder, LAB))
    with open(os.path.join(folder, LAB, "kernels.cu"), "w") as f:
        f.write(text)


def make_submissions(base, gpu):
    """Returns {submission name: (build, tests)} expected."""
    reference = open(os.path.join(ROOT, "solutions", LAB, "kernels.cu")).read()
    skeleton = open(os.path.join(ROOT, "labs", LAB, "kernels.cu")).read()
    expected = {}
    for case in hostile.CASES:
        if gpu or (case[5] and case[0] in hostile.FULL_GRADE_ON_CPU) or case[0] == "reference":
            put(os.path.join(base, case[0]), hostile.make(reference, case, skeleton))
            expected[case[0]] = (case[3], case[4])
    # A lab missing from the submission is graded as the skeleton, and says so.
    os.makedirs(os.path.join(base, "missing-lab", "01-sync-up"))
    with open(os.path.join(base, "missing-lab", "01-sync-up", "kernels.cu"), "w") as f:
        f.write("// lab 01 only\n")
    expected["missing-lab"] = ("ok", "fail")
    # The same reference as a zip (under a top folder and labs/) and a tar.gz.
    with zipfile.ZipFile(os.path.join(base, "reference-zip.zip"), "w") as z:
        z.writestr(f"mywork/labs/{LAB}/kernels.cu", reference)
        z.writestr("mywork/notes.txt", "ignored")
    with tarfile.open(os.path.join(base, "reference-tar.tar.gz"), "w:gz") as t:
        data = reference.encode()
        info = tarfile.TarInfo(f"{LAB}/kernels.cu")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    # The whole student copy (workbook release) zipped with lab 00 solved:
    # its grading/skeletons/ and other files are ignored, lab 00 is graded.
    copy = os.path.join(base, "..", "student-copy")
    # From the files as they are: any checkout (a copy without .git too) makes one.
    subprocess.run(WORKBOOK + ["release", "--from-working-tree", "--out", copy], stdout=subprocess.DEVNULL,
                   check=True)
    with zipfile.ZipFile(os.path.join(base, "whole-student-copy.zip"), "w") as z:
        for top, _, names in os.walk(copy):
            for name in names:
                path = os.path.join(top, name)
                if os.path.relpath(path, copy) != f"labs/{LAB}/kernels.cu":
                    z.write(path, os.path.join("my-workbook", os.path.relpath(path, copy)))
        z.writestr(f"my-workbook/labs/{LAB}/kernels.cu", reference)
    expected["whole-student-copy.zip"] = ("ok", "pass")
    expected["reference-zip.zip"] = ("ok", "pass")
    expected["reference-tar.tar.gz"] = ("ok", "pass")
    # Hostile archives and folders: refused as a whole.
    with zipfile.ZipFile(os.path.join(base, "traversal.zip"), "w") as z:
        z.writestr(f"../../{LAB}/kernels.cu", reference)
    with tarfile.open(os.path.join(base, "symlink.tar.gz"), "w:gz") as t:
        info = tarfile.TarInfo(f"{LAB}/kernels.cu")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(info)
    os.makedirs(os.path.join(base, "symlink-dir", LAB))
    os.symlink(os.path.join(ROOT, "solutions", LAB, "kernels.cu"),
               os.path.join(base, "symlink-dir", LAB, "kernels.cu"))
    for name in ("traversal.zip", "symlink.tar.gz", "symlink-dir"):
        expected[name] = ("rejected-submission", "fail")
    if gpu:   # the honest corpus: full marks, each
        for name, text in honest.submissions(reference).items():
            put(os.path.join(base, "honest-" + name), text)
            expected["honest-" + name] = ("ok", "pass")
    if gpu:   # a batch of more than 20: more copies of the reference and the skeleton
        for k in range(3):
            put(os.path.join(base, f"reference-copy{k}"), reference)
            expected[f"reference-copy{k}"] = ("ok", "pass")
        put(os.path.join(base, "skeleton-copy"), skeleton)
        expected["skeleton-copy"] = ("ok", "fail")
        put(os.path.join(base, "reference-timed"), reference)
        expected["reference-timed"] = ("ok", "pass")
    return expected


def sanitizer_parse_problems():
    """compute-sanitizer's zero-count summaries are not findings; hazards,
    errors and non-zero summaries are."""
    output = ("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
              "========= ERROR SUMMARY: 0 errors\n")
    problems = []
    if labs.sanitizer_findings(output):
        problems.append(f"sanitizer: clean output read as findings: {labs.sanitizer_findings(output)}")
    found = labs.sanitizer_findings(output + "========= Warning: Race reported between Write access\n"
                                    "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warnings)\n")
    if len(found) != 2:
        problems.append(f"sanitizer: a race and its summary read as {found}")
    return problems


def timing_check_problems():
    """rubric.timing_problem on made-up timings: the grader's own times
    (judge.clock_times) and the judge's floor (timings.csv: case, what,
    reference ms, student ms as reported, warmup, repetitions, floor ms). The
    process's own report is never used: a forged one changes nothing."""
    row = ["c", "w", "0.30", "0.0001", "3", "20", "0.27"]   # a forged report
    honest = {"label": "w", "reference_ms": 0.30, "student_ms": 0.31, "repetitions": 20,
              "problem": None}
    cases = [  # (clock, floor, refused?)
        (honest, "0.27", False),
        (dict(honest, student_ms=0.007), "0.27", True),        # faster than the GPU can
        (dict(honest, student_ms=None, problem="the grader timed no series 'w'"), "0.27", True),
        (dict(honest, reference_ms=float("nan")), "0.27", True),
        (None, "0.27", True),                                  # nothing timed by the grader
        (honest, "x", True),                                   # no floor from the judge
    ]
    problems = []
    for clock, floor, refused in cases:
        why = rubric.timing_problem(row[:6] + [floor], clock)
        if bool(why) != refused:
            problems.append(f"timing {clock}, floor {floor}: {'refused' if why else 'accepted'} ({why})")
    # An honest time scores only when the timing test itself passed (its
    # checks: each timed run's result), and from the grader's times alone.
    perf = {"test": "timing_x", "points": 2, "full_at": 0.5}
    timings = {"rows": [row], "clock": honest}
    for status, scores in (("passed", True), ("failed", False)):
        tests = [{"test": "stage0_x", "status": "passed", "max_score": 1.0},
                 {"test": "timing_x", "status": status, "max_score": 0.0}]
        got = rubric.score_performance(perf, tests, timings)
        if (got["score"] > 0) != scores:
            problems.append(f"performance with the timing test {status}: {got['score']} ({got['why']})")
        elif scores and got["student_ms"] != 0.31:
            problems.append(f"performance scored {got['student_ms']} ms, not the grader's 0.31")
    return problems


def sandbox_problems(tmp):
    """The sandbox itself, without a GPU: a process inside cannot see the
    checkout or $HOME, write outside its folder, signal a process outside,
    or leave a process behind."""
    from grader import sandbox
    ok, why = sandbox.available()
    if not ok:
        print(f"sandbox not available here ({why}): its checks are skipped")
        return []
    scratch = os.path.join(tmp, "scratch")
    os.makedirs(scratch)
    canary = subprocess.Popen(["sleep", "300"])
    home_file = os.path.join(os.path.expanduser("~"), f".wb-sandbox-canary-{os.getpid()}")
    script = f"""
        ls {ROOT} >/dev/null 2>&1 && echo SEES-CHECKOUT
        cat {os.path.join(ROOT, 'grading', 'rubric.toml')} >/dev/null 2>&1 && echo READS-RUBRIC
        touch {home_file} 2>/dev/null && echo WROTE-HOME
        touch {os.path.join(ROOT, 'wb-canary')} 2>/dev/null && echo WROTE-CHECKOUT
        kill -9 {canary.pid} 2>/dev/null && echo KILLED-OUTSIDE
        kill -9 -1 2>/dev/null
        (setsid sleep 600 &) ; echo started > started.txt
    """
    run = sandbox.run(["sh", "-c", script], cwd=scratch, env=sandbox.minimal_env(), wall_s=20,
                      sandbox=sandbox.view_args(rw=[scratch], chdir=scratch))
    problems = [f"sandbox: {word}" for word in ("SEES-CHECKOUT", "READS-RUBRIC", "WROTE-HOME",
                                                 "WROTE-CHECKOUT", "KILLED-OUTSIDE") if word in run["output"]]
    if canary.poll() is not None:
        problems.append("sandbox: a process outside was killed")
    canary.kill()
    left = subprocess.run(["pgrep", "-f", "sleep 600"], stdout=subprocess.PIPE, text=True).stdout.split()
    if left:
        problems.append(f"sandbox: a process outlived it ({left})")
    for path in (home_file, os.path.join(ROOT, "wb-canary")):
        if os.path.exists(path):
            problems.append(f"sandbox: {path} was written")
            os.remove(path)
    if not os.path.exists(os.path.join(scratch, "started.txt")):
        problems.append(f"sandbox: its own folder was not writable: {run['output'][-300:]}")
    return problems


def library_view_problems(tmp):
    """The libraries that do the labs' work are not in the view of the
    student's compile (compilerview.library_binds): an include of CUB finds
    nothing, cooperative groups' reduce stops with the reason, and the
    headers the labs use (cooperative_groups.h, cuda/atomic) still work."""
    from grader import compilerview
    from grader import sandbox
    if not sandbox.available()[0] or not shutil.which("nvcc"):
        print("sandbox or nvcc not available here: the compile view's libraries are not checked")
        return []
    folders, files = compilerview.library_paths()
    if not folders or not files:
        return [f"library view: CUB, Thrust or cooperative groups' reduce not found ({folders}, {files})"]
    src = os.path.join(tmp, "library-view")
    os.makedirs(src)
    sources = {"cub.cu": ("#include <cub/cub.cuh>\n", False),
               "cg-reduce.cu": ("#include <cooperative_groups/reduce.h>\n", False),
               "allowed.cu": ("#include <cooperative_groups.h>\n#include <cuda/atomic>\n", True)}
    view = sandbox.view_args(ro=[src], ro_at=compilerview.library_binds(os.path.join(tmp, "hidden")))
    problems = []
    for name, (text, compiles) in sources.items():
        with open(os.path.join(src, name), "w") as f:
            f.write(text)
        run = sandbox.run(["nvcc", "-E", "-o", "/dev/null", os.path.join(src, name)], cwd=src,
                          env=sandbox.minimal_env(), wall_s=120, sandbox=view)
        if (run["status"] == 0) != compiles:
            problems.append(f"library view: {name} {'failed' if compiles else 'compiled'}: "
                            f"{run['output'][-200:]}")
    return problems


# The include cases of hostile.py that the text check refuses: without it,
# the compile's view and the compiler's list of included files must refuse
# each as well, in seconds (a case must not cost the 180 s compile limit).
INCLUDE_CASES = ("include-after-bom", "include-after-nul", "include-spliced-crlf",
                 "include-splice-blank", "include-after-string-comment", "include-after-raw-string",
                 "pragma-dependency", "incbin-joined-strings", "include-device-file",
                 "include-absolute", "include-solutions")
INCLUDE_SECONDS = 20


_LAB00 = []


def lab00_workspace():
    """One trusted tree of lab 00, configured once, for the checks that
    compile into it (the include view, the hidden tests' leak, the static
    check): each building its own took minutes of CI's time. main()
    removes it."""
    from grader import trees
    if not _LAB00:
        ws = trees.Workspace()
        ws.configure([(LAB, "vector-add")])
        _LAB00.append(ws)
    return _LAB00[0]


def include_view_problems():
    """hostile.py's include cases (INCLUDE_CASES) compiled with the text
    check switched off: each fails in seconds; a file outside the include
    folders that the compile's view holds (a licence text in /usr/share) is
    refused by name; the reference still compiles."""
    import time
    from grader import sandbox
    from grader import studentcompile
    if not sandbox.available()[0] or not shutil.which("nvcc"):
        print("sandbox or nvcc not available here: the compile's view of includes is not checked")
        return []
    reference = open(os.path.join(ROOT, "solutions", LAB, "kernels.cu")).read()
    cases = {case[0]: hostile.make(reference, case) for case in hostile.CASES if case[0] in INCLUDE_CASES}
    licences = sorted(glob.glob("/usr/share/common-licenses/*"))[:1]
    cases.update({"include-licence": f'#include "{path}"\n' + reference for path in licences})
    cases["reference"] = reference
    saved, studentcompile.include_problems = studentcompile.include_problems, lambda text, allowed: []
    problems = []
    try:
        with contextlib.nullcontext(lab00_workspace()) as ws:
            for name, text in cases.items():
                start = time.monotonic()
                ok, message, _ = ws.compile_student(LAB, "vector-add", text.encode(), tag=name)
                seconds = time.monotonic() - start
                print(f"  without the text check: {name:30} {'compiles' if ok else 'refused'} "
                      f"in {seconds:.1f} s")
                if ok != (name == "reference"):
                    problems.append(f"include view: {name} {'compiled' if ok else 'failed'}: {message[-300:]}")
                elif name != "reference" and seconds > INCLUDE_SECONDS:
                    problems.append(f"include view: {name} took {seconds:.0f} s to refuse")
                elif name == "include-licence" and "the source includes" not in message:
                    problems.append(f"include view: a licence text not refused by name: {message[-300:]}")
    finally:
        studentcompile.include_problems = saved
    return problems


def scratch_problems(tmp):
    """The record run's only writable place is a private tmpfs of
    sandbox.TMP_BYTES, its working folder; the channel's folder is there
    read-only; nothing of the grader's host folders is writable."""
    from grader import tworuns
    from grader import sandbox
    if not sandbox.available()[0]:
        return []
    listening = os.path.join(tmp, "scratch-listen")
    os.makedirs(listening)
    # {tmp}/y inside is in the private /tmp (bwrap made {tmp} there to hold
    # the channel's folder): the host's {tmp} must stay without it.
    script = (f"stat -f -c '%T %b %S' /tmp; pwd; touch {listening}/x 2>/dev/null && echo WROTE; "
              f"touch {tmp}/y")
    run = sandbox.run(["sh", "-c", script], cwd=tmp, env=sandbox.minimal_env(), wall_s=20,
                      sandbox=tworuns.record_view("/bin/sh", (), listening))
    lines = run["output"].split("\n")
    fs = lines[0].split()
    if len(fs) != 3 or fs[0] != "tmpfs" or int(fs[1]) * int(fs[2]) != sandbox.TMP_BYTES:
        return [f"scratch: /tmp is not a tmpfs of {sandbox.TMP_BYTES} bytes: {run['output'][-300:]}"]
    if lines[1:2] != ["/tmp"] or "WROTE" in run["output"] or os.path.exists(f"{tmp}/y"):
        return [f"scratch: working folder or writable places wrong: {run['output'][-300:]}"]
    return []


# A namespace-scope object whose constructor prints every string of its own
# executable that holds NEEDLE (found from the ELF header below its code, no
# call the static check refuses): lab 00's hidden test is
# stage0_n_zero_launches_nothing.
LEAK = r"""
#include <elf.h>
#include <stdio.h>
#include <string.h>
#define NEEDLE "n_zero_launches"
static void leak(void)
{
    unsigned long page = (unsigned long)&leak & ~4095UL;
    while (memcmp((const void *)page, "\x7f" "ELF", 4) != 0)
        page -= 4096;
    const Elf64_Ehdr *elf = (const Elf64_Ehdr *)page;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(page + elf->e_phoff);
    unsigned long bias = 0;
    for (int i = 0; i < elf->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
            bias = page - ph[i].p_vaddr;
    for (int i = 0; i < elf->e_phnum; i++) {
        const char *start = (const char *)(bias + ph[i].p_vaddr);
        for (const char *p = start; ph[i].p_type == PT_LOAD && p + 15 <= start + ph[i].p_filesz; p++)
            if (memcmp(p, NEEDLE, 15) == 0) {
                const char *s = p;
                while (s > start && s[-1] >= 32 && s[-1] < 127)
                    s--;
                printf("LEAKED: %.80s\n", s);
            }
    }
}
static struct Leak { Leak() { leak(); } } leak_at_start;
"""


def hidden_leak_problems():
    """The visible tests run from a binary without the hidden tests: a
    submission that prints the strings of its own process finds lab 00's
    hidden test in the binary of the hidden tests (so the check can fail),
    and not in the one whose output students see."""
    from grader import sandbox
    from grader import trees
    hidden = set(rubric.load(rubric.DEFAULT)[1].get("vector-add", {}).get("hidden", []))
    if not hidden:
        return ["hidden leak: grading/rubric.toml hides no test of vector-add any more: "
                "point this check at a lab that has hidden tests"]
    reference = open(os.path.join(ROOT, "solutions", LAB, "kernels.cu")).read()
    with contextlib.nullcontext(lab00_workspace()) as ws:
        ok, log = ws.build_trusted("vector-add")
        if not ok:
            return [f"hidden leak: the trusted tree does not build: {log[-500:]}"]
        status, message, binaries = trees.build_student(
            ws, LAB, "vector-add", (LEAK + reference).encode(), hidden)
        if status != "ok":
            return [f"hidden leak: the leaking submission was not built ({status}): {message[:300]}"]
        seen = {}
        for kind, binary in binaries.items():
            view = sandbox.view_args(ro=[binary, *sandbox.library_dirs(binary)])
            run = sandbox.run([binary, "--filter=vector_add/stage0_sizes"], cwd=ws.root,
                              env=sandbox.minimal_env(), wall_s=60, sandbox=view)
            seen[kind] = sorted(t for t in hidden if t in run["output"])
    problems = []
    if seen["visible"]:
        problems.append(f"hidden leak: the visible tests' binary holds {seen['visible']}")
    if not seen["hidden"]:
        problems.append("hidden leak: the scan found no hidden test even in the hidden tests' "
                        "binary (the check cannot fail)")
    return problems


def static_check_problems():
    """The CPU half of the honest corpus (honest.py), of the static check's
    hostile cases (hostile.STATIC_CASES) and of the other cases decided
    before any test runs (hostile.FULL_GRADE_ON_CPU aside): each compiled as the
    grader compiles it (in its sandbox), checked (objcheck.py) and linked,
    in one trusted tree, two at a time: the build status must be the one
    expected ("ok" for every honest case). A whole grade each would build
    the trusted tree again for every one."""
    import concurrent.futures
    reference = open(os.path.join(ROOT, "solutions", LAB, "kernels.cu")).read()
    skeleton = open(os.path.join(ROOT, "labs", LAB, "kernels.cu")).read()
    cases = {f"honest-{name}": (text, "ok") for name, text in honest.submissions(reference).items()}
    cases.update((case[0], (hostile.make(reference, case, skeleton), case[3]))
                 for case in hostile.STATIC_CASES + [c for c in hostile.CASES if c[5] and c[3] != "ok"
                                                     and c[0] not in hostile.FULL_GRADE_ON_CPU])
    with contextlib.nullcontext(lab00_workspace()) as ws:
        ok, log = ws.build_trusted("vector-add")
        if not ok:
            return [f"static check: the trusted tree does not build: {log[-500:]}"]
        _, reference_obj = ws.kernels_command(LAB, "vector-add", side="reference")

        def build(name):
            text, _ = cases[name]
            ok, output, obj = ws.compile_student(LAB, "vector-add", text.encode(), tag=name)
            if not ok:
                return "failed", labs.compiler_messages(output)[:300]
            problems = objcheck.problems(obj, os.path.join(ws.build, reference_obj))
            if problems:
                return "rejected", "; ".join(problems)[:300]
            ok, output, _ = ws.link_student(LAB, "vector-add", obj, os.path.join(ws.root, name, "test"))
            return ("ok", "") if ok else ("failed", labs.compiler_messages(output)[:300])

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            got = dict(zip(cases, pool.map(build, cases)))
    problems = []
    for name, (status, why) in sorted(got.items()):
        print(f"static check: {name}: {status}{'  ' + why if why else ''}")
        if status != cases[name][1]:
            problems.append(f"static check: {name} {status}, expected {cases[name][1]} ({why})")
    return problems


def verdict(report):
    """(build, tests, reason) as the grader decided, from its JSON report;
    "fail" means that no test scored (the rubric's scored_with keeps the n = 0
    test, which doing nothing passes, from scoring for the skeleton)."""
    if report["rejected"]:
        return "rejected-submission", "fail", report["rejected"]
    lab = report["labs"][0]
    tests = lab["tests"]
    # The timing test passes only when its timed runs were all right: a
    # cheat on them fails it, and scores no performance points.
    timing_test = (lab["perf"] or {}).get("test")
    if all(t["status"] == "passed" for t in tests) and lab["score"] == lab["max_score"]:
        outcome = "pass"
    elif all(t["status"] == "passed" for t in tests if t["test"] != timing_test) and lab["perf"] \
            and lab["perf"]["score"] < lab["perf"]["max_score"]:
        outcome = "slow"
    elif all(t["score"] == 0 for t in tests):
        outcome = "fail"
    else:
        outcome = "mixed"
    reasons = sorted({t["output"].splitlines()[0][:90] for t in tests if t["status"] != "passed"})
    return lab["build"], outcome, (lab["message"].splitlines() or [""])[0][:90] or "; ".join(reasons[:2])


def prerequisite_problems():
    """scored_with on made-up verdicts: the n = 0 test alone scores nothing,
    with stage0_sizes passing it scores."""
    lab_rubric = {"scored_with": {"stage0_n_zero_launches_nothing": "stage0_sizes"}}
    problems = []
    for sizes, expected in (("failed", 0.0), ("passed", 2.0)):
        tests = [{"test": "stage0_sizes", "status": sizes, "score": 4.0 * (sizes == "passed"), "output": ""},
                 {"test": "stage0_n_zero_launches_nothing", "status": "passed", "score": 2.0, "output": ""}]
        rubric.apply_prerequisites(tests, lab_rubric)
        if tests[1]["score"] != expected:
            problems.append(f"scored_with: n = 0 test scored {tests[1]['score']} with stage0_sizes {sizes}")
    return problems


def time_budget_problems():
    """rubric.not_run_reason: a stage whose tests hang is cut short after
    stage_timeouts of them, other stages and tests of no stage still run,
    and nothing starts once the submission's tests used submission_wall_s."""
    defaults = rubric.load(RUBRIC)[0]
    limit, budget = defaults["stage_timeouts"], defaults["submission_wall_s"]
    cases = [  # (test, timeouts so far, seconds spent, not run?)
        ("stage2_fan_in", {"stage2": limit - 1}, 0.0, False),
        ("stage2_trees", {"stage2": limit}, 0.0, True),
        ("stage3_trees", {"stage2": limit}, 0.0, False),
        ("timing_grid", {"stage2": limit, "timing_rounds": limit}, 0.0, False),
        ("stage0_sizes", {}, budget - 1.0, False),
        ("stage0_sizes", {}, budget + 1.0, True),
    ]
    problems = []
    for test, timeouts, spent, skipped in cases:
        why = rubric.not_run_reason(defaults, test, timeouts, spent)
        if bool(why) != skipped:
            problems.append(f"time budget: {test} with {timeouts} after {spent} s: {why or 'run'}")
    return problems


def junit_problems():
    """JUnit on a made-up report: a test that did not run (no GPU) is
    <skipped/>, not a failure; one that ran and failed is a <failure/>."""
    from grader import junitxml
    tests = [{"test": "stage0_a", "status": "failed", "output": "not run: no usable GPU",
              "skipped": "no usable GPU"},
             {"test": "stage0_b", "status": "failed", "output": "FAILED: wrong sum"},
             {"test": "stage0_c", "status": "passed", "output": "passed"}]
    root = junitxml.tree({"rejected": "", "labs": [{"lab": "vector-add", "tests": tests}]}).getroot()
    got = {case.get("name"): [child.tag for child in case] for case in root.iter("testcase")}
    want = {"stage0_a": ["skipped"], "stage0_b": ["failure"], "stage0_c": []}
    counts = (root.get("tests"), root.get("failures"), root.get("skipped"))
    if got != want or counts != ("3", "1", "1"):
        return [f"junit: {got} with tests/failures/skipped {counts}, expected {want} and 3/1/1"]
    return []


class PageElements(html.parser.HTMLParser):
    """The class page's figures and rows: every element's attributes by its class."""
    def __init__(self):
        super().__init__()
        self.by_class = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in (attrs.get("class") or "").split():
            self.by_class.setdefault(name, []).append(attrs)
        if attrs.get("id"):
            self.by_class.setdefault("#" + attrs["id"], []).append(attrs)


def headless(browser, *argv, timeout=90):
    """Chromium without a window, a sandbox of its own (none as root) or a profile in $HOME."""
    profile = tempfile.mkdtemp(prefix="wb-chromium-")
    try:
        return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                               "--hide-scrollbars", *argv], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, errors="replace", timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def class_page_problems(csv_path, artifact):
    """The class page that the batch wrote beside its CSV (classpage.py),
    opened in headless Chromium: it renders without a console message, its
    score histograms hold the CSV's numbers (counted here from the CSV's
    per_lab cells), it has one row and working report links per
    submission, and says so when the GPU tests did not run; its screenshot
    is kept as artifact (the build's meson-logs, WB_ARTIFACTS)."""
    page = os.path.splitext(csv_path)[0] + ".html"
    if not os.path.exists(page):
        return [f"class page: the batch wrote no {page}"]
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("class page: skipped, Chromium is not installed here (Debian's package chromium; "
              "tests/run installs it): the page was not rendered")
        return []
    url = "file://" + urllib.parse.quote(os.path.abspath(page))
    dom = headless(browser, "--dump-dom", url)
    problems = [f"class page: console: {line.strip()[:200]}"
                for line in dom.stderr.splitlines() if "CONSOLE" in line]
    if "The class at a glance" not in dom.stdout:
        return problems + [f"class page: Chromium rendered no page (exit {dom.returncode}): "
                           f"{dom.stderr[-300:]}"]
    parsed = PageElements()
    parsed.feed(dom.stdout)
    rows = list(csv.DictReader(open(csv_path)))
    expected = {}
    for row in rows:
        for cell in filter(None, row["per_lab"].split(";")):
            lab, points = cell.split("=", 1)
            score, max_score = (float(x) for x in points.split("(")[0].split("/"))
            if max_score > 0:
                expected.setdefault((lab, min(9, int(10 * score / max_score))), 0)
                expected[(lab, min(9, int(10 * score / max_score)))] += 1
    shown = {(b["data-lab"], int(b["data-bin"])): int(b["data-count"])
             for b in parsed.by_class.get("bin", []) if b["data-count"] != "0"}
    if shown != expected:
        problems.append(f"class page: histogram {shown} != the CSV's {expected}")
    listed = {r["data-submission"]: r["data-score"] for r in parsed.by_class.get("submission", [])}
    if listed != {r["submission"]: r["score"] for r in rows}:
        problems.append(f"class page: submissions and scores {listed} != the CSV's")
    links = [a["href"] for a in parsed.by_class.get("report", [])]
    broken = [h for h in links if not os.path.exists(os.path.join(os.path.dirname(page),
                                                                  urllib.parse.unquote(h)))]
    if len(links) < len(rows) or broken:
        problems.append(f"class page: {len(links)} report links for {len(rows)} rows, broken: {broken[:3]}")
    no_gpu = not any(r["gpu_ran"] == "True" for r in rows)
    if no_gpu != bool(parsed.by_class.get("#no-gpu")):
        problems.append(f"class page: the note that GPU tests did not run is {'missing' if no_gpu else 'wrong'}")
    shot = headless(browser, f"--screenshot={artifact}", "--window-size=1280,2400", url)
    if not (os.path.exists(artifact) and os.path.getsize(artifact) > 0):
        problems.append(f"class page: no screenshot (exit {shot.returncode}): {shot.stderr[-300:]}")
    print(f"class page: {'rendered, figures match the CSV' if not problems else 'WRONG'}; "
          f"screenshot {artifact}")
    return problems


def phases_problems():
    """What a grade says as it goes (phases.py), on made-up runs: a line per
    phase with the elapsed time, the phase times in the lab's result, and
    what a grade stopped in its second lab had done."""
    from grader import phases
    said = io.StringIO()
    p = phases.Phases(["vector-add", "sync-up", "atomics"], stream=said)
    result = {"build": "ok", "score": 2.0, "max_score": 3.0}
    p.begin_lab("vector-add")
    p.expect_tests("vector-add", ["stage0_sizes", "timing_2e26"])
    p.built("vector-add", "ok", 3.0)
    p.test_done("vector-add", "stage0_sizes", {"seconds": 1.0, "judge_seconds": 0.5, "status": "passed"})
    p.test_done("vector-add", "timing_2e26", {"seconds": 2.0, "judge_seconds": 1.0, "status": "failed"})
    p.end_lab("vector-add", result)
    p.begin_lab("sync-up")
    p.expect_tests("sync-up", ["stage0_x", "stage0_y", "stage1_x", "stage1_y", "timing_z"])
    p.built("sync-up", "ok", 4.0)
    p.test_done("sync-up", "stage0_x", {"seconds": 1.0, "judge_seconds": 0.5, "status": "passed"})
    lines = said.getvalue().splitlines()
    done = p.what_was_done()
    problems = []
    for want in ("vector-add: build ok (3.0 s)", "vector-add: tests 1/1 passed (1.0 s)",
                 "vector-add: judge (0.5 s)", "vector-add: timing (3.0 s)", "vector-add: done: 2/3 points"):
        if not any(line.startswith("[") and line.endswith(want) for line in lines):
            problems.append(f"phases: no line '{want}' in {lines}")
    if result.get("phases") != {"build": 3.0, "tests": 1.0, "judge": 0.5, "timing": 3.0}:
        problems.append(f"phases: the lab's times are {result.get('phases')}")
    for want in ("vector-add: build ok (3.0 s)", "sync-up: build ok (4.0 s), stopped after 1 of its 5 tests",
                 "not started: atomics"):
        if want not in done:
            problems.append(f"phases: a stopped grade's summary lacks '{want}': {done}")
    return problems


def report_problems(compile_error, out):
    """One grade with every report: results.json validates and shows the
    compiler's messages, JUnit parses and records the failure."""
    problems = []
    gs, ju = os.path.join(out, "results.json"), os.path.join(out, "junit.xml")
    subprocess.run(WORKBOOK + ["grade", "--lab", LAB, "--rubric", RUBRIC, "--submission",
                               compile_error, "--gradescope", gs, "--junit", ju],
                   stdout=subprocess.DEVNULL)
    doc = json.load(open(gs))
    problems += [f"results.json: {p}" for p in reports.validate_gradescope(doc)]
    if not any("error" in t["output"] for t in doc["tests"]):
        problems.append("results.json: the compiler's messages are missing")
    if ET.parse(ju).getroot().get("failures") in (None, "0"):
        problems.append("junit.xml: no failures recorded for a lab that does not compile")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("side", choices=["cpu", "gpu"])
    parser.add_argument("--out", help="keep the CSV, reports and logs here")
    parser.add_argument("--per-gpu", type=int, default=4, help="submissions at a time per GPU (default 4)")
    parser.add_argument("--gpus", type=int, default=1,
                        help="GPUs for the untimed batch (default 1); the timed cases always go one at a time on one GPU")
    parser.add_argument("--cases", help="comma-separated submission names: only these (to replay a few)")
    args = parser.parse_args()
    gpu = args.side == "gpu"
    if gpu and batch.gpus_listed() == 0:
        print("skipped: no GPU here (nvidia-smi lists none): the grader's GPU half was not run")
        return 77
    base = tempfile.mkdtemp(prefix="wbgrader-test-")
    out = args.out or os.path.join(base, "out")
    os.makedirs(out, exist_ok=True)
    subs = os.path.join(base, "subs")
    os.makedirs(subs)
    expected = make_submissions(subs, gpu)
    if args.cases:
        wanted = args.cases.split(",")
        unknown = sorted(set(wanted) - set(expected))
        if unknown:
            parser.error("no such case on this side (cpu runs only the cases decided without a GPU): " + ", ".join(unknown))
        for name in set(expected) - set(wanted):
            path = os.path.join(subs, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
            del expected[name]
    logs = os.path.join(out, "logs")
    # Several at a time on one GPU to fit the time, except the one that takes
    # all GPU memory: it would starve its neighbours, so it goes alone.
    # Timed ones go alone with the real rubric (performance points): every
    # case whose expected outcome is "slow", and the reference.
    alone, timed = os.path.join(base, "alone"), os.path.join(base, "timed")
    os.makedirs(alone)
    os.makedirs(timed)
    if os.path.exists(os.path.join(subs, "gpu-memory-hog")):
        shutil.move(os.path.join(subs, "gpu-memory-hog"), alone)
    for name in [case[0] for case in hostile.CASES if case[4] == "slow"] + ["reference-timed"] + \
            ["honest-" + name for name in honest.TIMED]:
        if os.path.exists(os.path.join(subs, name)):
            shutil.move(os.path.join(subs, name), timed)
    rows = {}
    # Every workspace is removed, whatever happened: the batch runs with a
    # private temporary folder that must be empty at the end.
    tmp = os.path.join(base, "tmp")
    os.makedirs(tmp)
    env = dict(os.environ, TMPDIR=tmp)
    for folder, gpus, per_gpu, name, rubric_file in ((subs, args.gpus, args.per_gpu, "grades.csv", RUBRIC),
                                                     (alone, 1, 1, "alone.csv", RUBRIC),
                                                     (timed, 1, 1, "timed.csv", rubric.DEFAULT)):
        if not os.listdir(folder):
            continue
        path = os.path.join(out, name)
        proc = subprocess.run(WORKBOOK + ["batch", folder, "--csv", path, "--logs", logs, "--lab", LAB,
                                          "--rubric", rubric_file, "--gpus", str(gpus), "--per-gpu", str(per_gpu)],
                              env=env)
        if proc.returncode != 0:
            print("batch failed")
            return 1
        rows.update({r["submission"]: r for r in csv.DictReader(open(path))})
    try:
        failures = (prerequisite_problems() + sanitizer_parse_problems() + timing_check_problems()
                    + junit_problems() + phases_problems()
                    + time_budget_problems()
                    + sandbox_problems(base) + library_view_problems(base) + include_view_problems()
                    + hidden_leak_problems()
                    + scratch_problems(base) + ([] if gpu else static_check_problems()))
    finally:
        for ws in _LAB00:
            ws.remove()
    leftovers = [n for n in os.listdir(tmp) if n.startswith(("wbgrade-", "wbtest-"))]
    if leftovers:
        failures.append(f"workspaces left behind: {leftovers[:5]}")
    if set(rows) != set(expected):
        failures.append(f"CSV rows {sorted(rows)} != submissions {sorted(expected)}")
    table = [("submission", "expected", "got", "points", "reason")]
    for name, (build, tests) in sorted(expected.items()):
        want_tests = tests if gpu else "fail"    # nothing scores without a GPU
        try:
            report = json.load(open(os.path.join(logs, name + ".json")))
            got = verdict(report)
        except (OSError, ValueError):
            got = ("no report", "-", open(os.path.join(logs, name + ".log")).read()[-300:])
            report = None
        ok = got[:2] == (build, want_tests)
        if not gpu and report and not report["rejected"] and build == "ok" and report["gpu_ran"]:
            ok = False
        points = f"{rows[name]['score']}/{rows[name]['max_score']}" if name in rows else "-"
        table.append((name + ("" if ok else "  <-- WRONG"), f"{build}/{want_tests}", f"{got[0]}/{got[1]}",
                      points, got[2]))
        if not ok:
            failures.append(name)
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row[:4], widths)) + "  " + row[4])

    if "constructor-hang" in expected:
        report = json.load(open(os.path.join(logs, "constructor-hang.json")))
        outputs = [t["output"] for t in report["labs"][0]["tests"]]
        if not any(o.startswith("not run: 2 tests of stage0 already ran out of time") for o in outputs):
            failures.append("constructor-hang: no test was left out after two time-outs: "
                            + " | ".join(o[:60] for o in outputs))
    if "compile-error" in expected:
        failures += report_problems(os.path.join(subs, "compile-error"), out)
    artifacts = os.environ.get("WB_ARTIFACTS", out)
    os.makedirs(artifacts, exist_ok=True)
    failures += class_page_problems(os.path.join(out, "grades.csv"),
                                    os.path.join(artifacts, f"class-page-{args.side}.png"))
    if not args.out:
        shutil.rmtree(base, ignore_errors=True)
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print(f"all {len(expected)} verdicts right")
    return 0


if __name__ == "__main__":
    sys.exit(main())
