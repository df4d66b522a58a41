"""The autograder: copy the trusted tree and the submission's student files
into a fresh directory, build each lab, check the student's object, run each
test alone (isolate.py), score with the rubric and write the reports
(reports.py). grading/README.md documents the design and its threat model."""
import csv
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

import isolate
import labs
import reports
import submission

TRUSTED = ("meson.build", "meson_options.txt", "common", "labs", "solutions", "tests")
DEFAULT_RUBRIC = os.path.join(labs.ROOT, "grading", "rubric.toml")


# ------------------------------------------------------------------ rubric
def load_rubric(path):
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        sys.exit(f"error: cannot read the rubric {path}: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        sys.exit(f"error: {path} is not valid TOML: {e}")
    defaults = {"test_points": 1, "timing_points": 0, "wall_s": 60, "timing_wall_s": 180,
                "cpu_s": 90, "output_bytes": 1000000, "sanitize_penalty": 0.0}
    defaults.update(data.get("defaults", {}))
    return defaults, data.get("labs", {})


def test_points(defaults, lab_rubric, test):
    if test in lab_rubric.get("tests", {}):
        return float(lab_rubric["tests"][test])
    return float(defaults["timing_points"] if test.startswith("timing_") else defaults["test_points"])


def apply_prerequisites(tests, lab_rubric):
    """Rubric `scored_with = {test = other}`: a test that doing nothing passes
    (an empty input launches nothing) scores only once `other` passes too,
    so that the untouched skeleton scores nothing."""
    passed = {t["test"] for t in tests if t["status"] == "passed"}
    for t in tests:
        other = lab_rubric.get("scored_with", {}).get(t["test"])
        if other and t["status"] == "passed" and other not in passed:
            t.update(status="failed", score=0.0,
                     output=f"passes, but scores only once {other} passes too (doing nothing "
                            f"passes this test)\n\n" + t["output"])


# --------------------------------------------------------------- workspace
def make_workspace(selected, sub_path, keep=None):
    """A fresh tree: the trusted files from this checkout, then the
    submission's student files on top. Returns (dir, notes per folder)."""
    work = keep or tempfile.mkdtemp(prefix="wbgrade-")
    src = os.path.join(work, "src")
    if os.path.exists(src):
        shutil.rmtree(src)
    os.makedirs(src)
    for name in TRUSTED:
        path = os.path.join(labs.ROOT, name)
        if os.path.isdir(path):
            shutil.copytree(path, os.path.join(src, name), ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(path, src)
    notes = {}
    if sub_path:
        folders = [folder for folder, _ in labs.all_labs()]
        files, ignored = submission.read(sub_path, folders)
        for folder, _ in selected:
            data = files.get((folder, "kernels.cu"))
            target = os.path.join(src, "labs", folder, "kernels.cu")
            if data is None:
                notes[folder] = "not in the submission: graded the skeleton"
            with open(target, "wb") as f:
                f.write(data if data is not None else open(target, "rb").read())
        if ignored:
            notes["_ignored"] = ignored
    return work, src, notes


def configure(src, build, selected):
    proc = subprocess.run(["meson", "setup", build, src, "-Dlabs=" + ",".join(f for f, _ in selected)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    if proc.returncode != 0:
        sys.exit("error: the trusted tree does not configure (not the student's fault):\n"
                 + "\n".join(l for l in proc.stdout.splitlines() if "ERROR" in l or "error" in l))


def trim_compiler(output, limit=15):
    keep = [l for l in output.splitlines() if re.search(r"error|warning", l, re.I)
            and not l.startswith(("FAILED", "ninja"))]
    return "\n".join(keep[:limit]) or output[-1500:]


# ---------------------------------------------------------- static checks
# Lab code reports errors through CUDA_CHECK / wb_fail (the trusted library);
# it has no business ending the process, which would end the test before its
# checks (Criterion reports a test that exit(0)s as passed).
FORBIDDEN_CALLS = {"exit", "_exit", "_Exit", "quick_exit", "abort", "syscall", "fork", "vfork",
                   "execve", "execv", "execvp", "execl", "execlp", "system", "popen", "kill",
                   "raise", "longjmp", "_longjmp", "siglongjmp", "__longjmp_chk", "pthread_exit",
                   "dlopen", "dlsym", "dlvsym", "posix_spawn", "posix_spawnp", "clone", "signal",
                   "sigaction", "atexit", "at_quick_exit", "__cxa_atexit", "on_exit", "ptrace"}
def _symbols(paths, *flags):
    if not paths:
        return set()
    proc = subprocess.run(["nm", "-g", "--format=just-symbols", *flags, *paths],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return {l.strip() for l in proc.stdout.splitlines() if l.strip() and not l.endswith(":")}


def _ctor_bytes(obj):
    proc = subprocess.run(["readelf", "-S", "-W", obj], stdout=subprocess.PIPE, text=True)
    total = 0
    for line in proc.stdout.splitlines():
        m = re.search(r"\] (\.init_array|\.preinit_array|\.ctors)\S*\s+\S+\s+\S+\s+\S+\s+([0-9a-f]+)", line)
        if m:
            total += int(m.group(2), 16)
    return total


def criterion_symbols():
    libdir = subprocess.run(["pkg-config", "--variable=libdir", "criterion"],
                            stdout=subprocess.PIPE, text=True).stdout.strip()
    libs = glob.glob(os.path.join(libdir, "libcriterion.so*"))[:1]
    if not libs:
        return set(), set()
    return _symbols(libs, "-D", "--defined-only"), _symbols(libs, "-D", "--undefined-only")


def check_objects(build, name):
    """Problems with the student's object, which would let it change the test
    or the runner instead of solving the lab: symbols that the test, the
    common library or the test runner define or call (a replaced comparison,
    main, a libc function), calls into the runner, and code before main."""
    student = glob.glob(os.path.join(build, f"{name}-student.p", "*kernels.cu.o"))
    reference = glob.glob(os.path.join(build, f"{name}-reference.p", "*kernels.cu.o"))
    if not student or not reference:
        return ["the grader could not find the compiled objects to check"]
    trusted = [o for o in glob.glob(os.path.join(build, f"{name}-student.p", "*.o")) if o not in student]
    trusted += glob.glob(os.path.join(build, "common", "*.a.p", "*.o"))
    crit_defined, crit_used = criterion_symbols()
    allowed = _symbols(reference, "--defined-only")
    defined = _symbols(student, "--defined-only")
    # What nvcc's own code in the reference calls (atexit, for one) is fine.
    used = _symbols(student, "--undefined-only") - _symbols(reference, "--undefined-only")
    taken = (_symbols(trusted) | crit_defined | crit_used | {"main"}) - allowed
    problems = []
    clash = sorted(defined & taken)
    if clash:
        problems.append("defines symbols that belong to the test, the library or the runtime: "
                        + ", ".join(clash[:8]))
    calls = sorted(s for s in used if s in crit_defined or s.split("@")[0] in FORBIDDEN_CALLS)
    if calls:
        problems.append("calls what lab code may not (ending or forking the process, jumping out "
                        "of the test, loading code, calling the test runner): " + ", ".join(calls[:8]))
    if _ctor_bytes(student[0]) > _ctor_bytes(reference[0]):
        problems.append("runs code before main (a constructor or a global object with a constructor)")
    return problems


# ---------------------------------------------------------------- grading
def limits_for(defaults, test, wrapper=()):
    wall = defaults["timing_wall_s"] if test.startswith("timing_") else defaults["wall_s"]
    return {"wall_s": int(wall), "cpu_s": int(max(defaults["cpu_s"], wall + 10)),
            "output_bytes": int(defaults["output_bytes"]), "wrapper": list(wrapper)}


def table_ms(results_dir):
    """The first time in milliseconds in the tables a timing test wrote."""
    for path in sorted(glob.glob(os.path.join(results_dir, "*.csv"))):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        if len(rows) < 2:
            continue
        for i, head in enumerate(rows[0]):
            if "ms" in head and i < len(rows[1]):
                try:
                    return float(rows[1][i])
                except ValueError:
                    pass
    return None


def grade_lab(folder, name, build, defaults, lab_rubric, args, notes):
    result = {"lab": name, "folder": folder, "build": "ok", "message": notes.get(folder, ""),
              "tests": [], "score": 0.0, "max_score": 0.0, "gpu_ran": True, "perf": None}
    hidden = set(lab_rubric.get("hidden", []))
    perf = lab_rubric.get("performance") if defaults.get("run_timing", True) else None
    reference_bin = os.path.join(build, f"{name}-reference")
    student_bin = os.path.join(build, f"{name}-student")
    ok, output = labs.build_target(f"{name}-reference", build)
    if not ok:
        sys.exit(f"error: the reference of {name} does not build (the instructor's tree):\n"
                 + trim_compiler(output))
    tests = isolate.list_tests(reference_bin)
    if not defaults.get("run_timing", True):
        tests = [(suite, test) for suite, test in tests if not test.startswith("timing_")]
    for suite, test in tests:
        points = test_points(defaults, lab_rubric, test)
        result["tests"].append({"name": f"{name}/{test}", "test": test, "suite": suite,
                                "score": 0.0, "max_score": points, "status": "failed",
                                "output": "", "visibility": "after_due_date" if test in hidden else "visible"})
    if perf:
        result["max_score"] += float(perf["points"])
    result["max_score"] += sum(t["max_score"] for t in result["tests"])

    ok, output = labs.build_target(f"{name}-student", build)
    if not ok:
        result.update(build="failed", message="does not compile:\n" + trim_compiler(output))
        for t in result["tests"]:
            t["output"] = "not run: the lab " + result["message"]
        return result
    problems = check_objects(build, name)
    if problems:
        result.update(build="rejected", message="rejected: " + "; ".join(problems))
        for t in result["tests"]:
            t["output"] = "not run: " + result["message"]
        return result

    perf_ms = {}
    for t in result["tests"]:
        lim = limits_for(defaults, t["test"])
        ref = isolate.run_test(reference_bin, t["suite"], t["test"], lim)
        if ref["status"] == "skipped":
            result["gpu_ran"] = False
            t.update(status="failed", output="not run: " + ref["reason"])
            continue
        if ref["status"] != "passed":
            sys.exit(f"error: the reference fails {t['name']} here: {ref['reason']}\n{ref['output'][-2000:]}")
        got = isolate.run_test(student_bin, t["suite"], t["test"], lim,
                               expected={"instances": ref["instances"], "assertions": ref["assertions"]})
        t["seconds"] = got["seconds"]
        text = "passed" if got["status"] == "passed" else f"FAILED: {got['reason']}"
        if got["status"] == "passed":
            t.update(status="passed", score=t["max_score"])
            if args.sanitize:
                findings = t["sanitizer"] = sanitize(student_bin, t, lim)
                if findings:
                    text += "\nsanitizer: " + "; ".join(findings)
                    t["score"] = max(0.0, t["score"] * (1 - defaults["sanitize_penalty"] * len(findings)))
        t["output"] = text + "\n\n" + got["output"][-3000:]
        if perf and t["test"] == perf["test"] and got["status"] == "passed":
            perf_ms = {"reference": table_ms(ref["results_dir"]), "student": table_ms(got["results_dir"])}
        shutil.rmtree(ref["work"], ignore_errors=True)
        shutil.rmtree(got["work"], ignore_errors=True)
    apply_prerequisites(result["tests"], lab_rubric)
    if perf:
        points, ratio = 0.0, None
        if perf_ms.get("reference") and perf_ms.get("student"):
            ratio = perf_ms["reference"] / perf_ms["student"]
            points = float(perf["points"]) * min(1.0, ratio / float(perf.get("full_at", 0.5)))
        result["perf"] = {"test": perf["test"], "reference_ms": perf_ms.get("reference"),
                          "student_ms": perf_ms.get("student"), "speed_vs_reference": ratio,
                          "score": round(points, 3), "max_score": float(perf["points"])}
    result["score"] = sum(t["score"] for t in result["tests"]) + (result["perf"] or {}).get("score", 0.0)
    return result


def sanitize(binary, t, lim):
    if not shutil.which("compute-sanitizer"):
        return ["compute-sanitizer not installed: not checked"]
    findings = []
    for tool in ("memcheck", "racecheck", "synccheck"):
        wrapped = dict(lim, wall_s=lim["wall_s"] * 10, cpu_s=lim["cpu_s"] * 10,
                       wrapper=["compute-sanitizer", "--tool", tool, "--error-exitcode", "99",
                                "--target-processes", "all"])
        run = isolate.run_test(binary, t["suite"], t["test"], wrapped)
        if run["status"] == "failed":
            lines = [l.strip("= ") for l in run["output"].splitlines()
                     if "=========" in l and "COMPUTE-SANITIZER" not in l][:3]
            findings.append(f"{tool}: " + (" / ".join(lines) or run["reason"]))
        shutil.rmtree(run["work"], ignore_errors=True)
    return findings


def grade_submission(args):
    """Grades one submission; returns the report dict (reports.py)."""
    selected = labs.all_labs()
    if args.lab:
        found = [labs.find_lab(n) for n in args.lab]
        unknown = [n for n, lab in zip(args.lab, found) if lab is None]
        if unknown:
            sys.exit(f"error: unknown lab(s): {', '.join(unknown)}; the labs are: "
                     + ", ".join(n for _, n in selected))
        selected = found
    defaults, rubric = load_rubric(args.rubric)
    start = time.monotonic()
    try:
        work, src, notes = make_workspace(selected, args.submission)
    except submission.Rejected as e:
        return reports.rejected(str(e), args.submission)
    build = os.path.join(work, "build")
    configure(src, build, selected)
    results = [grade_lab(folder, name, build, defaults, rubric.get(name, {}), args, notes)
               for folder, name in selected]
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return reports.make(results, time.monotonic() - start, args.submission or "labs/",
                        notes.get("_ignored", []), isolate.isolation_note())


def grade(args):
    report = grade_submission(args)
    reports.print_scoreboard(report)
    reports.write_all(report, args)
    return 0 if report["score"] >= report["max_score"] and not report.get("rejected") else 1


def add_grade_options(g):
    g.add_argument("--lab", action="append", help="only this lab (repeatable)")
    g.add_argument("--submission", metavar="PATH",
                   help="grade this directory (mirroring labs/), .zip or .tar.gz instead of labs/")
    g.add_argument("--rubric", default=DEFAULT_RUBRIC, help="rubric file (default grading/rubric.toml)")
    g.add_argument("--gradescope", metavar="FILE", help="write a Gradescope results.json")
    g.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    g.add_argument("--json", metavar="FILE", help="write the full report as JSON")
    g.add_argument("--csv", metavar="FILE", help="append one CSV row per submission")
    g.add_argument("--sanitize", action="store_true",
                   help="also run passing tests under compute-sanitizer (memcheck, racecheck, synccheck)")
    g.add_argument("--keep", action="store_true", help="keep the temporary build directory")


def add_commands(sub):
    g = sub.add_parser("grade", help="build and test the student files (default: this checkout's labs/)")
    add_grade_options(g)
    g.set_defaults(func=grade)
    import batch
    batch.add_commands(sub)
