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

from shared import labs
from .objreading import (Layout, TooSlow, definitions, imports, libstdcxx_exports,
                         makes_system_calls, process_names, sections)

OBJECT_LIMIT = 64 << 20   # bytes
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
