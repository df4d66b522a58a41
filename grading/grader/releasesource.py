"""What the student copy (release.py) is made from, and the check that it
holds no answer.

The copy is made from what is committed (git's tree at HEAD), never from
the files as they happen to be: an instructor who tried a lab in their own
checkout has the answer in labs/NN/kernels.cu, a backup of it beside it,
build folders, untracked notes. Such a lab stops the release, with what to
do, unless the instructor asks for the working files on purpose; those
are then the tracked files as they are on disk (no backups, no build
folders, nothing untracked). Whatever the copy was made from, no kernels.cu
of it may be a solution's, even reformatted (release.py checks after
writing).
"""
import io
import os
import re
import shutil
import subprocess
import tarfile

# Outside a git checkout, with --from-working-tree: what is not copied.
NOT_COPIED = shutil.ignore_patterns("__pycache__", "*.pyc", "*~", ".*.swp", "*.bak", "*.orig",
                                    "build", "build-*")
# A C/C++ string or character literal (kept), or a comment (dropped).
LITERAL_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


class SourceError(Exception):
    """The copy cannot be made from this checkout as asked; the message says what to do."""


def git(root, *argv):
    """git's output (bytes) in root, or None where git fails or is missing."""
    try:
        proc = subprocess.run(["git", "-C", root, *argv], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def is_git_checkout(root):
    """True when root is the top of a git work tree with a commit."""
    top = git(root, "rev-parse", "--show-toplevel")
    return (top is not None and os.path.realpath(top.decode().strip()) == os.path.realpath(root)
            and git(root, "rev-parse", "--verify", "-q", "HEAD") is not None)


def uncommitted(root, paths):
    """[(status, path)] of the files under paths that differ from HEAD:
    modified, staged, deleted or untracked (git status's two letters)."""
    out = git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths) or b""
    entries = [e.decode(errors="replace") for e in out.split(b"\0") if e]
    return [(e[:2], e[3:]) for e in entries if len(e) > 3]


def refuse_changed_labs(root, lab_folders):
    """Raises SourceError when a lab's kernels.cu differs from the committed skeleton."""
    changed = [path for _, path in uncommitted(root, [f"labs/{f}/kernels.cu" for f in lab_folders])]
    if changed:
        names = ", ".join(changed)
        lab = changed[0].split("/")[1]
        raise SourceError(
            f"{names} differs from the committed skeleton (your own work in it?). The copy is "
            "made from what is committed, and a release is refused while a lab's file differs: "
            f"put the skeleton back with `git stash` (keeps your work) or `grading/workbook reset "
            f"{lab}` (backs it up), or commit the new skeleton; to ship the files as they are on "
            "purpose, give --from-working-tree")


def export(root, paths, into, from_working_tree, lab_folders):
    """Writes root's files under paths into the folder into: the committed
    ones (HEAD), or with from_working_tree the tracked ones as they are on
    disk (outside git: every file but NOT_COPIED). Returns notes for the
    instructor (uncommitted changes left out)."""
    if not is_git_checkout(root):
        if not from_working_tree:
            raise SourceError(f"{root} is not a git checkout with a commit: the copy is made from "
                              "what is committed; give --from-working-tree to make it from the "
                              "files as they are (backups and build folders are left out)")
        for rel in paths:
            source, target = os.path.join(root, rel), os.path.join(into, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.isdir(source):
                shutil.copytree(source, target, ignore=NOT_COPIED)
            else:
                shutil.copy2(source, target)
        return ["not a git checkout: made from the files as they are"]
    if from_working_tree:
        tracked = (git(root, "ls-files", "-z", "--", *paths) or b"").split(b"\0")
        for rel in (t.decode() for t in tracked if t):
            if os.path.isfile(os.path.join(root, rel)):   # tracked but deleted: left out
                os.makedirs(os.path.dirname(os.path.join(into, rel)), exist_ok=True)
                shutil.copy2(os.path.join(root, rel), os.path.join(into, rel))
        return ["made from the working files (--from-working-tree): untracked files left out"]
    refuse_changed_labs(root, lab_folders)
    archive = git(root, "archive", "--format=tar", "HEAD", "--", *paths)
    if archive is None:
        raise SourceError("git archive HEAD failed: is every path of the copy committed? ("
                          + ", ".join(paths) + ")")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    left_out = [path for status, path in uncommitted(root, paths)]
    return [f"not committed, so not in the copy: {', '.join(left_out[:10])}"
            + (f" and {len(left_out) - 10} more" if len(left_out) > 10 else "")] if left_out else []


def normalized(text):
    """C/C++ source without its comments and whitespace: a reformatted or
    re-commented copy of a file normalizes to the same text."""
    kept = LITERAL_OR_COMMENT.sub(lambda m: m.group() if m.group()[0] in "\"'" else " ", text)
    return re.sub(r"\s+", "", kept)


def answers_in(copy, root):
    """["copy's file = solutions/NN/kernels.cu"] for every kernels.cu of the
    copy (labs/ and grading/skeletons/) that is a solution's, normalized."""
    solutions = {}
    for folder in sorted(os.listdir(os.path.join(root, "solutions"))):
        path = os.path.join(root, "solutions", folder, "kernels.cu")
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                solutions.setdefault(normalized(f.read()), f"solutions/{folder}/kernels.cu")
    found = []
    for place in ("labs", os.path.join("grading", "skeletons")):
        top = os.path.join(copy, place)
        for folder in sorted(os.listdir(top)) if os.path.isdir(top) else []:
            path = os.path.join(top, folder, "kernels.cu")
            if os.path.isfile(path):
                with open(path, errors="replace") as f:
                    same = solutions.get(normalized(f.read()))
                if same:
                    found.append(f"{os.path.relpath(path, copy)} = {same}")
    return found
