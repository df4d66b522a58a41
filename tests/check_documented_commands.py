#!/usr/bin/env python3
"""Runs every command that the documentation shows, as written, and fails on
any that fails, naming its file and line (issues 19 and 20).

Where: README.md, grading/README.md, grading/student-README.md, labs/README.md,
handouts/*.md, the header comment of every kernels.cu (labs/ and solutions/)
and every labs/*/hints.txt. A command is a code span, a line of a shell code
block (```sh, ```bash, ```console) or an indented line whose first word (after
VAR=value) is a program: a file of this repository (executable, or followed by
arguments), a program of the build (build/NAME) or one of TOOLS. A program
named outside a code span (it could not be checked), an unlabelled code block
that starts with a command and a line of a shell block that is no command are
failures too.

What happens to each: the first of RULES that matches it decides (needs a
GPU: it runs only with --gpu; not run: the reason, printed in the summary);
every other command runs. Placeholders (LAB, STAGE, DIR, ...) are replaced
first by the values of PLACEHOLDERS; `run LAB --stage ...` and `hint LAB`
are tried with every lab.

How: in a scratch copy of the repository with a git history of its own (for
`reset`) and the references as the labs' kernels.cu (a student who has
finished: the skeletons fail tests that need no GPU, the source rules), with
HOME, TMPDIR and WB_BUILD_DIR inside it, so that nothing of the checkout, of
the user's build/ or of /tmp changes. The scratch's build/ is configured
once and starts from the objects of --build (a build folder at the top of
this checkout): ninja rebuilds only what differs, so every program is what
the scratch's sources make. The commands of grading/student-README.md run in
a student copy made from the scratch (`grading/workbook release`), as
students get them. The commands of one code block run in order; after each
block or span, what a command changed in the scratch is put back. A command
that starts several code blocks (or a block and a span) runs once: the
others start from the same state, so they replay its effect on the files and
report its result ("same as" where it ran), unless it left files in its
TMPDIR or runs until Ctrl-C.

A command that exits 77 passes, skipped, with the reason it printed: without
a GPU, a benchmark or a lab's tests do so after parsing their options. A
command that needs a GPU has, where there is none, the program of the build
it wraps (under compute-sanitizer, ncu or nsys) run alone, for the same
check of its options; and a test binary's --filter must name one of its
tests. With --gpu (on a GPU machine: tests/gpu-check --steps commands) the
commands that need a GPU run too, and a skip for want of a GPU is a failure.

Ends with "N run, N passed, N failed, N not run" after the reasons for what
was skipped or not run. Exit status: 0 all passed, 1 a command or a document
failed, 77 --gpu without a GPU.

usage: check_documented_commands.py [--gpu] [--build DIR] [--docs GLOB,...] [--list]
"""
import argparse
import fnmatch
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "grading"))
from shared import labs  # noqa: E402

DOCS = ("README.md", "grading/README.md", "grading/student-README.md", "labs/README.md",
        "handouts/*.md", "labs/*/kernels.cu", "solutions/*/kernels.cu", "labs/*/hints.txt")
# Documents whose commands run in a student copy (`grading/workbook release`).
STUDENT_DOCS = ("grading/student-README.md",)
TOOLS = ("meson", "ninja", "python3", "bash", "nvcc", "cuobjdump", "compute-sanitizer", "ncu",
         "nsys", "nvidia-smi", "wget", "git", "sudo", "apt-get", "sbatch")
LAB_NAMES = [name for _, name in labs.all_labs()]

INTERRUPT_AFTER_S = 10   # a command that runs until Ctrl-C gets it after this
TIMEOUT_S = 900          # any other command fails when it runs longer

