/*
 * wb_test.h - what a lab's Criterion test adds on top of workbook.h.
 *
 *   WB_GPU_SUITE(my_lab, .timeout = 60);
 *
 * declares a suite whose tests skip with a one-line reason on a machine
 * without a usable GPU. Linking wb_test.c also routes every workbook failure
 * (CUDA_CHECK, wb_fail) into a failure of the running test.
 *
 * Observations. Every value a test gets from the code under test (a device
 * buffer copied back, a returned count, an error message, what it printed, a
 * time) enters the test through one wb_observe* call, before any check
 * looks at it. On a student's machine these calls do nothing: the test runs
 * in one process and checks as it goes. The autograder runs each test twice
 * (grading/README.md, "Verdicts"):
 *   - record (WB_CHANNEL=SOCKET): the submission's binary runs the test and
 *     each observation is also sent to the grader (wb_channel.h), which
 *     writes one recording per test case in its own folder;
 *   - judge (WB_JUDGE=DIR, WB_JUDGE_OUT=OUT): the reference's binary, which
 *     the submission never runs in, runs the same test on the same inputs
 *     (the same WB_SEED) and each observation *returns the submission's
 *     recorded value instead of its own*, so that every check of test.c
 *     decides on the submission's results in a trusted process.
 * A value that reaches a check without an observation would be judged on
 * the reference's value: `tests/planted_bugs.py run --judge` catches such a
 * test (a planted bug that fails in-process but passes the judge).
 * Labels (`what`) must not depend on the results: they are matched in order.
 */
#ifndef WB_TEST_H
#define WB_TEST_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <criterion/redirect.h>
#include <inttypes.h>
#include <setjmp.h>

#include "workbook.h"

/* A suite's .init and .fini: skip the test when there is no usable GPU, and
 * in grading open and close the test case's recording. */
void wb_test_begin(void);
void wb_test_end(void);

/* The recording's part of wb_test_begin alone, for a CPU-only suite
 * (tests/test_observe.c, the repository's check of the observations). */
void wb_case_begin(void);

#define WB_GPU_SUITE(suite_name, ...) \
    TestSuite(suite_name, .init = wb_test_begin, .fini = wb_test_end, __VA_ARGS__)

/* The same, for tests that need an environment variable that CUDA reads
 * once, when the process first calls it (CUDA_DEVICE_MAX_CONNECTIONS):
 * it is set before the suite's GPU check, which is that first call. A
 * test's own .init runs after the suite's, too late for such variables. */
