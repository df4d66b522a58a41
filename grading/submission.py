"""Reading a submission safely: a directory mirroring labs/ (only the files a
student edits, optionally under a top-level labs/ folder), or a .zip /
.tar.gz of one. Only `NN-name/kernels.cu` files of known labs are taken;
anything else is listed as ignored. Absolute paths, `..`, links and special
files are refused: the whole submission is rejected with the reason."""
import os
import stat
import tarfile
import zipfile

STUDENT_FILES = ("kernels.cu",)
MAX_FILE_BYTES = 1 << 20


class Rejected(Exception):
    pass


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
        raise Rejected(f"absolute path in the submission: {name!r}")
    if ".." in name.replace("\\", "/").split("/"):
        raise Rejected(f"path leaving the submission: {name!r}")


def read(path, folders):
    """{(folder, file): bytes} of the student files in the submission at path,
    and the list of names that were ignored."""
    entries = []   # (name, kind, size, reader)
    if os.path.isdir(path):
        for top, dirs, files in os.walk(path):
            for name in dirs + files:
                full = os.path.join(top, name)
                rel = os.path.relpath(full, path)
                mode = os.lstat(full).st_mode
                if stat.S_ISLNK(mode):
                    raise Rejected(f"symbolic link in the submission: {rel}")
                if stat.S_ISREG(mode):
                    entries.append((rel, os.path.getsize(full), lambda f=full: open(f, "rb").read()))
                elif not stat.S_ISDIR(mode):
                    raise Rejected(f"special file in the submission: {rel}")
    elif zipfile.is_zipfile(path):
        archive = zipfile.ZipFile(path)
        for info in archive.infolist():
            _check_name(info.filename)
            if stat.S_ISLNK(info.external_attr >> 16):
                raise Rejected(f"symbolic link in the submission: {info.filename}")
            if not info.is_dir():
                entries.append((info.filename, info.file_size,
                                lambda i=info: archive.read(i)))
    elif os.path.isfile(path) and tarfile.is_tarfile(path):
        archive = tarfile.open(path)
        for member in archive.getmembers():
            _check_name(member.name)
            if member.issym() or member.islnk():
                raise Rejected(f"link in the submission: {member.name}")
            if member.isfile():
                entries.append((member.name, member.size,
                                lambda m=member: archive.extractfile(m).read()))
            elif not member.isdir():
                raise Rejected(f"special file in the submission: {member.name}")
    elif not os.path.exists(path):
        raise Rejected(f"no such submission: {path}")
    else:
        raise Rejected(f"{path}: not a directory, .zip or .tar.gz")

    files, ignored = {}, []
    for name, size, reader in entries:
        _check_name(name)
        key = _lab_file(name, folders)
        if key is None:
            ignored.append(name)
            continue
        if key in files:
            raise Rejected(f"two copies of {key[0]}/{key[1]} in the submission")
        if size > MAX_FILE_BYTES:
            raise Rejected(f"{name} is larger than {MAX_FILE_BYTES} bytes")
        files[key] = reader()
    return files, ignored
