"""`grading/workbook release`: the student copy of the workbook.

The copy holds what a student needs and nothing an instructor keeps back:
the build (meson.build, meson_options.txt), common/, labs/ (the skeletons),
handouts/ and the student tools of grading/ (status, watch, hint, run). It
leaves out solutions/, tests/, the grader and the rubric, and removes from
each lab's test.c the tests the rubric lists as `hidden`. Its README.md is
grading/student-README.md. Without solutions/, meson.build builds the student
side only; the repository test tests/test_release.py checks that the copy
builds and that its lab tests fail (or skip without a GPU).
"""
import glob
import os
import re
import shutil
import sys
import tarfile
import tempfile
import tomllib

import labs

# What the copy holds, relative to the repository root.
COPIED = ("meson.build", "meson_options.txt", "common", "labs", "handouts",
          "grading/workbook", "grading/workbook.py", "grading/student.py",
          "grading/ui.py", "grading/builddir.py", "grading/progress.py", "grading/watching.py",
          "grading/skeleton.py", "grading/labs.py", "grading/setup.sh")
# Files inside COPIED that are not for students: how to write a lab (it
# describes solutions/ and the repository tests).
LEFT_OUT = ("labs/README.md",)
STUDENT_README = os.path.join(labs.ROOT, "grading", "student-README.md")
DEFAULT_RUBRIC = os.path.join(labs.ROOT, "grading", "rubric.toml")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*~", ".*.swp", "build", "build-*")
# Criterion's test macros: the macro and which argument is the test's name.
TEST_MACROS = {"Test": 1, "ParameterizedTestParameters": 1, "ParameterizedTest": 2,
               "TheoryDataPoints": 1, "Theory": 2}
TEST_START = re.compile(r"^[ \t]*(" + "|".join(TEST_MACROS) + r")\s*\(", re.M)


class ReleaseError(Exception):
    """A release that cannot be made as asked; the message says why."""


# ------------------------------------------------------------ C scanning
def skip_literal_or_comment(text, i):
    """If text[i] opens a string, a character literal or a comment, the
    index just after it; otherwise None."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        if end < 0:
            raise ReleaseError("unterminated comment")
        return end + 2
    if text[i] in "\"'":
        quote, j = text[i], i + 1
        while j < len(text) and text[j] != quote:
            if text[j] == "\n":
                raise ReleaseError("unterminated string or character literal")
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return None


def matching(text, i, opening, closing):
    """text[i] is `opening`: the index just after its matching `closing`,
    skipping strings and comments."""
    depth = 0
    while i < len(text):
        after = skip_literal_or_comment(text, i)
        if after is not None:
            i = after
            continue
        if text[i] == opening:
            depth += 1
        elif text[i] == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ReleaseError(f"no matching '{closing}'")


def skip_space(text, i):
    while i < len(text):
        after = skip_literal_or_comment(text, i) if text[i] == "/" else None
        if after is not None:
            i = after
        elif text[i].isspace():
            i += 1
        else:
            break
    return i


def top_level_args(inside):
    """The comma-separated arguments of a macro call's inside, stripped."""
    args, depth, start, i = [], 0, 0, 0
    while i < len(inside):
        after = skip_literal_or_comment(inside, i)
        if after is not None:
            i = after
            continue
        if inside[i] in "([{":
            depth += 1
        elif inside[i] in ")]}":
            depth -= 1
        elif inside[i] == "," and depth == 0:
            args.append(inside[start:i].strip())
            start = i + 1
        i += 1
    args.append(inside[start:].strip())
    return args


def comment_above(text, start):
    """Where the comment lines directly above `start` (a line start) begin,
    so that a test's explanation goes with it; `start` if there are none."""
    lines = text[:start].splitlines(keepends=True)
    k = len(lines)
    while k and lines[k - 1].strip().startswith("//"):
        k -= 1
    if k == len(lines) and k and lines[k - 1].rstrip().endswith("*/"):
        while k and "/*" not in lines[k - 1]:
            k -= 1
        if k and lines[k - 1].lstrip().startswith("/*"):
            k -= 1
        else:
            k = len(lines)   # the comment ends a line of code: keep it
    return sum(len(line) for line in lines[:k])


