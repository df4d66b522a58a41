"""The static check of the student's object (kernels.cu.o), against the
reference's object of the same lab, by allow list:

- imports: what the reference imports, plus the families any lab code may
  use (printf and friends, math, string and memory functions, the C++
  runtime, iostream and std::string, the CUDA runtime's error, query,
  memory and event calls that every lab uses); anything else is refused
  with the symbol named (forking, exec, signals, files, dlopen, a CUDA call
  the lab does not need, such as cudaMemcpy in the vector add: a kernel's
  work copied to the host and done there);
- definitions: the entry points the reference defines, and C++ (mangled)
  helpers of the student's own; not a C-linkage symbol that the test, the
  libraries or the runtime define (memcmp, wb_rel_error, __fprintf_chk),
  not a replacement of the standard library's;
- sections: only those the reference's object has, plus the ones ordinary
  code makes (text, data, constants, exception tables); not `.init`, not a
  test runner's hook section;
- no system call instructions (code that calls the kernel directly);
- a size that lab code makes: the labs' objects, device code for seven
  architectures included, are under 1 MiB; one of hundreds of megabytes
  (an assembler `.fill`, a huge initialised array) would only make the
  check's tools run for minutes and fill the grader's memory.
Names are compared without their version suffix (memcmp@GLIBC_2.2.5).
"""
import os
import re
import subprocess
import threading

OBJECT_LIMIT = 64 << 20   # bytes
TOOL_WALL_S = 120         # each of nm, readelf and objdump

BASE_IMPORTS = [
    # C library: output, strings, memory, numbers, math.
    r"(__)?(v?[sf]?n?printf|puts|putchar|fputs|fputc|putc|fwrite|fflush)(_chk)?",
    r"stdout|stderr", r"(__)?mem(cpy|set|move|cmp|chr)(_chk)?", r"str(n?len|n?cmp|n?cpy|chr|rchr|str|dup|tol|toul|tod|tof)(_chk)?",
    r"__strdup", r"(malloc|calloc|realloc|free|aligned_alloc|posix_memalign)", r"(qsort|bsearch|abs|labs|llabs|div|atoi|atol|atof|rand|srand)",
    r"(__)?(sqrt|cbrt|exp|exp2|expm1|log|log2|log10|log1p|pow|sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh|fabs|floor|ceil|round|lround|llround|trunc|fmod|fmin|fmax|fma|hypot|ldexp|frexp|modf|nan|isnan|isinf|finite)[fl]?",
    r"__assert_fail", r"__stack_chk_fail", r"__errno_location",
    # The C++ runtime: statics, exceptions, new/delete, iostream, std::string.
    r"__cxa_(atexit|guard_acquire|guard_release|guard_abort|begin_catch|end_catch|rethrow|allocate_exception|free_exception|throw|pure_virtual|call_unexpected)",
    r"__dso_handle", r"__gxx_personality_v0", r"_Unwind_Resume", r"_Zn[wa]m.*", r"_Zd[la]Pv.*",
    r"_ZSt(4cout|4cerr|4endl.*|lsI.*|16__ostream_insert.*|9terminatev|\d+__throw_.*|21ios_base_library_initv)", r"_ZNKSt5ctype.*",
    r"_GLOBAL_OFFSET_TABLE_",
    r"_ZNSo.*", r"_ZNSt8ios_base4Init.*", r"_ZNSt7__cxx1112basic_string.*", r"_ZNKSt7__cxx1112basic_string.*",
    r"_ZNSt7__cxx1118basic_stringstream.*", r"_ZNSt7__cxx1119basic_ostringstream.*",
    r"_ZTVN10__cxxabiv1.*", r"_ZTI.*", r"_ZTS.*",
    # nvcc's registration and launch code.
    r"__cuda(RegisterFatBinary|RegisterFatBinaryEnd|UnregisterFatBinary|RegisterFunction|RegisterVar|RegisterManagedVar|RegisterTexture|RegisterSurface|InitModule|PushCallConfiguration|PopCallConfiguration|GetKernel|LaunchKernel)",
    r"atexit",
    # The CUDA runtime calls every lab may make.
    r"cuda(GetLastError|PeekAtLastError|GetErrorString|GetErrorName|DeviceSynchronize|StreamSynchronize|"
    r"Malloc|Free|Memset|MemsetAsync|GetDevice|GetDeviceCount|GetDeviceProperties|DeviceGetAttribute|"
    r"FuncGetAttributes|FuncSetAttribute|OccupancyMaxActiveBlocksPerMultiprocessor|"
    r"OccupancyMaxActiveBlocksPerMultiprocessorWithFlags|OccupancyMaxPotentialBlockSize|"
    r"EventCreate|EventCreateWithFlags|EventRecord|EventSynchronize|EventElapsedTime|EventDestroy|"
    r"LaunchKernel|LaunchCooperativeKernel|LaunchKernelExC)(_v\d+)?(_ptsz)?",
    # The workbook's own library (workbook.h).
    r"wb_(check_cuda|fail|device_info|gpu_usable)",
]
_BASE = re.compile("(?:" + "|".join(BASE_IMPORTS) + r")\Z")

