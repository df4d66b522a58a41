#!/usr/bin/env python3
"""Adding a lab is copying folders: in a scratch copy of this checkout, lab
00's folder, solution and chapter are copied to 98-throwaway, and nothing
else is edited. The new lab must then be in the build (its targets and
suites), in `grading/workbook status`, in the grader's report, in the
student copy (`release`) and in the book's chapters.

usage: tests/test_new_lab.py     (CPU, about two minutes; exit 1 on failure)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEW = "98-throwaway"


def run(argv, cwd, **kw):
    return subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace", **kw)


def scratch_copy(target):
    """The checkout's tracked files (as they are on disk) in target."""
    files = run(["git", "ls-files", "-z"], ROOT).stdout.split("\0")
    for rel in filter(None, files):
        source = os.path.join(ROOT, rel)
        if os.path.isfile(source):
            os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
            shutil.copy2(source, os.path.join(target, rel))


def add_lab(copy):
    shutil.copytree(os.path.join(copy, "labs", "00-vector-add"), os.path.join(copy, "labs", NEW))
    shutil.copytree(os.path.join(copy, "solutions", "00-vector-add"), os.path.join(copy, "solutions", NEW))
    shutil.copy(os.path.join(copy, "handouts", "00-vector-add.md"), os.path.join(copy, "handouts", f"{NEW}.md"))
    hidden = os.path.join(copy, "labs", NEW, "hidden.c")
    if os.path.exists(hidden):   # a new lab starts without hidden tests (the rubric hides none)
        os.remove(hidden)


def problems_in(copy):
    problems = []
    name = NEW[3:]
    build = os.path.join(copy, "build")
    setup = run(["meson", "setup", build, "-Dgpu_arch=9.0", f"-Dlabs=00-vector-add,{NEW}"], copy)
    if setup.returncode != 0:
        return [f"meson setup fails:\n{setup.stdout[-2000:]}"]
    targets = json.loads(run(["meson", "introspect", "--targets", build], copy).stdout)
    for wanted in (f"{name}-student", f"{name}-reference", f"{name}-bench-reference"):
        if not any(t["name"] == wanted for t in targets):
            problems.append(f"the build has no target {wanted}")
    tests = run(["meson", "test", "-C", build, "--list"], copy).stdout
    for wanted in (f"{name}-student", f"sides-{name}"):
        if wanted not in tests:
            problems.append(f"meson test --list has no {wanted}")
    env = dict(os.environ, WB_BUILD_DIR=build, NO_COLOR="1")
    status = run([sys.executable, "grading/workbook.py", "status"], copy, env=env)
    if NEW not in status.stdout and name not in status.stdout:
        problems.append(f"`workbook status` does not list the new lab:\n{status.stdout[-1500:]}")
    report = os.path.join(copy, "report.json")
    run([sys.executable, "grading/workbook.py", "grade", "--lab", name, "--json", report], copy, env=env)
    try:
        graded = [lab["lab"] for lab in json.load(open(report))["labs"]]
    except (OSError, ValueError, KeyError) as e:
        graded = [f"no report ({e})"]
    if graded != [name]:
        problems.append(f"the grader graded {graded}, not the new lab")
    out = os.path.join(copy, "student-copy")
    # The scratch copy is no git checkout: release makes it from the files as they are.
    release = run([sys.executable, "grading/workbook.py", "release", "--from-working-tree", "--out", out],
                  copy, env=env)
    if not os.path.isfile(os.path.join(out, "labs", NEW, "kernels.cu")):
        problems.append(f"the student copy has no labs/{NEW}:\n{release.stdout[-1500:]}")
    book = run([sys.executable, "-c", "import runpy; m = runpy.run_path('handouts/book'); "
                "print([f for _, f in m['chapters']()])"], copy)
    if f"{NEW}.md" not in book.stdout:
        problems.append(f"the book's chapters leave out {NEW}.md: {book.stdout[-500:]}")
    return problems


def main():
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    with tempfile.TemporaryDirectory(prefix="wb-new-lab-") as tmp:
        copy = os.path.join(tmp, "checkout")
        scratch_copy(copy)
        add_lab(copy)
        problems = problems_in(copy)
    for p in problems:
        print("FAILED:", p)
    if not problems:
        print(f"{NEW}, made by copying lab 00's folders, is in the build, the suites, status, "
              "the grader, the student copy and the book")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
