"""The student's build folder (build/, or $WB_BUILD_DIR): configured once
with `meson setup`, its options changed with `meson configure` when a command
asks for other labs or GPU architectures, and the labs' tests built in one
ninja run."""
import json
import re
import subprocess
from pathlib import Path

from shared import labs
from . import ui

BUILD = Path(labs.BUILD)
ROOT = Path(labs.ROOT)


def options():
    """The build's options as configured ({} before the first setup)."""
    try:
        with open(BUILD / "meson-info" / "intro-buildoptions.json") as f:
            return {o["name"]: o["value"] for o in json.load(f)}
    except (OSError, ValueError):
        return {}


def lab_option(names):
    """The -Dlabs value for labs given by name ("reduction"); '' for all."""
    every = labs.all_labs()
    chosen = {ui.lab_or_exit(n)[0] for n in names}
    return "" if len(chosen) == len(every) else ",".join(f for f, _ in every if f in chosen)


def meson_of_build():
    """(major, minor) of the Meson that configured the build, or None."""
    try:
        with open(BUILD / "meson-info" / "meson-info.json") as f:
            version = json.load(f)["meson_version"]
        return version["major"], version["minor"]
    except (OSError, ValueError, KeyError):
        return None


def meson_here():
    """(major, minor) of the Meson on PATH."""
    out = subprocess.run(["meson", "--version"], capture_output=True, text=True, timeout=60).stdout
    return tuple(int(part) for part in out.split(".")[:2])


def labs_in_build():
    """(folder, name) of the labs the build holds: every lab unless -Dlabs says fewer."""
    chosen = options().get("labs", "")
    return [(f, n) for f, n in labs.all_labs() if not chosen or f in chosen.split(",")]


def meson(*args, what):
    """Runs meson; on failure prints its ERROR lines and where its log is, and exits 1."""
    log = BUILD.parent / f"{BUILD.name}.setup.log"
    with open(log, "w") as out:
        proc = subprocess.run(["meson", *args], stdout=out, stderr=subprocess.STDOUT, timeout=600)
    if proc.returncode != 0:
        lines = [l for l in log.read_text(errors="replace").splitlines() if "ERROR" in l]
        print("\n".join(lines[-3:]) or f"meson {what} failed")
        ui.fail(f"could not {what} {BUILD} (full log: {log})", status=1)
    log.unlink()


def configure(lab_names=None, gpu_arch=None):
    """Makes sure the build is configured, with these labs (names; None: as
    it is, [] or "all": every lab) and GPU architectures (None: as it is).
    "auto" always detects the GPU again."""
    wanted = {}
    if lab_names is not None:
        wanted["labs"] = lab_option(lab_names)
    if gpu_arch is not None:
        wanted["gpu_arch"] = gpu_arch
    flags = [f"-D{k}={v}" for k, v in wanted.items()]
    if not (BUILD / "build.ninja").exists():
        print(ui.Style.dim(f"Configuring {BUILD} (once) ..."), flush=True)
        meson("setup", str(BUILD), str(ROOT), *flags, what="configure")
        return
    theirs, ours = meson_of_build(), meson_here()
    if theirs != ours:   # Meson refuses a folder of another minor version
        print(ui.Style.dim(f"{BUILD} was configured by Meson {'.'.join(map(str, theirs or '?'))}, "
                           f"this is Meson {'.'.join(map(str, ours))}: configuring it again (its "
                           "options kept) ..."), flush=True)
        meson("setup", "--wipe", str(BUILD), str(ROOT), *flags, what="reconfigure")
    current = options()
    changed = {k: v for k, v in wanted.items() if current.get(k) != v}
    if gpu_arch == "auto":   # meson detects the GPU only while it configures
        print(ui.Style.dim(f"Configuring {BUILD} for the GPU present ..."), flush=True)
        meson("setup", "--reconfigure", str(BUILD), str(ROOT), *flags, what="reconfigure")
    elif changed:
        print(ui.Style.dim(f"Configuring {BUILD}: "
                           + ", ".join(f"{k} = {v or 'all'}" for k, v in changed.items())), flush=True)
        meson("configure", str(BUILD), *flags, what="reconfigure")


def add_labs(names):
    """Adds labs the build does not hold yet (a lab asked for by name)."""
    held = {n for _, n in labs_in_build()}
    missing = [n for n in names if n not in held]
    if missing:
        configure(sorted(held | set(missing)))


def gpu_present():
    """The compute capability nvidia-smi reports for GPU 0 ("8.6"), or None."""
    try:
        proc = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = proc.stdout.strip().splitlines()[:1]
    return first[0].strip() if proc.returncode == 0 and first else None


def arch_problem():
    """A sentence when the GPU present is not among the architectures the
    build was configured for (its tests would all be skipped), else None."""
    arch = options().get("gpu_arch", "auto")
    present = gpu_present()
    if arch == "auto" or present is None or present in arch.split():
        return None
    return (f"This GPU is compute capability {present}, but {BUILD.name}/ is built for "
            f"gpu_arch \"{arch}\": its GPU tests will be skipped. `grading/workbook --gpu-arch "
            "auto` rebuilds it for the GPU present.")


def build_tests(names):
    """Builds the student test programs of these labs in one ninja run (in
    parallel, past failures); returns {name: compiler messages} of those that
    did not build."""
    targets = [f"{name}-student" for name in names]
    proc = subprocess.run(["ninja", "-C", str(BUILD), "-k", "0", *targets], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace")
    if proc.returncode == 0:
        return {}
    # ninja prints each failed step as "FAILED: <outputs>" and its messages
    # up to the next "[k/n] ..." progress line.
    blocks = re.split(r"^(?=FAILED: |\[\d+/\d+\] )", proc.stdout, flags=re.M)
    failed = [b for b in blocks if b.startswith("FAILED: ")]
    broken = {}
    for name, target in zip(names, targets):
        if up_to_date(target):
            continue
        own = [b for b in failed if b.split("\n", 1)[0].split()[1].startswith(target)]
        broken[name] = "\n".join(own or failed) or proc.stdout[-1500:]
    return broken


def up_to_date(target):
    proc = subprocess.run(["ninja", "-C", str(BUILD), "-n", target], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace")
    return proc.returncode == 0 and "no work to do" in proc.stdout
