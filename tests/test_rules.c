/* CPU tests of the source rules (common/wb_rules.c, wb_barriers.c): what
 * they refuse and what they must accept. Most cases are given as the
 * preprocessor's output (line markers, then the code); the macro cases run
 * nvcc -E itself, as the build and the grader do. No GPU needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wb_rules.h"
#include "wb_test.h"

/* A file holding text, as nvcc -E would write it for a kernels.cu that
 * includes a header holding `header`. */
static char *preprocessed_after(const char *header, const char *code)
{
    char path[] = "/tmp/wb-rules-XXXXXX.ii";
    int fd = mkstemps(path, 3);
    cr_assert(fd >= 0, "cannot make a temporary file");
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# 0 \"kernels.cu\"\n# 1 \"/usr/include/some_header.h\" 1\n%s"
               "# 1 \"kernels.cu\" 2\n%s", header, code);
    fclose(f);
    return strdup(path);
}

static char *preprocessed(const char *code)
{
    return preprocessed_after(
        "__device__ void header_helper() { __threadfence(); __syncthreads(); }\n", code);
}

/* kernels.cu through nvcc -E for sm_90, as meson.build does. */
static char *through_nvcc(const char *code)
{
    char source[] = "/tmp/wb-rules-XXXXXX.cu", command[1024];
    int fd = mkstemps(source, 3);
    cr_assert(fd >= 0, "cannot make a temporary file");
    FILE *f = fdopen(fd, "w");
    fputs(code, f);
    fclose(f);
    char *out = malloc(strlen(source) + 4);
    sprintf(out, "%s.ii", source);
    snprintf(command, sizeof command, "'%s' -E -arch=compute_90 '%s' -o '%s'", WB_NVCC, source,
             out);
    cr_assert(system(command) == 0, "%s failed", command);
    unlink(source);
    return out;
}

/* The rules' problems with the file at path (removed after), "" if none. */
static const char *problems_of(char *path, const wb_source_rule *rules, size_t n)
{
    static char problems[4096];
    char name[512];
    wb_source_rule_problems(path, rules, n, problems, sizeof problems, name, sizeof name);
    unlink(path);
    free(path);
    return problems;
}
#define PROBLEMS(path, ...)                                                    \
    problems_of((path), (const wb_source_rule[]){__VA_ARGS__},               \
                sizeof((const wb_source_rule[]){__VA_ARGS__}) / sizeof(wb_source_rule))

static void assert_refused(const char *problems, const char *expected)
{
    cr_assert(strstr(problems, expected), "expected a problem with \"%s\", got: \"%s\"", expected,
              problems);
}

static void assert_accepted(const char *problems)
{
    cr_assert(!problems[0], "honest code refused: %s", problems);
}

/* The code (a format with one %s) with `honest` filled in passes rule r;
 * with `mistake`, it fails with a problem that holds `expected`. */
static void assert_tells_apart(const char *code, const char *honest, const char *mistake,
                               const wb_source_rule *r, const char *expected)
{
    char text[2048];
    snprintf(text, sizeof text, code, honest);
    assert_accepted(problems_of(preprocessed(text), r, 1));
    snprintf(text, sizeof text, code, mistake);
    assert_refused(problems_of(preprocessed(text), r, 1), expected);
}

/* ------------------------------------------------------------- macros */

#define PUBLISH_CODE                                                                   \
    "#include <cuda/atomic>\n"                                                         \
    "__device__ void publish(int *value, int *flag) {\n"                               \
    "    *value = 1;\n"                                                                \
    "    __threadfence();\n"                                                           \
    "    cuda::atomic_ref<int, cuda::thread_scope_device>(*flag).store(\n"            \
    "        1, cuda::memory_order_release);\n"                                        \
    "}\n"
#define PUBLISH_RULE {"publish", .orderings = 2, .fresh_accesses = 1, .why = "fence, release"}

Test(source_rules, fences_removed_by_defines_are_missing, .timeout = 120)
{
    assert_accepted(PROBLEMS(through_nvcc(PUBLISH_CODE), PUBLISH_RULE));
    assert_refused(PROBLEMS(through_nvcc("#define __threadfence()\n"
                                         "#define memory_order_release memory_order_relaxed\n"
                                         PUBLISH_CODE),
                            PUBLISH_RULE),
                   "has 0 fence(s)");
}

Test(source_rules, a_fence_in_a_macro_counts, .timeout = 120)
{
    assert_accepted(PROBLEMS(through_nvcc("#define PUBLISH(v, f) do { *(v) = 1; "
                                          "__threadfence(); atomicExch((f), 1); } while (0)\n"
                                          "__device__ void publish(int *v, int *f) "
                                          "{ PUBLISH(v, f); }\n"),
                             {"publish", .orderings = 1, .fresh_accesses = 1, .why = ""}));
}

Test(source_rules, code_for_another_architecture_does_not_count, .timeout = 120)
{
    assert_refused(PROBLEMS(through_nvcc("__device__ void publish(int *v, int *f) {\n"
                                         "    *v = 1;\n"
                                         "#if __CUDA_ARCH__ != 900\n"
                                         "    __threadfence();\n"
                                         "#endif\n"
                                         "    atomicExch(f, 1);\n"
                                         "}\n"),
                            {"publish", .orderings = 1, .fresh_accesses = 1, .why = ""}),
                   "has 0 fence(s)");
}

/* ------------------------------------------------------------ helpers */

