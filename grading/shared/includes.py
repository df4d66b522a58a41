"""The include check of a lab's kernels.cu: what the grader refuses before
it compiles a submission (trees.py), and what the student's loop warns of
(progress.py), so that a student hears it before grading does.

Two passes. The text check (include_problems) reads the file as the
preprocessor does (a byte-order mark, NUL bytes, CR and CRLF line ends,
line splices, comments, string and raw string literals, digraphs and
trigraphs) and refuses an include that reaches outside the lab's tree (an
absolute path, `..`, a device file, a computed include, a quoted include of
anything but the lab's and common/'s headers, #include_next, #embed, the
assembler's .incbin and .include, also in adjacent string literals the
compiler joins, #pragma GCC dependency and its _Pragma spelling), or a
library that does the work the labs teach. Then the grader asks the
compiler itself which files the source includes (its dependency output,
`nvcc -M`, in the compile's sandbox) and refuses any file outside the lab's
and common/'s headers and the system's and toolkit's include folders
(included_file_problems): whatever the spelling, what the compiler reads is
what is judged. The compile's view holds no device file but /dev/null and
none of the refused libraries (library_binds), so a spelling that both
passes miss still fails at once.
"""
import functools
import glob
import os
import re
import shutil
import subprocess

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


# A line splice: a backslash (or its trigraph ??/), blanks that GCC allows
# with a warning, then the end of the line.
SPLICE = re.compile(r"(?:\\|\?\?/)[ \t\f\v]*$")
# A directive's "#", and its digraph and trigraph spellings.
HASH = r"[ \t\f\v]*(?:#|%:|\?\?=)[ \t\f\v]*"
HEADER_NAME_NEXT = re.compile(HASH + r"(?:include_next|include|import|embed)[ \t\f\v]*$")
DIRECTIVE = re.compile(HASH + r"(include_next|include|import|embed|pragma)\b\s*(.*)")
# One token of the lexer (_Lexer), a run where the kind allows: a header
# name is read only after #include, and never on a line over HEADER_LINE
# characters (the check of each "<" stays short whatever the file).
TOKEN = re.compile(r"""(?P<newline>\n)|(?P<blank>[ \t\f\v]+)|(?P<line_comment>//[^\n]*)
    |(?P<block_comment>/\*)
    |(?P<number>\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*)
    |(?P<word>[A-Za-z_$\x80-\U0010ffff][A-Za-z0-9_$\x80-\U0010ffff]*)
    |(?P<quote>["'])|(?P<other>[^\s"'/.A-Za-z0-9_$\x80-\U0010ffff]+|.)""", re.X | re.S)
QUOTED = {'"': re.compile(r'"(?:[^"\\\n]|\\.)*"?'), "'": re.compile(r"'(?:[^'\\\n]|\\.)*'?"),
          "<": re.compile(r"<[^>\n]*>?")}
HEADER_LINE = 300
RAW_PREFIXES = ("R", "u8R", "uR", "UR", "LR")
STRING_PREFIXES = ("u8", "u", "U", "L")
RAW_START = re.compile(r'"([^ ()\\\t\v\f\n"]{0,16})\(')
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


def logical_lines(text):
    """text as the preprocessor reads it, as a list of lines: no byte-order
    mark, NUL bytes as blanks (GCC ignores them with a warning), CR and CRLF
    line ends as line ends, and each line splice joined; the lines a splice
    joined come back as empty lines after the joined one, so that a line's
    number stays its number in the file."""
    text = text.replace("\ufeff", " ").replace("\0", " ").replace("\r\n", "\n").replace("\r", "\n")
    lines, joined, spliced = [], "", 0
    for line in text.split("\n"):
        splice = SPLICE.search(line) if line.rstrip(" \t\f\v").endswith(("\\", "??/")) else None
        if splice:
            joined += line[:splice.start()]
            spliced += 1
            continue
        lines.append(joined + line)
        lines += [""] * spliced
        joined, spliced = "", 0
    if spliced:
        lines.append(joined)
    return lines


