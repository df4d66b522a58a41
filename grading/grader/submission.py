"""Reading a submission safely: a directory mirroring labs/ (only the files a
student edits, optionally under a top-level labs/ folder), or an archive of
one: a .zip, or a tar (.tar, .tar.gz/.tgz, .tar.bz2, .tar.xz), recognised by
its first bytes rather than by its name. Only `NN-name/kernels.cu` files of
known labs are taken (`labs/NN-name/kernels.cu` in a whole student copy or
repository, under any top folder); anything else is listed as ignored.
Absolute paths, `..`, links, special files and names that are not UTF-8 are
refused: the whole submission is rejected with a one-line reason.

A whole student copy or repository is a submission too: what it holds
besides the student's files is ignored and listed by folder in the report
(IGNORED_FOLDERS: the grader's skeletons, the solutions, build folders,
.git, and backup folders such as labs.bak/). Two copies of one lab's file
outside those (00-vector-add/kernels.cu and labs/00-vector-add/kernels.cu)
are taken when they are the same bytes, and refuse the submission when they
differ: the grader does not guess which one the student meant. Ignored
files count toward the limits (archives.py): reading stays bounded.

Folders and archives are read under limits (archives.py). A corrupt or
truncated archive, a bad CRC or a name that is not UTF-8 is a Rejected with
one line, never a traceback."""
import os

from .archives import (MAX_ARCHIVE_BYTES, MAX_MEMBERS, TOO_MANY, ZIP_STARTS, Rejected, printable,
                      folder_entries, tar_entries, zip_entries)

STUDENT_FILES = ("kernels.cu",)
# Folders whose files are never the student's: the grader's skeletons
# (grading/skeletons/ in a student copy), the solutions, version control,
# build folders (build/, build-gpu/, builddir/), and backup copies of a
# folder (labs.bak/, labs~/).
IGNORED_FOLDERS = ("skeletons", "solutions", ".git", ".hg", ".svn")
IGNORED_FOLDER_STARTS = ("build",)
BACKUP_ENDS = (".bak", "~", ".orig", ".swp", ".old")
# The report lists at most this many ignored files by name (then a count);
# ignored folders are one line each, with the number of files in them.
MAX_IGNORED_LISTED = 20


def _parts(name):
    return [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]


def _ignored_folder(parts):
    """'grading/skeletons/' for the parts of a file under an ignored folder
    (the first one), else None."""
    for depth, part in enumerate(parts[:-1]):
        if part in IGNORED_FOLDERS or part.startswith(IGNORED_FOLDER_STARTS) \
                or part.endswith(BACKUP_ENDS):
            return "/".join(parts[:depth + 1]) + "/"
    return None


def _lab_file(parts, folders):
    """'labs/00-vector-add/kernels.cu' or '00-vector-add/kernels.cu' (under
    any top folders too, as archives often have) -> (folder, file)."""
    for start in range(len(parts)):
        rest = parts[start:]
        if rest[:1] == ["labs"]:
            rest = rest[1:]
        if len(rest) == 2 and rest[0] in folders and rest[1] in STUDENT_FILES:
            return rest[0], rest[1]
    return None


class _Ignored:
    """The ignored names, bounded for a repository of thousands of files:
    each ignored folder once with its count, other files by name, up to
    MAX_IGNORED_LISTED of each; the rest counted."""

    def __init__(self):
        self.folders, self.files, self.more = {}, [], 0

    def add(self, name, folder):
        if folder and (folder in self.folders or len(self.folders) < MAX_IGNORED_LISTED):
            self.folders[folder] = self.folders.get(folder, 0) + 1
        elif not folder and len(self.files) < MAX_IGNORED_LISTED:
            self.files.append(printable(name))
        else:
            self.more += 1

    def listed(self):
        folders = [f"{printable(folder)} ({count} file{'s' * (count != 1)})"
                   for folder, count in self.folders.items()]
        return folders + self.files + ([f"and {self.more} more files"] if self.more else [])


def _check_name(name):
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise Rejected(f"absolute path in the submission: {name}")
    if ".." in name.replace("\\", "/").split("/"):
        raise Rejected(f"path leaving the submission: {name}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise Rejected(f"a file name that is not UTF-8 in the submission: {name}") from None


def read(path, folders):
    """{(folder, file): bytes} of the student files in the submission at path,
    and the list of names that were ignored. Raises Rejected, and nothing
    else, for any submission that cannot be read."""
    try:
        return _select(_entries(path), folders)
    except Rejected:
        raise
    except Exception as e:   # corrupt or truncated data, not an archive at all, ...
        raise Rejected(_unreadable(path, e)) from None


def _unreadable(path, e):
    name = os.path.basename(path)
    if isinstance(e, UnicodeError):   # tarfile and zipfile decode names strictly
        return f"{name}: a file name in it is not UTF-8 ({e})"
    return (f"cannot read {name} ({type(e).__name__}: {e}): a submission is a directory, "
            "a .zip or a tar archive (.tar, .tar.gz, .tar.bz2, .tar.xz)")


def _select(entries, folders):
    """The student files among (name, reader) entries; a reader is called
    only for a file that is taken, at once (a tar is read as a stream)."""
    files, where, ignored = {}, {}, _Ignored()
    for count, (name, reader) in enumerate(entries, 1):
        if count > MAX_MEMBERS:
            raise Rejected(TOO_MANY)
        _check_name(name)
        if reader is None:   # a folder
            continue
        parts = _parts(name)
        folder = _ignored_folder(parts)
        key = None if folder else _lab_file(parts, folders)
        if key is None:
            ignored.add(name, folder)
            continue
        data = reader()
        if key not in files:
            files[key], where[key] = data, name
        elif files[key] == data:
            ignored.add(f"{name} (the same as {where[key]})", None)
        else:
            raise Rejected(f"two different copies of {key[0]}/{key[1]} in the submission: "
                           f"{where[key]} and {name} (keep one; a backup named *.bak is ignored)")
    return files, ignored.listed()


def _entries(path):
    """(name, reader or None for a folder) for everything in the submission."""
    if os.path.isdir(path):
        return folder_entries(path)
    if not os.path.exists(path):
        raise Rejected(f"no such submission: {path}")
    if not os.path.isfile(path):
        raise Rejected(f"{path}: not a directory or a file")
    if os.path.getsize(path) > MAX_ARCHIVE_BYTES:
        raise Rejected(f"{os.path.basename(path)} is larger than {MAX_ARCHIVE_BYTES >> 20} MiB")
    with open(path, "rb") as f:
        head = f.read(8)
    return zip_entries(path) if head.startswith(ZIP_STARTS) else tar_entries(path, head)