Test(source_rules, a_fence_in_a_helper_counts)
{
    assert_accepted(PROBLEMS(preprocessed("__device__ void raise_flag(int *f) {\n"
                                          "    __threadfence();\n"
                                          "    atomicExch(f, 1);\n"
                                          "}\n"
                                          "__device__ void publish(int *v, int *f) {\n"
                                          "    *v = 1;\n"
                                          "    raise_flag(f);\n"
                                          "}\n"),
                             {"publish", .orderings = 1, .fresh_accesses = 1, .why = ""}));
}

Test(source_rules, a_helper_counts_at_each_call_and_recursion_ends)
{
    assert_refused(PROBLEMS(preprocessed("__device__ void fence() { __threadfence(); fence(); }\n"
                                         "__device__ void publish(int *v, int *f) {\n"
                                         "    fence(); fence();\n"
                                         "    atomicExch(f, 1);\n"
                                         "}\n"),
                            {"publish", .orderings = 3, .fresh_accesses = 1, .why = ""}),
                   "has 2 fence(s)");
}

/* ------------------------------------------------------ where a fence stands */

/* A turn's output, then the counter: the fence must stand between them. */
#define TURN_RULE                                                                       \
    {"turn", .orderings = 1, .fresh_accesses = 1, .fence_after = "output",              \
     .fence_before = "atomicAdd", .why = "between"}

Test(source_rules, a_fence_between_its_words_passes)
{
    assert_accepted(PROBLEMS(preprocessed("__device__ void turn(int *out, int *next) {\n"
                                          "    output(out);\n"
                                          "    __threadfence();\n"
                                          "    atomicAdd(next, 1);\n"
                                          "}\n"),
                             TURN_RULE));
}

Test(source_rules, a_fence_in_the_wrong_place_fails)
{
    assert_refused(PROBLEMS(preprocessed("__device__ void turn(int *out, int *next) {\n"
                                         "    __threadfence();\n"
                                         "    output(out);\n"
                                         "    atomicAdd(next, 1);\n"
                                         "}\n"),
                            TURN_RULE),
                   "none stands between output and atomicAdd");
    assert_refused(PROBLEMS(preprocessed("__device__ void turn(int *out, int *next) {\n"
                                         "    output(out);\n"
                                         "    atomicAdd(next, 1);\n"
                                         "    __threadfence();\n"
                                         "}\n"),
                            TURN_RULE),
                   "wrong place");
}

Test(source_rules, a_release_in_the_statement_or_another_way_of_writing_passes)
{
    /* The release is the counter's own store; no atomicAdd at all: the
     * place is not judged, the counts still are. */
    assert_accepted(PROBLEMS(preprocessed("__device__ void turn(int *out, int *next) {\n"
                                          "    output(out);\n"
                                          "    cuda::atomic_ref<int, cuda::thread_scope_device> n(*next);\n"
                                          "    n.fetch_add(1, cuda::memory_order_release);\n"
                                          "}\n"),
                             TURN_RULE));
    assert_refused(PROBLEMS(preprocessed("__device__ void turn(int *out, int *next) {\n"
                                         "    output(out);\n"
                                         "    atomicAdd(next, 1);\n"
                                         "}\n"),
                            TURN_RULE),
                   "has 0 fence(s)");
}

Test(source_rules, a_fence_in_a_helper_between_its_words_counts)
{
    assert_accepted(PROBLEMS(preprocessed("__device__ void fence() { __threadfence(); }\n"
                                          "__device__ void turn(int *out, int *next) {\n"
                                          "    output(out);\n"
                                          "    fence();\n"
                                          "    atomicAdd(next, 1);\n"
                                          "}\n"),
                             TURN_RULE));
}

/* A block's task, then the flag that says it is done: the release must
 * come after the barrier that waits for every thread's share. */
#define DONE_RULE {"worker", .fence_after = "run_task", .after_barrier = true, .why = "done"}

static char *worker(const char *after_task)
{
    char source[512];
    snprintf(source, sizeof source,
             "__device__ void worker(int *out, int *done) {\n"
             "    run_task(out);\n%s}\n", after_task);
    return preprocessed(source);
}

Test(source_rules, a_done_flag_after_the_barrier_passes)
{
    assert_accepted(PROBLEMS(worker("    __syncthreads();\n"
                                    "    if (threadIdx.x == 0) { __threadfence(); *done = 1; }\n"),
                             DONE_RULE));
    /* The classic idiom: every thread's fence, the barrier, then the flag. */
    assert_accepted(PROBLEMS(worker("    __threadfence();\n"
                                    "    __syncthreads();\n"
                                    "    if (threadIdx.x == 0) atomicExch(done, 1);\n"),
                             DONE_RULE));
    assert_accepted(PROBLEMS(worker("    block.sync();\n"
                                    "    if (threadIdx.x == 0)\n"
                                    "        cuda::atomic_ref<int, cuda::thread_scope_system>(*done)"
                                    ".store(1, cuda::memory_order_release);\n"),
                             DONE_RULE));
    /* No barrier after the task, or the flag raised at the next claim:
     * written another way, the place is not judged. */
    assert_accepted(PROBLEMS(worker("    finish(done);\n"), DONE_RULE));
    assert_accepted(PROBLEMS(worker("    __syncthreads();\n    *done = 1;\n"), DONE_RULE));
}

