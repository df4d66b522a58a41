/* GPU timing with CUDA events and the copy-bandwidth yardstick (see workbook.h). */
#include "workbook.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double wb_median(double *values, int n)
{
    if (n <= 0)
        return 0.0;
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double wb_host_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Work the events did not see: a failure where WB_STRICT_TIMING is set
 * (tests/planted_bugs.py sets it, and runs timings with the GPU to
 * themselves), else a warning, since a GPU that other users share
 * time-slices between them and can cause the same gap. The grader does not
 * need it: its own clock stops after the cudaDeviceSynchronize. */
static void report_untimed_work(double host_ms, double event_ms)
{
    char why[640];
    snprintf(why, sizeof why,
             "the work ran past the timed stream's end: %.4g ms per call by the host's clock up "
             "to cudaDeviceSynchronize, %.4g ms between the events. Work launched on a stream "
             "of your own that is not waited for before returning is not timed: wait for it "
             "(cudaStreamSynchronize) or launch on the default stream. (Another process using "
             "this GPU at the same time can also cause this: timings need the GPU to "
             "themselves.)", host_ms, event_ms);
    const char *strict = getenv("WB_STRICT_TIMING");
    if (strict && *strict && strcmp(strict, "0") != 0)
        wb_fail("wb_time_gpu: %s", why);
    else
        fprintf(stderr, "warning: wb_time_gpu: %s\n", why);
}

static const wb_timing_clock *grader_clock;

void wb_set_timing_clock(const wb_timing_clock *clock)
{
    grader_clock = clock;
}

/* Times `submit(job)` between a pair of events on `stream`, `repetitions`
 * times after `warmup` untimed runs; each submission holds `calls` calls.
 * checks.before and checks.after run outside the timed part of every timed
 * repetition (wb_time_gpu_checked).
 *
 * With the grader's clock (wb_set_timing_clock) each timed repetition is
 * also a hand-shake with the grader, whose own clock makes the graded time;
 * the events' times are then only this process's report. Without it, the
 * events see only the work ordered on `stream`: work that the code under
 * test launches on a stream of its own and does not wait for would still
 * be running at the stop event, so the host's clock also times each
 * repetition, up to a cudaDeviceSynchronize that waits for every stream,
 * and a median far above the events' is reported (report_untimed_work).
 * The grader measures up to that synchronisation itself. */
static wb_timing time_submissions(void (*submit)(void *), void *job, cudaStream_t stream,
                                  int warmup, int repetitions, int calls, wb_rep_checks checks,
                                  void *checks_context, const wb_timing_clock *clock)
{
    wb_timing timing = {0};
    cudaEvent_t start, stop;
    double *times, *host_times;
    if (repetitions < 1 || calls < 1)
        wb_fail("wb_time_gpu: repetitions and calls must be at least 1, got %d and %d",
                repetitions, calls);
    times = malloc(sizeof *times * (size_t)repetitions);
    host_times = malloc(sizeof *host_times * (size_t)repetitions);
    if (!times || !host_times)
        wb_fail("wb_time_gpu: out of host memory");
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    wb_rng seeds = wb_rng_for("timed repetitions");
    for (int i = 0; i < warmup; i++)
        submit(job);
    CUDA_CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < repetitions; i++) {
        float ms = 0.0f;
        uint64_t seed = clock ? clock->ready(i, calls) : wb_rng_u64(&seeds);
        if (checks.before) {
            checks.before(checks_context, i, seed);
            CUDA_CHECK(cudaDeviceSynchronize());
        }
        if (clock)
            clock->set();
        double host_start = wb_host_ms();
        CUDA_CHECK(cudaEventRecord(start, stream));
        submit(job);
        CUDA_CHECK(cudaEventRecord(stop, stream));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaDeviceSynchronize());
        if (clock)
            clock->done();
        host_times[i] = (wb_host_ms() - host_start) / calls;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        times[i] = ms / calls;
        if (checks.after)
            checks.after(checks_context, i);
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    timing.warmup = warmup;
    timing.repetitions = repetitions;
    timing.median_ms = wb_median(times, repetitions); /* sorts times */
    timing.min_ms = times[0];
    timing.max_ms = times[repetitions - 1];
    double host_ms = wb_median(host_times, repetitions);
    free(times);
    free(host_times);
    /* An honest repetition's host time exceeds its events' by a launch and
     * a wake-up, some 10-30 us: allow 25% and 50 us per repetition. */
    if (!clock && host_ms > 1.25 * timing.median_ms + 0.05 / calls)
        report_untimed_work(host_ms, timing.median_ms);
    return timing;
}

