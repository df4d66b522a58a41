"""The static check of the student's object (kernels.cu.o): it refuses what
changes how the grading itself behaves, never a style of writing code.

No list of allowed calls can make the submission's word true: its code can
call whatever the test binary imports through the binary's own tables
without naming it. The grader's own clock, the sealed recording, the judge's
process and the sandbox are what hold against what the code does when it
runs. What this check refuses is what a symbol table can show and changes
the process the tests run in before or around any test (grading/README.md,
"Threat model", says why each and what is out of reach):

- interposition: a definition, strong or weak, that the test, Criterion,
  libc, libstdc++, libgcc or the CUDA runtime would bind to: a C-linkage
  symbol, other than the lab's entry points, that the test process already
  knows (the reference test binary's symbols and those of the shared
  libraries it loads: memcmp, __fprintf_chk, cudaMemGetInfo, wb_rel_error,
  main) or that is the implementation's (a leading underscore: __cxa_*,
  _Unwind_*, the launch counter's __wrap_*), while a global variable or an
  extern "C" helper of a name of its own binds to nothing and passes; a
  global operator new or delete (_Znwm, _ZdlPv, their array, nothrow and
  aligned forms: libstdc++ allocates through them); a symbol libstdc++ exports or one of namespace std, __gnu_cxx or
  __cxxabiv1, unless it is the compiler's own inline copy of header code (a
  weak definition in a COMDAT group, as `std::endl` makes of
  `std::ctype<char>::do_widen`); a GNU indirect function (its resolver runs
  while the process is loaded);
- code before main or after it that no test sees: a function marked as a
  constructor or destructor (.init_array entries other than the compiler's
  own initialisers: nvcc's CUDA registration and g++'s `_GLOBAL__sub_I_`
  initialisation of namespace-scope objects, which honest C++ needs for a
  global std::string or <iostream>), .fini_array, .preinit_array, .ctors,
  .dtors, .init, .fini;
- sections a test runner or the linker's section lists hook: a section named
  like a C identifier (the linker makes __start_NAME and __stop_NAME for it,
  which is how Criterion finds its tests and hooks), unless the reference's
  object has it too;
- calls whose mere presence changes the grading: the test's own instruments
  (Criterion, the recording functions of common/wb_test.h that workbook.h
  does not offer to lab code, wb_set_error_handler, the launch counter's
  __wrap_ and __real_ names), a change of the environment through which the
  grader instructs the test process (setenv, unsetenv, putenv, clearenv,
  environ: WB_RECORD, WB_JUDGE, WB_STRICT_TIMING, WB_SEED), and the dynamic
  loader (dlopen, dlmopen, dlsym, dlvsym: code this check never saw, or any
  function of the process bound by name);
- system call instructions (code that calls the kernel directly);
- a size that lab code makes: the labs' objects, device code for seven
  architectures included, are under 1 MiB; one of hundreds of megabytes
  (an assembler `.fill`, a huge initialised array) would only make the
  check's tools run for minutes and fill the grader's memory.
Everything else is accepted: exit and abort in error checks, exceptions,
<chrono>, <sstream>, <iostream>, cudaMemcpyToSymbol, the occupancy API,
fork or fopen (the sandbox and the judge hold against what they do).
Names are compared without their version suffix (memcmp@GLIBC_2.2.5).
"""
import functools
import os
import re
import subprocess
import threading

from shared import labs

OBJECT_LIMIT = 64 << 20   # bytes
TOOL_WALL_S = 120         # each of nm, readelf and objdump
COMMON = os.path.join(labs.ROOT, "common")

# The global operator new and delete, every form: libstdc++ and everything
# in the process allocate through them. The standard forbids an inline
# replacement, so the compiler never makes a copy of its own.
NEW_DELETE = re.compile(r"_Z(nw|na|dl|da)")
# The C++ runtime's namespaces (std, its abbreviations Sa Sb Ss Si So Sd,
# __gnu_cxx, __cxxabiv1), also in typeinfo, vtables, guards and local statics.
RUNTIME_NAMESPACE = re.compile(r"_Z(T[ISVT]|GV|Z)?N?[KVRO]*(St|S[abiods]|9__gnu_cxx|10__cxxabiv1)")
# What the grader tells the test process travels in its environment.
ENVIRONMENT_WRITERS = re.compile(r"(setenv|unsetenv|putenv|clearenv|environ|__environ)\Z")
DYNAMIC_LOADER = re.compile(r"(dlopen|dlmopen|dlsym|dlvsym)\Z")
LAUNCH_COUNTER = re.compile(r"__(wrap|real)_")
CRITERION = re.compile(r"(criterion_|cr_)")
# The compiler's own initialisers in .init_array: nvcc's registration of
# the device code, g++'s initialisation of namespace-scope objects.
COMPILER_INITIALISERS = re.compile(r"(_ZL24__sti____cudaRegisterAllv|_GLOBAL__sub_I_.*)\Z")
# Sections of code run at start-up or exit outside .init_array.
START_AND_EXIT = re.compile(r"\.(init|fini|preinit_array|ctors|dtors)(\..*)?\Z|\.fini_array.*")
# The compiler's pointers, for the exception tables, to the personality
# routine and to the typeinfo a catch names (DW.ref.__gxx_personality_v0,
# DW.ref._ZTISt9bad_alloc): weak copies in COMDAT groups, not C names.
EXCEPTION_POINTER = "DW.ref."
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")
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


