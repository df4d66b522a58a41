/*
 * workbook.h - the small helper library every lab shares.
 *
 * Usable from C (tests, drivers) and from CUDA files (kernels.cu): everything
 * here has C linkage. Five groups, in the order a lab meets them:
 *
 *   1. CUDA error checks   CUDA_CHECK(call), CUDA_CHECK_LAUNCH()
 *   2. Device facts        wb_gpu_usable(), wb_device_info()
 *   3. Reproducible input  wb_seed(), wb_rng_*, wb_fill_*, wb_hash_*
 *   4. Comparison          wb_poison_*, wb_compare_ints(), wb_rel_error()
 *   5. Timing and tables   wb_time_gpu(), wb_gbps(), wb_copy_bandwidth_gbps(),
 *                          wb_table_*
 *
 * Error handling: every failure goes through one handler. Driver programs keep
 * the default one (print the message, exit 1); Criterion tests link
 * wb_test.c, which installs a handler that fails the running test instead.
 */
#ifndef WORKBOOK_H
#define WORKBOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- errors */

/* Receives a complete, human-readable message; must not return normally in
 * spirit (the default exits, the Criterion one aborts the test). */
typedef void (*wb_error_handler)(const char *message);
void wb_set_error_handler(wb_error_handler handler);

/* printf-style failure routed through the handler. */
void wb_fail(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Reports "file:line: call failed: cudaErrorName (description)". */
void wb_check_cuda(cudaError_t status, const char *call, const char *file, int line);

#define CUDA_CHECK(call) wb_check_cuda((call), #call, __FILE__, __LINE__)

/* After every kernel launch. A bad configuration (0 blocks, too many threads,
 * too much shared memory) is reported by cudaGetLastError at once; a fault
 * inside the kernel only shows up at the next synchronisation, so checking
 * builds (meson -Dchecking=true, which defines WB_SYNC_CHECK) synchronise
 * here to blame the right launch. */
#ifdef WB_SYNC_CHECK
#define CUDA_CHECK_LAUNCH()                                   \
    do {                                                      \
        CUDA_CHECK(cudaGetLastError());                       \
        CUDA_CHECK(cudaDeviceSynchronize());                  \
    } while (0)
#else
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
#endif

/* After launching a kernel that waits for the host (a persistent kernel fed
 * through mapped memory): the launch error only, in every build. Waiting for
 * such a kernel before feeding it would never end. (CUDA_LAUNCH_BLOCKING=1
 * makes the launch itself wait: such labs refuse to run under it.) */
#define CUDA_CHECK_LAUNCH_NO_WAIT() CUDA_CHECK(cudaGetLastError())

/* ---------------------------------------------------------- device facts */

typedef struct {
    char name[256];
    int major, minor;          /* compute capability */
    int sm_count;
    size_t global_mem_bytes;
    size_t l2_bytes;
    int max_threads_per_block;
    int max_threads_per_sm;    /* resident at once: 2048 on the H100, 1536 or 1024 elsewhere */
    int clock_khz;             /* the SM clock's peak (what peaks assume) */
    int memory_clock_khz, memory_bus_bits;
    double theoretical_bandwidth_gbps; /* 2 (double data rate) x clock x bus width */
} wb_device;

/* Oldest compute capability CUDA 13 can build for. */
#define WB_MIN_CC_MAJOR 7
#define WB_MIN_CC_MINOR 5

/* True when device 0 exists, answers, is new enough and this build has code
 * for it. Otherwise writes a one-line reason into reason: no NVIDIA driver,
 * a driver older than this CUDA, no GPU seen, "GPU ... is sm_60, older than
 * sm_75", or a GPU the build's gpu_arch left out (with the option that fixes
 * it). The answer is cached for the process. */
bool wb_gpu_usable(char *reason, size_t reason_len);

/* Facts about device 0; fails through the handler when there is none. */
wb_device wb_device_info(void);

/* ---------------------------------------------------- reproducible input */

/* The run's seed: $WB_SEED if set (decimal or 0x hex), else a fixed default,
 * so that runs are deterministic and any failure can be replayed with
 * WB_SEED=<printed value>. */
uint64_t wb_seed(void);

typedef struct {
    uint64_t state;
} wb_rng;

/* A generator for one named stream of the run's seed: tests that draw from
 * different streams get different data, and the same name gives the same
 * data again. */
wb_rng wb_rng_for(const char *stream);
wb_rng wb_rng_from_seed(uint64_t seed);
uint64_t wb_rng_u64(wb_rng *rng);
/* Uniform in [lo, hi] (both inclusive). */
int wb_rng_int(wb_rng *rng, int lo, int hi);
/* Uniform in [lo, hi). */
float wb_rng_float(wb_rng *rng, float lo, float hi);
void wb_fill_ints(int *out, size_t n, int lo, int hi, wb_rng *rng);
void wb_fill_floats(float *out, size_t n, float lo, float hi, wb_rng *rng);

/* Counter-based input: element `index` of the stream `seed` is a pure
 * function of the two, the same in host and device code (these are inline
 * twins), so that a test can fill gigabytes on the GPU (wb_test.h,
 * wb_fill_*_on_gpu) and recompute any single element on the host. It is
 * the (index + 1)-th draw of wb_rng_from_seed(seed): splitmix64. */
#ifdef __CUDACC__
#define WB_HOST_DEVICE __host__ __device__
#else
#define WB_HOST_DEVICE
#endif

static inline WB_HOST_DEVICE uint64_t wb_hash_u64(uint64_t seed, uint64_t index)
{
    uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi] (both inclusive), as wb_rng_int. */
static inline WB_HOST_DEVICE int wb_hash_int(uint64_t seed, uint64_t index, int lo, int hi)
{
    uint64_t span = (uint64_t)((int64_t)hi - (int64_t)lo) + 1;
    return (int)((int64_t)lo + (int64_t)(wb_hash_u64(seed, index) % span));
}

/* Uniform in [lo, hi), as wb_rng_float. One fused multiply-add, so that
 * host and device round alike (a separate multiply and add may be fused on
 * one side and not on the other). */
static inline WB_HOST_DEVICE float wb_hash_float(uint64_t seed, uint64_t index, float lo,
                                                 float hi)
{
    float unit = (float)(wb_hash_u64(seed, index) >> 40) * (1.0f / 16777216.0f);
    return fmaf(hi - lo, unit, lo);
}

/* ------------------------------------------------------------ comparison */

/* Byte used to poison int outputs: 0xA5A5A5A5 is an unlikely result. Float
 * outputs are poisoned with all-ones bytes, which is a NaN. */
#define WB_POISON_INT_BYTE 0xA5
#define WB_POISON_INT ((int)0xA5A5A5A5u)

/* Fill a device buffer so that elements a kernel never wrote stand out. */
void wb_poison_ints(int *device_ptr, size_t n);
void wb_poison_floats(float *device_ptr, size_t n);

/* Exact comparison. Returns the number of mismatches; when there are any,
 * writes a report into report: the count, the first few as
 * "index: got X, expected Y", and a hint when the pattern has a classic
 * cause (a tail of unwritten elements means the grid is too small). */
size_t wb_compare_ints(const int *got, const int *expected, size_t n,
                       char *report, size_t report_len);

/* ||got - expected|| / ||expected|| in double precision. NaN or Inf anywhere
 * in got gives +INFINITY, so it never passes a tolerance. When expected is
 * all zeros the absolute norm of the difference is returned. */
double wb_rel_error(const float *got, const double *expected, size_t n);

/* Describes where a float result went wrong (first bad indices, unwritten
 * elements) for a failure message. */
void wb_describe_float_mismatch(const float *got, const double *expected, size_t n,
                                double tolerance, char *report, size_t report_len);

/* ---------------------------------------------------------------- timing */

typedef struct {
    double min_ms, median_ms, max_ms;
    int warmup, repetitions;
} wb_timing;

typedef void (*wb_gpu_work)(void *context);

/* Runs work `warmup` times untimed, then `repetitions` times, each between a
 * pair of CUDA events on the default stream, and summarises the times. A
 * repetition that the host's clock, up to cudaDeviceSynchronize, finds much
 * longer than its events (work left running on a stream of its own, or
 * another process on the GPU) was not fully timed: that fails through
 * wb_fail where the environment sets WB_STRICT_TIMING, and is a warning on
 * stderr elsewhere. Under the grader its own clock times each repetition
 * instead (wb_timing_clock below). */
wb_timing wb_time_gpu(wb_gpu_work work, void *context, int warmup, int repetitions);

/* The same with `calls` runs of work back to back between each pair of
 * events, the times given per call. For work that takes about as long as a
 * launch (~5-10 us on an idle GPU): one call between two events would time
 * the submission and launch latency as much as the kernel. */
wb_timing wb_time_gpu_calls(wb_gpu_work work, void *context, int warmup, int repetitions,
                            int calls);

/* The shortest timed run a benchmark makes (issue 40): a run of a few
 * hundred microseconds or less would time the launch and the last wave as
 * much as the work. */
#define WB_MIN_RUN_MS 1.0

/* At most this many calls per timed run: a call lasts a microsecond or
 * more (a launch), so that many last a millisecond on any GPU. */
#define WB_MAX_CALLS_PER_RUN 1000

/* Calls per timed run so that one run of them, back to back between a pair
 * of events, lasts at least min_ms on the GPU present: one untimed call
 * (it loads the code), then runs of more and more calls, each timed, until
 * one lasts min_ms (1 for work that lasts min_ms alone; at most
 * WB_MAX_CALLS_PER_RUN). For work whose calls may be repeated: each call
 * must leave the same result. The runs are never on the grader's clock. */
int wb_calls_for_ms(wb_gpu_work work, void *context, double min_ms);

/* wb_time_gpu_calls with wb_calls_for_ms(work, context, min_ms) calls per
 * run, its runs the warm-up; the times are per call, and *calls (unless
 * NULL) receives the calls per run. */
wb_timing wb_time_gpu_for_ms(wb_gpu_work work, void *context, int repetitions, double min_ms,
                             int *calls);

/* What every timed repetition must leave, checked outside its timed part:
 * before(context, repetition, seed) makes the repetition's inputs fresh
 * from seed and poisons its outputs; after(context, repetition) fetches,
 * observes and checks them. The seed is the grader's when grading (the same
 * sequence for the submission's run and the judge's), else drawn from
 * wb_seed(). Code that did its work only in the untimed warm-up runs, kept
 * a result from an earlier repetition, or skipped some timed runs shows as
 * a wrong result instead of a fast time. before() runs only before timed
 * repetitions: the caller prepares the warm-up's inputs itself. */
typedef struct {
    void (*before)(void *context, int repetition, uint64_t seed);
    void (*after)(void *context, int repetition);
} wb_rep_checks;

/* wb_time_gpu with checks around every timed repetition. */
wb_timing wb_time_gpu_checked(wb_gpu_work work, void *context, int warmup, int repetitions,
                              wb_rep_checks checks);

/* The general form: each repetition is one run of rep_work, which makes
 * `calls` calls of the code under test (on different buffers, so that no
 * call can reuse another's result); times are given per call. */
wb_timing wb_time_gpu_reps(wb_gpu_work rep_work, void *context, int warmup, int repetitions,
                           int calls, wb_rep_checks checks);

/* The host's monotonic clock in milliseconds (CLOCK_MONOTONIC). */
double wb_host_ms(void);

/* The grader's clock (grading/README.md, "6. Performance"). Under the
 * grader the test glue (wb_test.c) installs one, and every timed
 * repetition becomes a hand-shake with the grader, which times it with its
 * own clock: ready(repetition, calls) returns the grader's seed for the
 * repetition's inputs (checks.before runs next, untimed), set() returns at
 * the grader's "go", done() follows the repetition's cudaDeviceSynchronize
 * (checks.after runs next, untimed). Without one (a student's machine, the
 * benchmarks) the events time the repetitions as said above. */
typedef struct {
    uint64_t (*ready)(int repetition, int calls);
    void (*set)(void);
    void (*done)(void);
} wb_timing_clock;
void wb_set_timing_clock(const wb_timing_clock *clock);

/* Work that launches only on `stream` and never synchronises. */
typedef void (*wb_gpu_stream_work)(void *context, cudaStream_t stream);

/* Captures `calls` runs of work, back to back on one stream, into a CUDA
 * graph, then times launches of that graph like wb_time_gpu (warm-up
 * launches first), the times given per call. The host submits one graph
 * launch instead of every kernel of every call, so work shorter than a
 * launch is timed on the GPU, not at the host's launch rate (which moves
 * between runs). Checking builds (-Dchecking=true) synchronise after each
 * launch, which a capture forbids: there the calls run uncaptured, back to
 * back, as in wb_time_gpu_calls. */
wb_timing wb_time_gpu_graph(wb_gpu_stream_work work, void *context, int warmup, int repetitions,
                            int calls);

/* Median of values (sorted in place). */
double wb_median(double *values, int n);

double wb_gbps(double bytes, double ms);      /* 1e9 bytes per second */
double wb_gflops(double flops, double ms);    /* 1e9 operations per second */
double wb_items_per_s(double items, double ms);

/* FP32 peak of device 0 in GFLOP/s: SMs x FP32 lanes per SM x 2 (a fused
 * multiply-add is two operations) x the peak clock. The yardstick for every
 * compute-bound lab, and the floor the grader puts under a reported time. */
double wb_fp32_peak_gflops(void);

/* The SM clock of device 0 in MHz, measured now over 20 ms of one busy SM
 * (clock64 against the global timer): what the GPU really runs at, next to
 * the peak clock that wb_fp32_peak_gflops assumes. */
double wb_sm_clock_mhz(void);

/* Device-to-device cudaMemcpy bandwidth of device 0, counting bytes read plus
 * bytes written, measured once per process over a buffer far larger than
 * the L2 cache. The yardstick for every memory-bound lab. */
double wb_copy_bandwidth_gbps(void);

/* Calls per timed run that last at least min_ms where each call moves
 * `bytes` (read + written) at the copy bandwidth, the fastest a call can:
 * for work timed as a CUDA graph, whose calls run back to back faster than
 * the host could launch them one by one (wb_time_gpu_graph), so that timing
 * single launches (wb_calls_for_ms) would give too few. At most
 * WB_MAX_CALLS_PER_RUN. */
int wb_calls_for_bytes(double bytes, double min_ms);

/* ---------------------------------------------------------------- tables */

/* One results-table printer for every lab. Rows are given as one format
 * string whose cells are separated by '|', e.g.
 *     wb_table_row(t, "%d|%.3f|%.0f", stage, ms, gbps);
 * wb_table_print() aligns the columns on stdout. When $WB_RESULTS_DIR is set,
 * each row is also appended as CSV (with a header line when the file is new)
 * to $WB_RESULTS_DIR/<name>.csv, which is what the grader and the student
 * tools read. */
typedef struct wb_table wb_table;

wb_table *wb_table_new(const char *name, const char *title, const char *columns);
void wb_table_row(wb_table *table, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
void wb_table_print(const wb_table *table, FILE *out);
void wb_table_free(wb_table *table);

#ifdef __cplusplus
}
#endif

#endif /* WORKBOOK_H */