Test(source_rules, a_done_flag_before_the_barrier_fails)
{
    assert_refused(PROBLEMS(worker("    if (threadIdx.x == 0) { __threadfence(); *done = 1; }\n"
                                   "    __syncthreads();\n"),
                            DONE_RULE),
                   "before the barrier, in the wrong place: nothing of it stands after run_task and past the first barrier");
    assert_refused(PROBLEMS(worker("    if (threadIdx.x == 0) atomicExch(done, 1);\n"
                                   "    __syncthreads();\n"),
                            DONE_RULE),
                   "wrong place");
    /* A variable named like a barrier is no barrier. */
    assert_refused(PROBLEMS(worker("    int sync = 1;\n"
                                   "    if (threadIdx.x == 0) { __threadfence(); *done = sync; }\n"
                                   "    __syncthreads_count(1);\n"),
                            DONE_RULE),
                   "wrong place");
}

/* ------------------------------------------------------------- scopes */

/* The given header's aliases, as lab 07's given.cuh has them. */
#define SCOPED_ALIASES                                                               \
    "using system_int = cuda::atomic_ref<int, cuda::thread_scope_system>;\n"         \
    "using device_int = cuda::atomic_ref<int, cuda::thread_scope_device>;\n"         \
    "typedef cuda::atomic_ref<int, cuda::thread_scope_block> block_int;\n"

static char *turn(const char *body)
{
    char source[512];
    snprintf(source, sizeof source, "__global__ void turn(int *counter) {\n%s}\n", body);
    return preprocessed_after(SCOPED_ALIASES, source);
}

#define HOST_RULE {"turn", .orderings = 1, .scope = WB_SYSTEM_SCOPE, .why = "host"}

Test(source_rules, a_hand_off_with_the_host_in_system_scope_passes)
{
    assert_accepted(PROBLEMS(turn("    system_int(*counter).store(1, cuda::memory_order_release);\n"),
                             HOST_RULE));
    assert_accepted(PROBLEMS(turn("    __threadfence_system();\n"
                                  "    *(volatile int *)counter = 1;\n"),
                             HOST_RULE));
    assert_accepted(PROBLEMS(turn("    cuda::atomic_ref<int, cuda::thread_scope_system> c(*counter);\n"
                                  "    c.store(1);\n"),
                             HOST_RULE));
}

Test(source_rules, a_hand_off_with_the_host_in_device_scope_fails)
{
    assert_refused(PROBLEMS(turn("    device_int(*counter).store(1, cuda::memory_order_release);\n"),
                            HOST_RULE),
                   "uses a scope narrower than the system");
    assert_refused(PROBLEMS(turn("    cuda::atomic_ref<int, cuda::thread_scope_device> c(*counter);\n"
                                 "    c.store(1, cuda::memory_order_release);\n"),
                            HOST_RULE),
                   "narrower than the system");
    /* __threadfence() orders for the GPU's threads only. */
    assert_refused(PROBLEMS(turn("    __threadfence();\n    *(volatile int *)counter = 1;\n"),
                            HOST_RULE),
                   "has 0 fence(s) or acquire/release operation(s) of system scope");
}

Test(source_rules, a_given_alias_has_its_scope)
{
    /* A typedef of block scope in a rule of device scope. */
    assert_refused(PROBLEMS(turn("    block_int(*counter).store(1, cuda::memory_order_release);\n"),
                            {"turn", .orderings = 1, .why = "device"}),
                   "thread_scope_block");
    assert_accepted(PROBLEMS(turn("    device_int(*counter).store(1, cuda::memory_order_release);\n"),
                             {"turn", .orderings = 1, .why = "device"}));
}

/* The block's own atomics on shared memory: block scope is right there,
 * in a rule of block scope, or one that counts only barriers. */
Test(source_rules, block_scope_atomics_on_shared_memory_pass_where_the_rule_allows)
{
    const char *bins = "__global__ void turn(int *counter) {\n"
                       "    __shared__ int bins[256];\n"
                       "    cuda::atomic_ref<int, cuda::thread_scope_block>(bins[threadIdx.x]).fetch_add(1);\n"
                       "    __syncthreads();\n"
                       "    counter[threadIdx.x] = bins[threadIdx.x];\n"
                       "}\n";
    assert_accepted(PROBLEMS(preprocessed(bins), {"turn", .barriers = 1, .why = "barriers"}));
    assert_accepted(PROBLEMS(preprocessed(bins),
                             {"turn", .fresh_accesses = 1, .scope = WB_BLOCK_SCOPE, .why = "block"}));
    assert_refused(PROBLEMS(preprocessed(bins), {"turn", .fresh_accesses = 1, .why = "device"}),
                   "thread_scope_block");
}

/* The host's side with the compiler's builtins instead of atomic_ref. */
Test(source_rules, the_host_compilers_atomic_builtins_count)
{
    const wb_source_rule rule = {"hand_off", .orderings = 2, .fresh_accesses = 2,
                                 .scope = WB_SYSTEM_SCOPE, .why = "host"};
    assert_accepted(problems_of(preprocessed("static bool hand_off(int *counter, int number) {\n"
                                             "    __atomic_store_n(counter, number, __ATOMIC_RELEASE);\n"
                                             "    return __atomic_load_n(counter, __ATOMIC_ACQUIRE) != number;\n"
                                             "}\n"),
                                &rule, 1));
    assert_accepted(problems_of(preprocessed("static bool hand_off(int *counter, int number) {\n"
                                             "    __sync_lock_test_and_set(counter, number);\n"
                                             "    return __sync_fetch_and_add(counter, 0) != number;\n"
                                             "}\n"),
                                &rule, 1));
    assert_refused(problems_of(preprocessed("static bool hand_off(int *counter, int number) {\n"
                                            "    __atomic_store_n(counter, number, __ATOMIC_RELAXED);\n"
                                            "    return __atomic_load_n(counter, __ATOMIC_RELAXED) != number;\n"
                                            "}\n"),
                               &rule, 1),
                   "has 0 fence(s)");
}