# ------------------------------------------------------------------ the table
# What happens to a command: the first pattern that matches it (placeholders
# replaced) decides; a command no pattern matches runs.
RUN, GPU, SKIP, NO_GPU, UNTIL_CTRL_C = "run", "needs a GPU", "not run", "no GPU", "until Ctrl-C"
RULES = (
    # Not run, each for its reason.
    (r"^(tests/run|\.ci/run)\b", SKIP,
     "the repository's test suite, this test among its tests: it would run itself (CI runs it)"),
    (r"^(sudo )?apt-get\b", SKIP,
     "installs packages: it changes the machine (tests/run and grading/workbook install what "
     "they need)"),
    (r"\bsbatch\b|--slurm\b|\bgrading/grader/slurm\.py\b", SKIP,
     "Slurm: submits to a cluster (tests/grader/test_slurm.py grades through one, as root)"),
    (r"\b(sub\.zip|submissions/|FOLDER)", SKIP,
     "names the instructor's own submissions: tests/grader grades real ones (folders, zips, "
     "a batch)"),
    (r"^grading/workbook grade( --submission solutions)?$", SKIP,
     "grades every lab in a fresh build (4.5 minutes on the H100 for labs 00-07): tests/grader "
     "grades lab 00 (tests/gpu-check --steps grader)"),
    (r"^grading/workbook release\b", SKIP,
     "here the labs hold the references (a finished student), which a release refuses to ship: "
     "tests/test_release.py makes real copies (and the student copy of this scratch is one)"),
    (r"^tests/planted_bugs\.py (run|sweep)\b", SKIP,
     "plants every bug on a GPU, 10 minutes and more: tests/gpu-check --steps planted and "
     "--steps mutants run it"),
    (r"^wget\b", SKIP,
     "downloads from the internet (the test machines have no network): the command after it "
     "reads the lab's own road network instead"),
    (r"^ncu --set full build/\S+$", SKIP,
     "profiles every kernel of a whole benchmark run under --set full (hours): the "
     "one-launch ncu command of using-the-workbook.md runs instead"),
    # A tool and its options named in prose: nothing to run them on.
    (r"^nvcc\b(?!.*\.cu\b)", SKIP, "nvcc's options named in prose: no file to compile"),
    (r"^cuobjdump( -\S+)?$", SKIP, "cuobjdump's option named in prose: no file to read"),
    (r"^compute-sanitizer( --tool \w+)?$", SKIP, "names the tool: no program to run under it"),
    (r"^meson (setup|compile|test|configure)\b(?!.*(-C |\bbuild\b))", SKIP,
     "a Meson step named in prose: no build folder to run it in"),
    # Only where there is no GPU.
    (r"^tests/gpu-check\b", NO_GPU,
     "on a GPU it is the whole GPU check (this test is one of its steps); without one it must "
     "say that nothing was checked and exit 77"),
    # Only on a GPU.
    (r"^compute-sanitizer\b|^grading/workbook sanitize\b", GPU,
     "compute-sanitizer runs the program on a GPU"),
    (r"^ncu\b", GPU, "Nsight Compute profiles on a GPU"),
    (r"^nsys\b", GPU,
     "Nsight Systems profiles on a GPU; its stats read the profile written there"),
    (r"^nvidia-smi\b", GPU, "asks the NVIDIA driver about its GPUs"),
    (r"--gpu-arch auto\b", GPU, "rebuilds build/ for the GPU present"),
    (r"^grading/workbook grade\b", GPU,
     "grades in a fresh build of the lab; without a GPU it can judge nothing"),
    (r"^python3 labs/05-matmul/roofline\.py results\b", GPU,
     "plots the tables that the benchmark before it measures on a GPU"),
    (r"^python3 labs/06-streams/timeline\.py timeline\.csv\b", GPU,
     "draws the timeline that the benchmark before it records on a GPU"),
    # Runs until it is stopped.
    (r"^grading/workbook watch\b", UNTIL_CTRL_C,
     f"watches until Ctrl-C: it must still be running after {INTERRUPT_AFTER_S} s, and stop "
     "with status 0 at Ctrl-C"),
)

# Placeholders and the values they are replaced with, in this order; a list
# of values makes one command per value.
PLACEHOLDERS = (
    (r"\[([^]]*)\]", r"\1"),                               # optional parts: given
    (r"\breset LAB STAGE\b", "reset atomics 2"),           # a skeleton with a section per stage
    (r"\b(hint|run(?= LAB --stage)) LAB\b", [rf"\1 {name}" for name in LAB_NAMES]),   # every lab
    (r"\bLAB\b", "vector-add"),
    (r"<lab>", "vector-add"),
    (r"\bNN-name\b", "00-vector-add"),
    (r"(--stage|hint [\w-]+) (N|S|STAGE)\b", r"\1 0"),
    (r"\bSTAGE\b", "0"),
    (r"--(n|size) (N|SIZE)\b", r"--\1 4096"),
    (r"--block B\b", "--block 256"),
    (r"--reps R\b", "--reps 3"),
    (r"--tool T\b", "--tool memcheck"),
    (r"--test GLOB\b", "--test 'stage0_*'"),
    (r"<seed>", "20261122"),
    (r"-Dlabs=\.\.\.", "-Dlabs=00-vector-add"),
    (r"\bSTEP,\.\.\.", "sides"),
    (r"\bDIR\b", '"$TMPDIR/dir"'),
    (r"\bFILE\.tar\.gz\b", '"$TMPDIR/file.tar.gz"'),
    (r"--rubric FILE\b", "--rubric grading/rubric.toml"),
    (r" \.\.\.(?= |$)", ""),
    (r"/tmp/", "$TMPDIR/"),                                 # nothing outside the scratch
    (r"\bUSA-road-d\.NY\.gr\.gz\b", "labs/03-sssp/data/road-16x16.gr.gz"),   # no download
)

