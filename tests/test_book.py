#!/usr/bin/env python3
"""Tests of the book: handouts/book fill puts a planted results CSV into the
chapter's "your results" block, as a Markdown table, and nothing else
changes; every question of every chapter has its answer in answers.md."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Fill(unittest.TestCase):
    def scratch(self, tmp, table):
        """handouts/ and grading/ (book reads test reports with it) copied
        into tmp, and a student results folder with vector-add.csv holding
        `table`; returns (handouts folder, results folder)."""
        for folder in ("handouts", "grading"):
            shutil.copytree(os.path.join(ROOT, folder), os.path.join(tmp, folder))
        results = os.path.join(tmp, "results", "vector-add-student")
        os.makedirs(results)
        with open(os.path.join(results, "vector-add.csv"), "w") as f:
            f.write(table)
        return os.path.join(tmp, "handouts"), results

    def fill(self, tmp):
        return subprocess.run([sys.executable, os.path.join(tmp, "handouts", "book"), "fill",
                               "--results", os.path.join(tmp, "results")],
                              capture_output=True, text=True)

    def test_planted_table_is_filled_in(self):
        with tempfile.TemporaryDirectory() as tmp:
            handouts, _ = self.scratch(tmp, '"n","time (ms)"\n"67108864","0.297"\n')
            with open(os.path.join(handouts, "00-vector-add.md")) as f:
                before = f.read()
            proc = self.fill(tmp)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            with open(os.path.join(handouts, "00-vector-add.md")) as f:
                after = f.read()
            self.assertIn("| n | time (ms) |\n|---|---|\n| 67108864 | 0.297 |", after)
            self.assertNotIn("Not measured yet.", after.split("your-results: vector-add")[1][:200])
            head = before.split("<!-- your-results")[0]
            self.assertTrue(after.startswith(head), "text before the block changed")
            # Filling again replaces the table rather than adding a second one.
            self.assertEqual(self.fill(tmp).returncode, 0)
            with open(os.path.join(handouts, "00-vector-add.md")) as f:
                self.assertEqual(f.read(), after)

    def test_run_with_failed_tests_is_not_filled_in(self):
        """A skeleton's kernel that does nothing is "faster than a copy": the
        table of a run with failed tests stays out of the book."""
        with tempfile.TemporaryDirectory() as tmp:
            handouts, results = self.scratch(tmp, '"n","% of copy"\n"67108864","3965.1"\n')
            with open(os.path.join(results, "criterion.json"), "w") as f:
                f.write('{"test_suites": [{"name": "vector_add", "tests": ['
                        '{"name": "stage0_sizes", "status": "FAILED", "messages": []}]}]}')
            with open(os.path.join(handouts, "00-vector-add.md")) as f:
                before = f.read()
            proc = self.fill(tmp)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("not filled: 1 test(s) failed", proc.stdout)
            with open(os.path.join(handouts, "00-vector-add.md")) as f:
                self.assertEqual(f.read(), before)


class Answers(unittest.TestCase):
    """Each chapter's numbered questions ("## Questions", "## Check yourself",
    "## Exercises ...") are answered one by one, as **N.**, in the chapter's
    section of answers.md (the section that names the chapter's title)."""

    def test_every_question_has_an_answer(self):
        handouts = os.path.join(ROOT, "handouts")
        with open(os.path.join(handouts, "answers.md")) as f:
            sections = f.read().split("\n## ")[1:]
        answered = {s.split("\n")[0]: set(re.findall(r"^\*\*(\d+)\.", s, re.M)) for s in sections}
        for path in sorted(glob.glob(os.path.join(handouts, "*.md"))):
            with open(path) as f:
                text = f.read()
            asked = set()
            for block in re.finditer(r"\n## (?:Questions|Check yourself|Exercises[^\n]*)\n(.*?)(?=\n## |\Z)",
                                     text, re.S):
                asked |= set(re.findall(r"^(\d+)\. ", block.group(1), re.M))
            if not asked:
                continue
            title = text.split("\n")[0].lstrip("# ").strip()
            # "Lab 02: atomics, locks and worklists" in answers.md; the chapter's
            # title may be longer ("Lab 02: atomics, ...: a lock per node").
            section = [name for name in answered if title.startswith(name.split(":")[0])
                       and (name.split(":")[0].startswith("Lab") or title.startswith(name))]
            with self.subTest(chapter=os.path.basename(path)):
                self.assertTrue(section, f"{os.path.basename(path)} ({title}) has no section in answers.md")
                missing = sorted(asked - answered[section[0]], key=int)
                self.assertFalse(missing, f"{os.path.basename(path)}: questions {missing} have no answer")



if __name__ == "__main__":
    unittest.main(verbosity=1)