/* The GPU's own builtins (__nv_atomic_xxx, CUDA 12.8 on) count like
 * atomic_ref: their order and their scope are words of an enum, which nvcc -E
 * keeps. atomicXxx_block() is an atomic of block scope, and
 * thread_scope_cluster reaches the blocks of one cluster only. */
Test(source_rules, the_gpus_atomic_builtins_and_scoped_atomics_count)
{
    const wb_source_rule rule = {"turn", .orderings = 1, .fresh_accesses = 1, .why = "device"};
    assert_accepted(PROBLEMS(turn("    __nv_atomic_store_n(counter, 1, __NV_ATOMIC_RELEASE,\n"
                                  "                        __NV_THREAD_SCOPE_DEVICE);\n"),
                             rule));
    assert_accepted(PROBLEMS(turn("    __nv_atomic_thread_fence(__NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_DEVICE);\n"
                                  "    atomicExch(counter, 1);\n"),
                             rule));
    assert_refused(PROBLEMS(turn("    __nv_atomic_store_n(counter, 1, __NV_ATOMIC_RELAXED,\n"
                                 "                        __NV_THREAD_SCOPE_DEVICE);\n"),
                            rule),
                   "has 0 fence(s)");
    assert_refused(PROBLEMS(turn("    __nv_atomic_store_n(counter, 1, __NV_ATOMIC_RELEASE,\n"
                                 "                        __NV_THREAD_SCOPE_BLOCK);\n"),
                            rule),
                   "uses cuda::thread_scope_block");
    /* A fence is no access. */
    assert_refused(PROBLEMS(turn("    __nv_atomic_thread_fence(__NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE);\n"
                                 "    *counter = 1;\n"),
                            rule),
                   "has 0 atomic or volatile access(es)");
    assert_refused(PROBLEMS(turn("    __threadfence();\n    atomicExch_block(counter, 1);\n"), rule),
                   "atomicXxx_block()");
    assert_refused(PROBLEMS(turn("    cuda::atomic_ref<int, cuda::thread_scope_cluster>(*counter)\n"
                                 "        .store(1, cuda::memory_order_release);\n"),
                            rule),
                   "_cluster");
    assert_accepted(PROBLEMS(turn("    __threadfence();\n    atomicExch_system(counter, 1);\n"), rule));
    /* Block scope is right for the block's own counter. */
    assert_accepted(PROBLEMS(turn("    atomicAdd_block(counter, 1);\n"),
                             {"turn", .fresh_accesses = 1, .scope = WB_BLOCK_SCOPE, .why = "block"}));
    assert_refused(PROBLEMS(turn("    __nv_atomic_store_n(counter, 1, __NV_ATOMIC_RELEASE,\n"
                                 "                        __NV_THREAD_SCOPE_DEVICE);\n"),
                            HOST_RULE),
                   "narrower than the system");
}

/* Inline PTX: the instructions of an asm statement's strings count like the
 * C++ they stand for, scope included; a string elsewhere counts nothing. */
Test(source_rules, inline_ptx_counts)
{
    const wb_source_rule rule = {"turn", .orderings = 1, .fresh_accesses = 1, .why = "device"};
#define PTX_STORE(ins) "    asm volatile(\"" ins " [%0], %1;\" :: \"l\"(counter), \"r\"(1) : \"memory\");\n"
    assert_accepted(PROBLEMS(turn(PTX_STORE("st.release.gpu.global.u32")), rule));
    assert_accepted(PROBLEMS(turn("    asm volatile(\"fence.acq_rel.gpu;\\n\\t\"\n"
                                  "                 \"st.relaxed.gpu.global.u32 [%0], %1;\"\n"
                                  "                 :: \"l\"(counter), \"r\"(1) : \"memory\");\n"),
                             rule));
    assert_accepted(PROBLEMS(turn("    asm volatile(\"membar.gl;\" ::: \"memory\");\n"
                                  PTX_STORE("st.volatile.global.u32")),
                             rule));
    assert_refused(PROBLEMS(turn(PTX_STORE("st.relaxed.gpu.global.u32")), rule), "has 0 fence(s)");
    assert_refused(PROBLEMS(turn(PTX_STORE("st.global.u32")), rule), "has 0 fence(s)");
    assert_refused(PROBLEMS(turn("    asm volatile(\"membar.cta;\" ::: \"memory\");\n"
                                 PTX_STORE("st.volatile.global.u32")),
                            rule),
                   "has 0 fence(s)");
    assert_refused(PROBLEMS(turn(PTX_STORE("st.release.cta.global.u32")), rule), "PTX's .cta");
    assert_accepted(PROBLEMS(turn(PTX_STORE("st.release.sys.global.u32")), HOST_RULE));
    assert_refused(PROBLEMS(turn(PTX_STORE("st.release.gpu.global.u32")), HOST_RULE),
                   "narrower than the system");
    assert_refused(PROBLEMS(turn("    const char *s = \"st.release.gpu\";\n    *counter = 1;\n"),
                            rule),
                   "has 0 fence(s)");
#undef PTX_STORE
}

/* An atomic_ref variable used as a plain int: its assignment is a seq_cst
 * store, its reading a seq_cst load, ++ a seq_cst read-modify-write. */
