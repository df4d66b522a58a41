"""`workbook batch --slurm`: the batch as one Slurm job array.

The submitting side writes, into the logs folder, a manifest (the
submissions, the `workbook grade` options) and a job script, submits the
script with `sbatch --array=0-(N-1)`, waits until the array has left the
queue (a progress bar counts the reports that have come back), then gathers
one CSV row per submission, exactly as the local batch does. Array task i
runs `python3 grading/grader/slurm.py MANIFEST` on its node, which grades
submission i with gradejob.grade_one (the same `workbook grade` process the
local batch runs); Slurm sets CUDA_VISIBLE_DEVICES for its --gres. A task
that fails, is cancelled or runs out of time leaves no report and gets an
error row saying so. The checkout, the submissions and the logs folder must
be on a filesystem that the nodes share.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# A task runs this file as a script (see the job script below): its imports
# need grading/ on the path, as grading/workbook.py puts it there.
sys.path.insert(0, os.path.dirname(HERE))

from grader import gradejob  # noqa: E402
from grader import reports  # noqa: E402

MANIFEST = "slurm-manifest.json"
SCRIPT = "slurm-job.sh"
POLL_S = float(os.environ.get("WB_SLURM_POLL_S", "5"))   # seconds between queue checks


def task(manifest):
    """One array task: grade submission number SLURM_ARRAY_TASK_ID."""
    with open(manifest) as f:
        m = json.load(f)
    index = int(os.environ["SLURM_ARRAY_TASK_ID"])
    path = m["submissions"][index]
    print(f"task {index}: grading {path} on {os.uname().nodename}", flush=True)
    gradejob.grade_one(path, None, m["rows_dir"], m["extra"])
    return 0 if os.path.exists(gradejob.report_file(path, m["rows_dir"])) else 1


def sbatch_command(args, count, rows_dir):
    array = f"0-{count - 1}" + (f"%{args.max_running}" if args.max_running else "")
    cmd = ["sbatch", "--parsable", f"--array={array}", "--job-name=wb-grade",
           "--output=" + os.path.join(rows_dir, "slurm-%A_%a.out"), "--chdir=" + rows_dir]
    if not args.no_gres:
        cmd.append("--gres=" + args.gres)
    if args.partition:
        cmd.append("--partition=" + args.partition)
    if args.time_limit:
        cmd.append("--time=" + args.time_limit)
    for arg in args.sbatch_arg:
        cmd += shlex.split(arg)
    return cmd + [os.path.join(rows_dir, SCRIPT)]


def write_job(rows_dir, paths, extra):
    with open(os.path.join(rows_dir, MANIFEST), "w") as f:
        json.dump({"submissions": paths, "rows_dir": rows_dir, "extra": extra}, f, indent=1)
    script = os.path.join(rows_dir, SCRIPT)
    with open(script, "w") as f:
        f.write("#!/bin/sh\n# Written by `workbook batch --slurm`: array task i grades submission i"
                f" of {MANIFEST}.\nexec {shlex.quote(sys.executable)} "
                f"{shlex.quote(os.path.join(HERE, 'slurm.py'))} {shlex.quote(os.path.join(rows_dir, MANIFEST))}\n")
    os.chmod(script, 0o755)


def in_queue(job):
    """True while any task of the job is pending or running; None when the
    queue cannot be read (the controller is busy or restarting)."""
    try:
        out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%i"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return False if "Invalid job id" in out.stderr else None
    return bool(out.stdout.strip())


def cancel(job):
    subprocess.run(["scancel", job], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait(job, paths, rows_dir, wait_limit):
    """Waits until the array has left the queue, with a progress bar; at the
    wait limit (or on Ctrl-C) cancels what is left. Returns what stopped it
    early, or None."""
    start, unreadable = time.time(), 0
    try:
        while True:
            # A log is written when a grading has ended, whatever its outcome.
            done = sum(os.path.exists(os.path.join(rows_dir, os.path.basename(p) + ".log")) for p in paths)
            gradejob.progress(done, len(paths))
            state = in_queue(job)
            if state is False:
                return None
            unreadable = unreadable + 1 if state is None else 0
            if unreadable == 12:
                sys.stderr.write("\nwarning: squeue has not answered for a while; still waiting\n")
            if wait_limit is not None and time.time() - start > wait_limit:
                cancel(job)
                return f"the batch stopped waiting at --wait-limit {wait_limit:g} s and cancelled the rest"
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        cancel(job)
        sys.stderr.write(f"\ninterrupted: job {job} cancelled\n")
        raise SystemExit(130)


def task_state(job, index):
    """What Slurm says of one array task (sacct where accounting is on,
    else scontrol while the controller still remembers the job)."""
    name = f"{job}_{index}"
    for cmd in (["sacct", "-n", "-X", "-P", "-j", name, "-o", "State,ExitCode"],
                ["scontrol", "-o", "show", "job", name]):
        try:
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        text = out.stdout.strip()
        if out.returncode == 0 and text:
            if cmd[0] == "scontrol":
                fields = dict(f.split("=", 1) for f in text.split() if "=" in f)
                return f"{fields.get('JobState', '?')} ({fields.get('Reason', '')}, exit {fields.get('ExitCode', '?')})"
            return text.splitlines()[0].replace("|", ", exit ")
    return "state unknown"


def tail(path, chars=300):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-chars:]
    except OSError:
        return ""


def why_failed(job, index, path, rows_dir, stopped):
    """Why task `index` left no report: what Slurm says, the ends of the
    task's output and of the grader's log, on one line."""
    text = f"Slurm task {job}_{index}: {task_state(job, index)}" + (f" ({stopped})" if stopped else "")
    for what, name in (("its output", f"slurm-{job}_{index}.out"), ("the grader's log", os.path.basename(path) + ".log")):
        end = " | ".join(tail(os.path.join(rows_dir, name), 200).split("\n")).strip(" |")
        text += f"; {what} ends: {end}" if end else ""
    return text


def run(args, paths, extra):
    if shutil.which("sbatch") is None:
        sys.exit("error: --slurm needs Slurm's sbatch, and there is none on PATH: run the batch on a machine "
                 "that submits to the cluster (a login node), or install the Slurm client (slurm-client)")
    if args.logs:
        rows_dir = os.path.abspath(args.logs)
        os.makedirs(rows_dir, exist_ok=True)
    else:   # not /tmp: the nodes must see it
        rows_dir = tempfile.mkdtemp(prefix="wbbatch-", dir=os.getcwd())
    paths = [os.path.abspath(p) for p in paths]
    for p in paths:   # reports of an earlier batch in the same folder must not count
        for ext in (".json", ".log"):
            if os.path.exists(os.path.join(rows_dir, os.path.basename(p) + ext)):
                os.remove(os.path.join(rows_dir, os.path.basename(p) + ext))
    write_job(rows_dir, paths, extra)
    cmd = sbatch_command(args, len(paths), rows_dir)
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        problem = "" if out.returncode == 0 and out.stdout.strip() else \
            f"sbatch refused the job array (exit {out.returncode}): {out.stderr.strip()}"
    except (OSError, subprocess.TimeoutExpired) as e:
        problem = f"sbatch did not run: {e}"
    if problem:
        if not args.logs:
            shutil.rmtree(rows_dir, ignore_errors=True)
        sys.exit(f"error: {problem}\n  command: {shlex.join(cmd)}")
    job = out.stdout.strip().split(";")[0]
    print(f"submitted {len(paths)} submissions as Slurm job array {job} (logs in {rows_dir})", flush=True)
    stopped = wait(job, paths, rows_dir, args.wait_limit)
    if stopped:   # give the cancelled tasks a moment to leave the queue
        for _ in range(30):
            if in_queue(job) is False:
                break
            time.sleep(1)
    sys.stderr.write("\n")
    rows = [gradejob.collect(p, rows_dir, lambda i=i, p=p: why_failed(job, i, p, rows_dir, stopped))
            for i, p in enumerate(paths)]
    page = gradejob.write_results(rows, args.csv, rows_dir)
    failed = sum(r["rejected"].startswith(reports.FAILED) for r in rows)
    print(f"{len(rows)} submissions graded on Slurm (job {job}): {args.csv}, the class at a glance in "
          f"{page} (logs in {rows_dir})"
          + (f"; {failed} without a report (error rows)" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(task(sys.argv[1]))