# ---------------------------------------------------------------- finding them
SHELL_LANGUAGES = ("sh", "bash", "console", "shell")
FENCE = re.compile(r"^ *```(\w*)[^\n]*\n(.*?)^ *```[^\n]*$", re.S | re.M)
SPAN = re.compile(r"`([^`]+)`")
BUILT = re.compile(r"^(\./)?build/([\w.-]+/)*[\w-]+$")
ASSIGNMENT = re.compile(r"^\w+=")
COMMENT = re.compile(r"\s+#\s.*$")
SHELL_OPERATOR = re.compile(r"^(\d?[<>]|\||&&|;)")
# A program of the build or of the repository named in prose.
NAMED = re.compile(r"(?<![\w/.`-])((?:\./)?(?:build|grading|tests|handouts|\.ci)/[\w/-]*[\w-])"
                   r"(?![\w/`-])")


@dataclass
class Command:
    doc: str          # the document, relative to the top of the repository
    line: int
    text: str         # as written (continued lines joined)
    block: str = ""   # "doc:line" of its code block; a block's commands run in order


def program(text):
    words = [w for w in text.split() if not ASSIGNMENT.match(w)]
    return words[0] if words else ""


def is_program(name, has_arguments=True):
    if name in TOOLS:
        return True
    if BUILT.match(name):
        return "." not in os.path.basename(name)
    path = os.path.join(ROOT, name)
    if not os.path.isfile(path):
        return False
    return has_arguments or ("." not in os.path.basename(name) and os.access(path, os.X_OK))


def is_command(text):
    return is_program(program(text), has_arguments=len(text.split()) > 1)


def line_at(text, offset):
    return text.count("\n", 0, offset) + 1


def blanked(match):
    return "\n" * match.group(0).count("\n")


def logical_lines(body, first_line):
    """(line number, text) of a code block's lines, comments removed, a line
    that ends in a backslash joined with the next as the shell joins them
    (the backslash and the newline go, nothing else)."""
    pending, start = "", first_line
    for number, line in enumerate(body.splitlines(), first_line):
        start = start if pending else number
        pending += COMMENT.sub("", line.rstrip() if pending else line.strip())
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        yield start, pending
        pending = ""


def block_commands(doc, body, first_line, problems):
    """The commands of a shell block, one a line; a line that is no command
    is a problem."""
    found = []
    for number, text in logical_lines(body, first_line):
        if not text or text.startswith("#"):
            continue
        if is_command(text):
            found.append(Command(doc, number, text, f"{doc}:{first_line - 1}"))
        else:
            problems.append(f"{doc}:{number}: not a command this test knows ({program(text)}): "
                            "fix the line, or add its program to TOOLS")
    return found


def commands_in(doc, text, problems):
    """The commands of one document (comment markers already stripped)."""
    found = []
    for fence in FENCE.finditer(text):
        line = line_at(text, fence.start(2))
        if fence.group(1) in SHELL_LANGUAGES:
            found += block_commands(doc, fence.group(2), line, problems)
        elif not fence.group(1) and is_command(fence.group(2).split("\n")[0].strip()):
            problems.append(f"{doc}:{line - 1}: a code block of commands without a language: "
                            "label it ```sh so that its commands are checked")
    text = FENCE.sub(blanked, text)
    prose = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("    ") and is_command(line.strip()):
            found.append(Command(doc, number, COMMENT.sub("", line.strip())))
            line = ""
        prose.append(line)
    text = "\n".join(prose)
    for span in SPAN.finditer(text):
        words = " ".join(span.group(1).split())
        if is_command(words):
            found.append(Command(doc, line_at(text, span.start()), words))
    text = SPAN.sub(lambda m: " " * len(m.group(0)), text)
    for named in NAMED.finditer(text):
        if is_program(named.group(1), has_arguments=False):
            problems.append(f"{doc}:{line_at(text, named.start())}: {named.group(1)} named outside "
                            "a code span: quote the command in `backticks` so that it is checked")
    return sorted(found, key=lambda c: c.line)


def comment_text(doc, text):
    """A document's text with its comment markers gone, line for line: a
    kernels.cu's header comment (the rest blanked), a hints file's lines."""
    if doc.endswith(".cu"):
        header = text[:text.find("*/")] if text.lstrip().startswith("/*") else ""
        lines = [re.sub(r"^\s*/?\*+ ?", "", line) for line in header.splitlines()]
        return "\n".join(lines) + "\n" * (text.count("\n") - header.count("\n"))
    if doc.endswith(".txt"):
        return "\n".join(re.sub(r"^# ?", "", line) for line in text.splitlines())
    return text


def documents(patterns):
    found = []
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            doc = os.path.relpath(path, ROOT)
            if doc not in found:
                found.append(doc)
    return found


def documented_commands(docs, problems):
    found = []
    for doc in docs:
        with open(os.path.join(ROOT, doc)) as f:
            found += commands_in(doc, comment_text(doc, f.read()), problems)
    return found


# ------------------------------------------------------------ deciding on one
def rule_for(text):
    """(kind, reason) of the first rule that matches, else (RUN, "")."""
    for pattern, kind, reason in RULES:
        if re.search(pattern, text):
            return kind, reason
    return RUN, ""


