#!/usr/bin/env python3
"""The student copy (`grading/workbook release`): the rubric's hidden tests
and each lab's hidden.c agree, then a real release in a temporary folder: no
solutions/, no hidden test names anywhere, a student README; it configures,
builds and its lab tests fail with a GPU (the skeletons are incomplete) and
without one are skipped (exit 77), but for the source rules, which fail; its student commands work, the
instructor ones say they are not there. WB_KEEP_RELEASE=1 keeps the folder."""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "grading"))

sys.path.insert(0, os.path.join(ROOT, "tests"))

import check_documented_commands  # noqa: E402
from shared import labs  # noqa: E402
from grader import release  # noqa: E402

WORKBOOK = os.path.join(ROOT, "grading", "workbook")
HIDDEN = release.hidden_tests(release.rubric.DEFAULT)


def has_gpu():
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and "GPU" in proc.stdout


def tool_env(build=None):
    env = dict(os.environ, NO_COLOR="1")
    env.pop("WB_BUILD_DIR", None)
    if build:
        env["WB_BUILD_DIR"] = build
    if not shutil.which("nvcc") and os.path.exists("/usr/local/cuda/bin/nvcc"):
        env["PATH"] = "/usr/local/cuda/bin:" + env["PATH"]
    return env


def run(command, cwd=ROOT, env=None, timeout=600):
    return subprocess.run(command, cwd=cwd, env=env or tool_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace", timeout=timeout)


class HiddenTests(unittest.TestCase):
    def rubric_hiding(self, names):
        """A rubric file that hides names in lab 00 (removed afterwards)."""
        f = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
        f.write("[labs.vector-add]\nhidden = [" + ", ".join(f'"{n}"' for n in names) + "]\n")
        f.close()
        self.addCleanup(os.remove, f.name)
        return f.name

    def test_the_rubric_and_hidden_c_agree(self):
        """Every hidden test of the real rubric is in its lab's hidden.c, and
        every test of a hidden.c is hidden by the rubric."""
        for folder, lab in labs.all_labs():
            listed = {name for f, _, name in HIDDEN if f == folder}
            self.assertEqual(listed, set(release.hidden_file_tests(folder)), folder)

    def test_a_hidden_test_missing_from_hidden_c_is_an_error(self):
        extra = self.rubric_hiding(["stage0_n_zero_launches_nothing", "stage0_sizes"])
        with self.assertRaisesRegex(release.ReleaseError, "stage0_sizes, but labs/00-vector-add/hidden.c"):
            release.hidden_tests(extra)

    def test_a_test_of_hidden_c_the_rubric_does_not_hide_is_an_error(self):
        with self.assertRaisesRegex(release.ReleaseError, "does not list as hidden"):
            release.hidden_tests(self.rubric_hiding([]))

    def test_test_names_are_read_from_both_macros(self):
        text = "Test(s, stage0_a) {}\nParameterizedTest(int *n, s, stage1_b, .timeout = 5) {}\n"
        self.assertEqual(release.TEST_NAME.findall(text), ["stage0_a", "stage1_b"])


class Leak(unittest.TestCase):
    """The leak of issue 41: an instructor pasted lab 00's reference into
    their labs/00-vector-add/kernels.cu (and kept a .bak of it) before
    releasing. Made in a clone of the committed checkout, in-process."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="wb-release-leak-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.clone = os.path.join(self.tmp, "clone")
        cloned = run(["git", "clone", "-q", "--no-hardlinks", ROOT, self.clone])
        if cloned.returncode != 0:
            self.skipTest(f"git clone of this checkout failed: {cloned.stdout[-300:]}")
        self.lab = os.path.join(self.clone, "labs", "00-vector-add")
        with open(os.path.join(ROOT, "solutions", "00-vector-add", "kernels.cu")) as f:
            self.answer = f.read()

    def copy(self, **how):
        out = tempfile.mkdtemp(dir=self.tmp)
        return out, release.make_copy(out, release.rubric.DEFAULT, root=self.clone, **how)

    def paste(self, text, name="kernels.cu"):
        with open(os.path.join(self.lab, name), "w") as f:
            f.write(text)

    def test_the_answer_in_a_lab_is_refused_with_what_to_do(self):
        self.paste(self.answer)
        self.paste(self.answer, "kernels.cu.20261128-120000.bak")
        with self.assertRaises(release.ReleaseError) as refused:
            self.copy()
        for said in ("labs/00-vector-add/kernels.cu", "git stash", "grading/workbook reset",
                     "--from-working-tree"):
            self.assertIn(said, str(refused.exception))

    def test_a_reformatted_answer_from_the_working_tree_is_refused(self):
        # Other comments and indentation: the check compares without them.
        self.paste("// my attempt\n" + self.answer.replace("    ", "\t").replace("\n", "\n\n"))
        with self.assertRaisesRegex(release.ReleaseError,
                                    "labs/00-vector-add/kernels.cu = solutions/00-vector-add"):
            self.copy(from_working_tree=True)

    def test_backups_build_folders_and_untracked_files_stay_out(self):
        self.paste(self.answer, "kernels.cu.20261128-120000.bak")
        os.makedirs(os.path.join(self.clone, "build-mine"))
        self.paste("notes", "notes.txt")
        for how in ({}, {"from_working_tree": True}):
            out, (_, notes) = self.copy(**how)
            copied = [os.path.relpath(os.path.join(top, n), out) for top, _, names in os.walk(out)
                      for n in names]
            self.assertEqual([n for n in copied if n.endswith((".bak", "notes.txt"))], [], how)
            self.assertFalse(os.path.exists(os.path.join(out, "build-mine")), how)
            self.assertTrue(notes, "the note says what the copy was made from")

    def test_normalized_text_ignores_comments_and_layout_not_strings(self):
        normalized = release.releasesource.normalized
        self.assertEqual(normalized("int a; // x\n/* y */ int b;"), normalized("int a;\n\tint  b;"))
        self.assertNotEqual(normalized('puts("// a");'), normalized('puts("// b");'))


# A release is made from what is committed; a copy of the checkout without
# its .git (a test machine's) makes it from the files as they are.
FROM = [] if release.releasesource.is_git_checkout(ROOT) else ["--from-working-tree"]


class Release(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="wb-release-test-")
        cls.out = os.path.join(cls.tmp, "student")
        if FROM:
            print(f"{ROOT} is no git checkout: the copy is made with --from-working-tree", file=sys.stderr)
        cls.made = run([WORKBOOK, "release", *FROM, "--out", cls.out])

    @classmethod
    def tearDownClass(cls):
        if os.environ.get("WB_KEEP_RELEASE"):
            print(f"kept {cls.tmp}", file=sys.stderr)
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_1_contents(self):
        self.assertEqual(self.made.returncode, 0, self.made.stdout)
        for gone in ("solutions", "tests", "grading/grader", "grading/rubric.toml",
                     "grading/gradescope", "labs/README.md",
                     "handouts/answers.md"):
            self.assertFalse(os.path.exists(os.path.join(self.out, gone)), gone)
        with open(os.path.join(self.out, "handouts", "SUMMARY.md")) as f:
            self.assertNotIn("answers.md", f.read(), "the book's contents lose the answers too")
        for there in ("meson.build", "common/workbook.h", "handouts/00-vector-add.md",
                      "grading/workbook", "grading/student/commands.py", "grading/shared/labs.py",
                      "grading/skeletons/00-vector-add/kernels.cu"):
            self.assertTrue(os.path.exists(os.path.join(self.out, there)), there)
        with open(os.path.join(self.out, "README.md")) as f:
            readme = f.read()
        self.assertIn("meson setup build", readme)
        self.assertIn("grading/workbook hint", readme)
        for folder, name in labs.all_labs():
            self.assertIn(folder, readme, "the student README lists every lab")
            self.assertTrue(os.path.exists(os.path.join(self.out, "labs", folder, "kernels.cu")))

    def test_1_no_hidden_test_is_named(self):
        self.assertTrue(HIDDEN, "the rubric hides no test: nothing to check")
        self.assertEqual(release.leaks(self.out, [n for _, _, n in HIDDEN]), [])
        for folder, _, name in HIDDEN:
            with open(os.path.join(ROOT, "labs", folder, "hidden.c")) as f:
                self.assertIn(name, f.read(), "the checkout itself still has the test")
            self.assertFalse(os.path.exists(os.path.join(self.out, "labs", folder, "hidden.c")))

    def test_2_refuses_to_overwrite(self):
        again = run([WORKBOOK, "release", "--out", self.out])
        self.assertNotEqual(again.returncode, 0)
        self.assertIn("not empty", again.stdout)
        inside = run([WORKBOOK, "release", "--out", os.path.join(ROOT, "labs", "x")])
        self.assertNotEqual(inside.returncode, 0)
        self.assertFalse(os.path.exists(os.path.join(ROOT, "labs", "x")))
        self.assertEqual(again.returncode, 2, "a command-line mistake")
        self.assertEqual(run([WORKBOOK, "release"]).returncode, 2)

    def test_2_tarball(self):
        tarball = os.path.join(self.tmp, "cuda-workbook-2026.tar.gz")
        made = run([WORKBOOK, "release", *FROM, "--tarball", tarball])
        self.assertEqual(made.returncode, 0, made.stdout)
        with tarfile.open(tarball) as tar:
            names = tar.getnames()
        self.assertIn("cuda-workbook-2026/README.md", names)
        self.assertIn("cuda-workbook-2026/labs/00-vector-add/kernels.cu", names)
        self.assertFalse([n for n in names if "/solutions" in n or "/tests/" in n])
        self.assertNotEqual(run([WORKBOOK, "release", "--tarball", tarball]).returncode, 0)
        self.assertEqual(run([WORKBOOK, "release", *FROM, "--tarball", tarball, "--force"]).returncode, 0)

    def test_3_builds_and_its_tests_fail_or_skip(self):
        self.assertEqual(self.made.returncode, 0, self.made.stdout)
        gpu = has_gpu()
        build = os.path.join(self.out, "build")
        # The repository's build (meson test passes it) seeds the copy's:
        # the copy's skeletons and common/ are the repository's files, so
        # ninja recompiles only what differs, where compiling every lab again
        # took most of this test's time in CI.
        seed = os.environ.get("WB_TEST_BINARIES")
        options = check_documented_commands.build_options(seed) if seed else []
        options = options or ["-Dgpu_arch=" + ("auto" if gpu else "9.0")]   # 9.0: a quick build
        setup = run(["meson", "setup", build, *options], cwd=self.out)
        self.assertEqual(setup.returncode, 0, setup.stdout[-3000:])
        if seed:
            check_documented_commands.seed_build(build, seed)
        compiled = run(["meson", "compile", "-C", build], cwd=self.out, timeout=1200)
        self.assertEqual(compiled.returncode, 0, compiled.stdout[-3000:])
        students = {f"{name}-student" for _, name in labs.all_labs()}
        hidden = [n for _, _, n in HIDDEN]
        # Without a GPU a lab's tests skip, except its source rules (suite
        # <lab>_source, wb_test.h), which need none and fail on a skeleton.
        expected = {}
        for binary in students:
            listing = run([os.path.join(build, binary), "--list"]).stdout
            expected[binary] = "FAIL" if gpu or "_source" in listing else "SKIP"
            self.assertIn("stage", listing, binary)
            for name in hidden:
                self.assertNotIn(name, listing, f"{binary} still has the hidden test")
        # Not --fail-fast: Criterion 2.4 then leaves /tmp/criterion_PID.sock behind.
        tested = run(["meson", "test", "-C", build, "--suite", "student", "--no-rebuild"],
                     cwd=self.out, timeout=1500)
        results = {}
        with open(os.path.join(build, "meson-logs", "testlog.json")) as f:
            for line in f:
                entry = json.loads(line)
                # "project:suite / name" (Meson 1.0) or "suite - project:name" (newer)
                results[re.split(r" / |:", entry["name"])[-1]] = entry["result"]
        self.assertEqual(set(results), students, tested.stdout[-2000:])
        wrong = {name: f"{result}, expected {expected[name]}" for name, result in results.items()
                 if result != expected[name]}
        self.assertEqual(wrong, {}, f"the skeletons' tests ({'GPU' if gpu else 'no GPU'} here)\n"
                         + tested.stdout[-2000:])

        # The student commands, in the copy.
        workbook = os.path.join(self.out, "grading", "workbook")
        env = tool_env(build)
        hint = run([workbook, "hint", "vector-add", "0"], cwd=self.out, env=env)
        self.assertEqual(hint.returncode, 0, hint.stdout)
        self.assertIn("hint 1 of", hint.stdout)
        status = run([workbook, "--lab", "vector-add"], cwd=self.out, env=env)
        self.assertEqual(status.returncode, 0, status.stdout)
        self.assertIn("cuda-workbook progress", status.stdout)
        if not gpu:
            self.assertIn("no usable GPU", status.stdout)
        for command in (["grade"], ["batch", "x"], ["release", "--out", "x"],
                        ["run", "vector-add", "--reference"]):
            refused = run([workbook] + command, cwd=self.out, env=env)
            self.assertNotEqual(refused.returncode, 0, command)
            self.assertIn("no reference in this copy", refused.stdout, command)


if __name__ == "__main__":
    unittest.main(verbosity=2)