Test(source_rules, a_plain_use_of_an_atomic_variable_is_seq_cst)
{
    const wb_source_rule rule = {"turn", .orderings = 1, .fresh_accesses = 1, .why = "device"};
    assert_accepted(PROBLEMS(turn("    device_int f(*counter);\n    f = 1;\n"), rule));
    assert_accepted(PROBLEMS(turn("    cuda::atomic_ref<int, cuda::thread_scope_device> f(*counter);\n"
                                  "    while (f == 0)\n        ;\n"),
                             rule));
    assert_accepted(PROBLEMS(turn("    device_int f{*counter};\n    ++f;\n"),
                             {"turn", .orderings = 2, .fresh_accesses = 1, .why = "rmw"}));
    /* Its declaration, its address and its relaxed members count nothing. */
    assert_refused(PROBLEMS(turn("    device_int f(*counter);\n"
                                 "    f.store(1, cuda::memory_order_relaxed);\n"
                                 "    device_int *g = &f;\n"),
                            rule),
                   "has 0 fence(s)");
    /* A member of the same name is another thing (lab 07: head(ring->head)). */
    assert_refused(PROBLEMS(turn("    struct { int f; } *ring = 0;\n"
                                 "    device_int f(ring->f);\n"
                                 "    f.store(ring->f, cuda::memory_order_relaxed);\n"),
                            rule),
                   "has 0 fence(s)");
    /* In its place: the declaration may come before. */
    const wb_source_rule placed = {"turn", .fence_after = "work", .why = "after work"};
    assert_accepted(problems_of(turn("    device_int f(*counter);\n    work();\n    f = 1;\n"),
                                &placed, 1));
    assert_refused(problems_of(turn("    device_int f(*counter);\n    f = 1;\n    work();\n"),
                               &placed, 1),
                   "wrong place");
    /* A block-scope variable is still too narrow. */
    assert_refused(PROBLEMS(turn("    block_int f(*counter);\n    f = 1;\n"), rule),
                   "thread_scope_block");
}

/* A system rule with a place checks the scope there only: the GPU's own
 * hand-offs before it may be of device scope. */
Test(source_rules, a_system_place_checks_the_scope_there)
{
    const wb_source_rule rule = {"turn", .fence_after = "work", .scope = WB_SYSTEM_SCOPE,
                                 .why = "host"};
    assert_accepted(problems_of(turn("    device_int(counter[1]).store(1);\n"
                                     "    work();\n"
                                     "    system_int(*counter).store(1, cuda::memory_order_release);\n"),
                                &rule, 1));
    assert_refused(problems_of(turn("    system_int(counter[1]).store(1);\n"
                                    "    work();\n"
                                    "    device_int(*counter).store(1, cuda::memory_order_release);\n"),
                               &rule, 1),
                   "narrower than the system after work");
}

Test(source_rules, a_decoy_definition_does_not_count)
{
    assert_refused(PROBLEMS(preprocessed("namespace unused {\n"
                                         "__device__ void publish(int *v, int *f) {\n"
                                         "    __threadfence(); atomicExch(f, 1);\n"
                                         "} }\n"
                                         "__device__ void publish(int *v, int *f) {\n"
                                         "    *v = 1; atomicExch(f, 1);\n"
                                         "}\n"),
                            {"publish", .orderings = 1, .fresh_accesses = 1, .why = ""}),
                   "has 0 fence(s)");
}

Test(source_rules, headers_do_not_count)
{
    assert_refused(PROBLEMS(preprocessed("__device__ void publish(int *v, int *f) {\n"
                                         "    *v = 1; header_helper(); atomicExch(f, 1);\n"
                                         "}\n"),
                            {"publish", .orderings = 1, .fresh_accesses = 1, .why = ""}),
                   "has 0 fence(s)");
}

Test(source_rules, every_architecture_is_judged)
{
    char both[4096];
    char *with = preprocessed("__device__ void publish(int *v, int *f) "
                              "{ *v = 1; __threadfence(); atomicExch(f, 1); }\n");
    char *without = preprocessed("__device__ void publish(int *v, int *f) "
                                 "{ *v = 1; atomicExch(f, 1); }\n");
    snprintf(both, sizeof both, "%s:%s", with, without);
    free(with);
    const char *problems = problems_of(strdup(both), (const wb_source_rule[]){
        {"publish", .orderings = 1, .fresh_accesses = 1, .why = ""}}, 1);
    unlink(without);
    free(without);
    assert_refused(problems, "has 0 fence(s)");
}

/* ----------------------------------------------------------- barriers */

#define TILE_RULE                                                                    \
    {"tiled", .barriers = 2, .shared = "__shared__",                                \
     .protects = WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ, .why = "tile barriers"}

/* The matmul's tiled loop, with BEFORE_READ between the stores and the
 * reads, AFTER_READ after the reads, END after the loop. */
static char *tiled(const char *before_read, const char *after_read, const char *end)
{
    char code[2048];
    snprintf(code, sizeof code,
             "__device__ void wait_for_block() { __syncthreads(); }\n"
             "__global__ void tiled(const float *A, float *C, int k) {\n"
             "    __attribute__((shared)) float As[16][16], Bs[16][16];\n"
             "    int tx = threadIdx.x, ty = threadIdx.y;\n"
             "    float sum = 0.0f;\n"
             "    for (int phase = 0; phase < k / 16; phase++) {\n"
             "        As[ty][tx] = A[phase * 16 + tx];\n"
             "        Bs[ty][tx] = A[phase * 16 + ty];\n"
             "        %s\n"
             "        for (int i = 0; i < 16; i++)\n"
             "            sum += As[ty][i] * Bs[i][tx];\n"
             "        %s\n"
             "    }\n"
             "    %s\n"
             "    C[ty * 16 + tx] = sum;\n"
             "}\n",
             before_read, after_read, end);
    return preprocessed(code);
}