def substituted(text):
    """The commands to run for one command as written."""
    texts = [text]
    for pattern, value in PLACEHOLDERS:
        values = value if isinstance(value, list) else [value]
        texts = [re.sub(pattern, v, t) for t in texts for v in (values if re.search(pattern, t)
                                                                 else values[:1])]
    return list(dict.fromkeys(texts))


def wrapped_program(text):
    """The program of the build that a command runs under a tool
    (compute-sanitizer, ncu, nsys), with its arguments up to a redirection or
    the next command; None if there is none."""
    words = shlex.split(text)
    for i, word in enumerate(words[1:], 1):
        if BUILT.match(word):
            ends = [j for j, w in enumerate(words) if j > i and SHELL_OPERATOR.match(w)]
            return shlex.join(words[i:ends[0] if ends else len(words)])
    return None


def test_names(binary):
    """"suite/test" of every test of a Criterion binary (its --list)."""
    listing = subprocess.run([binary, "--list"], capture_output=True, text=True, timeout=60)
    suite, names = "", []
    for line in listing.stdout.splitlines():
        if line.startswith(("├", "└", "│")):
            names.append(f"{suite}/{line.split()[-1]}")
        else:
            suite = line.split(":")[0]
    return names


def filter_problem(text, where):
    """Why a test binary's --filter names none of its tests, or None."""
    words = shlex.split(text)
    for i, word in enumerate(words):
        pattern = word.split("=", 1)[1] if word.startswith("--filter=") else (
            words[i + 1] if word == "--filter" and i + 1 < len(words) else None)
        binaries = [w for w in words[:i] if BUILT.match(w)]
        if pattern is None or not binaries:
            continue
        names = test_names(os.path.join(where, binaries[-1]))
        if not fnmatch.filter(names, pattern):
            stages = sorted({name.rsplit("/", 1)[0] + "/" + name.rsplit("/", 1)[1].split("_")[0]
                             + "_*" for name in names})
            return (f"--filter '{pattern}' names none of the tests of {binaries[-1]} (they are "
                    f"{', '.join(stages)})")
    return None


# --------------------------------------------------------------- the scratch
def ignored(top):
    def ignore(folder, names):
        at_top = os.path.samefile(folder, top)
        return [n for n in names if n == "__pycache__" or at_top and (
            n in (".git", ".gpu", "gpu-results") or n.startswith("build"))]
    return ignore


def fingerprint(folder):
    found = {}
    for where, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(where, name)
            info = os.lstat(path)
            found[path] = (info.st_size, info.st_mtime_ns)
    return found


@dataclass
class Effect:
    """What commands did to a place (Place.effect): paths from its top."""
    copies: str       # a folder with the files they added or changed, as they left them
    changed: list     # the files they added or changed
    removed: list     # the files they removed
    gone: list        # the folders they removed, the outermost of each
    added: list       # the folders they added


def gone_folder(path):
    """The outermost of the folders above a removed file that are gone
    too, or None."""
    gone, folder = None, os.path.dirname(path)
    while not os.path.isdir(folder):
        gone, folder = folder, os.path.dirname(folder)
    return gone


class Place:
    """A folder the commands run in (the repository's scratch copy, or the
    student copy made from it), and its snapshot to put it back from."""

    def __init__(self, folder, env):
        self.folder, self.env = folder, env
        self.snapshot, self.state = None, None

    def keep(self):
        self.snapshot = self.folder + ".snapshot"
        shutil.copytree(self.folder, self.snapshot, symlinks=True)
        self.state = fingerprint(self.folder)

    def put_back(self):
        """Removes the files a command added, copies back those it changed or
        removed (with their times, so that ninja sees nothing new), removes
        the folders it added."""
        now = fingerprint(self.folder)
        for path in now.keys() - self.state.keys():
            os.remove(path)
        for path, info in self.state.items():
            if now.get(path) != info:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                shutil.copy2(self.snapshot + path[len(self.folder):], path, follow_symlinks=False)
        for path in self.added_folders():
            shutil.rmtree(path)

    def added_folders(self):
        """The folders that are not in the snapshot, the innermost first."""
        for where, folders, _ in os.walk(self.folder, topdown=False):
            for name in folders:
                path = os.path.join(where, name)
                if not os.path.exists(self.snapshot + path[len(self.folder):]):
                    yield path

    def effect(self, copies):
        """What the commands run since the place was put back did to it, to
        replay instead of running them again: the files they added or
        changed, copied into the folder copies with their times (so that
        ninja sees what it would after a run), the files they removed, the
        folders they removed and added."""
        now = fingerprint(self.folder)
        changed = [path for path, info in now.items() if self.state.get(path) != info]
        for path in changed:
            copy = copies + path[len(self.folder):]
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            shutil.copy2(path, copy, follow_symlinks=False)
        removed = self.state.keys() - now.keys()
        top = len(self.folder)
        return Effect(copies, [p[top:] for p in changed], [p[top:] for p in removed],
                      sorted({p[top:] for p in map(gone_folder, removed) if p}),
                      [p[top:] for p in self.added_folders()])

    def replay(self, effect):
        """Does to the place (as it is after put_back) what the effect's
        commands did: put_back undoes it as it would theirs."""
        for gone in effect.gone:
            shutil.rmtree(self.folder + gone, ignore_errors=True)
        for path in effect.removed:
            if os.path.lexists(self.folder + path):
                os.remove(self.folder + path)
        for folder in effect.added:
            os.makedirs(self.folder + folder, exist_ok=True)
        for path in effect.changed:
            os.makedirs(os.path.dirname(self.folder + path), exist_ok=True)
            shutil.copy2(effect.copies + path, self.folder + path, follow_symlinks=False)

    def environment(self, tmp):
        return dict(self.env, WB_BUILD_DIR=os.path.join(self.folder, "build"), TMPDIR=tmp)


