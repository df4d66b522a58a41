/*
 * Lab 08 benchmark: the stage table (time, GB/s read + written, % of the
 * copy bandwidth, % of CUB's cub::DeviceScan::InclusiveSum, all measured in
 * the same run) at 2^28 values, the target (stage 4 reaches --target of
 * CUB), then stage 5's compaction in items per second next to the two
 * atomic worklists of lab 02, at two densities of kept items.
 * `scan-bench-reference --help` for the options (common/bench.h).
 *
 * Bandwidth counts 4 n bytes read and 4 n written: what any scan must
 * move. Stages 0-2 scan each tile on its own (they are one-block scans);
 * stage 3 moves every byte twice more than that (the add-back reads and
 * writes the output again), which its GB/s, counted the same way, shows.
 * At 2^28 (1 GB each way) nothing fits in the 50 MB L2 of an H100; for a
 * smaller --n the runs rotate over copies of the input and output that
 * together hold four times the L2, so that the table still shows DRAM.
 * Every stage's output is checked against the CPU before it is timed.
 * Each timed run makes as many calls back to back as last about 1 ms
 * (WB_MIN_RUN_MS); the tables give the median per call.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cub_scan.h"
#include "lab.h"
#include "workbook.h"

#define MAX_BUFFERS 64
#define CUB_ROW (-1)   /* "stage" of the CUB yardstick */

typedef struct {
    int stage, n, block_size, buffers, next;
    unsigned *in[MAX_BUFFERS], *out[MAX_BUFFERS];
    void *scratch, *cub_temp;
    size_t cub_temp_bytes;
} job;

/* One inclusive scan of the next buffer. */
static void run(void *context)
{
    job *j = context;
    int b = j->next;
    j->next = (j->next + 1) % j->buffers;
    if (j->stage == CUB_ROW)
        cub_inclusive_sum(j->in[b], j->out[b], j->n, j->cub_temp, j->cub_temp_bytes, 0);
    else
        scan(j->stage, SCAN_INCLUSIVE, j->in[b], j->out[b], j->n, j->block_size, j->scratch);
}

/* Copies that together hold four times the L2 of the GPU present. */
static int rotation_buffers(int n)
{
    wb_device dev = wb_device_info();
    int buffers = (int)ceil(4.0 * (double)dev.l2_bytes / (2.0 * sizeof(unsigned) * (double)n));
    return buffers < 1 ? 1 : buffers > MAX_BUFFERS ? MAX_BUFFERS : buffers;
}

static void setup(job *j, const unsigned *host, int n)
{
    j->n = n;
    j->buffers = rotation_buffers(n);
    j->next = 0;
    for (int b = 0; b < j->buffers; b++) {
        CUDA_CHECK(cudaMalloc((void **)&j->in[b], sizeof(unsigned) * (size_t)n));
        CUDA_CHECK(cudaMalloc((void **)&j->out[b], sizeof(unsigned) * (size_t)n));
        CUDA_CHECK(cudaMemcpy(j->in[b], host, sizeof(unsigned) * (size_t)n,
                              cudaMemcpyHostToDevice));
    }
    size_t scratch = 0;
    for (int stage = 0; stage < SCAN_STAGES; stage++) {
        size_t bytes = scan_scratch_bytes(stage, n, j->block_size);
        scratch = bytes > scratch ? bytes : scratch;
    }
    size_t compact_bytes = compact_scratch_bytes(n, j->block_size);
    scratch = compact_bytes > scratch ? compact_bytes : scratch;
    CUDA_CHECK(cudaMalloc(&j->scratch, scratch > 0 ? scratch : 16));
    j->cub_temp_bytes = cub_scan_temp_bytes(n);
    CUDA_CHECK(cudaMalloc(&j->cub_temp, j->cub_temp_bytes));
}

static void teardown(job *j)
{
    for (int b = 0; b < j->buffers; b++) {
        CUDA_CHECK(cudaFree(j->in[b]));
        CUDA_CHECK(cudaFree(j->out[b]));
    }
    CUDA_CHECK(cudaFree(j->scratch));
    CUDA_CHECK(cudaFree(j->cub_temp));
}

static const char *row_name(int stage)
{
    return stage == CUB_ROW ? "CUB DeviceScan::InclusiveSum" : scan_stage_name(stage);
}

/* Validate before timing: a fast wrong scan is not a result. expected: the
 * inclusive scan of the whole input, per tile for stages 0-2. */
static void validate(job *j, const unsigned *host, unsigned *got)
{
    size_t n = (size_t)j->n;
    size_t tile = j->stage >= 0 && j->stage < 3 ? (size_t)scan_tile_size(j->stage, j->block_size)
                                                 : n;
    CUDA_CHECK(cudaMemset(j->out[j->next], WB_POISON_INT_BYTE, sizeof(unsigned) * n));
    int b = j->next;
    run(j);
    CUDA_CHECK(cudaMemcpy(got, j->out[b], sizeof(unsigned) * n, cudaMemcpyDeviceToHost));
    unsigned sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum = i % tile == 0 ? host[i] : sum + host[i];
        if (got[i] != sum)
            wb_fail("%s, n = %zu, block %d: element %zu is %u, expected %u; run the tests first",
                    row_name(j->stage), n, j->block_size, i, got[i], sum);
    }
}