typedef struct {
    wb_gpu_work work;
    wb_gpu_stream_work stream_work;
    void *context;
    int calls;
    cudaStream_t stream;
    cudaGraphExec_t graph;
} calls_job;

static void submit_calls(void *job)
{
    calls_job *j = job;
    for (int c = 0; c < j->calls; c++) {
        if (j->work)
            j->work(j->context);
        else
            j->stream_work(j->context, j->stream);
    }
}

static void submit_graph(void *job)
{
    calls_job *j = job;
    CUDA_CHECK(cudaGraphLaunch(j->graph, j->stream));
}

wb_timing wb_time_gpu(wb_gpu_work work, void *context, int warmup, int repetitions)
{
    return wb_time_gpu_calls(work, context, warmup, repetitions, 1);
}

wb_timing wb_time_gpu_calls(wb_gpu_work work, void *context, int warmup, int repetitions,
                            int calls)
{
    calls_job job = {work, NULL, context, calls, 0, NULL};
    return time_submissions(submit_calls, &job, 0, warmup, repetitions, calls,
                            (wb_rep_checks){NULL, NULL}, NULL, grader_clock);
}

/* Milliseconds of one run of `calls` calls between a pair of events: a
 * probe for wb_calls_for_ms, not a result (no grader's clock, no check for
 * untimed work, which one probe's noise could trip). */
static double probe_run_ms(wb_gpu_work work, void *context, int calls)
{
    cudaEvent_t start, stop;
    float ms = 0.0f;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start, 0));
    for (int c = 0; c < calls; c++)
        work(context);
    CUDA_CHECK(cudaEventRecord(stop, 0));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return ms;
}

int wb_calls_for_ms(wb_gpu_work work, void *context, double min_ms)
{
    work(context);
    CUDA_CHECK(cudaDeviceSynchronize());
    int calls = 1;
    for (;;) {
        double run_ms = probe_run_ms(work, context, calls);
        if (run_ms >= min_ms || calls >= WB_MAX_CALLS_PER_RUN)
            return calls;
        /* As many as this run's rate gives, and a tenth more; but at most
         * 8 times as many: the first runs' times are mostly the launch. */
        double guess = ceil(1.1 * calls * min_ms / fmax(run_ms, 1e-4));
        calls = (int)fmin(guess, fmin(8.0 * calls, WB_MAX_CALLS_PER_RUN));
    }
}

wb_timing wb_time_gpu_for_ms(wb_gpu_work work, void *context, int repetitions, double min_ms,
                             int *calls)
{
    int chosen = wb_calls_for_ms(work, context, min_ms);
    if (calls)
        *calls = chosen;
    return wb_time_gpu_calls(work, context, 0, repetitions, chosen);
}

wb_timing wb_time_gpu_checked(wb_gpu_work work, void *context, int warmup, int repetitions,
                              wb_rep_checks checks)
{
    calls_job job = {work, NULL, context, 1, 0, NULL};
    return time_submissions(submit_calls, &job, 0, warmup, repetitions, 1, checks, context,
                            grader_clock);
}

wb_timing wb_time_gpu_reps(wb_gpu_work rep_work, void *context, int warmup, int repetitions,
                           int calls, wb_rep_checks checks)
{
    calls_job job = {rep_work, NULL, context, 1, 0, NULL};
    return time_submissions(submit_calls, &job, 0, warmup, repetitions, calls, checks, context,
                            grader_clock);
}