def quiet(argv, cwd, env, what):
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace", timeout=3600)
    if proc.returncode:
        sys.exit(f"error: {what} failed ({shlex.join(argv)}):\n{proc.stdout[-3000:]}")
    return proc.stdout


def build_options(seed):
    """The options to configure the scratch's build with: the GPU
    architectures and checking of the build it starts from (every lab)."""
    try:
        with open(os.path.join(seed, "meson-info", "intro-buildoptions.json")) as f:
            options = {o["name"]: o["value"] for o in json.load(f)}
    except (OSError, ValueError):
        return []
    return [f"-Dgpu_arch={options.get('gpu_arch', 'auto')}",
            f"-Dchecking={str(options.get('checking', False)).lower()}"]


def seed_build(build, seed):
    """Copies into the configured build folder every output of ninja's that
    the seed build has, with ninja's log, keeping their times: ninja then
    rebuilds only the outputs whose command or inputs differ here."""
    targets = quiet(["ninja", "-C", build, "-t", "targets", "all"], build, None, "ninja -t targets")
    outputs = [line.rsplit(":", 1)[0] for line in targets.splitlines()]
    for output in outputs + [".ninja_log", ".ninja_deps"]:
        source, target = os.path.join(seed, output), os.path.join(build, output)
        if os.path.isfile(source) and (output.startswith(".ninja") or not os.path.exists(target)):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(source, target)


def make_build(folder, env, seed):
    build = os.path.join(folder, "build")
    options = build_options(seed) if seed else []
    quiet(["meson", "setup", build, *options], folder, env, "meson setup of the scratch")
    if seed:
        seed_build(build, seed)
        finished_objects(build, seed)
    quiet(["ninja", "-C", build], folder, env, "the scratch's build")


def git_history(folder, env):
    """A history of one commit, so that `reset` finds the skeletons in HEAD."""
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.name=wb", "-c", "user.email=wb@localhost", "commit", "-qm",
                  "scratch"]):
        quiet(argv, folder, env, "git in the scratch")


def finished_labs(folder):
    """The references as the student's files: a student who has finished,
    for whom every command must succeed (the skeletons fail tests that need
    no GPU: the source rules, which read the files). Copied with their old
    times, so that ninja does not recompile every lab for every
    architecture (minutes): finished_objects gives the build the objects
    these files make."""
    for lab_folder, _ in labs.all_labs():
        shutil.copy2(os.path.join(ROOT, "solutions", lab_folder, "kernels.cu"),
                     os.path.join(folder, "labs", lab_folder, "kernels.cu"))


def finished_objects(build, seed):
    """The seed's student objects of kernels.cu were compiled from the
    skeletons; its reference objects from the files that are now the labs'.
    Each <lab>[-bench]-student.p/labs_<folder>_kernels.cu.o becomes its
    reference twin's object, keeping its time (ninja's deps log holds it),
    and its program is removed: ninja relinks it, in seconds, where
    compiling every lab for every architecture takes minutes."""
    for student in glob.glob(os.path.join(build, "*-student.p", "labs_*_kernels.cu.o")):
        folder, name = os.path.split(student)
        program = folder[:-len(".p")]
        twin = os.path.join(seed, os.path.basename(program)[:-len("-student")] + "-reference.p",
                            "solutions_" + name[len("labs_"):])
        if os.path.isfile(twin):
            kept = os.stat(student)
            shutil.copyfile(twin, student)
            os.utime(student, ns=(kept.st_atime_ns, kept.st_mtime_ns))
            if os.path.exists(program):
                os.remove(program)


def same_times(copy, original):
    """Gives each file of copy that has the same bytes in original the
    original's time. A release writes its files from git's tree, stamped
    with the commit's time, which is later than every object of the seed
    build: ninja would compile every lab of the student copy again."""
    for where, _, names in os.walk(copy):
        for name in names:
            path = os.path.join(where, name)
            twin = os.path.join(original, os.path.relpath(path, copy))
            if os.path.isfile(twin) and not os.path.islink(path):
                with open(path, "rb") as mine, open(twin, "rb") as theirs:
                    if mine.read() != theirs.read():
                        continue
                kept = os.stat(twin)
                os.utime(path, ns=(kept.st_atime_ns, kept.st_mtime_ns))


