#!/usr/bin/env python3
"""`workbook batch --slurm` for real, on the CPU side.

Starts a one-node Slurm cluster on localhost (munged, slurmctld, slurmd, as
root, everything in a temporary folder, free ports, SLURM_CONF pointing at
it: nothing system-wide beyond the packages), grades three submissions of
lab 00 through it with `batch --slurm --no-gres` (the reference, the
skeleton, one that does not compile: compile status only, the GPU tests are
skipped), checks the CSV, then stops the cluster and removes the folder.
Installs slurmctld, slurmd, slurm-client and munge with apt-get when they
are missing. Exit 77 (skipped), with the reason, when it is not root or
cannot install them.

usage: test_slurm.py [--keep DIR]   (--keep: the cluster's logs and the
                                     batch's files stay in DIR)"""
import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "grading"))
import hostile  # noqa: E402
from grader import slurm  # noqa: E402
from test_grader import LAB, RUBRIC, WORKBOOK, put  # noqa: E402

PROGRAMS = {"slurmctld": "slurmctld", "slurmd": "slurmd", "sbatch": "slurm-client", "munged": "munge"}
# Errors every start logs here, harmless: no PMIx library, a fresh state folder.
NOISE = ("pmix", "PMIx", "MPI:", "state file", "backup state")
SBIN = ["/usr/sbin", "/sbin"]   # where Debian puts the daemons (not on a plain user's PATH)


def skip(reason):
    print(f"skipped: {reason}")
    sys.exit(77)


def install():
    """Installs the packages of the missing programs, or skips."""
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", "")] + SBIN)
    missing = sorted({pkg for prog, pkg in PROGRAMS.items() if shutil.which(prog) is None})
    if not missing:
        return
    if shutil.which("apt-get") is None:
        skip(f"Slurm is not installed ({' '.join(missing)} missing) and there is no apt-get to install it")
    print("installing: " + " ".join(missing), flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing):
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            skip(f"apt-get could not install {' '.join(missing)}: {proc.stdout.strip()[-300:]}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """munged + slurmctld + slurmd in the foreground, children of this
    process; stop() ends them (after cancelling any job left)."""

    def __init__(self, base):
        self.base, self.procs = base, []
        self.conf = os.path.join(base, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.socket = os.path.join(base, "munge", "munge.socket")

    def write_files(self):
        for d in ("munge", "state", "spool", "log"):
            os.makedirs(os.path.join(self.base, d))
        os.chmod(self.base, 0o755)   # munged: the socket's folders must be searchable by all
        key = os.path.join(self.base, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        b = self.base
        conf = f"""# One node, one partition, no accounting, no cgroups (test_slurm.py).
ClusterName=wbtest
SlurmctldHost=localhost
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket}
StateSaveLocation={b}/state
SlurmdSpoolDir={b}/spool
SlurmctldPidFile={b}/slurmctld.pid
SlurmdPidFile={b}/slurmd.pid
SlurmctldLogFile={b}/log/slurmctld.log
SlurmdLogFile={b}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
NodeName=localhost CPUs={os.cpu_count() or 1} RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""
        with open(self.conf, "w") as f:
            f.write(conf)

    def daemon(self, name, cmd):
        log = open(os.path.join(self.base, "log", name + ".out"), "w")
        # In this process's group: a test runner that kills the group (meson
        # at its timeout) ends the daemons too.
        self.procs.append((name, subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                                  stdin=subprocess.DEVNULL)))

    def start(self):
        self.write_files()
        m = os.path.join(self.base, "munge")
        self.daemon("munged", ["munged", "-F", "-f", "--socket=" + self.socket, "--key-file=" + m + "/munge.key",
                               "--log-file=" + m + "/munged.log", "--pid-file=" + m + "/munged.pid",
                               "--seed-file=" + m + "/munged.seed"])
        self.until(lambda: os.path.exists(self.socket), 20, "munged did not create its socket")
        self.daemon("slurmctld", ["slurmctld", "-D", "-i"])
        self.daemon("slurmd", ["slurmd", "-D", "-N", "localhost"])
        self.until(lambda: self.run("sinfo", "-h", "-n", "localhost", "-o", "%T").strip() == "idle", 60,
                   "the node did not come up idle")

    def run(self, *cmd):
        proc = subprocess.run(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return proc.stdout if proc.returncode == 0 else ""

    def until(self, ready, seconds, failure):
        end = time.time() + seconds
        while not ready():
            for name, p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}): {self.logs()}")
            if time.time() > end:
                raise RuntimeError(f"{failure} within {seconds} s: {self.logs()}")
            time.sleep(0.2)

    def logs(self):
        text = []
        for name in ("slurmctld.log", "slurmd.log", "munged.out", "slurmctld.out", "slurmd.out"):
            lines = slurm.tail(os.path.join(self.base, "log", name), 2000).splitlines()
            text += [f"--- {name}"] + [l for l in lines if ("error" in l.lower() or "fatal" in l.lower())
                                       and not any(noise in l for noise in NOISE)][-5:]
        return "\n".join(text)

    def leftovers(self):
        """The processes of this cluster: the daemons, the job steps and what
        they run all carry SLURM_CONF=<this conf> in their environment."""
        mark = b"\0SLURM_CONF=" + self.conf.encode() + b"\0"
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if mark in b"\0" + f.read() + b"\0" and int(pid) != os.getpid():
                        found.append(int(pid))
            except OSError:
                pass
        return found

    def kill_leftovers(self):
        for pid in self.leftovers():   # slurmstepd ignores SIGTERM
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def stop(self, fast=False):
        """Cancels the jobs left, stops the daemons, kills whatever is left.
        fast (on SIGTERM: meson sends SIGKILL half a second later): kills
        everything at once."""
        if fast:
            self.kill_leftovers()
        elif any(name == "slurmctld" and p.poll() is None for name, p in self.procs):
            jobs = self.run("squeue", "-h", "-o", "%A").split()
            if jobs:
                subprocess.run(["scancel"] + sorted(set(jobs)), env=self.env, stderr=subprocess.DEVNULL)
                end = time.time() + 30
                while self.run("squeue", "-h", "-o", "%A").strip() and time.time() < end:
                    time.sleep(0.5)
        for name, p in reversed(self.procs):   # slurmd, slurmctld, then munged
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs = []
        self.kill_leftovers()