/* Per call, from runs of as many calls as last WB_MIN_RUN_MS (a scan of
 * 2^28 values: about 0.55 ms on an H200). Each call scans the next buffer
 * from its input, resetting its own scratch: a repeat is the same work. */
static double time_ms(job *j, int reps)
{
    return wb_time_gpu_for_ms(run, j, reps, WB_MIN_RUN_MS, NULL).median_ms;
}

static double gbps(const job *j, double ms)
{
    return wb_gbps(2.0 * sizeof(unsigned) * (double)j->n, ms);
}

/* Every stage and CUB; returns stage 4's bandwidth / CUB's (0 when stage 4
 * was not timed). */
static double stage_table(job *j, const unsigned *host, int first, int last, int reps,
                          double copy, const char *gpu)
{
    unsigned *got = malloc(sizeof(unsigned) * (size_t)j->n);
    if (!got)
        wb_fail("out of host memory for n = %d", j->n);
    j->stage = CUB_ROW;
    validate(j, host, got);
    double cub_ms = time_ms(j, reps), cub = gbps(j, cub_ms), ratio = 0.0;
    char title[512];
    snprintf(title, sizeof title,
             "scan, n = %d values, inclusive, blocks of %d, %s, median of %d runs of at least "
             "%.0f ms (%d rotating buffer%s); GB/s count 4 n bytes read + 4 n written\n"
             "copy bandwidth %.0f GB/s (read + write); stages 0-2 scan each tile on its own",
             j->n, j->block_size, gpu, reps, WB_MIN_RUN_MS, j->buffers, j->buffers == 1 ? "" : "s", copy);
    wb_table *table = wb_table_new("scan-bench", title,
                                   "stage|kernel|time per call (ms)|GB/s|% of copy|% of CUB");
    for (int stage = first; stage <= last; stage++) {
        j->stage = stage;
        validate(j, host, got);
        double ms = time_ms(j, reps);
        if (stage == 4)
            ratio = gbps(j, ms) / cub;
        wb_table_row(table, "%d|%s|%.3f|%.0f|%.1f|%.1f", stage, row_name(stage), ms, gbps(j, ms),
                     100.0 * gbps(j, ms) / copy, 100.0 * gbps(j, ms) / cub);
    }
    wb_table_row(table, "cub|%s|%.3f|%.0f|%.1f|100.0", row_name(CUB_ROW), cub_ms, cub,
                 100.0 * cub / copy);
    wb_table_print(table, stdout);
    wb_table_free(table);
    free(got);
    return ratio;
}

/* ------------------------------------------------------------ compaction */

typedef struct {
    int version, n, block_size;
    unsigned *flags, *list, *count;
    void *scratch;
} compaction;

static void run_compaction(void *context)
{
    compaction *c = context;
    compact(c->version, c->flags, c->n, c->list, c->count, c->block_size, c->scratch);
}

/* Checks the count, and the list as a set (the atomic versions write it
 * in any order): the sum and the xor of its indices. */
static void validate_compaction(compaction *c, unsigned kept, unsigned sum, unsigned xor_all,
                                unsigned *got)
{
    unsigned count;
    run_compaction(c);
    CUDA_CHECK(cudaMemcpy(&count, c->count, sizeof count, cudaMemcpyDeviceToHost));
    if (count != kept)
        wb_fail("compaction (%s), n = %d: count %u, expected %u; run the tests first",
                compact_version_name(c->version), c->n, count, kept);
    CUDA_CHECK(cudaMemcpy(got, c->list, sizeof(unsigned) * kept, cudaMemcpyDeviceToHost));
    unsigned got_sum = 0, got_xor = 0;
    for (unsigned i = 0; i < kept; i++) {
        got_sum += got[i];
        got_xor ^= got[i];
    }
    if (got_sum != sum || got_xor != xor_all)
        wb_fail("compaction (%s), n = %d: the list holds other indices than the flags say; run "
                "the tests first", compact_version_name(c->version), c->n);
}