def make_places(scratch, seed, student):
    """The scratch copy of the repository (and the student copy made from
    it) with the references as the labs' files, built, with their
    snapshots."""
    os.makedirs(os.path.join(scratch, "home"))
    env = {k: v for k, v in os.environ.items() if k not in ("WB_RESULTS_DIR", "WB_SEED")}
    env.update(HOME=os.path.join(scratch, "home"), TMPDIR=os.path.join(scratch, "tmp"))
    os.makedirs(env["TMPDIR"])
    repo = Place(os.path.join(scratch, "repo"), env)
    shutil.copytree(ROOT, repo.folder, symlinks=True, ignore=ignored(ROOT))
    git_history(repo.folder, env)
    places = {"repository": repo}
    if student:
        places["student copy"] = Place(os.path.join(scratch, "student"), env)
        quiet(["grading/workbook", "release", "--out", places["student copy"].folder],
              repo.folder, repo.environment(env["TMPDIR"]), "grading/workbook release")
        same_times(places["student copy"].folder, repo.folder)
    for place in places.values():
        finished_labs(place.folder)
        make_build(place.folder, place.environment(env["TMPDIR"]), seed)
        seed = os.path.join(repo.folder, "build")
    for place in places.values():
        place.keep()
    return places


# ----------------------------------------------------------------- running
@dataclass
class Result:
    status: str        # passed, skipped, options checked, not run, failed
    why: str = ""      # why it was skipped or not run, or how it failed
    ran: str = ""      # what ran instead of it: the program it wraps
    seconds: float = 0.0
    same_as: str = ""  # "doc:line" of the command whose run this is, its effect replayed here


@dataclass
class Unit:
    """Commands that run together, in order (a code block's, or one span's),
    in one place: once, however often they are documented."""
    place: str
    commands: tuple   # ((Command where first documented, text to run), ...)

    @property
    def texts(self):
        return tuple(text for _, text in self.commands)


def units_of(commands):
    """The units by key, and for each documented command the (unit key,
    index in the unit) of what it runs, one per value of its placeholders."""
    units, refs, blocks = {}, [], {}
    for command in commands:
        place = "student copy" if command.doc in STUDENT_DOCS else "repository"
        if command.block:
            blocks.setdefault((place, command.block), []).append(command)
            continue
        for text in substituted(command.text):
            key = (place, (text,))
            units.setdefault(key, Unit(place, ((command, text),)))
            refs.append((command, key, 0))
    for (place, _), block in blocks.items():
        pairs = [(c, t) for c in block for t in substituted(c.text)]
        key = (place, tuple(t for _, t in pairs))
        units.setdefault(key, Unit(place, tuple(pairs)))
        refs += [(c, key, i) for i, (c, _) in enumerate(pairs)]
    return units, refs


def run_shell(text, place, tmp, until_ctrl_c=False):
    """(status, output, seconds) of a command run by bash in its place:
    status 0 when it succeeded, else its exit status or what went wrong."""
    started = time.monotonic()
    status, output = shell_status(text, place, tmp, until_ctrl_c)
    return status, output, time.monotonic() - started


def shell_status(text, place, tmp, until_ctrl_c):
    proc = subprocess.Popen(["bash", "-o", "pipefail", "-c", text], cwd=place.folder,
                            env=place.environment(tmp), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace",
                            start_new_session=True)
    try:
        output = proc.communicate(timeout=INTERRUPT_AFTER_S if until_ctrl_c else TIMEOUT_S)[0]
        if until_ctrl_c:
            return f"stopped by itself (exit {proc.returncode}) before Ctrl-C", output
        return proc.returncode, output
    except subprocess.TimeoutExpired:
        if not until_ctrl_c:
            os.killpg(proc.pid, signal.SIGKILL)
            return f"did not finish in {TIMEOUT_S} s", proc.communicate()[0]
    os.killpg(proc.pid, signal.SIGINT)
    try:
        output = proc.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return "did not stop at Ctrl-C", proc.communicate()[0]
    return (0 if proc.returncode == 0 else f"exit {proc.returncode} at Ctrl-C"), output


def judged(status, output, seconds, gpu):
    """The result of a command that ran. Exit 77 is "skipped", with the
    reason it printed (a benchmark without a GPU: after parsing its options;
    the PDF book without TeX), except with --gpu for want of a GPU."""
    if status == 0:
        return Result("passed", seconds=seconds)
    lines = output.rstrip().splitlines() or [""]
    said = [l.strip() for l in lines if l.strip().lower().startswith("skipped")]
    reason = (said or lines)[-1]
    if status == 77 and not (gpu and "no usable GPU" in reason):
        return Result("skipped", reason, seconds=seconds)
    said = status if isinstance(status, str) else f"exit {status}"
    tail = "\n".join("    | " + line for line in lines[-25:])
    return Result("failed", f"{said}:\n{tail}", seconds=seconds)


