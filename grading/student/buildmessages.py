"""A failed build's output as a student needs it (status, watch, run): the
compiler's and linker's own messages without ninja's and the commands'
lines, each path rewritten relative to where the student stands in the form
editors and terminals jump to (`labs/00-vector-add/kernels.cu:16:`; ninja
runs in build/, so nvcc says `../labs/00-vector-add/kernels.cu(16):`), the
first error first, and a missing entry point said once, as what the
student's kernels.cu must define, with its declaration from the lab's lab.h
(the linker says `undefined reference to 'vector_add'` once per caller).
"""
import os
import re
from pathlib import Path

from shared import labs

# A path the compiler or a test printed, where it says something
# ("path(16): error", "path:16:5: error", "In file included from path:3:",
# "path: In function", a test's "wb_rules.c:525: path:"): with a folder in
# it, which makes it a path relative to build/ or an absolute one.
LOCATION = re.compile(r"(?<![\w./-])(?P<path>[\w.-]*/[\w./-]*\.(?:cu|cuh|c|h|ii|cpp|hpp))"
                      r"(?:\((?P<nvcc_line>\d+)\)|:(?P<line>\d+)(?::(?P<column>\d+))?)?(?=:)")
UNDEFINED = re.compile(r"undefined reference to [`'](?P<symbol>[\w:]+)")
# What says nothing the lines around it do not: where the linker was, its
# exit status, nvcc's count of errors, ninja's own lines.
NOISE = re.compile(r"^(?:/usr/bin/ld: [^ ]+\.o: in function|collect2: error: ld returned"
                   r"|\d+ errors? detected in the compilation|ninja: |\[\d+/\d+\] )")


def declarations(folder):
    """{name: declaration} of the functions labs/<folder>/lab.h declares:
    the entry points the tests call and kernels.cu defines."""
    try:
        text = (Path(labs.ROOT) / "labs" / folder / "lab.h").read_text()
    except OSError:
        return {}
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    text = re.sub(r"^\s*#[^\n]*", "", text, flags=re.M)
    found = re.finditer(r"([A-Za-z_][\w\s*]*?\b([A-Za-z_]\w*)\s*\([^;{}()]*\))\s*;", text)
    return {m.group(2): " ".join(m.group(1).split()) for m in found}


def students_path(path):
    """A path the compiler printed (relative to the build folder), relative
    to the current directory, or absolute where that is shorter."""
    absolute = os.path.normpath(os.path.join(labs.BUILD, path))
    relative = os.path.relpath(absolute, os.getcwd())
    return relative if len(relative) <= len(absolute) else absolute


def rewrite(line):
    """One message line with its paths in the student's `path:line:` form."""
    def students(match):
        where = students_path(match["path"])
        number = match["nvcc_line"] or match["line"]
        if number:
            where += f":{number}" + (f":{match['column']}" if match["column"] else "")
        return where
    return LOCATION.sub(students, line)


def failed_steps(output):
    """The output of each step ninja reports as FAILED, without its
    "FAILED:" line and the command line under it."""
    blocks = re.split(r"^(?=FAILED: |\[\d+/\d+\] |ninja: build stopped)", output, flags=re.M)
    steps = [b.splitlines()[2:] for b in blocks if b.startswith("FAILED: ")]
    return steps or [output.splitlines()]


def for_student(output, folder, limit=30):
    """The lines to show of a failed build of labs/<folder>'s programs."""
    entry_points = declarations(folder)
    kernels = students_path(os.path.join(labs.ROOT, "labs", folder, "kernels.cu"))
    lines, missing = [], []
    for step in failed_steps(output):
        for line in step:
            undefined = UNDEFINED.search(line)
            if undefined:
                symbol = undefined["symbol"]
                if symbol not in missing:
                    missing.append(symbol)
                    header = students_path(os.path.join(labs.ROOT, "labs", folder, "lab.h"))
                    lines.append(f"`{kernels}` must define `{entry_points[symbol]}` (declared in "
                                 f"{header}; the tests call it)" if symbol in entry_points
                                 else f"undefined reference to `{symbol}`: no file of the "
                                 "program defines it")
            elif line.strip() and not NOISE.match(line):
                lines.append(rewrite(line))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines: the first error is the "
                                 "one to fix first)"]
    return lines or output.strip().splitlines()[-15:]