@functools.lru_cache(maxsize=None)
def test_instruments():
    """The functions of the test's own library (common/wb_test.h and the
    channel to the grader, wb_channel.h) that lab code is not offered
    (common/workbook.h), and the hooks that the test installs (the error
    handler, the grader's clock)."""
    def declared(header):
        with open(os.path.join(COMMON, header)) as f:
            return set(re.findall(r"\b(wb_\w+)\s*\(", f.read()))
    return frozenset((declared("wb_test.h") | declared("wb_channel.h")) - declared("workbook.h")
                     | {"wb_set_error_handler", "wb_set_timing_clock"})


def makes_system_calls(obj):
    """Whether the object's code holds a system call instruction (objdump's
    disassembly, read line by line: it is many times the code's size)."""
    return any(SYSCALL.search(line) for line in _lines(["objdump", "-d", "--no-show-raw-insn", obj]))


def problems(student, reference):
    """The reasons to refuse the student's object, one sentence each."""
    try:
        return _problems(student, reference)
    except TooSlow as e:
        return [f"its object could not be checked: {e}"]


def _listed(names):
    names = sorted(names)
    return ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")


def _problems(student, reference):
    size = os.path.getsize(student)
    if size > OBJECT_LIMIT:
        return [f"its object is {size >> 20} MiB, more than lab code makes ({OBJECT_LIMIT >> 20} MiB "
                "at most; the labs' are under 1 MiB): code or data generated into it"]
    found = []
    entry_points = definitions(reference)
    defined = definitions(student)
    layout = Layout(student)

    inline_copies = layout.comdat_weak()
    # A C-linkage name binds when the process knows it already, or when it
    # is the implementation's (a leading underscore: the C++ ABI, the
    # unwinder, the linker's --wrap names); without the reference binary,
    # every one but the entry points.
    known = process_names(reference)
    c_linkage = {s for s in defined if not s.startswith("_Z") and s not in entry_points
                 and not (s.startswith(EXCEPTION_POINTER) and s in inline_copies)
                 and (known is None or s in known or s.startswith("_"))}
    if c_linkage:
        found.append("defines C-linkage symbols that the test, its libraries or the CUDA runtime "
                     "define or call too, and would bind to the submission's (rename them, make "
                     "them static, or leave them C++): " + _listed(c_linkage))
    new_delete = {s for s in defined if NEW_DELETE.match(s)}
    if new_delete:
        found.append("replaces the global operator new or delete, which the whole test process "
                     "allocates through: " + _listed(new_delete))
    runtime = {s for s in defined if s not in new_delete and s not in inline_copies
               and (RUNTIME_NAMESPACE.match(s) or s in libstdcxx_exports())}
    if runtime:
        found.append("defines functions or data of the C++ runtime (namespace std, __gnu_cxx or "
                     "__cxxabiv1, or what libstdc++ exports), which libstdc++ would bind to: "
                     + _listed(runtime))
    indirect = {s for s, kind in defined.items() if kind == "i"}
    if indirect:
        found.append("defines indirect functions, whose resolvers run while the process is loaded: "
                     + _listed(indirect))

    constructors = {layout.function_at(t) for t in layout.init_targets}
    marked = {f for f in constructors if not COMPILER_INITIALISERS.match(f)}
    reference_sections = sections(reference)
    student_sections = set(layout.section_names)
    start_and_exit = {s for s in student_sections if START_AND_EXIT.match(s)}
    if marked or start_and_exit:
        found.append("runs code before main or after it that no test sees (a constructor or "
                     "destructor function, or start-up and exit sections): "
                     + _listed(marked | start_and_exit))
    hooked = {s for s in student_sections - reference_sections if IDENTIFIER.match(s)}
    if hooked:
        found.append("has sections named like C identifiers, which a test runner or the linker's "
                     "__start_/__stop_ lists would pick up: " + _listed(hooked))

    called = imports(student)
    # What the lab's reference calls, lab code may call.
    instruments = {s for s in called - imports(reference)
                   if s in test_instruments() or LAUNCH_COUNTER.match(s) or CRITERION.match(s)}
    if instruments:
        found.append("calls the test's own instruments (its recording, its error handler, the "
                     "launch counter, Criterion): " + _listed(instruments))
    environment = {s for s in called if ENVIRONMENT_WRITERS.match(s)}
    if environment:
        found.append("changes the environment, through which the grader instructs the test process: "
                     + _listed(environment))
    loader = {s for s in called if DYNAMIC_LOADER.match(s)}
    if loader:
        found.append("uses the dynamic loader, which brings in code this check never saw or binds to "
                     "any function of the process by name: " + _listed(loader))
    if makes_system_calls(student):
        found.append("makes system calls directly (a syscall instruction)")
    return found
