"""Hostile submissions for the grader's own tests: lab 00's reference with
one hostile change each, and the verdict the grader must give.

Each case: name, text of solutions/00-vector-add/kernels.cu to replace (or
WHOLE: the file becomes the replacement), the replacement, the expected
build status of the lab ("ok", "failed": does not compile or link,
"rejected": the static check), the expected outcome of its tests on a GPU
("pass": full points, "fail": no points at all, "slow": every test but
the timing one passes, and not all performance points), and cpu: True when the CPU half checks
it too (CI, without a GPU): a verdict decided before any test runs, or one
a CPU reaches as well (a process that hangs before its tests start).
STATIC_CASES (the static check's, issue 38 item 6) have cpu False: the CPU
half compiles and checks them directly (test_grader.static_check_problems).
"""

BODY = "    int blocks = (int)((n + per_block - 1) / per_block);"
KERNEL = "            c[i] = x[k] + y[k];"
TOP = '#include "workbook.h"'
WHOLE = None


def top(code):
    return (TOP, TOP + "\n" + code)


def before_launch(code):
    return (BODY, code + "\n" + BODY)


CASES = [
    # --- reading what the instructor keeps: the tree it compiles in has none of it
    ("include-solutions", WHOLE, '#include "../../solutions/00-vector-add/kernels.cu"\n', "failed", "fail", True),
    ("include-absolute", *top('#include "/etc/passwd"'), "failed", "fail", True),
    ("include-device-file", *top('#include "/dev/ptmx"'), "failed", "fail", True),
    ("include-digraph", *top('%:include "/dev/ptmx"'), "failed", "fail", True),
    ("include-behind-comment", *top('#/* a comment is whitespace */include "/dev/ptmx"'), "failed", "fail", True),
    ("include-computed", *top('#define SOLUTION "../../solutions/00-vector-add/kernels.cu"\n#include SOLUTION'),
     "failed", "fail", True),
    ("incbin-rubric", *top('asm(".incbin \\"../../grading/rubric.toml\\"");'), "failed", "fail", True),
    ("asm-include", *top('asm(".include \\"/etc/passwd\\"");'), "failed", "fail", True),
    # --- includes spelled around a text check (helper D2): the text check reads
    # the file as the preprocessor does, the compiler's own list of included
    # files is checked, and the compile's view has no device but /dev/null;
    # each refused in seconds (tests/grader/test_grader.py include_view_problems
    # checks the last two without the text check)
    ("include-after-bom", WHOLE, "\ufeff#include \"/dev/ptmx\"\n", "failed", "fail", True),
    ("include-after-nul", *top('\0#include "/dev/zero"'), "failed", "fail", True),
    ("include-spliced-crlf", *top('#inc\\\r\nlude "/dev/ptmx"'), "failed", "fail", True),
    ("include-splice-blank", *top('#include \\ \n"../../solutions/00-vector-add/kernels.cu"'),
     "failed", "fail", True),
    ("include-after-string-comment", *top('static const char *open_ = "/*";\n#include "/dev/ptmx"\n'
                                          'static const char *close_ = "*/";'), "failed", "fail", True),
    ("include-after-raw-string", *top('static const char *raw = R"x(" /* )x";\n#include "/proc/self/fd/1"'
                                      '\n/* */'), "failed", "fail", True),
    ("pragma-dependency", *top('_Pragma("GCC dependency \\"/dev/ptmx\\"")'), "failed", "fail", True),
    # twice per level: 2^60 includes, stopped by the -M pass's 30 s without the text check
    ("include-itself", *top("#if __INCLUDE_LEVEL__ < 60\n#include <kernels.cu>\n#include <kernels.cu>\n#endif"),
     "failed", "fail", True),
    ("incbin-joined-strings", *top('asm(".inc" /* joined */ "bin \\"/dev/zero\\"");'), "failed", "fail", True),
    # --- a library doing the lab's work: refused by name, and not in the compile's view
    ("library-thrust", BODY, "    thrust::transform(thrust::device, a, a + n, b, c, thrust::plus<float>());\n"
     "    return;\n" + BODY, "failed", "fail", True),
    ("library-cub-by-path", *top("#include <cccl/cub/device/device_reduce.cuh>"), "failed", "fail", True),
    ("library-cg-reduce", *top("#include <cooperative_groups/reduce.h>"), "failed", "fail", True),
    ("compile-error", KERNEL, "            c[i] = x[k] + ;", "failed", "fail", True),
    # --- changing the verdict from inside the process: refused by the static check
    ("criterion-report-hook", *top('__attribute__((section("cr_pot"), used)) static void *hook = 0;'),
     "rejected", "fail", True),
    ("init-section", *top('__attribute__((section(".init"), used)) static void early(void) {}'),
     "rejected", "fail", True),
    ("inline-syscall", *top('void raw(void) { asm volatile("syscall"); }'), "rejected", "fail", True),
    # 80 MB of code: the check's disassembly would be gigabytes of text
    ("huge-object", *top('asm(".text\\n.fill 80000000, 1, 0x90");'), "rejected", "fail", True),
    ("replace-memcmp", *top('extern "C" int memcmp(const void *a, const void *b, size_t n) { return 0; }'),
     "rejected", "fail", True),
    # Declared as glibc declares it (with _FORTIFY_SOURCE its stdio.h does).
    ("replace-fprintf-chk", *top('#include <stdio.h>\nextern "C" int __fprintf_chk(FILE *f, int flag, '
                                 "const char *format, ...) { return 0; }"), "rejected", "fail", True),
    ("replace-test-library", *top('extern "C" double wb_rel_error(const float *g, const double *e, size_t n)'
                                  " { return 0.0; }"), "rejected", "fail", True),
    ("defines-main", *top('extern "C" int main(void) { return 0; }'), "rejected", "fail", True),
    # --- correct code that must not be refused
    ("reference", BODY, BODY, "ok", "pass", False),
    ("local-static-iostream", *top("#include <iostream>\n#include <string>\nvoid greet(bool loud) {"
                                   " static std::string hello(\"hello\"); if (loud) std::cout << hello"
                                   " << std::endl; }"), "ok", "pass", False),
    # Work only in the calls before the timed ones (a call counter): the
    # timed runs leave their outputs poisoned, which their checks see.
    ("warm-up-only", *before_launch("    static int calls = 0;\n    if (n == (1 << 26) && ++calls > 3)\n"
                                    "        return;"), "ok", "slow", False),
    ("slow-kernel", KERNEL, "            for (int r = 0; r < 200; r++) c[i] = a[i] + b[i];", "ok", "slow", False),
    # --- wrong or hostile at run time
    ("skeleton", WHOLE, None, "ok", "fail", False),
    ("off-by-one", "if (i < n)", "if (i <= n)", "ok", "fail", False),
    ("early-return", *before_launch("    return;"), "ok", "fail", False),
    ("host-hang", *before_launch("    for (volatile int spin = 1; spin;) {}"), "ok", "fail", False),
    ("kernel-hang", KERNEL, "            while (c != 0) {}\n" + KERNEL, "ok", "fail", False),
    ("illegal-address", KERNEL, "            c[i + (1 << 30)] = x[k] + y[k];", "ok", "fail", False),
    # Every test process hangs before main, in the constructor of a
    # namespace-scope object (which the static check accepts: honest C++
    # has them): two time-outs, then the stage's other tests are not run
    # (rubric stage_timeouts); decided on a CPU too
    ("constructor-hang", *top("struct Stuck { Stuck() { for (volatile int spin = 1; spin;) {} } };\n"
                              "static Stuck stuck;"), "ok", "fail", True),
    ("segfault", *before_launch("    *(volatile int *)0 = 1;"), "ok", "fail", False),
    ("divide-by-zero", *before_launch("    volatile int zero = 0;\n    block_size = block_size / zero;"),
     "ok", "fail", False),
    ("fake-output", *before_launch('    printf("[PASS] vector_add::stage0_sizes: (0.00s)\\n[====] Synthesis: '
                                   'Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0\\n{\\"passed\\": 1}\\n");'
                                   "\n    return;"), "ok", "fail", False),
    ("megabytes-output", *before_launch('    for (int k = 0; k < 3000000; k++) printf("spam spam spam\\n");'),
     "ok", "fail", False),
    ("gpu-memory-hog", *before_launch("    void *hog;\n    while (cudaMalloc(&hog, 1 << 28) == cudaSuccess) {}"
                                      "\n    return;"), "ok", "fail", False),
]


