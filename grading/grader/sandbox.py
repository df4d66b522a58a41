"""Running the submission's code (its compiler run and its test processes)
inside a bubblewrap sandbox, with limits.

Why bubblewrap: it is the maintained, unprivileged sandbox that Flatpak is
built on, packaged by Debian and Ubuntu (`bubblewrap`), one static binary
with no daemon; it gives exactly what the grader needs per process: fresh
PID, network, IPC and UTS namespaces (nothing outlives the sandbox, no
network, no signals to anything outside), a mount namespace that holds only
the paths named here (read-only unless said otherwise), and death with its
parent. grading/README.md ("Threat model") says what it stops and what not.

A view is built from an allow list: the system's /usr (the compiler, the
CUDA toolkit, the C and C++ libraries), a few files of /etc, the GPU's
device nodes when asked, the paths a caller binds, a private /tmp (at most
TMP_BYTES). Nothing else of the machine is there: not the checkout, not
$HOME, not the grader's work folders, not other submissions.
"""
import functools
import glob
import os
import resource
import shutil
import signal
import subprocess
import threading
import time

# What the system's tools need from /etc (dynamic linker cache, the
# alternatives that /usr/bin/cc and friends point through, time zone).
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
             "/etc/localtime", "/etc/nvidia")
_PROBE = None
# The private /tmp is memory: a size keeps a process that fills it from
# taking the machine's (a compile's temporaries and a test's few files need
# far less).
TMP_BYTES = 4 << 30
# The processes that run() is waiting for, which stop_all() ends: a grade
# stopped by a signal while its tests run on other threads (pool.py).
_RUNNING, _STOPPED = set(), threading.Event()


def stop_all():
    """Ends every process run() is waiting for (its whole session), and each
    one it starts from now on: the grade was stopped."""
    _STOPPED.set()
    for proc in list(_RUNNING):
        _kill_session(proc)


def _kill_session(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)   # whatever it left in its session goes too
    except (ProcessLookupError, PermissionError):
        pass


def bwrap():
    return shutil.which("bwrap")


def available():
    """(True, "") when a bubblewrap sandbox starts here, else (False, why).
    Where it cannot (no bwrap, or user/PID namespaces not permitted), every
    report says so (reports.py), with what is lost (grading/README.md)."""
    global _PROBE
    if _PROBE is None:
        if os.environ.get("WB_GRADER_NO_SANDBOX") == "1":
            _PROBE = (False, "WB_GRADER_NO_SANDBOX=1")
        elif not bwrap():
            _PROBE = (False, "bubblewrap (bwrap) is not installed: sudo apt-get install bubblewrap")
        else:
            try:
                proc = subprocess.run(view_args() + ["--", "true"], stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, timeout=30)
                _PROBE = (proc.returncode == 0, proc.stdout.strip()[-300:])
            except (OSError, subprocess.TimeoutExpired) as e:
                _PROBE = (False, str(e))
    return _PROBE


def note():
    ok, why = available()
    if ok:
        return "each test and each compile of the submission in its own bubblewrap sandbox (no network, own PIDs, only its own files)"
    return ("WARNING: no sandbox (" + why + "): the submission's processes ran with this user's "
            "rights and could read, write and signal what this user can; verdicts were still "
            "decided outside them")


def _system_binds():
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in ETC_FILES:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def _outside_usr(path):
    real = os.path.realpath(path)
    return not (real == "/usr" or real.startswith("/usr/"))


def tool_dirs():
    """Folders outside /usr that the toolchain and libraries live in (a CUDA
    toolkit in /opt, a relocated Criterion, LD_LIBRARY_PATH entries)."""
    dirs = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        dirs.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    for entry in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if entry and os.path.isdir(entry):
            dirs.append(os.path.realpath(entry))
    return sorted({d for d in dirs if _outside_usr(d)})


