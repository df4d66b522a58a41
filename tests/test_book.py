#!/usr/bin/env python3
"""Tests of handouts/book fill: a planted results CSV lands in the chapter's
"your results" block, as a Markdown table, and nothing else changes."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Fill(unittest.TestCase):
    def test_planted_table_is_filled_in(self):
        with tempfile.TemporaryDirectory() as tmp:
            handouts = os.path.join(tmp, "handouts")
            shutil.copytree(os.path.join(ROOT, "handouts"), handouts)
            results = os.path.join(tmp, "results", "vector-add-student")
            os.makedirs(results)
            with open(os.path.join(results, "vector-add.csv"), "w") as f:
                f.write('"n","time (ms)"\n"67108864","0.297"\n')
            before = open(os.path.join(handouts, "00-vector-add.md")).read()
            proc = subprocess.run([sys.executable, os.path.join(handouts, "book"), "fill",
                                   "--results", os.path.join(tmp, "results")],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            after = open(os.path.join(handouts, "00-vector-add.md")).read()
            self.assertIn("| n | time (ms) |\n|---|---|\n| 67108864 | 0.297 |", after)
            self.assertNotIn("Not measured yet.", after.split("your-results: vector-add")[1][:200])
            head = before.split("<!-- your-results")[0]
            self.assertTrue(after.startswith(head), "text before the block changed")
            # Filling again replaces the table rather than adding a second one.
            subprocess.run([sys.executable, os.path.join(handouts, "book"), "fill",
                            "--results", os.path.join(tmp, "results")], check=True,
                           capture_output=True)
            again = open(os.path.join(handouts, "00-vector-add.md")).read()
            self.assertEqual(again, after)


if __name__ == "__main__":
    unittest.main(verbosity=1)