def program_problem(text):
    """Why a program of the repository cannot run as written, or None."""
    name = program(text)
    if name in TOOLS or BUILT.match(name) or os.access(os.path.join(ROOT, name), os.X_OK):
        return None
    return f"{name} is not executable: the command fails as written"


def missing_tool(text, place):
    """The tool a command starts that is not installed here, or None."""
    name = program(text)
    path = place.environment("")["PATH"]
    return name if name in TOOLS and not shutil.which(name, path=path) else None


def options_of_wrapped(text, place, tmp, reason):
    """A command that needs a GPU, where there is none: the program of the
    build it wraps runs alone, for its options (exit 77 after parsing them)."""
    inner = wrapped_program(text)
    if not inner:
        return Result("not run", f"needs a GPU: {reason}")
    checked = judged(*run_shell(inner, place, tmp), gpu=False)
    checked.ran = inner
    if checked.status == "failed":
        return checked
    return Result("options checked", f"needs a GPU: {reason}", inner, checked.seconds)


def run_one(text, place, tmp, gpu, has_gpu):
    kind, reason = rule_for(text)
    problem = program_problem(text) or (filter_problem(text, place.folder) if kind != SKIP else None)
    if problem:
        return Result("failed", problem)
    if kind == SKIP or (kind == NO_GPU and has_gpu):
        return Result("not run", reason)
    if kind == GPU and not gpu:
        return Result("not run", f"needs a GPU (--gpu): {reason}") if has_gpu \
            else options_of_wrapped(text, place, tmp, reason)
    missing = missing_tool(text, place)
    if missing:
        return Result("not run", f"{missing} is not installed here")
    return judged(*run_shell(text, place, tmp, until_ctrl_c=kind == UNTIL_CTRL_C), gpu)


class Memo:
    """The result and effect of each command that starts more than one unit
    in a place, kept from its first run: the others start from the same
    state (the place put back), so they replay its effect instead of
    running it again (grading/workbook runs every lab's tests: minutes on
    a GPU)."""

    def __init__(self, folder, units):
        self.folder = folder
        starts = Counter((unit.place, unit.texts[0]) for unit in units)
        self.kept = {key: None for key, count in starts.items() if count > 1}

    def replayed(self, key, place):
        """The kept result of a command, its effect replayed on the place;
        None if none is kept."""
        if not self.kept.get(key):
            return None
        result, effect = self.kept[key]
        place.replay(effect)
        return result

    def keep(self, key, command, result, place, tmp):
        """Keeps a command's result and effect if another unit starts with
        it and replaying it is the same as running it: it ran (passed, was
        skipped or failed), wrote nothing to its TMPDIR that the block's next
        commands could read, and does not run until Ctrl-C (stopped after a
        while, what it did depends on when)."""
        if (key not in self.kept or result.status not in ("passed", "skipped", "failed")
                or os.listdir(tmp) or rule_for(key[1])[0] == UNTIL_CTRL_C):
            return
        copies = os.path.join(self.folder, str(list(self.kept).index(key)))
        self.kept[key] = (replace(result, same_as=f"{command.doc}:{command.line}"),
                          place.effect(copies))


def first_result(unit, place, tmp, memo, gpu, has_gpu):
    """The result of a unit's first command, which runs from its place's
    pristine state: the memo's, its effect replayed, where another unit
    ran it."""
    command, text = unit.commands[0]
    key = (unit.place, text)
    result = memo.replayed(key, place)
    if not result:
        result = run_one(text, place, tmp, gpu, has_gpu)
        memo.keep(key, command, result, place, tmp)
    return result


def run_unit(unit, places, scratch, memo, gpu, has_gpu):
    """The results of a unit's commands; its place is put back afterwards."""
    place = places[unit.place]
    tmp = tempfile.mkdtemp(dir=os.path.join(scratch, "tmp"))
    results = [first_result(unit, place, tmp, memo, gpu, has_gpu)]
    for text in unit.texts[1:]:
        if any(r.status == "failed" for r in results):
            results.append(Result("not run", "a command before it in its code block failed"))
        else:
            results.append(run_one(text, place, tmp, gpu, has_gpu))
    place.put_back()
    return results


# ----------------------------------------------------------------- reporting
SAID = {"passed": "ok", "skipped": "ok, exit 77 (skipped)",
        "options checked": "needs a GPU; the options of what it wraps are accepted",
        "not run": "not run", "failed": "FAILED"}


def took(result):
    """How long a command took, and where it ran if elsewhere (its seconds
    were spent there, once)."""
    seconds = f"{result.seconds:.1f} s" if result.seconds else ""
    if result.same_as:
        return f" (same as {result.same_as}" + (f", which took {seconds})" if seconds else ")")
    return f" ({seconds})" if seconds else ""


