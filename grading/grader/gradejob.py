"""One submission graded in its own `workbook grade` process, and its row
of the batch's CSV, and the batch's CSV and class page: what a local batch
(batch.py) and a Slurm batch (slurm.py) both do."""
import csv
import json
import os
import subprocess
import sys

from shared.progressbar import progress_bar
from . import classpage
from . import reports

WORKBOOK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "workbook.py")


def report_file(path, rows_dir):
    """Where a submission's JSON report goes (its log: the same with .log)."""
    return os.path.join(rows_dir, os.path.basename(path) + ".json")


def grade_one(path, device, rows_dir, extra):
    """Grades one submission in its own `workbook grade` process; its JSON
    report and log go to rows_dir. device: the GPU to show it, or None to
    leave CUDA_VISIBLE_DEVICES as it is (Slurm sets it for the task)."""
    env = dict(os.environ)
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(device)
    cmd = [sys.executable, WORKBOOK, "grade", "--submission", path,
           "--json", report_file(path, rows_dir)] + extra
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace")
    with open(os.path.join(rows_dir, os.path.basename(path) + ".log"), "w") as f:
        f.write(proc.stdout)
    return collect(path, rows_dir, lambda: proc.stdout[-300:])


def collect(path, rows_dir, why):
    """The CSV row of a graded submission, from its JSON report; without a
    report, an error row ("the grader failed on this submission: " + why())
    so that the CSV still has every submission."""
    try:
        with open(report_file(path, rows_dir)) as f:
            report = json.load(f)
    except (OSError, ValueError):
        report = reports.failed(why(), path)
    report["submission"] = os.path.basename(path)
    return reports.csv_row(report)


def write_results(rows, path, rows_dir):
    """The batch's CSV at path and the class page beside it (classpage.py);
    returns the page's path."""
    rows.sort(key=lambda r: r["submission"])
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=reports.CSV_FIELDS)
        w.writeheader()
        w.writerows(rows)
    return classpage.write(rows, rows_dir, path)


def progress(done, total):
    sys.stderr.write("\r" + progress_bar(done, total, unit="submissions"))
    sys.stderr.flush()