Test(source_rules, barriers_in_place_pass)
{
    assert_accepted(PROBLEMS(tiled("__syncthreads();", "__syncthreads();", ""), TILE_RULE));
}

Test(source_rules, a_barrier_in_a_helper_counts)
{
    assert_accepted(PROBLEMS(tiled("wait_for_block();", "__syncthreads();", ""), TILE_RULE));
}

Test(source_rules, a_missing_barrier_with_an_extra_one_elsewhere_fails)
{
    assert_refused(PROBLEMS(tiled("", "__syncthreads();", "__syncthreads();"), TILE_RULE),
                   "between the write of its __shared__ memory at line 8 and the read at line 11");
    assert_refused(PROBLEMS(tiled("__syncthreads();", "", "__syncthreads();"), TILE_RULE),
                   "between the read of its __shared__ memory at line 11 and the write at line 7 "
                   "(in the loop's next iteration)");
}

Test(source_rules, a_barrier_under_a_branch_of_the_thread_does_not_count)
{
    assert_refused(PROBLEMS(tiled("if (tx < 8) __syncthreads();", "__syncthreads();", ""),
                            TILE_RULE),
                   "and the read at line 11");
    assert_refused(PROBLEMS(tiled("if (ty == 0) { __syncthreads(); }", "__syncthreads();", ""),
                            TILE_RULE),
                   "and the read at line 11");
}

Test(source_rules, a_barrier_under_a_uniform_branch_counts)
{
    assert_accepted(PROBLEMS(tiled("if (k > 0) __syncthreads();", "__syncthreads();", ""),
                             TILE_RULE));
}

/* A helper that given code calls with threadIdx.x: an if on that parameter
 * is divergent only when the rule says so (thread_parameter); without it the
 * parameter could be any value the block shares. */
Test(source_rules, a_barrier_under_a_branch_of_a_thread_parameter_does_not_count)
{
    const char *code = "__device__ void fold(int *sdata, unsigned tid) {\n"
                       "    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n"
                       "%s"
                       "    }\n"
                       "}\n";
    wb_source_rule fold = {"fold", .barriers = 1, .shared = "sdata",
                           .protects = WB_READ_AFTER_WRITE | WB_EACH_ITERATION,
                           .thread_parameter = 2, .why = ""};
    const char *inside = "        if (tid < s) {\n"
                         "            sdata[tid] += sdata[tid + s];\n"
                         "            __syncthreads();\n"
                         "        }\n";
    assert_tells_apart(code,
                       "        if (tid < s)\n"
                       "            sdata[tid] += sdata[tid + s];\n"
                       "        __syncthreads();\n",
                       inside, &fold, "between the write of sdata at line 4 and the read at line 4");
    fold.thread_parameter = 0;   // tid could be uniform: the barrier is then reached by all
    char text[1024];
    snprintf(text, sizeof text, code, inside);
    assert_accepted(problems_of(preprocessed(text), &fold, 1));
}

/* A tile that is loaded and then not read: the values come from global
 * memory again (WB_READ_BACK). */
Test(source_rules, a_tile_stored_and_never_read_back_fails)
{
    const char *code = "__global__ void blur(const float *in, float *out, int n) {\n"
                       "    __attribute__((shared)) float tile[256];\n"
                       "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "    tile[threadIdx.x] = in[i];\n"
                       "    __syncthreads();\n"
                       "    out[i] = %s;\n"
                       "}\n";
    const wb_source_rule used = {"blur", .shared = "__shared__", .protects = WB_READ_BACK,
                                 .why = ""};
    assert_tells_apart(code, "tile[threadIdx.x] + tile[(threadIdx.x + 1) % 256]",
                       "in[i] + in[(i + 1) % n]", &used,
                       "stores its __shared__ memory but never reads it back");
}

/* The stage's technique, named by the calls that make it (uses): in the
 * function or in a helper of the file that it calls. */
Test(source_rules, a_technique_is_one_of_its_calls)
{
    const char *code = "__device__ float shifted(float v) { return %s; }\n"
                       "__global__ void march(const float *in, float *out) {\n"
                       "    float v = in[threadIdx.x];\n"
                       "    out[threadIdx.x] = shifted(v);\n"
                       "}\n";
    const wb_source_rule shuffles = {"march", .uses = "__shfl_up_sync __shfl_down_sync",
                                     .why = ""};
    assert_tells_apart(code, "__shfl_down_sync(0xffffffffu, v, 1)", "v + 1.0f", &shuffles,
                       "calls none of __shfl_up_sync __shfl_down_sync");
}

/* A word of `uses` written .name counts as a member call only: a
 * cooperative group's warp.shfl_down(v, 1), not a helper of the file that
 * is merely called shfl_down. */
Test(source_rules, a_technique_may_be_a_member_call)
{
    const char *code = "__device__ float shfl_down(float v, int) { return v + 1.0f; }\n"
                       "__global__ void march(const float *in, float *out) {\n"
                       "    cg::thread_block_tile<32> warp = "
                       "cg::tiled_partition<32>(cg::this_thread_block());\n"
                       "    float v = in[threadIdx.x];\n"
                       "    out[threadIdx.x] = %s;\n"
                       "}\n";
    const wb_source_rule shuffles = {"march", .uses = "__shfl_down_sync .shfl_down", .why = ""};
    assert_tells_apart(code, "warp.shfl_down(v, 1)", "shfl_down(v, 1)", &shuffles,
                       "calls none of __shfl_down_sync .shfl_down");
}