def show(unit, results):
    for (command, text), result in zip(unit.commands, results):
        print(f"{SAID[result.status]}{took(result)}: {command.doc}:{command.line}: {text}"
              + (f"\n    ({result.ran})" if result.ran else ""), flush=True)
        if result.status == "failed":
            print(f"    {result.why}")


def per_document(rows, docs):
    print("\nper document: commands (run / need a GPU / not run for another reason)")
    for doc in docs:
        mine = [r for c, r in rows if c.doc == doc]
        not_run = [r for r in mine if r.status in ("not run", "options checked")]
        gpu = sum(r.why.startswith("needs a GPU") for r in not_run)
        if mine:
            print(f"  {doc}: {len(mine)} ({len(mine) - len(not_run)} / {gpu} / "
                  f"{len(not_run) - gpu})")


def by_reason(title, rows, statuses):
    reasons = {}
    for command, result in rows:
        if result.status in statuses:
            reasons.setdefault(result.why, []).append(f"{command.doc}:{command.line}")
    if reasons:
        print(f"\n{title}:")
    for why, where in sorted(reasons.items(), key=lambda r: -len(r[1])):
        print(f"  {len(where)} x {why}\n      {', '.join(where[:6])}"
              + (f" and {len(where) - 6} more" if len(where) > 6 else ""))


def summary(rows, problems, docs):
    """Prints a line per document, the reasons for what was skipped or not
    run, the failures and the counts; returns the exit status. rows:
    (command, result) per documented command and value of its placeholders."""
    per_document(rows, docs)
    by_reason("exit 77 (skipped), and why", rows, ("skipped",))
    by_reason("not run, and why", rows, ("not run", "options checked"))
    failed = [(c, r) for c, r in rows if r.status == "failed"]
    for problem in problems:
        print(f"FAILED: {problem}")
    for command, result in failed:
        print(f"FAILED: {command.doc}:{command.line}: {command.text}: {result.why.splitlines()[0]}")
    count = {status: sum(r.status == status for _, r in rows) for status in SAID}
    ran = count["passed"] + count["skipped"] + count["failed"]
    print(f"\n{ran} run, {count['passed'] + count['skipped']} passed ({count['skipped']} of them "
          f"skipped: exit 77, the reasons above), {count['failed']} failed, "
          f"{count['not run'] + count['options checked']} not run ({count['options checked']} of "
          f"them needing a GPU had their options checked); {len(problems)} problem(s) in the "
          "documents")
    return 1 if failed or problems or not ran else 0


def listing(units, refs):
    for command, key, index in refs:
        text = units[key].texts[index]
        kind, reason = rule_for(text)
        print(f"{command.doc}:{command.line}: [{kind}] {text}" + (f"  ({reason})" if reason else ""))


def default_build():
    build = os.path.join(ROOT, "build")
    return build if os.path.isfile(os.path.join(build, "build.ninja")) else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.rsplit("\nusage:", 1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="RULES and PLACEHOLDERS are tables at the top of "
                                     "tests/check_documented_commands.py.")
    parser.add_argument("--gpu", action="store_true",
                        help="run the commands that need a GPU too; a skip for want of a GPU "
                        "then fails")
    parser.add_argument("--build", metavar="DIR", default=default_build(),
                        help="a build folder at the top of this checkout that the scratch's "
                        "build starts from (default: build/ when it is configured, else none: "
                        "the scratch is built from nothing, minutes)")
    parser.add_argument("--docs", metavar="GLOB,...", default=",".join(DOCS),
                        help="only the commands of these documents (default: all of them)")
    parser.add_argument("--list", action="store_true",
                        help="list the commands and what would happen to each; run nothing")
    args = parser.parse_args()
    has_gpu = labs.gpu_listed()
    if args.gpu and not has_gpu:
        print("--gpu: no GPU here (nvidia-smi lists none): nothing was checked.")
        return 77
    problems = []
    docs = documents(args.docs.split(","))
    units, refs = units_of(documented_commands(docs, problems))
    if args.list:
        listing(units, refs)
        return 0
    started = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="wb-documented-commands-")
    try:
        places = make_places(scratch, args.build,
                             student=any(u.place == "student copy" for u in units.values()))
        print(f"scratch built in {time.monotonic() - started:.0f} s; {len(refs)} commands in "
              f"{len(docs)} documents, {len(units)} distinct runs", flush=True)
        results, memo = {}, Memo(os.path.join(scratch, "memo"), units.values())
        for key, unit in units.items():
            results[key] = run_unit(unit, places, scratch, memo, args.gpu, has_gpu)
            show(unit, results[key])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    replayed = sum(bool(r[0].same_as) for r in results.values())
    print(f"\n{time.monotonic() - started:.0f} s in all" + (
        f"; {replayed} of the distinct runs replayed the effect of their first command, run "
        "once in another (\"same as\"), rather than running it again" if replayed else ""))
    return summary([(c, results[key][i]) for c, key, i in refs], problems, docs)


if __name__ == "__main__":
    sys.exit(main())
