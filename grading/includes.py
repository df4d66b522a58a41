"""The include check of a lab's kernels.cu: what the grader refuses before
it compiles a submission (trees.py), and what the student's loop warns of
(progress.py), so that a student hears it before grading does.

An include may not reach outside the lab's tree (an absolute path, `..`, a
device file, a computed include, a quoted include of anything but the lab's
and common/'s headers, #include_next, #embed, the assembler's .incbin and
.include), nor name a library that does the work the labs teach. The
grader's compile also runs without those libraries in its view
(library_binds).
"""
import glob
import os
import re
import shutil

# The libraries that do what the labs teach: CUB's and Thrust's algorithms,
# and cooperative groups' reduce and scan. A lab's code writes these itself
# (a reduction by cub::DeviceReduce scores nothing it earned). The include
# check refuses them by name; the compile's view does not hold them, so a
# header that pulls one in, or a path the check does not know, fails too.
LIBRARY_FOLDERS = ("cub", "thrust")
LIBRARY_HEADERS = ("reduce.h", "scan.h", "coalesced_reduce.h", "coalesced_scan.h")
LIBRARY_REFUSED = ("does the work the labs teach (CUB, Thrust and cooperative groups' reduce "
                   "and scan are not available to a lab's code: write the algorithm yourself)")


def library_header(name):
    """True for an include of one of the libraries above, however spelled
    (<cub/cub.cuh>, <cccl/thrust/reduce.h>, <cooperative_groups/reduce.h>)."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    return (any(p in LIBRARY_FOLDERS for p in parts)
            or ("cooperative_groups" in parts[:-1] and parts[-1] in LIBRARY_HEADERS))


def include_problems(text, allowed):
    """Includes that reach outside the lab's tree, one line each: an absolute
    path, `..`, a device file, a computed (macro) include, a quoted include
    of a file that is neither the lab's nor common/'s, a library that does
    the lab's work (LIBRARY_FOLDERS, LIBRARY_HEADERS), #include_next,
    #embed, or the assembler's .incbin and .include. Other system headers
    (<...> without a path) are fine."""
    problems = []
    joined = re.sub(r"\\\r?\n", "", text)
    # Comments are whitespace to the preprocessor (#/**/include is an
    # include): blank them, keeping the line count.
    joined = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n") + " ", joined, flags=re.S)
    joined = re.sub(r"//[^\n]*", "", joined)
    for number, line in enumerate(joined.splitlines(), 1):
        # "#", and its digraph and trigraph spellings.
        m = re.match(r"\s*(?:#|%:|\?\?=)\s*(include_next|include|import|embed)\b\s*(.*)", line)
        if m:
            directive, rest = m.group(1), m.group(2).strip()
            target = re.match(r'"([^"]*)"|<([^>]*)>', rest)
            if directive != "include":
                problems.append(f"line {number}: #{directive} is not allowed in a lab")
            elif not target:
                problems.append(f"line {number}: a computed #include ({rest[:60]}): name the header")
            else:
                name = target.group(1) if target.group(1) is not None else target.group(2)
                if name.startswith("/") or ".." in name.split("/") or "\\" in name:
                    problems.append(f"line {number}: #include {rest[:80]} reaches outside the lab's "
                                    "tree (an absolute path or ..)")
                elif library_header(name):
                    problems.append(f"line {number}: #include {rest[:80]} {LIBRARY_REFUSED}")
                elif target.group(1) is not None and name not in allowed:
                    problems.append(f"line {number}: #include \"{name}\": only the lab's and "
                                    f"common/'s headers can be included with quotes "
                                    f"({', '.join(sorted(allowed))})")
        # The assembler's own includes: .incbin copies a file into the object,
        # .include assembles one (its errors quote the file's lines).
        directive = re.search(r"\.(incbin|include)\b", line, re.I)
        if directive:
            problems.append(f"line {number}: .{directive.group(1)} (reading a file into the object) "
                            "is not allowed")
    return problems


def lab_headers(root, folder):
    """Headers a lab's kernels.cu may include with quotes: the lab's own and
    common/'s, by name (name -> path under root)."""
    names = {}
    for top in (os.path.join(root, "labs", folder), os.path.join(root, "common")):
        for entry in sorted(os.listdir(top)):
            if entry.endswith((".h", ".cuh")):
                names.setdefault(entry, os.path.join(top, entry))
    return names


def source_problems(root, folder):
    """include_problems of the lab's kernels.cu under root: what the
    grader's include check would refuse (the student's loop warns of it)."""
    path = os.path.join(root, "labs", folder, "kernels.cu")
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    return include_problems(text, set(lab_headers(root, folder)))


def library_paths():
    """The folders and files of the libraries above (LIBRARY_FOLDERS,
    LIBRARY_HEADERS) on this machine, as real paths: the CUDA toolkit's
    (include/cccl/cub, ...) and the system's (/usr/include/thrust from a
    distribution's package). Returns (folders, files)."""
    roots = ["/usr/include", "/usr/local/include"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        toolkit = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        roots += [os.path.join(toolkit, "include")]
        roots += glob.glob(os.path.join(toolkit, "targets", "*", "include"))
    folders, files = set(), set()
    for root in roots:
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
