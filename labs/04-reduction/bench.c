/*
 * Lab 04 benchmark: the lecture's table (stage, time at 2^22, bandwidth, step
 * and cumulative speedup) with CUB's DeviceReduce::Sum and the copy bandwidth
 * measured in the same run; optionally the stage x threads-per-block sweep;
 * then the target: at 2^28 ints the best stage reaches --target of CUB.
 * `reduction-bench-reference --help` for the options (common/bench.h).
 *
 * 2^22 ints are 16 MB and fit in the L2 cache of current GPUs (50 MB on the
 * H100): re-reading one buffer would time the cache. Every timed run
 * therefore reads the next of several copies of the input, together four
 * times the L2 of the GPU present, so the table shows DRAM bandwidth; the
 * "one buffer" column shows the cached figure beside it.
 * Bandwidth counts the bytes read, 4 n (the partial sums are negligible).
 * Each timed repetition launches a CUDA graph of reductions captured back to
 * back, between one pair of events, and the time is per reduction. The
 * graph holds as many as last WB_MIN_RUN_MS (1 ms) at the copy bandwidth,
 * about the fastest a reduction reads (wb_calls_for_bytes: about 240 at 2^22
 * on an H200), so that the launch and the last wave of one reduction weigh
 * little (the one-buffer column, from the L2, runs shorter). A graph: at
 * 2^22 a reduction's kernels take a few microseconds each, less than the
 * host needs to submit a launch, so launching them one by one (even many
 * back to back) would time the host's launch rate, which moves between
 * runs; in a graph the GPU starts each kernel as soon as the one before it
 * ends.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench.h"
#include "cub_sum.h"
#include "lab.h"
#include "workbook.h"

#define MAX_BUFFERS 64
#define CUB_ROW (-1)   /* "stage" of the CUB yardstick */

typedef struct {
    int stage, n, block_size, buffers, next;
    int calls;   /* reductions per timed graph launch */
    int *in[MAX_BUFFERS];
    int *scratch, *out;
    void *cub_temp;
    size_t cub_temp_bytes;
} job;

/* One reduction of the next input buffer, on `stream`. */
static void run(void *context, cudaStream_t stream)
{
    job *j = context;
    const int *in = j->in[j->next];
    j->next = (j->next + 1) % j->buffers;
    if (j->stage == CUB_ROW)
        cub_sum(in, j->n, j->out, j->cub_temp, j->cub_temp_bytes, stream);
    else
        reduce_sum_async(j->stage, in, j->n, j->block_size, j->scratch, j->out, stream);
}

/* Copies of an n-int input that together hold four times the L2 cache of
 * the GPU present, so that a run never finds its input in L2. */
static int rotation_buffers(int n)
{
    wb_device dev = wb_device_info();
    int buffers = (int)ceil(4.0 * (double)dev.l2_bytes / (sizeof(int) * (double)n));
    return buffers < 1 ? 1 : buffers > MAX_BUFFERS ? MAX_BUFFERS : buffers;
}

/* Allocates `buffers` device copies of n random ints; returns their sum. */
static int setup(job *j, int n, int buffers)
{
    j->n = n;
    j->calls = wb_calls_for_bytes(sizeof(int) * (double)n, WB_MIN_RUN_MS);
    j->buffers = buffers;
    j->next = 0;
    int *host = malloc(sizeof(int) * (size_t)n);
    if (!host)
        wb_fail("out of host memory for n = %d", n);
    wb_rng rng = wb_rng_for("reduction bench");
    wb_fill_ints(host, (size_t)n, -1000, 1000, &rng);
    uint32_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += (uint32_t)host[i];
    for (int b = 0; b < buffers; b++) {
        CUDA_CHECK(cudaMalloc((void **)&j->in[b], sizeof(int) * (size_t)n));
        CUDA_CHECK(cudaMemcpy(j->in[b], host, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice));
    }
    free(host);
    CUDA_CHECK(cudaMalloc((void **)&j->scratch, sizeof(int) * reduce_scratch_ints(n)));
    CUDA_CHECK(cudaMalloc((void **)&j->out, sizeof(int)));
    j->cub_temp_bytes = cub_sum_temp_bytes(n);
    CUDA_CHECK(cudaMalloc(&j->cub_temp, j->cub_temp_bytes));
    return (int)sum;
}

