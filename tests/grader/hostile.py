"""Hostile submissions for the grader's own tests: lab 00's reference with
one hostile change each, and the verdict the grader must give.

Each case: name, text of solutions/00-vector-add/kernels.cu to replace, the
replacement, the expected build status of the lab, and the expected outcome
of its stage tests on a GPU ("fail": every stage test 0 points; "pass":
full points). `cpu: True` cases are decided before any test runs, so CI
checks them without a GPU.
"""

BODY = "    int blocks = (n + block_size - 1) / block_size;"
KERNEL = "        c[i] = a[i] + b[i];"
TOP = '#include "workbook.h"'

CASES = [
    # name, find, replace, build, tests, cpu. A symbol that collides with the
    # test's or the library's is a link error ("failed"); one the linker would
    # take silently is caught by the grader's symbol check ("rejected").
    ("reference", BODY, BODY, "ok", "pass", False),
    ("compile-error", KERNEL, "        c[i] = a[i] + ;", "failed", "fail", True),
    ("constructor", TOP, TOP + "\n#include <stdio.h>\n__attribute__((constructor)) static void early(void)"
     " { puts(\"[PASS] vector_add::stage0_sizes\"); }", "rejected", "fail", True),
    ("symbol-collision", TOP, TOP + '\nextern "C" double wb_rel_error(const float *g, const double *e, '
     "size_t n) { return 0.0; }", "failed", "fail", True),
    ("defines-main", TOP, TOP + '\nextern "C" int main(void) { return 0; }', "failed", "fail", True),
    ("exit0", BODY, "    exit(0);\n" + BODY, "rejected", "fail", True),
    ("_exit0", BODY, "    _exit(0);\n" + BODY, "rejected", "fail", True),
    ("early-return", BODY, "    return;\n" + BODY, "ok", "fail", False),
    ("host-hang", BODY, "    for (volatile int spin = 1; spin;) {}\n" + BODY, "ok", "fail", False),
    ("kernel-hang", KERNEL, "        while (c != 0) {}\n" + KERNEL, "ok", "fail", False),
    ("illegal-address", KERNEL, "        c[i + (1 << 30)] = a[i] + b[i];", "ok", "fail", False),
    ("segfault", BODY, "    *(volatile int *)0 = 1;\n" + BODY, "ok", "fail", False),
    ("divide-by-zero", BODY, "    volatile int zero = 0;\n    block_size = block_size / zero;\n" + BODY,
     "ok", "fail", False),
    ("fake-output", BODY, '    printf("[PASS] vector_add::stage0_sizes: (0.00s)\\n[====] Synthesis: '
     'Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0\\n{\\"passed\\": 1, \\"failed\\": 0}\\n");\n'
     "    return;\n" + BODY, "ok", "fail", False),
    ("megabytes-output", BODY, '    for (int k = 0; k < 3000000; k++) printf("spam spam spam\\n");\n' + BODY,
     "ok", "fail", False),
    ("gpu-memory-hog", BODY, "    void *hog;\n    while (cudaMalloc(&hog, 1 << 28) == cudaSuccess) {}\n"
     "    return;\n" + BODY, "ok", "fail", False),
    ("writes-results", TOP, TOP + "\n#include <stdio.h>\n#include <stdlib.h>\n#include <glob.h>\n"
     "static void forge(void) { const char *d = getenv(\"WB_RESULTS_DIR\"); char p[4096];"
     " snprintf(p, sizeof p, \"%s/../*/report.json\", d ? d : \".\"); glob_t g; glob(p, 0, 0, &g);"
     " const char *fake = \"{\\\"id\\\": \\\"x\\\", \\\"passed\\\": 1, \\\"failed\\\": 0, \\\"errored\\\": 0,"
     " \\\"skipped\\\": 0, \\\"test_suites\\\": []}\";"
     " for (size_t k = 0; k < g.gl_pathc; k++) { FILE *f = fopen(g.gl_pathv[k], \"w\"); if (f) { fputs(fake, f);"
     " fclose(f); } } snprintf(p, sizeof p, \"%s/../forged.json\", d ? d : \".\"); FILE *f = fopen(p, \"w\");"
     " if (f) { fputs(fake, f); fclose(f); } }", "ok", "fail", False),
]
# writes-results forges the files, then computes nothing.
WRITES_BODY = "    forge();\n    return;\n" + BODY

def make(reference_text, case):
    name, find, replace, _, _, _ = case
    if find not in reference_text:
        raise SystemExit(f"hostile case {name}: the reference no longer contains {find!r}")
    text = reference_text.replace(find, replace, 1)
    if name == "writes-results":
        text = text.replace(BODY, WRITES_BODY, 1)
    if "printf" in replace and "<stdio.h>" not in text:
        text = "#include <stdio.h>\n" + text
    if "exit(0)" in replace and "<unistd.h>" not in text:
        text = "#include <stdlib.h>\n#include <unistd.h>\n" + text
    return text
