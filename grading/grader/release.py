"""`grading/workbook release`: the student copy of the workbook.

The copy holds what a student needs and nothing an instructor keeps back:
the build (meson.build, meson_options.txt), common/, labs/ (the skeletons),
handouts/ (but its answers) and the student tools (grading/student/, grading/shared/
and the launcher). It leaves out solutions/, tests/, the grader (grading/grader/),
the rubric and each lab's hidden.c. Its README.md is
grading/student-README.md; tests/test_release.py checks that the copy
builds and that its lab tests fail (or skip without a GPU).
"""
import glob
import os
import re
import shutil
import sys
import tempfile

from shared import labs
from . import releasesource
from . import releasetarget
from .releasetarget import UsageError
from . import rubric

# What the copy holds, relative to the repository root.
COPIED = ("meson.build", "meson_options.txt", "common", "labs", "handouts",
          "grading/workbook", "grading/workbook.py", "grading/setup.sh",
          "grading/student", "grading/shared")   # not grading/grader/: the instructor's
# Files inside COPIED that are not for students: how to write a lab (it
# describes solutions/ and the repository tests), and the book's answers
# (its line in the book's contents goes too).
LEFT_OUT = ("labs/README.md", "handouts/answers.md")
STUDENT_README = "grading/student-README.md"   # the copy's README.md
# A Criterion test's name: Test(suite, name, ...) or ParameterizedTest(param, suite, name, ...).
TEST_NAME = re.compile(r"^[ \t]*(?:Test\s*\(\s*\w+|ParameterizedTest\s*\([^,]*,\s*\w+)\s*,\s*(\w+)", re.M)


class ReleaseError(Exception):
    """A release that cannot be made as asked; the message says why."""


EXIT_STATUSES = """exit status: 0 the copy was written; 1 it could not be made (a lab's kernels.cu
differs from the committed skeleton, the copy would hold an answer or a hidden
test, a file could not be written): nothing was written; 2 a mistake in the
command line (no --out or --tarball, a folder that is not empty, ...)."""


# --------------------------------------------------------------- hidden
def hidden_file_tests(folder):
    """The names of the tests in labs/<folder>/hidden.c (none without one)."""
    path = os.path.join(labs.ROOT, "labs", folder, "hidden.c")
    return TEST_NAME.findall(open(path).read()) if os.path.exists(path) else []


def hidden_tests(rubric_path):
    """[(lab folder, lab name, test name)] of every test the rubric hides,
    which must be exactly the tests of each lab's hidden.c (test.c includes
    it; the copy leaves it out)."""
    try:
        _, lab_rubrics = rubric.load(rubric_path)
    except rubric.RubricError as e:
        raise ReleaseError(str(e))
    found = []
    for lab, entry in lab_rubrics.items():
        if entry.get("hidden") and labs.find_lab(lab) is None:
            raise ReleaseError(f"{rubric_path}: [labs.{lab}] hides tests, but there is no lab "
                               f"'{lab}'; the labs are: "
                               + ", ".join(n for _, n in labs.all_labs()))
    for folder, lab in labs.all_labs():
        listed = set(lab_rubrics.get(lab, {}).get("hidden", []))
        in_file = set(hidden_file_tests(folder))
        if listed - in_file:
            raise ReleaseError(f"{rubric_path}: [labs.{lab}] hides " + ", ".join(sorted(listed - in_file))
                               + f", but labs/{folder}/hidden.c has no such test: move the test there")
        if in_file - listed:
            raise ReleaseError(f"labs/{folder}/hidden.c holds " + ", ".join(sorted(in_file - listed))
                               + f", which [labs.{lab}] of {rubric_path} does not list as hidden")
        found += [(folder, lab, name) for name in sorted(listed)]
    return found


def leaks(out, names):
    """[(file, name)] for every file of the copy that still names a hidden
    test (as a whole word: another test may start with its name)."""
    words = [(n, re.compile(rb"\b" + n.encode() + rb"\b")) for n in names]
    found = []
    for folder, _, files in os.walk(out):
        for file in files:
            path = os.path.join(folder, file)
            with open(path, "rb") as f:
                data = f.read()
            found += [(os.path.relpath(path, out), n) for n, word in words if word.search(data)]
    return found


# ------------------------------------------------------------------ copy
def make_copy(out, rubric_path, root=labs.ROOT, from_working_tree=False):
    """Writes the student copy of the checkout root into the empty folder
    `out`; returns (the hidden tests left out, notes on what it was made from)."""
    hidden = hidden_tests(rubric_path)
    missing = [rel for rel in COPIED + (STUDENT_README,) if not os.path.exists(os.path.join(root, rel))]
    if missing:
        raise ReleaseError(f"{', '.join(missing)} missing from {root}: is this a complete checkout?")
    folders = [folder for folder, _ in labs.all_labs()]
    try:
        notes = releasesource.export(root, COPIED + (STUDENT_README,), out, from_working_tree, folders)
    except releasesource.SourceError as e:
        raise ReleaseError(str(e))
    for rel in LEFT_OUT:
        if os.path.exists(os.path.join(out, rel)):
            os.remove(os.path.join(out, rel))
    summary = os.path.join(out, "handouts", "SUMMARY.md")
    with open(summary) as f:
        # The book's contents lose the chapters left out (their "(file.md)" link).
        links = [f"({rel[len('handouts/'):]})" for rel in LEFT_OUT if rel.startswith("handouts/")]
        kept = [line for line in f if not any(link in line for link in links)]
    with open(summary, "w") as f:
        f.writelines(kept)
    os.replace(os.path.join(out, STUDENT_README), os.path.join(out, "README.md"))
    with open(os.path.join(out, ".gitignore"), "w") as f:
        f.write("/build*/\n__pycache__/\n")
    for folder, _ in labs.all_labs():
        path = os.path.join(out, "labs", folder, "hidden.c")   # test.c includes it if present
        if os.path.exists(path):
            os.remove(path)
        os.makedirs(os.path.join(out, "grading", "skeletons", folder))
        shutil.copy(os.path.join(out, "labs", folder, "kernels.cu"),   # what `reset` restores
                    os.path.join(out, "grading", "skeletons", folder, "kernels.cu"))
    leaked = leaks(out, sorted({name for _, _, name in hidden}))
    if leaked:
        raise ReleaseError("hidden test names are still in the copy: "
                           + ", ".join(f"{name} in {file}" for file, name in leaked))
    if os.path.exists(os.path.join(out, "solutions")):
        raise ReleaseError("solutions/ ended up in the copy")
    answers = releasesource.answers_in(out, root)
    if answers:
        raise ReleaseError("the copy would ship answers: " + "; ".join(answers)
                           + ". Put the skeletons back in labs/ (`git stash`, or `grading/workbook "
                           "reset LAB`) and release again; nothing was written")
    return hidden, notes


