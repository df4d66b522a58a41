"""What the compiler reads: the grader's second include check, after the
text check of shared/includes.py. It asks the compiler itself which files
the source includes (its dependency output, `nvcc -M`, in the compile's
sandbox: dependency_files) and refuses any file outside the lab's and
common/'s headers and the system's and toolkit's include folders
(included_file_problems): whatever the spelling, what the compiler reads is
what is judged. The compile's view holds no device file but /dev/null and
none of the refused libraries (library_binds), so a spelling that both
checks miss still fails at once.
"""
import functools
import glob
import os
import re
import shutil
import subprocess

from shared.includes import LIBRARY_FOLDERS, LIBRARY_HEADERS, LIBRARY_REFUSED

def include_dirs():
    """The system's and the CUDA toolkit's include folders on this machine
    (where CUB, Thrust and the headers a lab may use live), as given."""
    roots = ["/usr/include", "/usr/local/include"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        toolkit = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        roots += [os.path.join(toolkit, "include")]
        roots += glob.glob(os.path.join(toolkit, "targets", "*", "include"))
    return roots


def library_paths():
    """The folders and files of the libraries above (LIBRARY_FOLDERS,
    LIBRARY_HEADERS) on this machine, as real paths: the CUDA toolkit's
    (include/cccl/cub, ...) and the system's (/usr/include/thrust from a
    distribution's package). Returns (folders, files)."""
    folders, files = set(), set()
    for root in include_dirs():
        for top in (root, os.path.join(root, "cccl")):
            for name in LIBRARY_FOLDERS:
                if os.path.isdir(os.path.join(top, name)):
                    folders.add(os.path.realpath(os.path.join(top, name)))
        for sub in ("cooperative_groups", os.path.join("cooperative_groups", "details")):
            for name in LIBRARY_HEADERS:
                if os.path.isfile(os.path.join(root, sub, name)):
                    files.add(os.path.realpath(os.path.join(root, sub, name)))
    return sorted(folders), sorted(files)


def library_binds(folder):
    """bwrap's (source, target) pairs that hide those libraries from a
    compile: an empty folder over each of their folders, a header that stops
    the compile with the reason over each of their files (both made in
    folder)."""
    empty = os.path.join(folder, "empty")
    stub = os.path.join(folder, "library.h")
    if not os.path.isfile(stub):
        os.makedirs(empty, exist_ok=True)
        with open(stub, "w") as f:
            f.write(f'#error "this header {LIBRARY_REFUSED}"\n')
    folders, files = library_paths()
    return [(empty, path) for path in folders] + [(stub, path) for path in files]


# The host compiler nvcc calls by default, whose search list holds the C
# and C++ headers (/usr/include/c++/12, GCC's own include folder).
HOST_COMPILER = "g++"


@functools.lru_cache(maxsize=None)
def system_include_dirs():
    """Real paths of the folders whose headers any compile may read: the
    system's and the toolkit's (include_dirs) and the host compiler's search
    list (asked of it once: `g++ -E -v`)."""
    dirs = list(include_dirs())
    compiler = shutil.which(HOST_COMPILER)
    if compiler:
        proc = subprocess.run([compiler, "-xc++", "-E", "-v", "-o", os.devnull, os.devnull],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              errors="replace")
        listed = re.search(r"search starts here:\n(.*?)End of search list", proc.stderr, re.S)
        dirs += [l.strip() for l in listed.group(1).splitlines()
                 if l.startswith(" ")] if listed else []
    return tuple(sorted({os.path.realpath(d) for d in dirs if os.path.isdir(d)}))


def dependency_files(rule):
    """The files of a make rule as `nvcc -M` writes it (`kernels.o : a.cu
    b.h \\` and more lines), a blank in a name written as `\\ `."""
    text = rule.replace("\\\n", " ")
    deps = re.split(r"(?<!\\):(?:\s|$)", text, maxsplit=1)[-1]
    return [re.sub(r"\\(.)", r"\1", name).replace("$$", "$")
            for name in re.findall(r"(?:\\.|[^\s\\])+", deps)]


def _under(path, dirs):
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def included_file_problems(files, cwd, lab_files, lab_dirs):
    """The files a compile reads (dependency_files, relative to cwd) that it
    may not: one of the refused libraries, or a file that is neither one of
    lab_files (the student's kernels.cu, the lab's headers), nor under
    lab_dirs (common/), nor in a system or toolkit include folder
    (system_include_dirs). One line each, naming the file."""
    library_folders, library_files = library_paths()
    allowed = {os.path.realpath(f) for f in lab_files}
    roots = [os.path.realpath(d) for d in lab_dirs] + list(system_include_dirs())
    problems = []
    for name in files:
        path = os.path.realpath(os.path.join(cwd, name))
        if path in library_files or _under(path, library_folders):
            problems.append(f"the source includes {name}, which {LIBRARY_REFUSED}")
        elif path not in allowed and not _under(path, roots):
            problems.append(f"the source includes {name}: a lab may include only its own and "
                            "common/'s headers and the system's and CUDA's include folders")
    return problems
