#!/usr/bin/env python3
"""Unit tests of the student tools (grading/student.py): hint parsing, stage
states from planted result files, and that every lab has hints for every
stage its tests name."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = tempfile.mkdtemp(prefix="wb-student-test-")
os.environ["WB_BUILD_DIR"] = BUILD
sys.path.insert(0, os.path.join(ROOT, "grading"))

import labs  # noqa: E402
import student  # noqa: E402


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
            stages = student.read_hints(folder)
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
            hinted = set(student.read_hints(folder))
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
    def states(self):
        return {s: (state, detail) for s, _, state, detail in
                student.stage_states("00-vector-add", "vector-add", within=20)}

    def test_not_run_without_results(self):
        shutil.rmtree(os.path.join(BUILD, "results"), ignore_errors=True)
        self.assertEqual(self.states()[0][0], "not run")

    def test_failing_names_the_first_failure(self):
        plant("vector-add", "student", [("stage0_sizes", "PASSED", []),
                                        ("stage0_block_sizes", "FAILED", ["12 of 100 elements differ"])])
        state, detail = self.states()[0]
        self.assertEqual(state, "failing")
        self.assertIn("12 of 100 elements differ", detail)

    def test_skipped_without_gpu(self):
        plant("vector-add", "student", [("stage0_sizes", "SKIPPED", ["no GPU"])])
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

    def test_watch_shows_whole_tables(self):
        """The rule under a table's header belongs to the table (watch once
        printed header and rows as two tables)."""
        output = ("[----] test.c:1: noise | not a table\n"
                  "n  | ms\n---+----\n64 | 0.3\n[====] Synthesis: Tested: 1\n")
        self.assertEqual(student.timing_tables(output), "n  | ms\n---+----\n64 | 0.3")

    def test_progress_bar(self):
        self.assertEqual(student.progress_bar(17, 42, width=10), "[####------] 17/42 stages")


if __name__ == "__main__":
    unittest.main(verbosity=1)