def remove_test(text, name):
    """The text without the Criterion blocks that define the test `name`
    (Test, ParameterizedTest with its parameters, Theory), each with the
    comment right above it. Returns (new text, blocks removed)."""
    spans = []
    for match in TEST_START.finditer(text):
        open_paren = match.end() - 1
        close = matching(text, open_paren, "(", ")")
        args = top_level_args(text[open_paren + 1:close - 1])
        position = TEST_MACROS[match.group(1)]
        if len(args) <= position or args[position] != name:
            continue
        body = skip_space(text, close)
        if body >= len(text) or text[body] != "{":
            raise ReleaseError(f"{match.group(1)}(..., {name}, ...) has no {{ body }} after it")
        end = matching(text, body, "{", "}")
        end = end + 1 if text.startswith("\n", end) else end
        spans.append((comment_above(text, match.start()), end))
    for start, end in reversed(spans):
        before, after = text[:start].rstrip("\n"), text[end:].lstrip("\n")
        text = (before + "\n\n" + after) if before and after else (before + "\n" if before else after)
    return text, len(spans)


# --------------------------------------------------------------- hidden
def hidden_tests(rubric_path):
    """[(lab folder, lab name, test name)] of every test the rubric hides."""
    try:
        with open(rubric_path, "rb") as f:
            rubric = tomllib.load(f)
    except OSError as e:
        raise ReleaseError(f"cannot read the rubric {rubric_path}: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        raise ReleaseError(f"{rubric_path} is not valid TOML: {e}")
    found = []
    for lab, entry in rubric.get("labs", {}).items():
        names = entry.get("hidden", [])
        if not names:
            continue
        where = labs.find_lab(lab)
        if where is None:
            raise ReleaseError(f"{rubric_path}: [labs.{lab}] hides tests, but there is no lab "
                               f"'{lab}'; the labs are: "
                               + ", ".join(n for _, n in labs.all_labs()))
        for name in names:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)):
                raise ReleaseError(f"{rubric_path}: [labs.{lab}] hidden test '{name}' "
                                   "is not a C identifier")
            found.append((where[0], where[1], name))
    return found


def strip_hidden(out, hidden):
    """Removes each hidden test from out/labs/<folder>/test.c."""
    for folder, lab, name in hidden:
        path = os.path.join(out, "labs", folder, "test.c")
        shown = f"labs/{folder}/test.c"
        with open(path) as f:
            text = f.read()
        try:
            text, removed = remove_test(text, name)
        except ReleaseError as e:
            raise ReleaseError(f"{shown}: cannot remove the hidden test {name}: {e}")
        if not removed:
            raise ReleaseError(
                f"{shown}: the rubric hides {lab}'s test '{name}', but no "
                f"Test(<suite>, {name}, ...) block is in that file. A test made by a macro "
                "cannot be hidden: write it as its own Test block (or fix the name in the rubric).")
        if re.search(rf"\b{name}\b", text):
            raise ReleaseError(f"{shown}: '{name}' is still named after its Test block was "
                               "removed (a comment, a string or another test): rename or remove it")
        with open(path, "w") as f:
            f.write(text)


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
def make_copy(out, rubric_path):
    """Writes the student copy into the empty folder `out`; returns the
    hidden tests removed."""
    hidden = hidden_tests(rubric_path)
    for rel in COPIED:
        source = os.path.join(labs.ROOT, rel)
        target = os.path.join(out, rel)
        if not os.path.exists(source):
            raise ReleaseError(f"{rel} is missing from {labs.ROOT}: is this a complete checkout?")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.isdir(source):
            shutil.copytree(source, target, ignore=IGNORED)
        else:
            shutil.copy2(source, target)
    for rel in LEFT_OUT:
        if os.path.exists(os.path.join(out, rel)):
            os.remove(os.path.join(out, rel))
    shutil.copy(STUDENT_README, os.path.join(out, "README.md"))
    with open(os.path.join(out, ".gitignore"), "w") as f:
        f.write("/build*/\n__pycache__/\n")
    strip_hidden(out, hidden)
    leaked = leaks(out, sorted({name for _, _, name in hidden}))
    if leaked:
        raise ReleaseError("hidden test names are still in the copy: "
                           + ", ".join(f"{name} in {file}" for file, name in leaked))
    if os.path.exists(os.path.join(out, "solutions")):
        raise ReleaseError("solutions/ ended up in the copy")
    return hidden


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