Test(source_rules, a_level_loop_needs_a_barrier_each_iteration)
{
    const wb_source_rule sweep = {"up_sweep", .barriers = 1, .shared = "s",
                                  .protects = WB_EACH_ITERATION, .why = ""};
    assert_accepted(problems_of(preprocessed("__device__ void up_sweep(unsigned *s, unsigned n) {\n"
                                             "    unsigned tid = threadIdx.x;\n"
                                             "    for (unsigned d = 1; d < n; d *= 2) {\n"
                                             "        __syncthreads();\n"
                                             "        if (tid < n / (2 * d))\n"
                                             "            s[d * (2 * tid + 2) - 1] += "
                                             "s[d * (2 * tid + 1) - 1];\n"
                                             "    }\n"
                                             "}\n"),
                                &sweep, 1));
    assert_refused(problems_of(preprocessed("__device__ void up_sweep(unsigned *s, unsigned n) {\n"
                                            "    unsigned tid = threadIdx.x;\n"
                                            "    __syncthreads();\n"
                                            "    for (unsigned d = 1; d < n; d *= 2) {\n"
                                            "        if (tid < n / (2 * d)) {\n"
                                            "            __syncthreads();\n"
                                            "            s[d * (2 * tid + 2) - 1] += "
                                            "s[d * (2 * tid + 1) - 1];\n"
                                            "        }\n"
                                            "    }\n"
                                            "}\n"),
                               &sweep, 1),
                   "each iteration of the loop at line 4");
}

Test(source_rules, a_pointer_into_the_tile_is_the_tile)
{
    const wb_source_rule scan = {"scan", .barriers = 1, .shared = "buffers",
                                 .protects = WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ, .why = ""};
    const char *code = "__device__ unsigned scan(unsigned *buffers, unsigned x) {\n"
                       "    unsigned tid = threadIdx.x;\n"
                       "    unsigned *from = buffers, *to = buffers + blockDim.x;\n"
                       "    from[tid] = x;\n"
                       "    %s\n"
                       "    for (unsigned offset = 1; offset < blockDim.x; offset *= 2) {\n"
                       "        to[tid] = tid >= offset ? from[tid] + from[tid - offset] : "
                       "from[tid];\n"
                       "        __syncthreads();\n"
                       "        unsigned *swap = from; from = to; to = swap;\n"
                       "    }\n"
                       "    return from[tid];\n"
                       "}\n";
    char text[2048];
    snprintf(text, sizeof text, code, "__syncthreads();");
    assert_accepted(problems_of(preprocessed(text), &scan, 1));
    snprintf(text, sizeof text, code, "");
    assert_refused(problems_of(preprocessed(text), &scan, 1),
                   "between the write of buffers at line 4 and the read at line 7");
}

Test(source_rules, a_shared_scalar_and_an_atomic_on_it)
{
    const wb_source_rule block = {"per_block", .barriers = 2, .shared = "__shared__",
                                  .protects = WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ,
                                  .why = ""};
    const char *code = "__global__ void per_block(int *out) {\n"
                       "    __attribute__((shared)) int partial;\n"
                       "    if (threadIdx.x == 0)\n"
                       "        partial = 0;\n"
                       "    __syncthreads();\n"
                       "    atomicAdd(&partial, 1);\n"
                       "    %s\n"
                       "    if (threadIdx.x == 0)\n"
                       "        atomicAdd(out, partial);\n"
                       "    __syncthreads();\n"
                       "}\n";
    char text[2048];
    snprintf(text, sizeof text, code, "__syncthreads();");
    assert_accepted(problems_of(preprocessed(text), &block, 1));
    snprintf(text, sizeof text, code, "");
    assert_refused(problems_of(preprocessed(text), &block, 1),
                   "between the write of its __shared__ memory at line 6 and the read at line 9");
}

/* A block's histogram: atomics on the bins need no barrier between them
 * (the counting loop), only between them and the plain clear and merge. */
Test(source_rules, atomics_need_barriers_only_from_plain_accesses)
{
    const wb_source_rule bins = {"histogram", .shared = "__shared__",
                                 .protects = WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ,
                                 .why = ""};
    const char *code = "__global__ void histogram(const unsigned char *d, int n, unsigned *out) {\n"
                       "    __attribute__((shared)) unsigned counts[256];\n"
                       "    for (int b = threadIdx.x; b < 256; b += blockDim.x)\n"
                       "        counts[b] = 0;\n"
                       "    %s\n"
                       "    for (int i = threadIdx.x; i < n; i += blockDim.x)\n"
                       "        atomicAdd(&counts[d[i]], 1u);\n"
                       "    %s\n"
                       "    for (int b = threadIdx.x; b < 256; b += blockDim.x)\n"
                       "        atomicAdd(&out[b], counts[b]);\n"
                       "}\n";
    char text[2048];
    snprintf(text, sizeof text, code, "__syncthreads();", "__syncthreads();");
    assert_accepted(problems_of(preprocessed(text), &bins, 1));
    snprintf(text, sizeof text, code, "__syncthreads();", "");
    assert_refused(problems_of(preprocessed(text), &bins, 1),
                   "between the write of its __shared__ memory at line 7 and the read at line 10");
    snprintf(text, sizeof text, code, "", "__syncthreads(); __syncthreads();");
    assert_refused(problems_of(preprocessed(text), &bins, 1),
                   "between the write of its __shared__ memory at line 4 and the read at line 7");
}

