#!/usr/bin/env python3
"""Unit tests of the student tools (grading/student/ and what it uses from grading/shared/): hint
parsing, stage states from planted result files, that every lab has hints
for every stage its tests name, reset in a scratch copy, watch's fallback to
polling, the option set every benchmark takes, and the student's screen in a
terminal of 80 columns (a pseudo-terminal). Everything is written in
temporary folders, removed at the end."""
import atexit
import fcntl
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = tempfile.mkdtemp(prefix="wb-student-test-")
atexit.register(shutil.rmtree, BUILD, ignore_errors=True)
os.environ["WB_BUILD_DIR"] = BUILD
sys.path.insert(0, os.path.join(ROOT, "grading"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from student import buildmessages  # noqa: E402
import check_documented_commands  # noqa: E402
from shared import includes  # noqa: E402
from shared import labs  # noqa: E402
from shared import progressbar  # noqa: E402
from student import progress  # noqa: E402
from student import skeleton  # noqa: E402
from student import testruns  # noqa: E402
from student import watching  # noqa: E402


def plant(name, side, tests, csv_rows=None):
    """Writes a Criterion-like report (and a timing CSV) for one lab side."""
    folder = os.path.join(BUILD, "results", f"{name}-{side}")
    os.makedirs(folder, exist_ok=True)
    report = {"passed": sum(s == "PASSED" for _, s, _ in tests),
              "failed": sum(s == "FAILED" for _, s, _ in tests),
              "errored": 0, "skipped": sum(s == "SKIPPED" for _, s, _ in tests),
              "test_suites": [{"name": "suite", "tests": [
                  {"name": n, "status": s, "messages": m} for n, s, m in tests]}]}
    with open(os.path.join(folder, "criterion.json"), "w") as f:
        json.dump(report, f)
    if csv_rows:
        with open(os.path.join(folder, "timing.csv"), "w") as f:
            f.write("\n".join(",".join(f'"{c}"' for c in row) for row in csv_rows) + "\n")


class Hints(unittest.TestCase):
    def test_every_lab_has_stepwise_hints_for_every_stage(self):
        for folder, name in labs.all_labs():
            stages = progress.read_hints(folder)
            self.assertTrue(stages, f"{name}: hints.txt has no [stage N] section")
            for stage, (title, hints) in stages.items():
                self.assertTrue(title, f"{name} stage {stage} has no title")
                self.assertGreaterEqual(len(hints), 2, f"{name} stage {stage}: give hints in steps")

    @unittest.skipUnless(os.environ.get("WB_TEST_BINARIES"), "needs the built lab tests")
    def test_test_names_match_hint_stages(self):
        """Every stageN_ test a lab's test binary lists has a [stage N] hint
        section (asked from the binary: tests may be made by macros)."""
        for folder, name in labs.all_labs():
            binary = os.path.join(os.environ["WB_TEST_BINARIES"], f"{name}-reference")
            if not os.path.exists(binary):
                continue   # lab not selected in this build
            listing = subprocess.run([binary, "--list"], capture_output=True, text=True).stdout
            tested = {int(n) for n in re.findall(r"\bstage(\d+)_\w+", listing)}
            hinted = set(progress.read_hints(folder))
            self.assertTrue(tested, f"{name}: no test is named stageN_...")
            self.assertLessEqual(tested, hinted, f"{name}: stages without hints")

    def test_hint_steps_through_and_remembers(self):
        out = subprocess.run([sys.executable, os.path.join(ROOT, "grading", "workbook.py"),
                              "hint", "vector-add", "0", "--step", "2"],
                             capture_output=True, text=True, env=os.environ)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("hint 1 of", out.stdout)
        self.assertIn("hint 2 of", out.stdout)
        self.assertNotIn("hint 3 of", out.stdout)
        again = subprocess.run([sys.executable, os.path.join(ROOT, "grading", "workbook.py"),
                                "hint", "vector-add", "0"], capture_output=True, text=True)
        self.assertIn("hint 3 of", again.stdout)

    def test_unknown_stage_is_a_clear_error(self):
        out = subprocess.run([sys.executable, os.path.join(ROOT, "grading", "workbook.py"),
                              "hint", "vector-add", "99"], capture_output=True, text=True)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("has no stage 99", out.stderr)


class States(unittest.TestCase):
    """The states of a lab the student has started (its kernels.cu edited)."""

    def setUp(self):
        patch = mock.patch.object(skeleton, "untouched", lambda folder: False)
        patch.start()
        self.addCleanup(patch.stop)

    def states(self):
        return {s: (state, detail) for s, _, state, detail in
                progress.stage_states("00-vector-add", "vector-add", within=20)}

    def test_not_run_without_results(self):
        shutil.rmtree(os.path.join(BUILD, "results"), ignore_errors=True)
        self.assertEqual(self.states()[0][0], "not run")

    def test_failing_names_the_first_failure(self):
        plant("vector-add", "student", [("stage0_sizes", "PASSED", []),
                                        ("stage0_block_sizes", "FAILED", ["12 of 100 elements differ"])])
        state, detail = self.states()[0]
        self.assertEqual(state, "failing")
        self.assertIn("12 of 100 elements differ", detail)

    def test_failing_says_what_not_where(self):
        """A source rule's report starts with where the assertion is and the
        file it read: status shows what it says instead."""
        plant("vector-add", "student", [("stage0_source", "FAILED", [
            "../common/wb_rules.c:262: /home/me/labs/00-vector-add/kernels.cu:",
            "    vector_add_kernel has 0 bounds check(s), it needs 1"])])
        self.assertEqual(self.states()[0][1],
                         "stage0_source: vector_add_kernel has 0 bounds check(s), it needs 1")

    def test_an_untouched_skeleton_is_not_started_not_failing(self):
        plant("vector-add", "student", [("stage0_source", "FAILED", ["0 bounds check(s)"])])
        with mock.patch.object(skeleton, "untouched", lambda folder: True):
            self.assertEqual(self.states()[0], ("not started", ""))
            self.assertEqual(progress.lab_state(progress.stage_states(
                "00-vector-add", "vector-add", within=20)), "not started")

    def test_the_lowest_failing_stage_is_shown(self):
        """A later stage's failure listed first in the report is not the one shown."""
        report = {"test_suites": [{"name": "sync", "tests": [
            {"name": "stage5_donation", "status": "FAILED"},
            {"name": "stage0_counter", "status": "PASSED"},
            {"name": "stage1_spin", "status": "FAILED"}]}]}
        self.assertEqual(progress.lowest_failure(report)[0]["name"], "stage1_spin")

    def test_skipped_without_gpu(self):
        plant("vector-add", "student", [("stage0_sizes", "SKIPPED", ["no GPU"])])
        self.assertEqual(self.states()[0][0], "skipped")

    def test_not_passing_while_gpu_tests_skipped(self):
        """A stage whose CPU-side checks pass but whose GPU tests were
        skipped is not passing: nothing ran its kernel."""
        plant("vector-add", "student", [("stage0_barriers", "PASSED", []),
                                        ("stage0_sizes", "SKIPPED", ["no GPU"])])
        self.assertEqual(self.states()[0][0], "skipped")

    def test_passing_and_speed_against_reference(self):
        rows = lambda ms: [["stage", "time (ms)"], ["0", str(ms)]]
        plant("vector-add", "student", [("stage0_sizes", "PASSED", [])], rows(2.0))
        plant("vector-add", "reference", [("stage0_sizes", "PASSED", [])], rows(1.0))
        state, detail = self.states()[0]
        self.assertEqual(state, "passing")
        self.assertIn("50% of the reference", detail)
        plant("vector-add", "student", [("stage0_sizes", "PASSED", [])], rows(1.1))
        self.assertEqual(self.states()[0][0], "fast")

    def test_results_reused_only_for_the_same_binary_and_a_full_run(self):
        """`grading/workbook` does not run a lab's tests again when its test
        binary is the one the results came from, and every test ran."""
        binary = Path(BUILD) / "vector-add-student"
        binary.write_text("first build")
        plant("vector-add", "student", [("stage0_sizes", "FAILED", ["wrong"])])
        results = Path(BUILD) / "results" / "vector-add-student"
        (results / testruns.STAMP).write_text(testruns.binary_stamp(binary))
        self.assertTrue(testruns.results_still_current("vector-add"))
        binary.write_text("rebuilt after an edit")
        os.utime(binary, ns=(1, 1))
        self.assertFalse(testruns.results_still_current("vector-add"), "a new binary runs again")
        (results / testruns.STAMP).write_text(testruns.binary_stamp(binary))
        plant("vector-add", "student", [("stage0_sizes", "SKIPPED", ["no GPU"])])
        self.assertFalse(testruns.results_still_current("vector-add"),
                         "skipped tests run again: the GPU may be there now")
        (results / testruns.STAMP).unlink()
        self.assertFalse(testruns.results_still_current("vector-add"), "no stamp, no reuse")

    def test_watch_shows_whole_tables(self):
        """The rule under a table's header belongs to the table (watch once
        printed header and rows as two tables)."""
        output = ("[----] test.c:1: noise | not a table\n"
                  "n  | ms\n---+----\n64 | 0.3\n[====] Synthesis: Tested: 1\n")
        self.assertEqual(watching.timing_tables(output), "n  | ms\n---+----\n64 | 0.3")

    def test_progress_bar(self):
        self.assertEqual(progressbar.progress_bar(17, 42, width=10), "[####------] 17/42 stages")


class BuildMessages(unittest.TestCase):
    """A failed build's output (ninja's, from build/) as the student sees it."""
    NINJA = ("[2/3] Compiling Cuda object vector-add-student.p/kernels.cu.o\n"
             "FAILED: vector-add-student.p/kernels.cu.o\n"
             "nvcc -ccbin gcc -o vector-add-student.p/kernels.cu.o -c ../labs/00-vector-add/kernels.cu\n"
             "../labs/00-vector-add/kernels.cu(16): error: expected a \";\"\n"
             "      c[i] = a[i] + b[i];\n"
             "      ^\n\n"
             "1 error detected in the compilation of \"../labs/00-vector-add/kernels.cu\".\n"
             "ninja: build stopped: subcommand failed.\n")
    LINK = ("FAILED: vector-add-student\n"
            "nvcc -o vector-add-student vector-add-student.p/test.c.o\n"
            + "".join(f"/usr/bin/ld: vector-add-student.p/test.c.o: in function `f{k}':\n"
                      f"test.c:(.text+0x{k}4): undefined reference to `vector_add'\n" for k in range(4))
            + "test.c:(.text+0x99): undefined reference to `helper'\n"
            "collect2: error: ld returned 1 exit status\n")

    def setUp(self):   # the build folder whose "../labs" the messages name
        patch = mock.patch.object(labs, "BUILD", os.path.join(ROOT, "build"))
        patch.start()
        self.addCleanup(patch.stop)

    def at_root(self, function, *args):
        """function(*args) run where the student stands: the workbook's folder."""
        here = os.getcwd()
        try:
            os.chdir(ROOT)
            return function(*args)
        finally:
            os.chdir(here)

    def messages(self, output):
        return self.at_root(buildmessages.for_student, output, "00-vector-add")

    def test_compile_error_at_the_students_path(self):
        self.assertEqual(self.messages(self.NINJA), [
            'labs/00-vector-add/kernels.cu:16: error: expected a ";"',
            "      c[i] = a[i] + b[i];", "      ^"])

    def test_missing_entry_point_named_once_with_its_declaration(self):
        lines = self.messages(self.LINK)
        self.assertEqual(len(lines), 2, lines)
        self.assertTrue(lines[0].startswith("`labs/00-vector-add/kernels.cu` must define `void "
                                            "vector_add(const float *a, const float *b, float *c, "
                                            "int n, int block_size)`"), lines)
        self.assertIn("`helper`", lines[1])

    def test_gcc_paths_keep_line_and_column(self):
        self.assertEqual(self.at_root(buildmessages.rewrite,
                                      "../labs/00-vector-add/test.c:12:5: error: x"),
                         "labs/00-vector-add/test.c:12:5: error: x")
        self.assertEqual(self.at_root(buildmessages.rewrite,
                                      "In file included from ../labs/00-vector-add/test.c:3:"),
                         "In file included from labs/00-vector-add/test.c:3:")


class IncludeCheck(unittest.TestCase):
    """The grader's include check, which the student's loop also runs
    (includes.py): the shipped files pass it, a library that does the lab's
    work is refused however its path is spelled."""

    def test_skeletons_and_references_pass(self):
        for folder, _ in labs.all_labs():
            allowed = set(includes.lab_headers(ROOT, folder))
            self.assertEqual(includes.source_problems(ROOT, folder), [], folder)
            reference = Path(ROOT, "solutions", folder, "kernels.cu").read_text()
            self.assertEqual(includes.include_problems(reference, allowed), [], folder)

    def test_libraries_refused(self):
        for line in ("#include <cub/cub.cuh>", '#include "thrust/reduce.h"',
                     "#include <cccl/cub/block/block_reduce.cuh>", "# include <./thrust/sort.h>",
                     "#include <cooperative_groups/reduce.h>",
                     "#include <cooperative_groups/details/coalesced_scan.h>"):
            problems = includes.include_problems(line + "\n", {"lab.h"})
            self.assertEqual(len(problems), 1, line)
            self.assertIn("does the work the labs teach", problems[0])
        for line in ("#include <cooperative_groups.h>", "#include <cuda/atomic>",
                     '#include "lab.h"', "#include <stdio.h>"):
            self.assertEqual(includes.include_problems(line + "\n", {"lab.h"}), [], line)

    def test_file_readers_refused(self):
        for line in ('asm(".incbin \\"x\\"");', 'asm(".include \\"x\\"");', '#embed "x"',
                     "#include_next <stdio.h>", '#include "/etc/passwd"', "#include NAME"):
            self.assertEqual(len(includes.include_problems(line + "\n", set())), 1, line)


class Reset(unittest.TestCase):
    """reset in a scratch copy of grading/ and labs/ that ships its skeletons."""

    def setUp(self):
        self.copy = Path(tempfile.mkdtemp(prefix="wb-reset-test-"))
        for item in ("grading", "labs"):
            shutil.copytree(Path(ROOT, item), self.copy / item,
                            ignore=shutil.ignore_patterns("__pycache__", "*.bak"))
        for folder in ("00-vector-add", "02-atomics"):
            shipped = self.copy / "grading" / "skeletons" / folder
            shipped.mkdir(parents=True)
            shutil.copy(self.copy / "labs" / folder / "kernels.cu", shipped)
        self.skeleton = (self.copy / "labs" / "02-atomics" / "kernels.cu").read_text()

    def tearDown(self):
        shutil.rmtree(self.copy, ignore_errors=True)

    def reset(self, *args):
        return subprocess.run([sys.executable, str(self.copy / "grading" / "workbook.py"), "reset",
                               *args], capture_output=True, text=True,
                              env=dict(os.environ, WB_BUILD_DIR=str(self.copy / "build"), NO_COLOR="1"))

    def edit(self, *stages):
        """The skeleton with a line of 'my work' in each stage's section."""
        lines = self.skeleton.splitlines(keepends=True)
        for stage in sorted(stages, reverse=True):
            start, _, _ = skeleton.section_of(self.skeleton, stage)
            lines.insert(start + 1, f"// my work on stage {stage}\n")
        return "".join(lines)

    def test_whole_file_with_a_backup(self):
        mine = self.copy / "labs" / "02-atomics" / "kernels.cu"
        mine.write_text(self.edit(0, 1))
        out = self.reset("atomics")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(mine.read_text(), self.skeleton)
        backups = list(mine.parent.glob("kernels.cu.*.bak"))
        self.assertEqual(len(backups), 1)
        self.assertIn("my work on stage 1", backups[0].read_text())
        self.assertIn(str(backups[0].relative_to(self.copy)), out.stdout, "says where the backup is")
        self.assertIn("nothing to do", self.reset("atomics").stdout)

    def test_one_stage_keeps_the_others(self):
        mine = self.copy / "labs" / "02-atomics" / "kernels.cu"
        mine.write_text(self.edit(1, 2))
        out = self.reset("atomics", "1")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(mine.read_text(), self.edit(2))

    def test_a_lab_without_stage_sections_is_reset_whole(self):
        out = self.reset("vector-add", "0")
        self.assertEqual(out.returncode, 2)
        self.assertIn("reset the whole file", out.stderr)


class Watch(unittest.TestCase):
    def test_inotify_sees_a_save(self):
        with tempfile.TemporaryDirectory() as folder:
            notifier = watching.Inotify(folder, check=0.3)
            threading.Timer(0.2, lambda: Path(folder, "kernels.cu").write_text("x")).start()
            self.assertEqual(notifier.wait(), {"kernels.cu"})
            self.assertFalse(notifier.polling)

    def test_polls_when_inotify_hears_nothing(self):
        """A change inotify did not report (made on another machine of a
        network file system: here, in a folder it does not watch)."""
        with tempfile.TemporaryDirectory() as watched, tempfile.TemporaryDirectory() as elsewhere:
            notifier = watching.Inotify(watched, check=0.3)
            notifier.poller = watching.Poller(elsewhere, 0.1)
            Path(elsewhere, "kernels.cu").write_text("x")
            self.assertEqual(notifier.wait(), {"kernels.cu"})
            self.assertTrue(notifier.polling)
            threading.Timer(0.3, lambda: Path(elsewhere, "lab.h").write_text("y")).start()
            self.assertEqual(notifier.wait(), {"lab.h"})


def on_screen(argv, cwd, env, columns=80, rows=24, timeout=300):
    """(exit status, what a terminal of columns x rows would show) of a
    command run in a pseudo-terminal of that size, its colours removed."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not select.select([master], [], [], 1)[0]:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:   # EIO: the command ended, and its terminal with it
                break
            if not data:
                break
            chunks.append(data)
    finally:
        if proc.poll() is None:
            proc.kill()
        status = proc.wait()
        os.close(master)
    text = b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")
    return status, re.sub(r"\x1b\[[0-9;]*m", "", text)


@unittest.skipUnless(shutil.which("nvcc") and shutil.which("ninja"), "needs nvcc and ninja")
class StudentScreen(unittest.TestCase):
    """The student's loop as a terminal of 80 columns shows it, in a scratch
    copy of the workbook with lab 00 alone in its build, which starts from
    the objects of the repository's build where there is one (as
    check_documented_commands.py's scratch does; else for Hopper, as without
    a GPU): `grading/workbook --labs 00-vector-add` shows that lab and
    one line for the others, nothing wider than the terminal; a compile
    error comes last, at the student's own path; a renamed entry point is
    named with its declaration; a mistyped lab gets the labs' names."""
    COLUMNS, ROWS = 80, 24

    @classmethod
    def setUpClass(cls):
        cls.copy = Path(tempfile.mkdtemp(prefix="wb-screen-test-"))
        for item in ("meson.build", "meson_options.txt", "common", "labs", "grading"):
            copy = shutil.copytree if Path(ROOT, item).is_dir() else shutil.copy
            copy(Path(ROOT, item), cls.copy / item)
        for folder, _ in labs.all_labs():   # as the student copy ships them: the labs not started
            shipped = cls.copy / "grading" / "skeletons" / folder
            shipped.mkdir(parents=True, exist_ok=True)
            shutil.copy(cls.copy / "labs" / folder / "kernels.cu", shipped)
        cls.kernels = cls.copy / "labs" / "00-vector-add" / "kernels.cu"
        cls.skeleton = cls.kernels.read_text()
        cls.env = {k: v for k, v in os.environ.items()
                   if k not in ("COLUMNS", "LINES", "NO_COLOR", "WB_BUILD_DIR")}
        cls.env.update(WB_BUILD_DIR=str(cls.copy / "build"), TERM="xterm")
        seed = os.environ.get("WB_TEST_BINARIES")
        options = check_documented_commands.build_options(seed) if seed else ["-Dgpu_arch=9.0"]
        subprocess.run(["meson", "setup", cls.env["WB_BUILD_DIR"], "-Dlabs=00-vector-add", *options],
                       cwd=cls.copy, env=cls.env, stdout=subprocess.DEVNULL, check=True)
        if seed:   # copytree kept the sources' times: ninja rebuilds only what differs
            check_documented_commands.seed_build(cls.env["WB_BUILD_DIR"], seed)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.copy, ignore_errors=True)

    def screen(self, *args):
        status, text = on_screen(["grading/workbook", *args], self.copy, self.env,
                                 self.COLUMNS, self.ROWS)
        lines = text.rstrip("\n").split("\n")
        for line in lines:
            self.assertLessEqual(len(line), self.COLUMNS, f"wider than the terminal:\n{text}")
        return status, text, lines

    def with_kernels(self, text):
        self.kernels.write_text(text)
        self.addCleanup(self.kernels.write_text, self.skeleton)

    def test_1_one_lab_and_the_others_in_a_line(self):
        status, text, lines = self.screen("--labs", "00-vector-add")
        self.assertEqual(status, 0, text)
        self.assertRegex(text, r"vector-add stage 0 ", text)
        others = f"{len(labs.all_labs()) - 1} other labs"
        self.assertIn(f"{others}: {len(labs.all_labs()) - 1} not started", text)
        self.assertNotIn("sync-up ", text.split(others)[0], "another lab's rows")
        for _, (title, _) in progress.read_hints("00-vector-add").items():
            self.assertIn(title, " ".join(" ".join(lines).split()), "a title cut")

    def test_2_a_compile_error_comes_last_at_the_students_path(self):
        self.with_kernels(self.skeleton.replace("int i = 0;", "int i = 0", 1))
        status, text, lines = self.screen("vector-add")
        self.assertEqual(status, 1, text)
        last_screen = "\n".join(lines[-self.ROWS:])
        self.assertRegex(last_screen, r"(?m)^  labs/00-vector-add/kernels\.cu:\d+: error", text)
        self.assertIn("vector-add does not compile", last_screen)

    def test_3_a_renamed_entry_point_is_named_with_its_declaration(self):
        self.with_kernels(self.skeleton.replace("void vector_add(", "void vector_addd(", 1))
        status, text, lines = self.screen("vector-add")
        self.assertEqual(status, 1, text)
        joined = " ".join(" ".join(lines).split())
        self.assertIn("`labs/00-vector-add/kernels.cu` must define `void vector_add(const float *a,",
                      joined)
        self.assertEqual(joined.count("must define"), 1, text)
        self.assertNotIn("undefined reference", text)

    def test_4_a_mistyped_lab_is_answered_with_the_labs(self):
        status, text, _ = self.screen("vector-ad")
        self.assertEqual(status, 2, text)
        self.assertIn("unknown lab 'vector-ad'; the labs are: vector-add,", " ".join(text.split()))
        self.assertIn("Did you mean 'vector-add'?", " ".join(text.split()))


