"""Mutants of a reference: every classic bug of issue 16's list, on every
line where it applies, one mutant each (tests/planted_bugs.py sweep runs
them). The planted bugs (tests/planted/*.toml) are the chosen, named few;
this is the mechanical many, to measure how much of each kind the tests see.

Kinds, as in tests/planted/README.md: barrier, syncwarp and fence dropped; an
atomic made a plain read-modify-write; volatile lost; bounds (< made <=, <=
made <, >= made >, > made >=, one condition of a guard dropped); grid-stride
(stepping by blockDim.x); accumulate (+= made =); index (blockIdx made 0);
host-sync (a synchronisation or a stream wait dropped); memory-order
(acquire, release, acq_rel or seq_cst made relaxed).
"""
import re

# A plain read-modify-write with an atomic's signature and return value:
# what a student writes who does not know why the atomic is there. Put at
# the top of every atomic mutant (the names cannot clash with the lab's).
PLAIN_ATOMICS = r"""
template <class T, class U> __device__ T mutant_plain_Add(T *p, U v) { T o = *p; *p = o + v; return o; }
template <class T, class U> __device__ T mutant_plain_Sub(T *p, U v) { T o = *p; *p = o - v; return o; }
template <class T, class U> __device__ T mutant_plain_Exch(T *p, U v) { T o = *p; *p = v; return o; }
template <class T, class U> __device__ T mutant_plain_Min(T *p, U v) { T o = *p; *p = v < o ? v : o; return o; }
template <class T, class U> __device__ T mutant_plain_Max(T *p, U v) { T o = *p; *p = v > o ? v : o; return o; }
template <class T, class U> __device__ T mutant_plain_Or(T *p, U v) { T o = *p; *p = o | v; return o; }
template <class T, class U> __device__ T mutant_plain_And(T *p, U v) { T o = *p; *p = o & v; return o; }
template <class T, class U> __device__ T mutant_plain_Xor(T *p, U v) { T o = *p; *p = o ^ v; return o; }
template <class T, class U> __device__ T mutant_plain_Inc(T *p, U v) { T o = *p; *p = o >= v ? 0 : o + 1; return o; }
template <class T, class U> __device__ T mutant_plain_Dec(T *p, U v) { T o = *p; *p = (o == 0 || o > v) ? v : o - 1; return o; }
template <class T, class U, class V> __device__ T mutant_plain_CAS(T *p, U c, V v) { T o = *p; if (o == c) *p = v; return o; }
"""

_STATEMENT = r"(?<![\w.>])"
OPERATORS = [
    # kind, name, pattern, replacement
    ("barrier", "drop-syncthreads", _STATEMENT + r"__syncthreads\(\);", ";"),
    ("barrier", "drop-group-sync", r"\b\w+\.sync\(\);", ";"),
    ("syncwarp", "drop-syncwarp", _STATEMENT + r"__syncwarp\([^;]*\);", ";"),
    ("fence", "drop-fence", _STATEMENT + r"__threadfence(_block|_system)?\(\);", ";"),
    ("atomic", "plain-rmw", r"\batomic(Add|Sub|Exch|Min|Max|Or|And|Xor|Inc|Dec|CAS)(_block|_system)?\(",
     r"mutant_plain_\1("),
    ("volatile", "drop-volatile", r"\bvolatile\s+", ""),
    ("bounds", "lt-to-le", r"(?<=[\w\])]) < (?=[\w(*&!-])", " <= "),
    ("bounds", "le-to-lt", r"(?<=[\w\])]) <= (?=[\w(*&!-])", " < "),
    ("bounds", "ge-to-gt", r"(?<=[\w\])]) >= (?=[\w(*&!-])", " > "),
    ("bounds", "gt-to-ge", r"(?<=[\w\])]) > (?=[\w(*&!-])", " >= "),
    ("grid-stride", "stride-blockdim", r"\bgridDim\.x \* blockDim\.x\b|\bblockDim\.x \* gridDim\.x\b",
     "blockDim.x"),
    ("accumulate", "plus-eq-to-eq", r"(?<=[\w\])]) \+= ", " = "),
    ("index", "no-blockidx", r"\bblockIdx\.[xyz]\b", "0"),
    ("host-sync", "drop-sync",
     r"(CUDA_CHECK\()?\bcuda(DeviceSynchronize|StreamSynchronize|EventSynchronize|StreamWaitEvent)"
     r"\([^;]*\)\)?;", ";"),
    ("memory-order", "relaxed", r"\bmemory_order_(acquire|release|acq_rel|seq_cst)\b",
     "memory_order_relaxed"),
]
_COMPARISON = re.compile(r"(?<![<>-])(<|>|<=|>=)(?![<>])")