static void compaction_table(int n, int block_size, int reps, const char *gpu)
{
    static const int percent[] = {1, 50};
    unsigned *flags = malloc(sizeof(unsigned) * (size_t)n);
    unsigned *got = malloc(sizeof(unsigned) * (size_t)n);
    if (!flags || !got)
        wb_fail("out of host memory for n = %d", n);
    compaction c = {.n = n, .block_size = block_size};
    CUDA_CHECK(cudaMalloc((void **)&c.flags, sizeof(unsigned) * (size_t)n));
    CUDA_CHECK(cudaMalloc((void **)&c.list, sizeof(unsigned) * (size_t)n));
    CUDA_CHECK(cudaMalloc((void **)&c.count, sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&c.scratch, compact_scratch_bytes(n, block_size)));
    char title[512];
    snprintf(title, sizeof title,
             "compaction (a frontier of flags), n = %d, blocks of %d, %s, median of %d runs of "
             "at least %.0f ms; items/s count the n flags read", n, block_size, gpu, reps,
             WB_MIN_RUN_MS);
    wb_table *table = wb_table_new("scan-compaction", title,
                                   "kept|version|time per call (ms)|G items/s|"
                                   "vs atomic per item");
    wb_rng rng = wb_rng_for("scan bench compaction");
    for (size_t p = 0; p < sizeof percent / sizeof percent[0]; p++) {
        unsigned kept = 0, sum = 0, xor_all = 0;
        for (int i = 0; i < n; i++) {
            flags[i] = wb_rng_int(&rng, 0, 99) < percent[p];
            if (flags[i]) {
                kept++;
                sum += (unsigned)i;
                xor_all ^= (unsigned)i;
            }
        }
        CUDA_CHECK(cudaMemcpy(c.flags, flags, sizeof(unsigned) * (size_t)n,
                              cudaMemcpyHostToDevice));
        double per_item_ms = 0.0;
        /* The atomic per item first: the others are compared with it. */
        static const int order[] = {COMPACT_PER_ITEM, COMPACT_PER_WARP, COMPACT_SCAN};
        for (int k = 0; k < COMPACT_VERSIONS; k++) {
            c.version = order[k];
            validate_compaction(&c, kept, sum, xor_all, got);
            /* Each call counts from zero again (compact resets the count). */
            double ms = wb_time_gpu_for_ms(run_compaction, &c, reps, WB_MIN_RUN_MS, NULL)
                            .median_ms;
            if (k == 0)
                per_item_ms = ms;
            wb_table_row(table, "%d%%|%s|%.3f|%.1f|%.2fx", percent[p],
                         compact_version_name(c.version), ms,
                         wb_items_per_s((double)n, ms) / 1e9, per_item_ms / ms);
        }
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    CUDA_CHECK(cudaFree(c.flags));
    CUDA_CHECK(cudaFree(c.list));
    CUDA_CHECK(cudaFree(c.count));
    CUDA_CHECK(cudaFree(c.scratch));
    free(flags);
    free(got);
}

int main(int argc, char **argv)
{
    int n = 1 << 28, only_stage = WB_ALL_STAGES, block = 256, reps = 20;
    double target = 0.90;
    const wb_option options[] = {
        {"stage", "S", WB_INT, &only_stage, 0, SCAN_COMPACTION_STAGE,
         "time only stage S (5: the compaction table alone; default: all)"},
        {"n", "N", WB_INT, &n, 1, INT_MAX, "values to scan (and flags to compact)"},
        {"block", "B", WB_INT, &block, SCAN_MIN_BLOCK, SCAN_MAX_BLOCK,
         "threads per block, a power of two"},
        WB_REPS_OPTION(reps),
        WB_TARGET_OPTION(target, "fails unless stage 4 reaches F of CUB's bandwidth"),
        {0}};
    wb_bench_options(argc, argv,
                     "Times the scan stages at N values next to CUB's InclusiveSum and the copy\n"
                     "bandwidth, then stage 5's compaction next to lab 02's atomic worklists.",
                     options);
    if ((block & (block - 1)) != 0)
        wb_bench_usage_error("--block %d: the block size must be a power of two", block);
    wb_bench_need_gpu();
    wb_device dev = wb_device_info();
    wb_bench_launch("blocks of %d threads; stages 3-5 %d values per thread (%d 16-byte "
                    "loads, %d bytes in flight), a tile of %d values per block|%s; the loads per "
                    "thread are SCAN_ROUNDS in lab.h", block, SCAN_ITEMS_PER_THREAD, SCAN_ROUNDS,
                    16 * SCAN_ROUNDS, block * SCAN_ITEMS_PER_THREAD,
                    block == 256 ? "8 warps a block, the lecture's block size" : "--block");
    double copy = wb_copy_bandwidth_gbps();

    bool all = only_stage == WB_ALL_STAGES;
    double ratio = 0.0;
    if (only_stage != SCAN_COMPACTION_STAGE) {
        unsigned *host = malloc(sizeof(unsigned) * (size_t)n);
        if (!host)
            wb_fail("out of host memory for n = %d", n);
        wb_rng rng = wb_rng_for("scan bench");
        for (int i = 0; i < n; i++)
            host[i] = (unsigned)(wb_rng_u64(&rng) >> 32);
        job j = {.block_size = block};
        setup(&j, host, n);
        wb_bench_working_set(j.buffers > 1 ? "the rotating inputs and outputs"
                                           : "the input and the output",
                             2.0 * sizeof(unsigned) * (double)n * j.buffers);
        ratio = stage_table(&j, host, all ? 0 : only_stage, all ? SCAN_STAGES - 1 : only_stage,
                            reps, copy, dev.name);
        teardown(&j);
        free(host);
    }
    if (all || only_stage == SCAN_COMPACTION_STAGE)
        compaction_table(n, block, reps, dev.name);
    /* (After --stage, --n or --block the target is "not checked".) */
    return wb_bench_target(ratio >= target, "stage 4 >= %.0f%% of CUB's bandwidth at n = %d|"
                           "%.1f%%", 100.0 * target, n, 100.0 * ratio) ? 0 : 1;
}
