"""The two trees of a grading run.

The trusted tree is a private copy of this checkout (meson.build, common/,
labs/, solutions/, tests/) configured and built by the grader: the
reference binaries (the judges), the test objects and the libraries. The
submission's code never runs there and never sees it.

The student's kernels.cu is compiled in a sandbox that sees only what
that compile needs (not test.c with its hidden tests, not solutions/, not
the rubric, not other labs): studentcompile.py. Its object is checked
(objcheck.py) before it is linked with the trusted test object into the
student's test binary (build_student).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from shared import labs
from . import objcheck
from .studentcompile import StudentCompile

TRUSTED = ("meson.build", "meson_options.txt", "common", "labs", "solutions", "tests")


class Workspace(StudentCompile):
    """A private folder for one grading run: src/ (the trusted tree),
    build/ (its build), submission/ (the student's files, as data). The
    student's compile, check and link are StudentCompile's methods."""

    def __init__(self, keep=False):
        self.root = tempfile.mkdtemp(prefix="wbgrade-")
        self.src = os.path.join(self.root, "src")
        self.build = os.path.join(self.root, "build")
        self.keep = keep
        os.makedirs(self.src)
        for name in TRUSTED:
            path = os.path.join(labs.ROOT, name)
            if os.path.isdir(path):
                shutil.copytree(path, os.path.join(self.src, name),
                                ignore=shutil.ignore_patterns("__pycache__", "build*"))
            elif os.path.exists(path):
                shutil.copy(path, self.src)

    def remove(self):
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def configure(self, selected):
        # Without a GPU a grade is the build's status only: one architecture
        # (Hopper's) is enough and five times quicker than every one.
        arch = [] if labs.gpu_listed() else ["-Dgpu_arch=9.0"]
        proc = subprocess.run(["meson", "setup", self.build, self.src,
                               "-Dlabs=" + ",".join(f for f, _ in selected)] + arch,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace")
        if proc.returncode != 0:
            sys.exit("error: the trusted tree does not configure (not the student's fault):\n"
                     + "\n".join(l for l in proc.stdout.splitlines() if "ERROR" in l or "error" in l))
        with open(os.path.join(self.build, "compile_commands.json")) as f:
            self.commands = json.load(f)

    def build_trusted(self, name):
        """The judge (<name>-reference) and the student's side built with the
        skeleton: its test object, libraries and link command are the
        student's, only the kernels object is replaced. Returns (ok, log)."""
        return labs.build_target([f"{name}-reference", f"{name}-student"], self.build)

    def build_trusted_labs(self, names):
        """build_trusted for every lab of names in one ninja run, whose jobs
        run side by side. Returns {name: (ok, log)}: where that run fails,
        each lab is built again alone for its own verdict and messages (what
        was built already is not built again)."""
        ok, output = labs.build_target([f"{name}-{side}" for name in names
                                        for side in ("reference", "student")], self.build)
        if ok:
            return {name: (True, output) for name in names}
        return {name: self.build_trusted(name) for name in names}

    def kernels_command(self, folder, name, side="student"):
        """Meson's compile command of a side's kernels.cu, and the object it
        makes (relative to the build folder)."""
        entry = self._kernels_entry(folder, name, side)
        return entry["command"], entry["output"]

    def _kernels_entry(self, folder, name, side):
        tree = "labs" if side == "student" else "solutions"
        for entry in self.commands:
            out = entry.get("output", "")
            if out.startswith(f"{name}-{side}.p/") and entry["file"].endswith(f"{tree}/{folder}/kernels.cu"):
                return entry
        raise RuntimeError(f"no compile command for {tree}/{folder}/kernels.cu in the trusted build")

    def link_command(self, name):
        proc = subprocess.run(["ninja", "-C", self.build, "-t", "commands", f"{name}-student"],
                              stdout=subprocess.PIPE, text=True)
        return proc.stdout.strip().splitlines()[-1]

    def data_dirs(self, folder):
        """The lab's data files (labs/NN/data), which its test reads at run
        time: visible, read-only, in the sandbox of every test process."""
        data = os.path.join(self.src, "labs", folder, "data")
        return [data] if os.path.isdir(data) else []

    def visible_test_object(self, folder, name, hidden):
        """The student side's test object without the lab's hidden tests
        (the names in hidden; test.c compiled with WB_WITHOUT_HIDDEN_TESTS
        leaves hidden.c out), or None for a lab that has none. The test
        processes whose output a student sees run a binary linked with it:
        the hidden tests' code and strings are not in their memory to print.
        Trusted code, compiled outside the sandbox."""
        if not hidden:
            return None
        entry = self._test_entry(folder, name)
        output = entry["output"][:-len(".o")] + ".visible.o"
        command = entry["command"].replace(entry["output"], output) + " -DWB_WITHOUT_HIDDEN_TESTS"
        proc = subprocess.run(["sh", "-c", command], cwd=self.build, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace")
        if proc.returncode != 0:
            raise RuntimeError(f"labs/{folder}/test.c does not compile without its hidden tests:\n"
                               + proc.stdout[-2000:])
        # Criterion defines <suite>_<test>_meta for each test it registers.
        symbols = subprocess.run(["nm", "--defined-only", os.path.join(self.build, output)],
                                 stdout=subprocess.PIPE, text=True).stdout
        left = sorted(t for t in hidden if re.search(rf"\b\w+_{re.escape(t)}_meta$", symbols, re.M))
        if left:
            raise RuntimeError(f"labs/{folder}/test.c keeps the hidden tests {', '.join(left)} "
                               "with WB_WITHOUT_HIDDEN_TESTS defined: include hidden.c under "
                               "#if __has_include(\"hidden.c\") && !defined(WB_WITHOUT_HIDDEN_TESTS) "
                               "(labs/README.md)")
        return output

    def _test_entry(self, folder, name):
        for entry in self.commands:
            if entry.get("output", "").startswith(f"{name}-student.p/") and \
                    entry["file"].endswith(f"labs/{folder}/test.c"):
                return entry
        raise RuntimeError(f"no compile command for labs/{folder}/test.c in the trusted build")



def build_student(ws, folder, name, source, hidden=()):
    """(status, message, binaries): status "ok", "failed" (does not compile
    or link) or "rejected" (the static check); binaries {"hidden": the test
    binary for the hidden tests (names in hidden), "visible": for the others
    (without the hidden tests' code: visible_test_object), "object": the
    student's checked object}."""
    ok, output, obj = ws.compile_student(folder, name, source)
    if not ok:
        return "failed", "does not compile:\n" + labs.compiler_messages(output), None
    _, reference_obj = ws.kernels_command(folder, name, side="reference")
    problems = objcheck.problems(obj, os.path.join(ws.build, reference_obj))
    if problems:
        return "rejected", "rejected: " + "; ".join(problems), None
    ok, output, binary = ws.link_student(folder, name, obj)
    if not ok:
        return "failed", "does not link:\n" + labs.compiler_messages(output), None
    binaries = {"hidden": binary, "visible": binary, "object": obj}
    visible_object = ws.visible_test_object(folder, name, hidden)
    if visible_object:
        ok, output, binaries["visible"] = ws.link_student(
            folder, name, obj, os.path.join(ws.build, f"{name}-student-visible"), visible_object)
        if not ok:
            return "failed", "does not link:\n" + labs.compiler_messages(output), None
    return "ok", "", binaries