def write_tarball(tree, tarball):
    """tree's contents as TARBALL, under one top folder named after it."""
    base = os.path.basename(tarball)
    for ext, mode in ((".tar.gz", "w:gz"), (".tgz", "w:gz"), (".tar.xz", "w:xz"), (".tar", "w")):
        if base.endswith(ext):
            top = base[:-len(ext)] or "cuda-workbook"
            break
    else:
        raise ReleaseError(f"--tarball {tarball}: name it .tar.gz, .tgz, .tar.xz or .tar")

    def anonymous(info):
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    partial = tarball + ".partial"
    with tarfile.open(partial, mode) as tar:
        tar.add(tree, arcname=top, filter=anonymous)
    os.replace(partial, tarball)
    return top


def check_target_folder(out, force):
    """Refuses folders the copy must not go to, and a non-empty one
    without --force."""
    real = os.path.realpath(out)
    root = os.path.realpath(labs.ROOT)
    if real == root or root.startswith(real.rstrip(os.sep) + os.sep):
        raise ReleaseError(f"--out {out} is this repository or a folder above it: "
                           "give a new folder elsewhere")
    for rel in COPIED + ("solutions", "tests", "grading"):
        inside = os.path.realpath(os.path.join(labs.ROOT, rel))
        if real == inside or real.startswith(inside + os.sep):
            raise ReleaseError(f"--out {out} is inside the repository's {rel}: give a folder elsewhere")
    if os.path.exists(out) and not os.path.isdir(out):
        raise ReleaseError(f"--out {out} exists and is not a folder")
    if os.path.isdir(out) and os.listdir(out):
        if not force:
            raise ReleaseError(f"--out {out} is not empty: give an empty or new folder, "
                               "or --force to replace what is in it")


def empty_folder(out):
    for entry in os.listdir(out):
        path = os.path.join(out, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def release(args):
    if not args.out and not args.tarball:
        print("error: say where the copy goes: --out DIR (a folder) and/or "
              "--tarball FILE.tar.gz", file=sys.stderr)
        return 2
    try:
        if args.out:
            check_target_folder(args.out, args.force)
        if args.tarball and os.path.exists(args.tarball) and not args.force:
            raise ReleaseError(f"--tarball {args.tarball} exists: --force to replace it")
        if args.tarball and not os.path.isdir(os.path.dirname(os.path.abspath(args.tarball))):
            raise ReleaseError(f"--tarball {args.tarball}: its folder does not exist")
        with tempfile.TemporaryDirectory(prefix="wb-release-") as tmp:
            tree = os.path.join(tmp, "copy")
            os.makedirs(tree)
            hidden = make_copy(tree, args.rubric)
            dangling = dangling_mentions(tree)
            wrote = []
            if args.tarball:
                top = write_tarball(tree, args.tarball)
                wrote.append(f"{args.tarball} (unpacks to {top}/)")
            if args.out:   # only now that the copy is complete
                os.makedirs(args.out, exist_ok=True)
                empty_folder(args.out)
                shutil.copytree(tree, args.out, dirs_exist_ok=True, symlinks=True)
                wrote.append(f"{args.out}/")
    except ReleaseError as e:
        print(f"error: release: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: release: {e}", file=sys.stderr)
        return 1
    print("Student copy written to " + " and ".join(wrote) + ".")
    print("Left out: solutions/, tests/, the grader and its rubric, labs/README.md.")
    if hidden:
        print("Hidden tests removed: "
              + ", ".join(f"{lab}/{name}" for _, lab, name in hidden) + ".")
    else:
        print("Hidden tests removed: none (the rubric hides none).")
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
                    "solutions/, tests/ and the grader are left out.")
    r.add_argument("--out", metavar="DIR", help="write the copy into this folder (new or empty)")
    r.add_argument("--tarball", metavar="FILE",
                   help="write the copy as FILE (.tar.gz, .tgz, .tar.xz or .tar), "
                        "under a top folder named after FILE")
    r.add_argument("--force", action="store_true",
                   help="replace the contents of a non-empty --out folder, or an existing --tarball")
    r.add_argument("--rubric", default=DEFAULT_RUBRIC,
                   help="the rubric whose `hidden` tests are removed (default grading/rubric.toml)")
    r.set_defaults(func=release)
