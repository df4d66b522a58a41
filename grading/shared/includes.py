"""The include check of a lab's kernels.cu's text: what the grader refuses
before it compiles a submission (grader/trees.py), and what the student's
loop warns of (student/testruns.py), so that a student hears it before
grading does.

include_problems reads the file as the preprocessor does (preprocessing.py:
a byte-order mark, NUL bytes, CR and CRLF line ends, line splices, comments,
string and raw string literals, digraphs and trigraphs) and refuses an
include that reaches outside the lab's tree (an absolute path, `..`, a
device file, a computed include, a quoted include of anything but the lab's
and common/'s headers, #include_next, #embed, the assembler's .incbin and
.include, also in adjacent string literals the compiler joins, #pragma GCC
dependency and its _Pragma spelling), or a library that does the work the
labs teach. The grader then asks the compiler itself which files the source
includes (grader/compilerview.py).
"""
import os
import re

from .preprocessing import HASH, Lexer, logical_lines

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


# A directive that names a file, or a pragma (HASH: "#" or its digraph and
# trigraph spellings).
DIRECTIVE = re.compile(HASH + r"(include_next|include|import|embed|pragma)\b\s*(.*)")
# The assembler's own includes: .incbin copies a file into the object,
# .include assembles one (its errors quote the file's lines).
ASSEMBLER_READS = re.compile(r"\.(incbin|include)\b", re.I)
# The same in code (a macro that stringizes it), not after a name (x.include()).
ASSEMBLER_READS_IN_CODE = re.compile(r"(?<![\w)\]])\.(incbin|include)\b", re.I)
# Source files: <kernels.cu> is the file itself (the lab's folder is on the
# include path), twice per level an include that never ends.
SOURCE_ENDS = (".cu", ".c", ".cc", ".cpp", ".cxx")
# #pragma GCC dependency opens the file it names.
PRAGMA_READS = re.compile(r"\s*GCC\s+dependency\b")


def include_problems(text, allowed):
    """Includes that reach outside the lab's tree, one line each: an absolute
    path, `..`, a device file, a computed (macro) include, a quoted include
    of a file that is neither the lab's nor common/'s, a library that does
    the lab's work (LIBRARY_FOLDERS, LIBRARY_HEADERS), #include_next,
    #embed, the assembler's .incbin and .include (in the code, or in string
    literals once the compiler has joined the adjacent ones), and #pragma
    GCC dependency (or its _Pragma). Other system headers (<...> without a
    path) are fine. text is read as the preprocessor reads it
    (logical_lines, Lexer)."""
    code, literals = Lexer("\n".join(logical_lines(text))).run()
    problems, assembler = [], {}
    for number, line in enumerate(code, 1):
        problems += _directive_problems(number, line, allowed)
        directive = ASSEMBLER_READS_IN_CODE.search(line)
        if directive:
            assembler.setdefault(number, directive.group(1))
    for number, pieces, in_pragma in literals:
        body = "".join(pieces)
        if in_pragma:
            problems += _pragma_problems(number, body.replace('\\"', '"').replace("\\\\", "\\"))
        directive = ASSEMBLER_READS.search(body)
        if directive:
            assembler.setdefault(number, directive.group(1))
    problems += [f"line {number}: .{directive} (reading a file into the object) is not allowed"
                 for number, directive in sorted(assembler.items())]
    return problems


def _directive_problems(number, line, allowed):
    m = DIRECTIVE.match(line) if "#" in line or "%:" in line or "??=" in line else None
    if not m:
        return []
    directive, rest = m.group(1), m.group(2).strip()
    if directive == "pragma":
        return _pragma_problems(number, rest)
    if directive != "include":
        return [f"line {number}: #{directive} is not allowed in a lab"]
    target = re.match(r'"([^"]*)"|<([^>]*)>', rest)
    if not target:
        return [f"line {number}: a computed #include ({rest[:60]}): name the header"]
    name = target.group(1) if target.group(1) is not None else target.group(2)
    if name.startswith("/") or ".." in name.split("/") or "\\" in name:
        return [f"line {number}: #include {rest[:80]} reaches outside the lab's tree "
                "(an absolute path or ..)"]
    if library_header(name):
        return [f"line {number}: #include {rest[:80]} {LIBRARY_REFUSED}"]
    if name.endswith(SOURCE_ENDS):
        return [f"line {number}: #include {rest[:80]}: a source file, not a header (a lab's "
                "kernels.cu, the tests or the solutions are not included)"]
    if target.group(1) is not None and name not in allowed:
        return [f"line {number}: #include \"{name}\": only the lab's and common/'s headers can "
                f"be included with quotes ({', '.join(sorted(allowed))})"]
    return []


def _pragma_problems(number, text):
    if PRAGMA_READS.match(text):
        return [f"line {number}: #pragma GCC dependency (reading a file) is not allowed in a lab"]
    return []


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