# What the static check refuses by meaning (issue 38 item 6). The CPU half
# checks these with one compile each, not a whole grade
# (test_grader.static_check_problems); the GPU half grades them with the rest.
STATIC_CASES = [
    # Definitions the process would bind to, weak or strong: the allocator
    # of the whole process, the C library, Criterion, the CUDA runtime, the
    # C++ runtime (by name, and by an assembler label on a weak function),
    # the C++ ABI, an indirect function whose resolver runs at load time.
    ("weak-operator-new", *top("#include <cstdlib>\n#include <new>\n__attribute__((weak)) void *operator"
                               " new(std::size_t size) { return std::malloc(size ? size : 1); }"),
     "rejected", "fail", False),
    ("operator-delete", *top("#include <cstdlib>\n#include <new>\n"
                             "void operator delete(void *p) noexcept { std::free(p); }"), "rejected", "fail", False),
    ("aligned-new-array", *top("#include <cstdlib>\n#include <new>\nvoid *operator new[](std::size_t n,"
                               " std::align_val_t a) { return std::aligned_alloc((std::size_t)a, n); }"),
     "rejected", "fail", False),
    ("weak-libc", *top('#include <stdio.h>\nextern "C" __attribute__((weak)) int puts(const char *s)'
                       " { (void)s; return 0; }"), "rejected", "fail", False),
    ("weak-criterion", *top('extern "C" __attribute__((weak)) int criterion_run_all_tests(void *set)'
                            " { (void)set; return 1; }"), "rejected", "fail", False),
    ("replace-cuda-runtime", *top('extern "C" __attribute__((weak)) cudaError_t cudaMemGetInfo(size_t *f,'
                                  " size_t *t) { *f = *t = 0; return cudaSuccess; }"),
     "rejected", "fail", False),
    ("replace-std-function", *top("namespace std { void __throw_bad_alloc() { for (;;) {} } }"),
     "rejected", "fail", False),
    ("weak-std-by-label", *top('__attribute__((weak)) char fake_widen(const void *self, char c)'
                               ' __asm__("_ZNKSt5ctypeIcE8do_widenEc");\n'
                               "char fake_widen(const void *self, char c) { (void)self; return c + 1; }"),
     "rejected", "fail", False),
    ("replace-cxa", *top('extern "C" void __cxa_pure_virtual(void) {}'), "rejected", "fail", False),
    ("indirect-function", *top('extern "C" { static void *resolve_chosen(void) { return 0; } }\n'
                               'void chosen(void) __attribute__((ifunc("resolve_chosen")));'),
     "rejected", "fail", False),
    # Code before main or after it that no test sees.
    ("constructor", *top("#include <stdio.h>\n__attribute__((constructor)) static void early(void)"
                         " { puts(\"[PASS] vector_add::stage0_sizes\"); }"), "rejected", "fail", False),
    ("destructor", *top("#include <stdio.h>\n__attribute__((destructor)) static void later(void)"
                        " { puts(\"[PASS] vector_add::stage0_sizes\"); }"), "rejected", "fail", False),
    ("preinit-array", *top("static void first(void) {}\n__attribute__((section(\".preinit_array\"), used))"
                           " static void (*run_first)(void) = first;"), "rejected", "fail", False),
    # Calls whose presence changes the grading: the test's recording, the
    # launch counter, the environment the grader instructs the test through
    # (strict timing turned off), the dynamic loader.
    ("record-forgery", *top('extern "C" int wb_observe_int(const char *what, int value);\n'
                            'void forge(void) { wb_observe_int("launches", 1); }'), "rejected", "fail", False),
    ("launch-counter", *top('extern "C" cudaError_t __real_cudaLaunchKernel(const void *f, dim3 g, dim3 b,'
                            " void **args, size_t shared, cudaStream_t s);\n"
                            "void *uncounted = (void *)__real_cudaLaunchKernel;"), "rejected", "fail", False),
    ("environment", *top('#include <stdlib.h>\nvoid lenient(void) { unsetenv("WB_STRICT_TIMING"); }'),
     "rejected", "fail", False),
    ("dynamic-loader", *top("#include <dlfcn.h>\nvoid *find(void) { dlmopen(LM_ID_NEWLM, \"x\", 0);"
                            " return dlsym(RTLD_DEFAULT, \"wb_observe_timing\"); }"), "rejected", "fail", False),
    # Calls that the old allow list refused by name and the static check now
    # accepts (grading/README.md, "Threat model": the sandbox and the
    # judge hold against what they do): present but never called, they leave
    # a correct submission correct
    ("exec-reference", *top("#include <unistd.h>\nvoid again(void) { char *argv[] = {(char *)\"x\", 0};"
                            " execv(\"/proc/self/exe\", argv); }"), "ok", "pass", False),
    ("copy-files", *top("#include <stdio.h>\nvoid copy(void) { FILE *f = fopen(\"../../solutions/"
                        "00-vector-add/kernels.cu\", \"r\"); if (f) fclose(f); }"), "ok", "pass", False),
    ("background-process", *top("#include <unistd.h>\nvoid spawn(void) { if (fork() == 0) { setsid();"
                                " for (;;) pause(); } }"), "ok", "pass", False),
    ("kill-everything", *top("#include <signal.h>\nvoid harm(void) { kill(-1, SIGKILL); }"),
     "ok", "pass", False),
    ("unlisted-calls", *top("#include <unistd.h>\n#include <sys/prctl.h>\n#include <sys/resource.h>\n"
                            "void calls(void) { daemon(0, 0); prctl(0, 0);"
                            " struct rlimit r = {0, 0}; setrlimit(RLIMIT_CPU, &r); }"), "ok", "pass", False),
    # Ending the test process in the middle of a test: its recording ends
    # early, which the judge fails.
    ("exit0", *before_launch("    exit(0);"), "ok", "fail", False),
    ("_exit0", *before_launch("    _exit(0);"), "ok", "fail", False),
    # The work copied to the host and done there: no kernel is launched
    # (require_gpu).
    ("host-add", BODY, "    float *h = (float *)malloc(3 * sizeof(float) * n);\n"
     "    cudaMemcpy(h, a, sizeof(float) * n, cudaMemcpyDeviceToHost);\n"
     "    cudaMemcpy(h + n, b, sizeof(float) * n, cudaMemcpyDeviceToHost);\n"
     "    for (int k = 0; k < n; k++) h[2 * n + k] = h[k] + h[n + k];\n"
     "    cudaMemcpy(c, h + 2 * n, sizeof(float) * n, cudaMemcpyHostToDevice);\n"
     "    free(h);\n    return;\n" + BODY, "ok", "fail", False),
]
CASES += STATIC_CASES

