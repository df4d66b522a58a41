"""Reading a submission safely: a directory mirroring labs/ (only the files a
student edits, optionally under a top-level labs/ folder), or an archive of
one: a .zip, or a tar (.tar, .tar.gz/.tgz, .tar.bz2, .tar.xz), recognised by
its first bytes rather than by its name. Only `NN-name/kernels.cu` files of
known labs are taken; anything else is listed as ignored. Absolute paths,
`..`, links, special files and names that are not UTF-8 are refused: the
whole submission is rejected with a one-line reason.

Folders and archives are read under limits (archives.py). A corrupt or
truncated archive, a bad CRC or a name that is not UTF-8 is a Rejected with
one line, never a traceback."""
import os

from archives import (MAX_ARCHIVE_BYTES, MAX_MEMBERS, ZIP_STARTS, Rejected, printable,
                      folder_entries, tar_entries, zip_entries)

STUDENT_FILES = ("kernels.cu",)


def _lab_file(name, folders):
    """'labs/00-vector-add/kernels.cu' or '00-vector-add/kernels.cu' (under
    any single top folder too, as archives often have) -> (folder, file)."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    for start in range(len(parts)):
        rest = parts[start:]
        if rest[:1] == ["labs"]:
            rest = rest[1:]
        if len(rest) == 2 and rest[0] in folders and rest[1] in STUDENT_FILES:
            return rest[0], rest[1]
    return None


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
    files, ignored = {}, []
    for count, (name, reader) in enumerate(entries, 1):
        if count > MAX_MEMBERS:
            raise Rejected(f"more than {MAX_MEMBERS} files and folders in the submission")
        _check_name(name)
        if reader is None:   # a folder
            continue
        key = _lab_file(name, folders)
        if key is None:
            ignored.append(printable(name))
            continue
        if key in files:
            raise Rejected(f"two copies of {key[0]}/{key[1]} in the submission")
        files[key] = reader()
    return files, ignored


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