def dangling_mentions(out):
    """["file:line"] where the copy's prose for students (handouts, hints)
    names a folder or file the copy leaves out: worth rewording, not an
    error. (Results measured with `<lab>-bench-reference` are not listed.)"""
    found = []
    for pattern in ("handouts/*.md", "labs/*/hints.txt"):
        for path in sorted(glob.glob(os.path.join(out, pattern))):
            with open(path, errors="replace") as f:
                for number, line in enumerate(f, 1):
                    if re.search(r"\bsolutions/|\btests/|grading/README", line):
                        found.append(f"{os.path.relpath(path, out)}:{number}")
    return found


def release(args):
    if not args.out and not args.tarball:
        print("error: say where the copy goes: --out DIR (a folder) and/or "
              "--tarball FILE.tar.gz", file=sys.stderr)
        return 2
    try:
        if args.out:
            releasetarget.check_target_folder(args.out, args.force, COPIED)
        if args.tarball:
            releasetarget.tarball_kind(args.tarball)
        if args.tarball and os.path.exists(args.tarball) and not args.force:
            raise UsageError(f"--tarball {args.tarball} exists: --force to replace it")
        if args.tarball and not os.path.isdir(os.path.dirname(os.path.abspath(args.tarball))):
            raise UsageError(f"--tarball {args.tarball}: its folder does not exist")
        with tempfile.TemporaryDirectory(prefix="wb-release-") as tmp:
            tree = os.path.join(tmp, "copy")
            os.makedirs(tree)
            hidden, notes = make_copy(tree, args.rubric, from_working_tree=args.from_working_tree)
            dangling = dangling_mentions(tree)
            wrote = []
            if args.tarball:
                top = releasetarget.write_tarball(tree, args.tarball)
                wrote.append(f"{args.tarball} (unpacks to {top}/)")
            if args.out:   # only now that the copy is complete
                os.makedirs(args.out, exist_ok=True)
                releasetarget.empty_folder(args.out)
                shutil.copytree(tree, args.out, dirs_exist_ok=True, symlinks=True)
                wrote.append(os.path.join(args.out, ""))
    except (ReleaseError, UsageError, OSError) as e:
        print(f"error: release: {e}", file=sys.stderr)
        return 2 if isinstance(e, UsageError) else 1
    print("Student copy written to " + " and ".join(wrote) + " (" + "; ".join(notes or ["made from "
          "the committed files (HEAD)"]) + ").")
    print("Left out: solutions/, tests/, the grader and its rubric, labs/README.md.")
    print("Hidden tests removed: " + (", ".join(f"{lab}/{name}" for _, lab, name in hidden) + "."
                                       if hidden else "none (the rubric hides none)."))
    if dangling:
        print("Note: these lines for students name what the copy leaves out (solutions/, "
              "tests/, the grader's README): " + ", ".join(dangling))
    print("To try it: meson setup build && meson test -C build   (in the copy; "
          "without a GPU the lab tests are skipped, with one they fail until the labs are done)")
    return 0


def add_commands(sub):
    r = sub.add_parser(
        "release", help="write the student copy: no solutions/, no hidden tests, a README for students",
        description="Writes the student copy of the workbook: meson.build, common/, labs/ "
                    "(without the tests the rubric hides), handouts/, the student commands of "
                    "grading/ and a README for students (grading/student-README.md). "
                    "solutions/, tests/ and the grader are left out. It is made from what is "
                    "committed (HEAD), and refused while a lab's kernels.cu differs from the "
                    "committed skeleton.",
        epilog=EXIT_STATUSES)
    r.add_argument("--out", metavar="DIR", help="write the copy into this folder (new or empty)")
    r.add_argument("--tarball", metavar="FILE",
                   help="write the copy as FILE (.tar.gz, .tgz, .tar.xz or .tar), "
                        "under a top folder named after FILE")
    r.add_argument("--force", action="store_true",
                   help="replace the contents of a non-empty --out folder, or an existing --tarball")
    r.add_argument("--rubric", default=rubric.DEFAULT,
                   help="the rubric whose `hidden` tests are removed (default grading/rubric.toml)")
    r.add_argument("--from-working-tree", action="store_true",
                   help="make the copy from the tracked files as they are on disk, not from HEAD "
                        "(untracked files, backups and build folders are still left out; a copy "
                        "that holds a solution is still refused)")
    r.set_defaults(func=release)
