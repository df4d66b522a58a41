"""What an object holds, read with nm, readelf and objdump (each under
TOOL_WALL_S: TooSlow past it), and the names a lab's test process knows
(the reference test binary's and its shared libraries', through ldd): what
the static check (objcheck.py) decides on.
"""
import functools
import os
import re
import subprocess
import threading

TOOL_WALL_S = 120         # each of nm, readelf and objdump
SYSCALL = re.compile(r"\s(syscall|sysenter|int\s+\$0x80)\b")


class TooSlow(Exception):
    """A tool of the check ran past TOOL_WALL_S."""


def _lines(argv):
    """The lines a tool prints, read as they come; TooSlow when it runs
    past TOOL_WALL_S."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            errors="replace")
    stopped = threading.Event()

    def stop():
        stopped.set()
        proc.kill()

    timer = threading.Timer(TOOL_WALL_S, stop)
    timer.start()
    try:
        yield from proc.stdout
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()
        proc.stdout.close()
    if stopped.is_set():
        raise TooSlow(f"{argv[0]} ran past {TOOL_WALL_S} s on it")


def _nm(obj, *flags):
    symbols = {}
    for line in _lines(["nm", *flags, obj]):
        parts = line.split()
        if len(parts) >= 2:
            kind, name = parts[-2], parts[-1]
            symbols[name.split("@")[0]] = kind
    return symbols


def imports(obj):
    return set(_nm(obj, "-u"))


def definitions(obj):
    """Global definitions: name -> nm's kind letter (T strong, W weak, i
    indirect function, ...)."""
    return _nm(obj, "-g", "--defined-only")


def sections(obj):
    return set(re.findall(r"\]\s+(\S+)", "".join(_lines(["readelf", "-S", "-W", obj])))) - {"NULL"}


class Layout:
    """What readelf says of an object: its symbols (name, section index,
    value, binding), its COMDAT groups' sections, and the targets of its
    .init_array entries."""

    def __init__(self, obj):
        self.symbols = []     # (name, section index, value, kind, binding)
        self.in_group = set()  # section indices of COMDAT groups' members
        self.init_targets = []  # (section name or symbol, addend)
        table, section = None, None
        for line in _lines(["readelf", "-W", "-s", "-g", "-r", obj]):
            if line.startswith(("Symbol table", "COMDAT group", "Relocation section")):
                table = line.split()[0]
                section = line.split("'")[1] if table == "Relocation" else None
                continue
            parts = line.split()
            if table == "Symbol" and len(parts) >= 8 and parts[0].endswith(":") and parts[6].isdigit():
                self.symbols.append((parts[7].split("@")[0], int(parts[6]), int(parts[1], 16),
                                     parts[3], parts[4]))
            elif table == "COMDAT" and re.match(r"\s*\[\s*\d+\]", line):
                self.in_group.add(int(re.match(r"\s*\[\s*(\d+)\]", line).group(1)))
            elif table == "Relocation" and section.startswith(".rela.init_array") and len(parts) >= 5 \
                    and re.fullmatch(r"[0-9a-f]{16}", parts[0]):
                target = " ".join(parts[4:])
                name, _, addend = target.partition(" + ")
                self.init_targets.append((name, int(addend or "0", 16)))
        self.section_names = {}
        for line in _lines(["readelf", "-S", "-W", obj]):
            found = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)", line)
            if found and found.group(1) != "0":
                self.section_names[found.group(2)] = int(found.group(1))

    def function_at(self, target):
        """The function an .init_array entry names: the symbol itself, or
        the function at that offset of the section it names."""
        name, addend = target
        index = self.section_names.get(name)
        if index is None:
            return name
        for symbol, section, value, kind, _ in self.symbols:
            if section == index and value == addend and kind == "FUNC":
                return symbol
        return f"{name}+{addend:#x}"

    def comdat_weak(self):
        """Names of the weak or unique global definitions in COMDAT groups:
        the compiler's inline copies of header code."""
        return {name for name, section, _, _, binding in self.symbols
                if section in self.in_group and binding in ("WEAK", "UNIQUE")}


@functools.lru_cache(maxsize=None)
def process_names(reference):
    """Every global name the lab's test process binds: the reference test
    binary's own (the test, the workbook's libraries, the start-up files)
    and those, defined or imported, of each shared library it loads (libc,
    libstdc++, the CUDA runtime, Criterion and theirs). The binary is
    Meson's, beside its object folder (NAME.p/kernels.cu.o); None where it
    is not there."""
    folder = os.path.dirname(reference)
    binary = folder[:-len(".p")]
    if not folder.endswith(".p") or not os.path.isfile(binary):
        return None
    names = set(_nm(binary, "-g"))
    for line in _lines(["ldd", binary]):
        library = re.search(r"=>\s+(/\S+)", line)
        if library:
            names |= set(_nm(library.group(1), "-D"))
    return frozenset(names)


@functools.lru_cache(maxsize=None)
def libstdcxx_exports():
    """The C++ names libstdc++ exports (what it binds to, inside and out);
    empty where g++ does not say where libstdc++.so is."""
    try:
        path = subprocess.run(["g++", "-print-file-name=libstdc++.so"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    if not os.path.isabs(path):
        return frozenset()
    return frozenset(name for name in _nm(os.path.realpath(path), "-D", "--defined-only")
                     if name.startswith("_Z"))


def makes_system_calls(obj):
    """Whether the object's code holds a system call instruction (objdump's
    disassembly, read line by line: it is many times the code's size)."""
    return any(SYSCALL.search(line) for line in _lines(["objdump", "-d", "--no-show-raw-insn", obj]))