@unittest.skipUnless(os.environ.get("WB_TEST_BINARIES"), "needs the built benchmarks")
class Benchmarks(unittest.TestCase):
    """Every benchmark takes the common options (common/bench.h): each is
    described or refused with a reason, and a bad one is an error (exit 2)
    that names what the benchmark takes."""
    COMMON = ("--stage", "--n", "--block", "--reps", "--target")

    def test_common_options(self):
        checked = 0
        for folder, name in labs.all_labs():
            binary = os.path.join(os.environ["WB_TEST_BINARIES"], f"{name}-bench-reference")
            if not os.path.exists(binary):
                continue
            checked += 1
            usage = subprocess.run([binary, "--help"], capture_output=True, text=True)
            self.assertEqual(usage.returncode, 0, name)
            for option in self.COMMON:
                self.assertRegex(usage.stdout, rf"\n  {option}\b", f"{name}: --help on {option}")
            for bad in (["--reps", "0"], ["--no-such-option"], ["--stage", "99"], ["stray"]):
                out = subprocess.run([binary, *bad], capture_output=True, text=True)
                self.assertEqual(out.returncode, 2, f"{name} {bad}: {out.stderr}")
                self.assertIn("It takes --", out.stderr, f"{name} {bad}")
        self.assertTrue(checked, "no benchmark was built")


if __name__ == "__main__":
    unittest.main(verbosity=1)