# Sections that ordinary code makes, whatever the reference has.
ORDINARY_SECTIONS = re.compile(
    r"(\.text|\.rodata|\.data|\.bss|\.tbss|\.tdata|\.rela\.text|\.rela\.rodata|\.rela\.data|"
    r"\.rela\.eh_frame|\.eh_frame|\.gcc_except_table|\.group|\.comment|\.note\.GNU-stack|"
    r"\.symtab|\.strtab|\.shstrtab|\.nv_fatbin|\.nvFatBinSegment|\.rela\.nvFatBinSegment|"
    r"__nv_module_id|\.init_array|\.rela\.init_array|\.fini_array|\.rela\.fini_array|"
    r"\.data\.rel.*|\.rela\.data\.rel.*)(\..*)?\Z")
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
    """Global definitions: name -> nm's kind letter (T strong, W weak, ...)."""
    return {name: kind for name, kind in _nm(obj, "-g", "--defined-only").items()}


def sections(obj):
    return set(re.findall(r"\]\s+(\S+)", "".join(_lines(["readelf", "-S", "-W", obj])))) - {"NULL"}


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


def _problems(student, reference):
    size = os.path.getsize(student)
    if size > OBJECT_LIMIT:
        return [f"its object is {size >> 20} MiB, more than lab code makes ({OBJECT_LIMIT >> 20} MiB "
                "at most; the labs' are under 1 MiB): code or data generated into it"]
    found = []
    allowed = imports(reference)
    bad = sorted(s for s in imports(student) if s not in allowed and not _BASE.match(s))
    if bad:
        found.append("calls what this lab's code has no need to call (the grader's allow list): "
                     + ", ".join(bad[:8]) + (" ..." if len(bad) > 8 else ""))
    entry_points = definitions(reference)
    defined = definitions(student)
    foreign = sorted(s for s, kind in defined.items()
                     if not s.startswith("_Z") and s not in entry_points and not s.startswith("__nv"))
    if foreign:
        found.append("defines C-linkage symbols that are not this lab's entry points (they would "
                     "replace the test's, the library's or the runtime's): " + ", ".join(foreign[:8]))
    replaced = sorted(s for s, kind in defined.items()
                      if kind in "TDBR" and re.match(r"_Z(St|NSt|NKSt|NSo|n[wa]|d[la])", s))
    if replaced:
        found.append("replaces functions of the C++ standard library: " + ", ".join(replaced[:8]))
    extra = sorted(s for s in sections(student) - sections(reference) if not ORDINARY_SECTIONS.match(s))
    if extra:
        found.append("has ELF sections that lab code does not make (code run before main or by the "
                     "test runner): " + ", ".join(extra[:8]))
    if makes_system_calls(student):
        found.append("makes system calls directly (a syscall instruction)")
    return found
