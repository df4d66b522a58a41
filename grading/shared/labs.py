"""What the workbook's tools share: where things are, which labs exist, how
to build one target and how to run a Criterion test binary."""
import importlib.util
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # of grading/shared/
BUILD = os.environ.get("WB_BUILD_DIR", os.path.join(ROOT, "build"))


def _lab_folders():
    """labs/list-labs.py's rule (the one place that says what a lab is)."""
    spec = importlib.util.spec_from_file_location("list_labs", os.path.join(ROOT, "labs", "list-labs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lab_folders()


def all_labs():
    """(folder, name) of every lab, the folders of labs/ in the order of
    their numbers (labs/list-labs.py), e.g. ("04-reduction", "reduction")."""
    return [(f, f[3:]) for f in _lab_folders()]


def find_lab(name):
    """Accepts "reduction", "04-reduction" or "04"; returns (folder, name) or None."""
    for folder, lab in all_labs():
        if name in (lab, folder, folder[:2]):
            return folder, lab
    return None


def gpu_listed():
    """Whether nvidia-smi lists a GPU (False without a driver or GPU)."""
    try:
        return subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def build_target(target, build=BUILD):
    """Builds one target (or a list of them) with ninja; returns (ok,
    compiler output)."""
    targets = [target] if isinstance(target, str) else list(target)
    proc = subprocess.run(["ninja", "-C", build, *targets], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace")
    return proc.returncode == 0, proc.stdout


def compiler_messages(output, limit=15):
    """What a student needs of a failed build: the compiler's errors and
    warnings and the linker's reasons (an undefined reference names the
    misspelt entry point; "ld returned 1" alone says nothing)."""
    keep = [l for l in output.splitlines()
            if any(w in l.lower() for w in ("error", "warning", "undefined reference",
                                            "multiple definition", "note:"))
            and not l.startswith(("FAILED", "ninja"))]
    return "\n".join(keep[:limit]) or output[-1500:]


# compute-sanitizer, as the student command, the grader and the planted-bug
# runner all use it: its four tools, how it is started, what a finding is.
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# What it prints for a finding: errors, racecheck's "Warning: Race reported
# between ..." and hazards, barrier errors.
SANITIZER_FINDING = re.compile(r"Race reported|hazard|Invalid|Uninitialized|Barrier|rror:")
ZERO_SUMMARY = re.compile(r"SUMMARY: 0 ")


def sanitizer_command(tool):
    """The argv prefix that runs a program under one compute-sanitizer tool;
    its exit status is 99 when the tool found something."""
    return ["compute-sanitizer", "--tool", tool, "--error-exitcode", "99",
            "--target-processes", "all"]


def sanitizer_findings(output):
    """compute-sanitizer's finding lines in a process's output (not its
    summaries that count zero: "RACECHECK SUMMARY: 0 hazards displayed")."""
    return [l.strip("= ").strip() for l in output.splitlines()
            if l.startswith("=========") and SANITIZER_FINDING.search(l)
            and not ZERO_SUMMARY.search(l)]