def main():
    keep = sys.argv[2] if len(sys.argv) == 3 and sys.argv[1] == "--keep" else None
    if len(sys.argv) > 1 and not keep:
        print(__doc__)
        return 0 if sys.argv[1] in ("-h", "--help") else 2
    if os.geteuid() != 0:
        skip("not root: slurmctld and slurmd are started as root (CI runs as root)")
    install()
    base = keep or tempfile.mkdtemp(prefix="wbslurm-")
    os.makedirs(base, exist_ok=True)
    cluster = Cluster(os.path.join(base, "cluster"))
    # meson's timeout sends SIGTERM to the group (the daemons too), then
    # SIGKILL half a second later: the job steps, in sessions of their own,
    # must be killed before that.
    terminated = []

    def on_sigterm(*_):
        terminated.append(True)
        sys.exit(1)
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        cluster.start()
        print("cluster up:", cluster.run("sinfo", "-h").strip(), flush=True)
        return grade(base, cluster)
    except RuntimeError as e:
        print(f"FAILED: {e}")
        return 1
    finally:
        cluster.stop(fast=bool(terminated))
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def grade(base, cluster):
    subs = os.path.join(base, "subs")
    reference = open(os.path.join(ROOT, "solutions", LAB, "kernels.cu")).read()
    put(os.path.join(subs, "reference"), reference)
    put(os.path.join(subs, "skeleton"), open(os.path.join(ROOT, "labs", LAB, "kernels.cu")).read())
    case = next(c for c in hostile.CASES if c[0] == "compile-error")
    put(os.path.join(subs, "compile-error"), hostile.make(reference, case))
    grades, logs = os.path.join(base, "grades.csv"), os.path.join(base, "logs")
    env = dict(cluster.env, WB_SLURM_POLL_S="1")
    start = time.time()
    proc = subprocess.run(WORKBOOK + ["batch", subs, "--csv", grades, "--logs", logs, "--lab", LAB,
                                      "--rubric", RUBRIC, "--slurm", "--no-gres", "--wait-limit", "400"],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = proc.stdout.replace("\r", "\n").splitlines()
    print("\n".join(l for k, l in enumerate(lines) if l and not (l.startswith("[") and "[" in lines[k + 1])))
    print(f"batch took {time.time() - start:.0f} s")
    failures = []
    if proc.returncode != 0:
        failures.append(f"batch --slurm exited {proc.returncode}")
    rows = {r["submission"]: r for r in csv.DictReader(open(grades))} if os.path.exists(grades) else {}
    print(open(grades).read() if rows else "no CSV")
    want = {"reference": "1", "skeleton": "1", "compile-error": "0"}
    if set(rows) != set(want):
        failures.append(f"CSV rows {sorted(rows)} != {sorted(want)}")
    for name, built in want.items():
        row = rows.get(name)
        if row and (row["labs_built"], row["labs_total"], row["rejected"]) != (built, "1", ""):
            failures.append(f"{name}: labs_built {row['labs_built']}/{row['labs_total']}, rejected "
                            f"{row['rejected']!r}; expected {built}/1 and not rejected")
        if row and built == "1" and row["gpu_ran"] != "False":
            failures.append(f"{name}: gpu_ran {row['gpu_ran']} without a GPU")
        if not os.path.exists(os.path.join(logs, name + ".json")):
            failures.append(f"{name}: no JSON report in the logs")
    if not os.path.exists(os.path.splitext(grades)[0] + ".html"):
        failures.append("no class page (grades.html) beside the CSV")
    if os.path.exists(os.path.join(logs, "compile-error.json")):
        report = json.load(open(os.path.join(logs, "compile-error.json")))
        if "error" not in report["labs"][0]["message"]:
            failures.append("compile-error: the compiler's message is missing from the report")
    # A task that left no report (killed, timed out) still gets its row.
    lost = slurm.gradejob.collect(os.path.join(subs, "lost"), logs, lambda: slurm.why_failed("1", 9, "lost", logs, None))
    if not (lost["submission"] == "lost" and "Slurm task 1_9" in lost["rejected"]):
        failures.append(f"no error row for a task without a report: {lost}")
    if failures:
        print("FAILED: " + "; ".join(failures))
        print(cluster.logs())
        return 1
    print("3 submissions graded through Slurm, CSV right")
    return 0


if __name__ == "__main__":
    sys.exit(main())