wb_timing wb_time_gpu_graph(wb_gpu_stream_work work, void *context, int warmup, int repetitions,
                            int calls)
{
    calls_job job = {NULL, work, context, calls, NULL, NULL};
    CUDA_CHECK(cudaStreamCreateWithFlags(&job.stream, cudaStreamNonBlocking));
#ifdef WB_SYNC_CHECK
    wb_timing timing = time_submissions(submit_calls, &job, job.stream, warmup, repetitions,
                                        calls, (wb_rep_checks){NULL, NULL}, NULL, grader_clock);
#else
    cudaGraph_t graph;
    CUDA_CHECK(cudaStreamBeginCapture(job.stream, cudaStreamCaptureModeThreadLocal));
    submit_calls(&job);
    CUDA_CHECK(cudaStreamEndCapture(job.stream, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&job.graph, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
    wb_timing timing = time_submissions(submit_graph, &job, job.stream, warmup, repetitions,
                                        calls, (wb_rep_checks){NULL, NULL}, NULL, grader_clock);
    CUDA_CHECK(cudaGraphExecDestroy(job.graph));
#endif
    CUDA_CHECK(cudaStreamDestroy(job.stream));
    return timing;
}

double wb_gbps(double bytes, double ms) { return ms > 0.0 ? bytes / (ms * 1e6) : 0.0; }
double wb_gflops(double flops, double ms) { return ms > 0.0 ? flops / (ms * 1e6) : 0.0; }
double wb_items_per_s(double items, double ms) { return ms > 0.0 ? items / (ms * 1e-3) : 0.0; }

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} copy_job;

static void run_copy(void *context)
{
    copy_job *job = context;
    CUDA_CHECK(cudaMemcpyAsync(job->dst, job->src, job->bytes, cudaMemcpyDeviceToDevice, 0));
}

double wb_copy_bandwidth_gbps(void)
{
    static double cached = 0.0;
    if (cached > 0.0)
        return cached;
    /* 512 MiB each way: ten times the largest L2 of current GPUs, so the copy
     * measures DRAM. Smaller GPUs get a quarter of their free memory. */
    size_t free_bytes, total_bytes, bytes = (size_t)512 << 20;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (bytes > free_bytes / 4)
        bytes = free_bytes / 4;
    copy_job job = {NULL, NULL, bytes};
    CUDA_CHECK(cudaMalloc(&job.dst, bytes));
    CUDA_CHECK(cudaMalloc((void **)&job.src, bytes));
    CUDA_CHECK(cudaMemset((void *)job.src, 0x5A, bytes));
    /* The judge's yardstick, not a graded time: never on the grader's clock. */
    calls_job calls = {run_copy, NULL, &job, 1, 0, NULL};
    wb_timing t = time_submissions(submit_calls, &calls, 0, 3, 20, 1, (wb_rep_checks){NULL, NULL},
                                   NULL, NULL);
    CUDA_CHECK(cudaFree(job.dst));
    CUDA_CHECK(cudaFree((void *)job.src));
    cached = wb_gbps(2.0 * (double)bytes, t.median_ms); /* read + write */
    return cached;
}

int wb_calls_for_bytes(double bytes, double min_ms)
{
    double calls = ceil(min_ms * 1e6 * wb_copy_bandwidth_gbps() / fmax(bytes, 1.0));
    return (int)fmax(1.0, fmin(calls, WB_MAX_CALLS_PER_RUN));
}

double wb_fp32_peak_gflops(void)
{
    wb_device device = wb_device_info();
    /* FP32 lanes per SM: 64 on Turing (7.5) and the A100 (8.0); 128 on
     * GA10x (8.6), Ada (8.9), Hopper (9.0) and Blackwell. */
    int lanes = (device.major == 7 || (device.major == 8 && device.minor == 0)) ? 64 : 128;
    return 2.0 * lanes * device.sm_count * device.clock_khz * 1e3 / 1e9;
}