# --- the grader believes only what it observes itself (issue 38's table,
# cases of our own): no kernel at all, the host doing the add, and a global
# object's destructor that writes a forged finish and results to every
# socket the process holds after its tests (the recording is sealed, and the
# compiled object holds no kernel: no points); a kernel 200 times too slow
# that sends a forged 'done' to every socket it holds at once after each
# launch (on the H200, 2026-11-28: Criterion's own socket gets it too and
# every case's run breaks: no points; the grader's clock alone, where an
# early 'done' breaks the series so that its times are not scored, is
# tests/grader/test_channel.py's early peer); a test that fills its scratch
# with 5 GiB (the sandbox's /tmp holds 4 GiB; the grader's disk is not
# touched: full marks).
FORGE = r"""#include <sys/socket.h>
#include <stdint.h>
#include <string.h>
/* One channel entry (common/wb_channel.c): kind, label length, label, data
 * length, data; sent to every descriptor that takes it. */
static void forge(char kind, const char *label, const void *data, uint64_t bytes)
{
    char message[256];
    uint32_t label_len = (uint32_t)strlen(label);
    size_t at = 0;
    message[at++] = kind;
    memcpy(message + at, &label_len, 4), at += 4;
    memcpy(message + at, label, label_len), at += label_len;
    memcpy(message + at, &bytes, 8), at += 8;
    memcpy(message + at, data, (size_t)bytes), at += (size_t)bytes;
    for (int fd = 3; fd < 256; fd++)
        send(fd, message, at, MSG_DONTWAIT | MSG_NOSIGNAL);
}
"""
HOST_ADD_FORGED_RECORD = FORGE + r"""#include <stdlib.h>
#include "lab.h"
#include "workbook.h"

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    (void)block_size;
    size_t bytes = sizeof(float) * (size_t)n;
    float *h = (float *)malloc(3 * bytes + 1);
    cudaMemcpy(h, a, bytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(h + n, b, bytes, cudaMemcpyDeviceToHost);
    for (int k = 0; k < n; k++)
        h[2 * n + k] = h[k] + h[n + k];
    cudaMemcpy(c, h + 2 * n, bytes, cudaMemcpyHostToDevice);
    free(h);
}

/* After the tests: a launch count of one and a finished case, forged. */
struct rewrite_after_the_tests {
    ~rewrite_after_the_tests()
    {
        uint64_t one_launch = 1;
        forge('F', "", &one_launch, sizeof one_launch);
    }
} rewrite;
"""
SLOW_FORGED_DONE = FORGE + r"""#include "lab.h"
#include "workbook.h"

__global__ void vector_add_kernel(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int r = 0; r < 200; r++)
            c[i] = a[i] + b[i];
}

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;
    vector_add_kernel<<<(n + block_size - 1) / block_size, block_size>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
    char nothing = 0;
    forge('D', "", &nothing, 0);   /* "done", long before the kernel is */
}
"""
CASES += [
    ("no-kernel-forged-record", WHOLE, HOST_ADD_FORGED_RECORD, "ok", "fail", False),
    ("slow-forged-done", WHOLE, SLOW_FORGED_DONE, "ok", "fail", False),
    ("scratch-5gib", *before_launch(
        "    static bool filled = false;\n"
        "    for (int f = 0; !filled && f < 5; f++) {   /* 5 files of 1 GiB, errors ignored */\n"
        "        char name[32];\n"
        "        snprintf(name, sizeof name, \"fill-%d.bin\", f);\n"
        "        FILE *out = fopen(name, \"wb\");\n"
        "        static char block[1 << 20];\n"
        "        for (int k = 0; out && k < 1024 && fwrite(block, 1, sizeof block, out) == sizeof block; k++) {}\n"
        "        if (out) fclose(out);\n"
        "    }\n"
        "    filled = true;"), "ok", "pass", False),
]

# The CPU half grades these cases as whole submissions (a trusted tree built
# for each, as in a real batch); its other cases decided before any test
# runs (a refused include, a compile error, the static check) are compiled
# and checked in one trusted tree (test_grader.static_check_problems), which
# gives the same build status in a fraction of CI's time.
FULL_GRADE_ON_CPU = {"include-solutions", "compile-error", "criterion-report-hook", "constructor-hang"}


def make(reference_text, case, skeleton_text=None):
    name, find, replace = case[:3]
    if find is WHOLE:
        text = replace if replace is not None else skeleton_text
    else:
        if find not in reference_text:
            raise SystemExit(f"hostile case {name}: the reference no longer contains {find!r}")
        text = reference_text.replace(find, replace, 1)
    if ("printf" in text or "puts" in text) and "<stdio.h>" not in text:
        text = "#include <stdio.h>\n" + text
    if "thrust::" in text:
        text = ("#include <thrust/execution_policy.h>\n#include <thrust/functional.h>\n"
                "#include <thrust/transform.h>\n" + text)
    if ("exit(0)" in text or "malloc" in text) and "<unistd.h>" not in text:
        text = "#include <stdlib.h>\n#include <unistd.h>\n" + text
    return text