class _Lexer:
    """The code of a file without its comments (each one a blank, the line
    ends of a block comment kept) and without the bodies of its raw string
    literals (their line ends kept), so that the directives are the lines
    that start with "#"; and its string literals, the adjacent ones (which
    the compiler joins into one) joined, each with the line it starts on and
    whether it is the argument of _Pragma. Linear in the file's length."""

    def __init__(self, text):
        self.text, self.at, self.line = text, 0, 1
        self.code = []                      # the finished lines
        self.pieces, self.width = [], 0     # the line being read
        self.literals = []                  # (line, [pieces of the body], in _Pragma)
        self.joinable = False               # only blanks since the last literal
        self.last = ("", "")                # the last two tokens that are not blanks

    def run(self):
        text = self.text
        while self.at < len(text):
            if text[self.at] == "<" and self._after_include():   # a header name
                self._code(QUOTED["<"].match(text, self.at).group(0))
                continue
            token = TOKEN.match(text, self.at)
            kind, value = token.lastgroup, token.group(0)
            if kind == "newline":
                self._newline()
                self.at += 1
            elif kind == "line_comment":
                self._code(" ", width=len(value))
            elif kind == "block_comment":
                end = text.find("*/", self.at + 2)
                end = len(text) if end < 0 else end + 2
                for _ in range(text.count("\n", self.at, end)):
                    self._newline()
                self._code(" ", width=end - self.at)
            elif kind == "quote":
                self._quoted(value, "")
            elif kind == "word" and value in RAW_PREFIXES and RAW_START.match(text, token.end()):
                self.at = token.end()
                self._raw(value)
            elif kind == "word" and value in STRING_PREFIXES and text[token.end():token.end() + 1] in ('"', "'"):
                self.at = token.end()
                self._quoted(text[self.at], value)
            else:
                self._code(value)
        self._newline()
        return self.code, self.literals

    def _after_include(self):
        return self.width < HEADER_LINE and HEADER_NAME_NEXT.match("".join(self.pieces))

    def _newline(self):
        self.code.append("".join(self.pieces))
        self.pieces, self.width = [], 0
        self.line += 1

    def _code(self, token, width=None):
        """Adds token to the line and moves past width characters of the
        text (the token's own length unless it stands for a comment)."""
        self.pieces.append(token)
        self.width += len(token)
        self.at += len(token) if width is None else width
        if token.strip():
            self.joinable = False
            self.last = (self.last[1], token)

    def _quoted(self, quote, prefix):
        opening = self._literal_start()
        token = QUOTED[quote].match(self.text, self.at).group(0)
        self._code(prefix + token, width=len(token))
        if quote == '"':
            closed = len(token) > 1 and token.endswith('"')
            self._literal(token[1:-1] if closed else token[1:], *opening)

    def _raw(self, prefix):
        opening = self._literal_start()
        delimiter = RAW_START.match(self.text, self.at).group(1)
        close = ")" + delimiter + '"'
        start = self.at + len(delimiter) + 2
        end = self.text.find(close, start)
        end = len(self.text) if end < 0 else end
        body = self.text[start:end]
        self._code(f'{prefix}"{delimiter}(', width=0)
        for _ in range(body.count("\n")):
            self._newline()
        self._code(close, width=0)
        self.at = end + len(close)
        self._literal(body, *opening)

    def _literal_start(self):
        """What a literal starting here needs to know before it is read: its
        line, whether it follows "_Pragma (", whether it joins the last one."""
        return self.line, self.last == ("_Pragma", "("), self.joinable

    def _literal(self, body, line, in_pragma, joins):
        """A string literal's body: joined to the last one when only blanks
        and comments stand between them, as the compiler joins them."""
        if joins and self.literals:
            self.literals[-1][1].append(body)
        else:
            self.literals.append((line, [body], in_pragma))
        self.joinable = True


def include_problems(text, allowed):
    """Includes that reach outside the lab's tree, one line each: an absolute
    path, `..`, a device file, a computed (macro) include, a quoted include
    of a file that is neither the lab's nor common/'s, a library that does
    the lab's work (LIBRARY_FOLDERS, LIBRARY_HEADERS), #include_next,
    #embed, the assembler's .incbin and .include (in the code, or in string
    literals once the compiler has joined the adjacent ones), and #pragma
    GCC dependency (or its _Pragma). Other system headers (<...> without a
    path) are fine. text is read as the preprocessor reads it
    (logical_lines, _Lexer)."""
    code, literals = _Lexer("\n".join(logical_lines(text))).run()
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


# ------------------------------------------------- what the compiler reads
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