static void teardown(job *j)
{
    for (int b = 0; b < j->buffers; b++)
        CUDA_CHECK(cudaFree(j->in[b]));
    CUDA_CHECK(cudaFree(j->scratch));
    CUDA_CHECK(cudaFree(j->out));
    CUDA_CHECK(cudaFree(j->cub_temp));
}

/* Validate before timing: a fast wrong kernel is not a result. */
static void validate(job *j, int expected)
{
    int got;
    wb_poison_ints(j->out, 1);
    run(j, 0);
    CUDA_CHECK(cudaMemcpy(&got, j->out, sizeof got, cudaMemcpyDeviceToHost));
    if (got != expected)
        wb_fail("%s, n = %d, block %d: sum %d, expected %d; run the tests first",
                j->stage == CUB_ROW ? "CUB" : reduce_stage_name(j->stage), j->n, j->block_size,
                got, expected);
}

/* Median milliseconds of one reduction of j's current stage and block:
 * j->calls of them, captured back to back into a CUDA graph, per timed launch
 * (see the top). */
static double time_ms(job *j, int expected, int reps)
{
    validate(j, expected);
    return wb_time_gpu_graph(run, j, 3, reps, j->calls).median_ms;
}

static double gbps(const job *j, double ms) { return wb_gbps(sizeof(int) * (double)j->n, ms); }

static const char *row_name(int stage)
{
    return stage == CUB_ROW ? "CUB DeviceReduce::Sum" : reduce_stage_name(stage);
}