#define WB_GPU_SUITE_WITH_ENV(suite_name, variable, value, ...)       \
    static void suite_name##_begin(void)                              \
    {                                                                 \
        setenv(variable, value, 1);                                   \
        wb_test_begin();                                              \
    }                                                                 \
    TestSuite(suite_name, .init = suite_name##_begin, .fini = wb_test_end, __VA_ARGS__)

/* True when the tests run under compute-sanitizer (WB_TIMEOUT_SCALE > 1,
 * set by tests/sanitize_references.py and grade --sanitize): there a spin
 * loop or a long chain of hand-offs runs ten to a hundred times slower, and
 * a test whose size only adds time may shrink it (the tool checks the
 * pattern, not the count). */
bool wb_under_sanitizer(void);

/* Waits for the GPU work queued so far (every blocking stream's: a mark on
 * the legacy default stream). A kernel that never ends would hold the test
 * until Criterion's timeout, whose "The test timed out" names nothing: these
 * give up shortly before the test's limit (its .timeout, else its suite's).
 * wb_gpu_done_in_time returns false then; wb_fail_hung fails the test,
 * saying what did not finish and, in waits_for, what its threads wait for
 * (a sentence: "a participant spins forever: ..."); wb_wait_for_gpu is the
 * two in one. */
bool wb_gpu_done_in_time(void);
void wb_fail_hung(const char *what, const char *waits_for);
void wb_wait_for_gpu(const char *what, const char *waits_for);

/* ---------------------------------------------------------- observations */

/* bytes of host memory at host hold what the code under test produced. */
void wb_observe(const char *what, void *host, size_t bytes);
/* cudaMemcpy of a device result to host, then wb_observe. */
void wb_fetch(void *host, const void *device, size_t bytes, const char *what);
int wb_observe_int(const char *what, int value);
long long wb_observe_i64(const char *what, long long value);
double wb_observe_double(const char *what, double value);
/* A NUL-terminated message of at most capacity bytes (an error message). */
void wb_observe_str(const char *what, char *text, size_t capacity);
/* Everything written to stdout since cr_redirect_stdout(), as a string the
 * caller frees; use it with cr_assert_str_eq instead of cr_assert_stdout_*. */
char *wb_observe_stdout(const char *what);

/* ----------------------------------------------------- expecting an error */

/* `call` (a statement) must fail through wb_fail or CUDA_CHECK with a
 * message that mentions `about`, as the given code's argument checks do.
 * The message is an observation labelled `what`; any later error fails the
 * test as usual.
 *     wb_expect_error("matmul(m = -1)", "negative", matmul(0, 0, A, B, C, -1, 4, 4));
 */
#define wb_expect_error(what, about, call)          \
    do {                                            \
        if (setjmp(*wb_catch_errors()) == 0) {      \
            call;                                   \
            CUDA_CHECK(cudaDeviceSynchronize());    \
        }                                           \
        wb_check_error_message((what), (about));    \
    } while (0)

jmp_buf *wb_catch_errors(void);
void wb_check_error_message(const char *what, const char *about);

/* ---------------------------------------------------------- guard zones */

/* Device memory with WB_GUARD_BYTES of guard zone before the bytes asked
 * for and unmapped memory after them (past the padding to a multiple of 16
 * bytes), guard zone and padding filled with 0xFF bytes (NaN as floats, -1 as
 * ints): a read before the start of an input feeds NaN or -1 into what it
 * computes, a write before the start of an output (or into the padding)
 * shows in wb_guarded_check, and any access past the end faults with an
 * illegal address. Free with wb_guarded_free. */
#define WB_GUARD_BYTES 4096
void *wb_guarded_malloc(size_t bytes);
/* Fails the test, naming `what`, when a guard zone of p was written; the
 * guard zones are observations (they come from the code under test). */
void wb_guarded_check(const void *p, const char *what);
void wb_guarded_free(void *p);

/* Every SM's shared memory filled with 0xFF bytes (NaN, -1), so that a
 * kernel launched next that reads shared memory it never wrote often reads
 * that instead of a harmless leftover: often, not always (dirty_shared.cu;
 * a change of the shared-memory carve-out between the two kernels may clear
 * it, so the tests still order block sizes so that leftovers are wrong). */
void wb_dirty_shared_memory(void);

/* ----------------------------------------------------- runtime call log */

/* The test binaries are linked with --wrap for the runtime's kernel
 * launches and for cudaMemPrefetchAsync (common/meson.build): each such call
 * of the process is logged, in the order issued, so that a test can check
 * where a call stands (a prefetch before or after the kernel it serves),
 * which no result shows. The log keeps the first WB_CALL_LOG_SIZE calls
 * since wb_call_log_clear(); pointers differ between processes, so a test
 * observes what it makes of them (wb_observe_str), not the log. */
#define WB_CALL_LOG_SIZE 64
typedef enum { WB_CALL_LAUNCH, WB_CALL_PREFETCH } wb_call_kind;
typedef struct {
    wb_call_kind kind;
    const void *ptr;     /* a prefetch: its range, where to (a cudaMemLocationType) */
    size_t bytes;
    int location_type;
    cudaStream_t stream;   /* either: the stream it was issued on */
} wb_runtime_call;
void wb_call_log_clear(void);
/* The calls logged since the last clear (*count of them, at most
 * WB_CALL_LOG_SIZE); *more: how many came after the log was full. */
const wb_runtime_call *wb_call_log(size_t *count, size_t *more);

/* ------------------------------------- fresh inputs for every timed run */

/* What a graded timing test gives each timed repetition (wb_time_gpu_reps
 * in workbook.h): `calls` sets of buffers, each filled fresh from the
 * repetition's seed by before(), and results checked by after(). These are
 * the test's own kernels (common/fresh_inputs.cu): they do not count as
 * launches of the code under test. */

/* Element i = wb_hash_float(seed, i, lo, hi) (wb_hash_int), on the default
 * stream, asynchronously: the host recomputes any element with the same
 * inline function. */
void wb_fill_floats_on_gpu(float *device_ptr, size_t n, float lo, float hi, uint64_t seed);
void wb_fill_ints_on_gpu(int *device_ptr, size_t n, int lo, int hi, uint64_t seed);

/* How many buffer sets of set_bytes a timed repetition uses: `wanted`, or
 * as many as fit in half of device 0's TOTAL memory where fewer do (the
 * total, not the free memory, so that the submission's process and the
 * judge's choose the same), and at least 1. */
int wb_buffer_sets(int wanted, size_t set_bytes);

/* Where to check an output of n elements: writes min(n, count) positions
 * and returns that number; every position when n <= count, else the first,
 * the last and the others drawn from seed, in increasing order (repeats
 * possible). */
size_t wb_sample_positions(size_t *positions, size_t count, size_t n, uint64_t seed);

/* The elements (element_bytes each) of the device array at positions,
 * fetched in one copy and observed as `what` into got. own, unless NULL,
 * receives this process's values first, before the observation replaces
 * them: in the judge these are the reference's results on the same inputs,
 * what to compare the submission's with where a CPU value costs too much. */
void wb_fetch_sample(void *got, void *own, const void *device, size_t element_bytes,
                     const size_t *positions, size_t count, const char *what);

/* The label of call `call` of timed run `run` (both counted from 0), for
 * its observation and messages: "timed run 3 of 10, call 5 of 64: out". */
void wb_timed_call_label(char *what, size_t capacity, int run, int runs, int call, int calls,
                         const char *output);

/* Why a timed call's result is wrong, for the end of its failure message:
 * an output never written (a call skipped), or one that is not from this
 * run's inputs (a result reused). */
const char *wb_timed_call_mistake(bool never_written);

/* The time that a performance grade uses. bytes and flops: the work one
 * repetition does (DRAM bytes read + written, floating-point operations),
 * from which the judge computes the least time this work can take on this
 * GPU (over the copy bandwidth and the FP32 peak). The judge keeps its own
 * measurement as the reference's, writes both to WB_JUDGE_OUT/timings.csv
 * and returns the submission's, so that the table it prints is the
 * submission's. */
wb_timing wb_observe_timing(const char *what, wb_timing t, double bytes, double flops);

/* ---------------------------------------------------------- source rules */

/* Some mistakes give right answers on nearly every run of a given GPU: a
 * fence left out or made block-wide, release/acquire made relaxed, a
 * volatile or an atomic dropped from a hand-off, a barrier missing or in the
 * wrong place, whose race the hardware happens to hide. For those a lab also
 * reads the kernels.cu under test, function by function, as the compiler
 * sees it (nvcc -E with the lab's flags: macros expanded, #if decided; the
 * grader's for each GPU architecture it builds), and a function's body with
 * the bodies of the functions it calls from kernels.cu (common/wb_rules.c
 * and wb_barriers.c say exactly what counts):
 *
 *     WB_SOURCE_RULES_TEST(source_rules, stage2_memory_order,
 *         {"push", .orderings = 1, .fresh_accesses = 2,
 *          .why = "without a fence before the flag, ..."})
 *     WB_SOURCE_RULES_TEST(source_rules, stage3_barriers,
 *         {"matmul_tiled", .shared = "As Bs", .protects = WB_READ_AFTER_WRITE |
 *          WB_WRITE_AFTER_READ, .why = "a barrier after the tiles are stored ..."})
 *
 * in a suite declared with WB_SOURCE_SUITE: it needs no GPU. The counts are
 * the least a correct version of the function has. `shared` names the
 * function's shared memory (arrays, or pointers to them, as the function
 * names them); `protects` says which of its accesses a block-wide barrier
 * (__syncthreads, not inside an if that depends on the thread) must
 * separate: every read from the writes before it, every write from the
 * reads before it (a loop's body is taken twice, so that one iteration's
 * reads come before the next one's writes), and each iteration of a loop
 * that writes it from the next. `fence_after` and `fence_before` say where
 * one of the orderings must stand, by the words around it: after the first
 * `fence_after` in the function's body (a call such as "take_turn"), and
 * before the end of the statement that holds the first `fence_before` after
 * that ("atomicAdd"); either may be left out (the body's start, its end).
 * `after_barrier` asks for the hand-off past the first block-wide barrier
 * in that place, not before it (a flag that says the block's work is done
 * is raised after the barrier that waits for every thread's share): an
 * ordering or an atomic or volatile access before the barrier with none
 * past it fails; none on either side is another way of writing it. Where the body has no such word or
 * barrier (another way of writing it), that place is not checked. `thread_parameter` (1 for the first) names a parameter
 * whose value depends on the thread where the function is called (given
 * code passes threadIdx.x as tid), so that an if on it is divergent too.
 * `uses` lists calls (words separated by spaces) of which the function, or
 * a helper it calls from the file, makes one at least: the stage's own
 * technique (a shuffle, the fast reciprocal square root), which no result
 * shows. `why` names the mistake for the learner. */
typedef enum { WB_DEVICE_SCOPE, WB_BLOCK_SCOPE, WB_SYSTEM_SCOPE } wb_scope;
enum {
    WB_READ_AFTER_WRITE = 1,   /* a barrier between a write and every later read */
    WB_WRITE_AFTER_READ = 2,   /* a barrier between a read and every later write */
    WB_EACH_ITERATION = 4,     /* a barrier in every iteration of a loop that writes it */
    WB_READ_BACK = 8,          /* what is stored there is read back (the tile is used) */
};
typedef struct {
    const char *function;   /* "name", or "Struct::name" for a member function */
    int orderings;          /* fences and acquire/release operations, at least */
    int fresh_accesses;     /* volatile, atomic and atomic_ref accesses, at least */
    int barriers;           /* __syncthreads / __syncwarp calls, at least */
    wb_scope scope;         /* what the hand-off reaches (device by default): block, where
                               __threadfence_block() counts as a fence; system (the
                               host), where thread_scope_device and __threadfence()
                               are too narrow */
    const char *shared;     /* the shared memory the barriers protect, names separated by spaces */
    int protects;           /* WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ | WB_EACH_ITERATION */
    const char *fence_after, *fence_before;   /* where an ordering must stand (words) */
    bool after_barrier;     /* ... and past the first block-wide barrier there */
    int thread_parameter;   /* 1 the first...: its callers pass a value of the thread (tid) */
    const char *uses;       /* calls, separated by spaces: the function calls one at least;
                               .name: a member call only (a cooperative group's tile.shfl_up) */
    const char *why;        /* the mistake, in the learner's words */
} wb_source_rule;

/* The preprocessed kernels.cu this test binary was built from (meson makes
 * it and passes its path; a list of paths is separated by ':'); the
 * environment variable WB_KERNELS_PREPROCESSED names others (the grader's
 * judge reads the submission's, made in the sandbox of its compile). */
void wb_check_source_rules_in(const char *preprocessed, const wb_source_rule *rules, size_t n);
#define WB_CHECK_SOURCE_RULES(rules) \
    wb_check_source_rules_in(WB_KERNELS_PREPROCESSED_PATH, (rules), sizeof(rules) / sizeof(rules)[0])
/* A test that checks the rules given after its name (the table above). */
#define WB_SOURCE_RULES_TEST(suite_name, test_name, ...)                  \
    static const wb_source_rule test_name##_rules[] = {__VA_ARGS__};   \
    Test(suite_name, test_name) { WB_CHECK_SOURCE_RULES(test_name##_rules); }
#define WB_SOURCE_SUITE(suite_name) \
    TestSuite(suite_name, .init = wb_case_begin, .fini = wb_test_end)

#define WB_SEED_HINT "(replay with WB_SEED=%" PRIu64 ")"

/* Exact comparison of n ints: on failure the message names what was
 * compared, the first mismatches, a hint and the seed. */
#define wb_assert_ints_equal(got, expected, n, what)                                   \
    do {                                                                               \
        char wb_report_[1024];                                                         \
        size_t wb_bad_ = wb_compare_ints((got), (expected), (n), wb_report_,           \
                                         sizeof wb_report_);                           \
        cr_assert(wb_bad_ == 0, "%s: %s " WB_SEED_HINT, (what), wb_report_, wb_seed()); \
    } while (0)

/* Relative norm error of n floats against a double-precision reference. */
#define wb_assert_rel_error_below(got, expected, n, tolerance, what)                       \
    do {                                                                                   \
        double wb_err_ = wb_rel_error((got), (expected), (n));                             \
        if (!(wb_err_ < (tolerance))) {                                                    \
            char wb_report_[1024];                                                         \
            wb_describe_float_mismatch((got), (expected), (n), (tolerance), wb_report_,    \
                                       sizeof wb_report_);                                 \
            cr_assert_fail("%s: relative error %g, allowed %g; %s " WB_SEED_HINT, (what),  \
                           wb_err_, (double)(tolerance), wb_report_, wb_seed());          \
        }                                                                                  \
    } while (0)

#endif /* WB_TEST_H */
