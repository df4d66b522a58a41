"""Where the student copy goes (release.py): the --out folder, checked
before anything is made, or the --tarball."""
import os
import shutil
import tarfile

from shared import labs


class UsageError(Exception):
    """A mistake in the command line (where the copy goes): exit status 2."""


def tarball_kind(tarball):
    """(top folder, tarfile mode) that the name TARBALL asks for."""
    base = os.path.basename(tarball)
    for ext, mode in ((".tar.gz", "w:gz"), (".tgz", "w:gz"), (".tar.xz", "w:xz"), (".tar", "w")):
        if base.endswith(ext):
            return base[:-len(ext)] or "cuda-workbook", mode
    raise UsageError(f"--tarball {tarball}: name it .tar.gz, .tgz, .tar.xz or .tar")


def write_tarball(tree, tarball):
    """tree's contents as TARBALL, under one top folder named after it."""
    top, mode = tarball_kind(tarball)

    def anonymous(info):
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    partial = tarball + ".partial"
    with tarfile.open(partial, mode) as tar:
        tar.add(tree, arcname=top, filter=anonymous)
    os.replace(partial, tarball)
    return top


def check_target_folder(out, force, copied):
    """Refuses folders the copy must not go to, and a non-empty one without --force."""
    real = os.path.realpath(out)
    root = os.path.realpath(labs.ROOT)
    if real == root or root.startswith(real.rstrip(os.sep) + os.sep):
        raise UsageError(f"--out {out} is this repository or a folder above it: "
                           "give a new folder elsewhere")
    for rel in copied + ("solutions", "tests", "grading"):
        inside = os.path.realpath(os.path.join(labs.ROOT, rel))
        if real == inside or real.startswith(inside + os.sep):
            raise UsageError(f"--out {out} is inside the repository's {rel}: give a folder elsewhere")
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out} exists and is not a folder")
    if os.path.isdir(out) and os.listdir(out):
        if not force:
            raise UsageError(f"--out {out} is not empty: give an empty or new folder, "
                               "or --force to replace what is in it")


def empty_folder(out):
    for entry in os.listdir(out):
        path = os.path.join(out, entry)
        (shutil.rmtree if os.path.isdir(path) and not os.path.islink(path) else os.remove)(path)
