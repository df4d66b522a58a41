"""Batch grading: every entry of a folder (a directory, .zip or .tar.gz) is
one submission, graded by its own `workbook grade` process; one submission
per GPU at a time (CUDA_VISIBLE_DEVICES), a progress bar, a final CSV."""
import csv
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading

import reports

HERE = os.path.dirname(os.path.abspath(__file__))


def gpus_listed():
    """How many GPUs nvidia-smi lists; 0 without a driver or GPU."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(l.startswith("GPU ") for l in out.stdout.splitlines())


def gpu_count():
    """GPUs to spread a batch over (one slot even on a machine without any)."""
    return max(1, gpus_listed())


def submissions_in(folder):
    if not os.path.isdir(folder):
        sys.exit(f"error: {folder} is not a folder of submissions")
    names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
    if not names:
        sys.exit(f"error: no submissions in {folder}")
    return [os.path.join(folder, n) for n in names]


def grade_one(path, device, rows_dir, extra):
    row_file = os.path.join(rows_dir, os.path.basename(path) + ".json")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(device))
    cmd = [sys.executable, os.path.join(HERE, "workbook.py"), "grade", "--submission", path,
           "--json", row_file] + extra
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace")
    with open(os.path.join(rows_dir, os.path.basename(path) + ".log"), "w") as f:
        f.write(proc.stdout)
    try:
        with open(row_file) as f:
            report = json.load(f)
    except (OSError, ValueError):
        report = reports.rejected("the grader failed on this submission: " + proc.stdout[-300:], path)
    report["submission"] = os.path.basename(path)
    return reports.csv_row(report)


def progress(done, total):
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    sys.stderr.flush()


def batch(args):
    paths = submissions_in(args.folder)
    gpus = args.gpus or gpu_count()
    extra = sum((["--lab", lab] for lab in args.lab or []), [])
    extra += ["--rubric", os.path.abspath(args.rubric)] if args.rubric else []
    rows_dir = args.logs or tempfile.mkdtemp(prefix="wbbatch-")
    os.makedirs(rows_dir, exist_ok=True)
    todo = queue.Queue()
    for p in paths:
        todo.put(p)
    rows, lock = [], threading.Lock()

    def worker(device):
        while True:
            try:
                path = todo.get_nowait()
            except queue.Empty:
                return
            row = grade_one(path, device, rows_dir, extra)
            with lock:
                rows.append(row)
                progress(len(rows), len(paths))

    progress(0, len(paths))
    threads = [threading.Thread(target=worker, args=(d,)) for d in range(gpus)
               for _ in range(args.per_gpu)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sys.stderr.write("\n")
    rows.sort(key=lambda r: r["submission"])
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=reports.CSV_FIELDS)
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} submissions graded on {gpus} GPU(s): {args.csv} (logs in {rows_dir})")
    return 0


def add_commands(sub):
    b = sub.add_parser("batch", help="grade a folder of submissions, one per GPU at a time, into a CSV")
    b.add_argument("folder", help="folder whose entries (directories, .zip, .tar.gz) are submissions")
    b.add_argument("--csv", default="grades.csv", help="the CSV to write (default grades.csv)")
    b.add_argument("--gpus", type=int, help="how many GPUs to use (default: all, via nvidia-smi)")
    b.add_argument("--per-gpu", type=int, default=1,
                   help="submissions at a time on each GPU (default 1; more only for correctness runs, "
                        "timings then disturb each other)")
    b.add_argument("--rubric", help="rubric file (default grading/rubric.toml)")
    b.add_argument("--lab", action="append", help="only this lab (repeatable)")
    b.add_argument("--logs", help="folder for each submission's JSON report and log")
    b.set_defaults(func=batch)
