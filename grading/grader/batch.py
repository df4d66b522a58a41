"""Batch grading: every entry of a folder (a directory, .zip or .tar.gz) is
one submission, graded by its own `workbook grade` process; one submission
per GPU at a time (CUDA_VISIBLE_DEVICES), a progress bar, a final CSV.
With --slurm the same gradings run as a Slurm job array (slurm.py)."""
import os
import subprocess
import sys
import tempfile
import threading

from shared import labs
from . import gradejob
from . import pool
from . import reports
from . import slurm



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


EXIT_STATUSES = """exit status: 0 every submission graded, whatever the scores; 1 the grader could
not grade some of them (their CSV rows say why, and the CSV and the class page
are still written); 2 a mistake in the command line (no such folder, an
empty one, an unknown lab): nothing is graded."""


def usage_error(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def submissions_in(folder):
    if not os.path.isdir(folder):
        usage_error(f"{folder} is not a folder of submissions")
    names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
    if not names:
        usage_error(f"no submissions in {folder}")
    return [os.path.join(folder, n) for n in names]


def ungraded(rows):
    """How many rows are of submissions the grader could not grade."""
    return sum(r["rejected"].startswith(reports.FAILED) for r in rows)


def grade_options(args):
    """The `workbook grade` options every submission of the batch gets."""
    extra = sum((["--lab", lab] for lab in args.lab or []), [])
    return extra + (["--rubric", os.path.abspath(args.rubric)] if args.rubric else [])


def batch(args):
    unknown = [name for name in args.lab or [] if labs.find_lab(name) is None]
    if unknown:
        usage_error(f"unknown lab {', '.join(unknown)}; the labs are: "
                    + ", ".join(name for _, name in labs.all_labs()))
    if args.jobs is not None and args.jobs < 1:
        usage_error(f"--jobs {args.jobs}: at least 1")
    paths = submissions_in(args.folder)
    if args.slurm:
        return slurm.run(args, paths, grade_options(args))
    gpus = args.gpus or gpu_count()
    slots = [device for device in range(gpus) for _ in range(args.per_gpu)]
    # The grades that run at once share the cores and each GPU: each runs its
    # builds and correctness tests that many at a time (grade --jobs).
    jobs = args.jobs or pool.default_jobs(grades=len(slots), per_gpu=args.per_gpu)
    extra = grade_options(args) + ["--jobs", str(jobs)]
    rows_dir = args.logs or tempfile.mkdtemp(prefix="wbbatch-")
    os.makedirs(rows_dir, exist_ok=True)
    rows, lock = [], threading.Lock()

    def grade(path, device):
        row = gradejob.grade_one(path, device, rows_dir, extra)
        with lock:
            rows.append(row)
            gradejob.progress(len(rows), len(paths))

    gradejob.progress(0, len(paths))
    pool.run(paths, slots, grade)
    sys.stderr.write("\n")
    page = gradejob.write_results(rows, args.csv, rows_dir)
    where = f"on {gpus} GPU(s)" if gpus_listed() else "without a GPU (build status only)"
    print(f"{len(rows)} submissions graded {where}: {args.csv}, the class at a glance in {page} "
          f"(logs in {rows_dir})")
    return 1 if ungraded(rows) else 0


def add_commands(sub):
    b = sub.add_parser("batch", help="grade a folder of submissions, one per GPU at a time, into a CSV",
                       description="Grades every entry of a folder (a directory, .zip or .tar.gz) "
                       "as one submission, each in its own `grade` process; writes the CSV and, "
                       "beside it, the class page (the CSV's name with .html).",
                       epilog=EXIT_STATUSES)
    b.add_argument("folder", help="folder whose entries (directories, .zip, .tar.gz) are submissions")
    b.add_argument("--csv", default="grades.csv", help="the CSV to write (default grades.csv)")
    b.add_argument("--gpus", type=int, help="how many GPUs to use (default: all, via nvidia-smi)")
    b.add_argument("--per-gpu", type=int, default=1,
                   help="submissions at a time on each GPU (default 1; more only for correctness runs, "
                        "timings then disturb each other)")
    b.add_argument("--jobs", type=int, help="builds and correctness tests at a time within each submission's "
                   "grade (default: the CPU cores shared by the grades running at once, and "
                   f"{pool.MAX_JOBS} per GPU shared by --per-gpu)")
    b.add_argument("--rubric", help="rubric file (default grading/rubric.toml)")
    b.add_argument("--lab", action="append", help="only this lab (repeatable)")
    b.add_argument("--logs", help="folder for each submission's JSON report and log (default: a new temporary "
                                  "folder; with --slurm a new wbbatch-* folder in the current directory)")
    s = b.add_argument_group(
        "Slurm", "--slurm grades on a Slurm cluster instead, as one job array (one task per submission), "
        "and gathers the results into the same CSV when the array has finished. This checkout, the "
        "submissions and --logs must be on a filesystem that the nodes share.")
    s.add_argument("--slurm", action="store_true", help="submit the batch to Slurm with sbatch")
    s.add_argument("--gres", default="gpu:1", help="generic resources per task (default gpu:1)")
    s.add_argument("--no-gres", action="store_true", help="ask for no --gres (CPU-only grading)")
    s.add_argument("--partition", help="the partition to submit to (default: the cluster's default)")
    s.add_argument("--time-limit", metavar="TIME",
                   help="Slurm time limit per task: minutes (30) or H:MM:SS (default: the partition's)")
    s.add_argument("--sbatch-arg", action="append", metavar="ARG", default=[],
                   help="one more sbatch option, e.g. --sbatch-arg=--account=cs101 (repeatable; "
                        "use the = form for values that start with a dash)")
    s.add_argument("--max-running", type=int, metavar="K",
                   help="at most K tasks of the array at a time (sbatch --array=...%%K)")
    s.add_argument("--wait-limit", type=float, metavar="SECONDS",
                   help="stop waiting after this long: cancel what has not finished and grade it as an error")
    b.set_defaults(func=batch)