@functools.lru_cache(maxsize=None)
def library_dirs(binary):
    """Folders outside /usr holding the shared libraries binary loads (asked
    of ldd once per binary: every test of a lab runs the same one)."""
    proc = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True)
    dirs = set()
    for line in proc.stdout.splitlines():
        if "=>" in line and "/" in line.split("=>", 1)[1]:
            path = line.split("=>", 1)[1].split("(")[0].strip()
            if path and _outside_usr(path):
                dirs.add(os.path.dirname(os.path.realpath(path)))
                dirs.add(os.path.dirname(path))
    return tuple(sorted(dirs))


def gpu_device_args():
    args = []
    for node in sorted(glob.glob("/dev/nvidia*")):
        if not os.path.isdir(node):
            args += ["--dev-bind", node, node]
    return args


# A compile's devices: nvcc and the host compiler need /dev/null alone.
# Without the others (/dev/ptmx, /dev/zero, /dev/tty) and without /proc
# (/proc/self/fd/1 is the compile's own output pipe), an #include or an
# .incbin of a file that never ends fails at once, however it is spelled.
COMPILE_DEVICES = ("/dev/null",)


def view_args(ro=(), rw=(), ro_at=(), gpu=False, chdir=None, compile_only=False):
    """bwrap's arguments for a view with the system, the read-only paths ro,
    the writable paths rw, (source, target) pairs ro_at bound read-only at
    another path, and the GPU's device nodes when gpu. compile_only: the
    view of a compile, with COMPILE_DEVICES as its only devices and no
    /proc."""
    if compile_only:
        devices = ["--tmpfs", "/dev"] + sum((["--dev-bind", d, d] for d in COMPILE_DEVICES), [])
    else:
        devices = ["--proc", "/proc", "--dev", "/dev"]
    args = [bwrap() or "bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--cap-drop", "ALL", *devices,
            "--size", str(TMP_BYTES), "--tmpfs", "/tmp", "--setenv", "HOME", "/tmp"]
    args += _system_binds()
    for path in tool_dirs():
        args += ["--ro-bind", path, path]
    for path in ro:
        args += ["--ro-bind", path, path]
    for source, target in ro_at:
        args += ["--ro-bind", source, target]
    for path in rw:
        args += ["--bind", path, path]
    if gpu:
        args += gpu_device_args()
    if chdir:
        args += ["--chdir", chdir]
    return args


def run(argv, cwd, env, wall_s, cpu_s=None, memory_bytes=None, file_bytes=1 << 30,
        output_bytes=1000000, sandbox=None):
    """Runs argv (inside the sandbox when sandbox is a list of view_args and
    the sandbox is available) with a wall-clock limit (the whole process
    group is killed), a CPU-time limit, an address-space limit, a file-size
    limit, and its output read through a pipe up to output_bytes (the rest
    is drained and dropped). Returns a dict: status (exit status, negative
    for a signal, None on timeout), output, seconds, truncated."""
    use_sandbox = sandbox is not None and available()[0]
    full = (sandbox + ["--"] + argv) if use_sandbox else argv

    def limits():
        if cpu_s:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    start = time.monotonic()
    proc = subprocess.Popen(full, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=limits, start_new_session=True)
    _RUNNING.add(proc)
    if _STOPPED.is_set():
        _kill_session(proc)
    chunks, kept = [], [0]

    def drain():
        while True:
            data = proc.stdout.read(65536)
            if not data:
                return
            if kept[0] <= output_bytes:
                chunks.append(data)
                kept[0] += len(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        status = proc.wait(timeout=wall_s)
    except subprocess.TimeoutExpired:
        status = None
    _kill_session(proc)
    proc.wait()
    _RUNNING.discard(proc)
    reader.join(timeout=10)
    data = b"".join(chunks)
    return {"status": status, "output": data[:output_bytes].decode("utf-8", "replace"),
            "seconds": round(time.monotonic() - start, 3), "truncated": len(data) > output_bytes}


def minimal_env(**extra):
    """The environment of a sandboxed process: the tool paths and the
    CUDA_* settings, nothing else of the grader's."""
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
                    "CUDA_DEVICE_ORDER") or k.startswith("CUDA_")}
    env["HOME"] = "/tmp"
    env.update({k: str(v) for k, v in extra.items()})
    return env