Test(source_rules, a_barrier_after_an_early_return_of_some_threads_does_not_count)
{
    assert_refused(PROBLEMS(tiled("if (tx >= k) return; __syncthreads();", "__syncthreads();",
                                  ""),
                            TILE_RULE),
                   "and the read at line 11");
}

Test(source_rules, a_decoy_helper_does_not_count)
{
    assert_refused(PROBLEMS(preprocessed("namespace decoy {\n"
                                         "__device__ void raise_flag(int *f) "
                                         "{ __threadfence(); atomicExch(f, 1); } }\n"
                                         "__device__ void raise_flag(int *f) { atomicExch(f, 1); }\n"
                                         "__device__ void publish(int *v, int *f) {\n"
                                         "    *v = 1; raise_flag(f);\n"
                                         "}\n"),
                            {"publish", .orderings = 1, .fresh_accesses = 1, .why = ""}),
                   "has 0 fence(s)");
    assert_refused(PROBLEMS(preprocessed("namespace decoy { __device__ void wait_for_block() "
                                         "{ __syncthreads(); } }\n"
                                         "__device__ void wait_for_block() { }\n"
                                         "__global__ void tiled(float *out) {\n"
                                         "    __attribute__((shared)) float t[32];\n"
                                         "    t[threadIdx.x] = 1.0f;\n"
                                         "    wait_for_block();\n"
                                         "    out[threadIdx.x] = t[31 - threadIdx.x];\n"
                                         "    __syncthreads();\n"
                                         "    __syncthreads();\n"
                                         "}\n"),
                            TILE_RULE),
                   "between the write of its __shared__ memory at line 5 and the read at line 7");
}

Test(source_rules, a_variable_named_like_a_function_is_no_call)
{
    assert_refused(PROBLEMS(preprocessed("struct Other { __device__ void lock(int *w) "
                                         "{ __threadfence(); } };\n"
                                         "struct Lock { __device__ void lock(int *w) {\n"
                                         "    atomic_ref<int> lock(*w);\n"
                                         "    while (atomicCAS(w, 0, 1)) ;\n"
                                         "} };\n"),
                            {"Lock::lock", .orderings = 1, .fresh_accesses = 1, .why = ""}),
                   "has 0 fence(s)");
}

/* Honest ways to write the tiled loop: each must pass. */
Test(source_rules, honest_styles_pass)
{
    static const char *const styles[] = {
        // cooperative groups, other names, a loop without braces
        "__global__ void tiled(const float *A, float *C, int k) {\n"
        "    cg::thread_block block = cg::this_thread_block();\n"
        "    __attribute__((shared)) float sA[16][16];\n"
        "    __attribute__((shared)) float sB[16][16];\n"
        "    float acc = 0;\n"
        "    for (int p = 0; p < k; p += 16) {\n"
        "        sA[threadIdx.y][threadIdx.x] = A[p + threadIdx.x];\n"
        "        sB[threadIdx.y][threadIdx.x] = A[p + threadIdx.y];\n"
        "        block.sync();\n"
        "#pragma unroll\n"
        "        for (int i = 0; i < 16; ++i) acc += sA[threadIdx.y][i] * sB[i][threadIdx.x];\n"
        "        cg::sync(block);\n"
        "    }\n"
        "    C[threadIdx.x] = acc;\n"
        "}\n",
        // one dynamic buffer cut in two, a while loop, loads guarded per thread
        "__global__ void tiled(const float *A, float *C, int k) {\n"
        "    extern __attribute__((shared)) float smem[];\n"
        "    float *As = smem, *Bs = smem + 256;\n"
        "    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * 16 + ty;\n"
        "    float sum = 0.0f; int p = 0;\n"
        "    while (p < k) {\n"
        "        if (row < k) As[ty * 16 + tx] = A[row * k + p + tx]; else As[ty * 16 + tx] = 0;\n"
        "        Bs[ty * 16 + tx] = row < k ? A[(p + ty) * k + tx] : 0.0f;\n"
        "        __syncthreads();\n"
        "        for (int i = 0; i < 16; i++) { sum += As[ty * 16 + i] * Bs[i * 16 + tx]; }\n"
        "        __syncthreads();\n"
        "        p += 16;\n"
        "    }\n"
        "    if (row < k) C[row * k + tx] = sum;\n"
        "}\n",
        // the loads and the barrier in helpers, the tile passed to them
        "__device__ void load(float (*t)[16], const float *src) "
        "{ t[threadIdx.y][threadIdx.x] = src[threadIdx.x]; }\n"
        "__device__ float dot(float (*a)[16], float (*b)[16]) {\n"
        "    float s = 0; for (int i = 0; i < 16; i++) s += a[threadIdx.y][i] * b[i][threadIdx.x];\n"
        "    return s;\n"
        "}\n"
        "__device__ void barrier() { __syncthreads(); }\n"
        "__global__ void tiled(const float *A, float *C, int k) {\n"
        "    __attribute__((shared)) float As[16][16], Bs[16][16];\n"
        "    float sum = 0;\n"
        "    for (int p = 0; p < k; p += 16) {\n"
        "        load(As, A + p); load(Bs, A + p * k);\n"
        "        barrier();\n"
        "        sum += dot(As, Bs);\n"
        "        barrier();\n"
        "    }\n"
        "    C[threadIdx.x] = sum;\n"
        "}\n",
    };
    for (size_t i = 0; i < sizeof styles / sizeof styles[0]; i++) {
        const char *problems = PROBLEMS(preprocessed(styles[i]), TILE_RULE);
        cr_assert(!problems[0], "honest style %zu refused: %s", i, problems);
    }
}