def blank_comments(text):
    """The text with comments and string literals turned into spaces (lines
    and offsets kept), so that no mutant lands in them."""
    out = list(text)
    i = 0
    while i < len(text):
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = len(text) if end < 0 else end + 2
        elif text[i] == '"' and not text.startswith('#include', text.rfind("\n", 0, i) + 1):
            end = i + 1
            while end < len(text) and text[end] not in '"\n':
                end += 2 if text[end] == "\\" else 1
            end += 1
        else:
            i += 1
            continue
        for k in range(i, min(end, len(text))):
            if out[k] != "\n":
                out[k] = " "
        i = end
    return "".join(out)


def _closing(text, open_at):
    depth = 0
    for k in range(open_at, len(text)):
        depth += (text[k] == "(") - (text[k] == ")")
        if depth == 0:
            return k
    return -1


def _split_top(cond, op):
    """cond's parts at op (&& or ||) outside parentheses, as (start, end)."""
    parts, depth, start, k = [], 0, 0, 0
    while k < len(cond):
        depth += (cond[k] == "(") - (cond[k] == ")")
        if depth == 0 and cond.startswith(op, k):
            parts.append((start, k))
            start = k + len(op)
            k += len(op)
            continue
        k += 1
    parts.append((start, len(cond)))
    return parts


def dropped_guards(text, code):
    """A comparison dropped from an if or while: the whole condition (made
    true, or false where the if leaves: return, continue, break), or one of
    its && or || parts. Yields (start, end, replacement)."""
    for m in re.finditer(r"\b(if|while) \(", code):
        open_at = m.end() - 1
        close = _closing(code, open_at)
        if close < 0:
            continue
        cond = code[open_at + 1:close]
        if not _COMPARISON.search(cond.replace("->", "")):
            continue
        after = code[close + 1:close + 40].lstrip()
        leaves = re.match(r"(return|continue|break)\b", after)
        yield open_at + 1, close, "false" if leaves else "true"
        for op in ("&&", "||"):
            parts = _split_top(cond, op)
            if len(parts) < 2:
                continue
            for i, (s, e) in enumerate(parts):
                if not _COMPARISON.search(cond[s:e].replace("->", "")):
                    continue
                rest = [cond[a:b].strip() for j, (a, b) in enumerate(parts) if j != i]
                yield open_at + 1, close, f" {op} ".join(rest)


def mutants(text):
    """Every mutant of text: dicts with kind, name, line, text (the whole
    mutated source), before and after (the line, changed)."""
    code = blank_comments(text)
    found = []

    def add(kind, name, start, end, replacement):
        new = text[:start] + replacement + text[end:]
        if new == text:
            return
        line = text.count("\n", 0, start) + 1
        if kind == "atomic":
            new = _after_includes(new, PLAIN_ATOMICS)
        first = text.rfind("\n", 0, start) + 1
        last = text.find("\n", end)
        found.append({"kind": kind, "name": f"L{line}-{name}", "line": line,
                      "before": text[first:last].strip(),
                      "after": (text[first:start] + replacement + text[end:last]).strip(),
                      "text": new})

    for kind, name, pattern, replacement in OPERATORS:
        for m in re.finditer(pattern, code):
            add(kind, name, m.start(), m.end(), m.expand(replacement))
    for start, end, replacement in dropped_guards(text, code):
        add("bounds", "drop-guard", start, end, replacement)
    names = {}
    for mutant in found:   # L12-lt-to-le, L12-lt-to-le-2, ...
        names[mutant["name"]] = names.get(mutant["name"], 0) + 1
        if names[mutant["name"]] > 1:
            mutant["name"] += f"-{names[mutant['name']]}"
    return sorted(found, key=lambda m: m["line"])


def _after_includes(text, block):
    last = 0
    for m in re.finditer(r"^#include .*$", text, re.M):
        last = m.end()
    return text[:last] + "\n" + block + text[last:]