/* The lecture's table at n, rotating buffers; stages first..last. */
static void lecture_table(job *j, int expected, int first, int last, int reps, double copy,
                          const char *gpu)
{
    char title[512];
    snprintf(title, sizeof title,
             "reduction, n = %d ints, blocks of %d, %s, median of %d launches of a CUDA graph of "
             "%d back-to-back reductions over %d rotating buffers (DRAM); one buffer = the same "
             "input every run (L2)\n"
             "copy bandwidth %.0f GB/s (read + write)",
             j->n, j->block_size, gpu, reps, j->calls, j->buffers, copy);
    wb_table *table = wb_table_new("reduction-bench", title,
                                   "stage|kernel|time per call (ms)|GB/s|step speedup|cumulative "
                                   "speedup|% of copy|one buffer GB/s");
    double first_ms = 0.0, previous_ms = 0.0;
    int buffers = j->buffers;
    for (int stage = first; stage <= last + 1; stage++) {
        j->stage = stage <= last ? stage : CUB_ROW;
        double ms = time_ms(j, expected, reps);
        j->buffers = 1;
        double cached_ms = time_ms(j, expected, reps);
        j->buffers = buffers;
        if (stage == first)
            first_ms = previous_ms = ms;
        char label[8] = "cub", step[16] = "-", cumulative[16] = "-";
        if (j->stage != CUB_ROW)
            snprintf(label, sizeof label, "%d", stage);
        if (j->stage != CUB_ROW && stage > first) {
            snprintf(step, sizeof step, "%.2f", previous_ms / ms);
            snprintf(cumulative, sizeof cumulative, "%.2f", first_ms / ms);
        }
        wb_table_row(table, "%s|%s|%.4f|%.0f|%s|%s|%.1f|%.0f",
                     label, row_name(j->stage), ms, gbps(j, ms), step, cumulative,
                     100.0 * gbps(j, ms) / copy,
                     gbps(j, cached_ms));
        previous_ms = ms;
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
}

/* GB/s of every stage at every block size, as in the lecture notes. */
static void sweep_table(job *j, int expected, int first, int last, int reps)
{
    char title[256];
    snprintf(title, sizeof title,
             "reduction sweep, n = %d ints, GB/s by threads per block (median of %d, "
             "rotating buffers)", j->n, reps);
    wb_table *table = wb_table_new("reduction-sweep", title,
                                   "stage|kernel|32|64|128|256|512|1024");
    for (int stage = first; stage <= last; stage++) {
        double bw[6];
        j->stage = stage;
        for (int k = 0; k < 6; k++) {
            j->block_size = REDUCE_MIN_BLOCK << k;
            bw[k] = gbps(j, time_ms(j, expected, reps));
        }
        wb_table_row(table, "%d|%s|%.0f|%.0f|%.0f|%.0f|%.0f|%.0f", stage,
                     reduce_stage_name(stage), bw[0], bw[1], bw[2], bw[3], bw[4], bw[5]);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
}

/* Every stage at the big size against CUB; returns best stage / CUB. */
static double target_table(job *j, int expected, int first, int last, int reps)
{
    char title[256];
    snprintf(title, sizeof title,
             "reduction target, n = %d ints (%.0f MB, one buffer, far beyond L2), blocks of "
             "%d, median of %d launches of a CUDA graph of %d back-to-back reductions",
             j->n, 4e-6 * j->n, j->block_size, reps, j->calls);
    wb_table *table = wb_table_new("reduction-target", title,
                                   "stage|kernel|time per call (ms)|GB/s|% of CUB");
    j->stage = CUB_ROW;
    double cub_ms = time_ms(j, expected, reps), cub = gbps(j, cub_ms), best = 0.0;
    for (int stage = first; stage <= last; stage++) {
        j->stage = stage;
        double ms = time_ms(j, expected, reps);
        best = gbps(j, ms) > best ? gbps(j, ms) : best;
        wb_table_row(table, "%d|%s|%.3f|%.0f|%.1f", stage, reduce_stage_name(stage), ms,
                     gbps(j, ms), 100.0 * gbps(j, ms) / cub);
    }
    wb_table_row(table, "cub|%s|%.3f|%.0f|100.0", row_name(CUB_ROW), cub_ms, cub);
    wb_table_print(table, stdout);
    wb_table_free(table);
    return best / cub;
}

int main(int argc, char **argv)
{
    int n = 1 << 22, big = 1 << 28, only_stage = WB_ALL_STAGES, block = 256, reps = 20;
    bool sweep = false;
    double target = 0.95;
    const wb_option options[] = {
        {"stage", "S", WB_INT, &only_stage, 0, REDUCE_STAGES - 1,
         "time only stage S (default: all)"},
        {"n", "N", WB_INT, &n, 1, INT_MAX, "ints in the lecture's table"},
        {"block", "B", WB_INT, &block, REDUCE_MIN_BLOCK, REDUCE_MAX_BLOCK,
         "threads per block, a power of two"},
        WB_REPS_OPTION(reps),
        WB_TARGET_OPTION(target,
         "fails unless the best stage reaches F of CUB's bandwidth at --big ints"),
        {"big", "N", WB_INT, &big, 0, INT_MAX,
         "ints of the target's table (default 2^28; 0 skips it)"},
        {"sweep", NULL, WB_FLAG, &sweep, 0, 0,
         "adds the stage x threads-per-block table (32 ... 1024)"},
        {0}};
    wb_bench_options(argc, argv,
                     "Times the reduction stages at N ints over rotating copies of the input (4x\n"
                     "the L2 cache together), next to CUB and the copy bandwidth; then every stage\n"
                     "at --big ints against CUB.",
                     options);
    if ((block & (block - 1)) != 0)
        wb_bench_usage_error("--block %d: the block size must be a power of two", block);
    wb_bench_need_gpu();
    bool all = only_stage == WB_ALL_STAGES;
    int first = all ? 0 : only_stage, last = all ? REDUCE_STAGES - 1 : only_stage;
    wb_device dev = wb_device_info();
    wb_bench_launch("blocks of %d threads; stages 0-5 one block per %d ints (stages 3-5: %d), "
                    "then again on the partial sums; stage 6 at most %u blocks, stage 7 %u|%s; "
                    "stages 6 and 7 size their grid from the SM count and the occupancy API "
                    "(as many blocks as the GPU holds at once), each thread looping over the "
                    "rest", block, block, 2 * block, reduce_resident_blocks(6, block),
                    reduce_resident_blocks(7, block),
                    block == 256 ? "the lecture's block size (--sweep tries 32 to 1024)"
                                 : "--block");
    double copy = wb_copy_bandwidth_gbps();

    job j = {.block_size = block};
    int expected = setup(&j, n, rotation_buffers(n));
    wb_bench_working_set("the lecture table's rotating inputs", 4.0 * n * j.buffers);
    wb_bench_working_set("the lecture table's one-buffer column", 4.0 * n);
    lecture_table(&j, expected, first, last, reps, copy, dev.name);
    if (sweep)
        sweep_table(&j, expected, first, last, reps);
    teardown(&j);
    if (big == 0)
        return 0;

    j.block_size = block;
    expected = setup(&j, big, 1);
    wb_bench_working_set("the target table's input", 4.0 * big);
    double ratio = target_table(&j, expected, first, last, reps);
    teardown(&j);
    return wb_bench_target(ratio >= target, "best stage >= %.0f%% of CUB's bandwidth at n = %d|"
                           "best %.1f%%", 100.0 * target, big, 100.0 * ratio) ? 0 : 1;
}
