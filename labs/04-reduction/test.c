/*
 * Lab 04 tests: every stage sums random ints (negatives included) exactly,
 * on awkward sizes and on every block size, without reading past n; then one
 * short timing table. Each stage has its own tests, stageN_..., so that
 * `workbook status` can tell which stages work.
 */
#include <stdint.h>
#include <stdlib.h>

#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(reduction, .timeout = 120);

/* Elements after the n to sum, filled with large values: a stage that reads
 * past n adds them and gets a wrong sum. */
#define CANARIES 4096
#define CANARY_VALUE 1000003

/* The CPU reference, with the GPU's int wrap-around (unsigned arithmetic
 * wraps by definition, and + mod 2^32 is associative in any order). */
static int cpu_sum(const int *values, int n)
{
    uint32_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += (uint32_t)values[i];
    return (int)sum;
}

static void check_sum(int stage, int n, int block_size)
{
    char what[128];
    snprintf(what, sizeof what, "stage %d (%s), n = %d, block size %d", stage,
             reduce_stage_name(stage), n, block_size);
    size_t total = (size_t)n + CANARIES;
    int *host = malloc(sizeof(int) * total);
    cr_assert(host, "out of host memory for n = %d", n);
    wb_rng rng = wb_rng_for(what);
    wb_fill_ints(host, (size_t)n, -1000, 1000, &rng);
    for (size_t i = (size_t)n; i < total; i++)
        host[i] = CANARY_VALUE;
    int expected = cpu_sum(host, n);

    int *d_in, *d_scratch, *d_out;
    size_t scratch = reduce_scratch_ints(n);
    CUDA_CHECK(cudaMalloc((void **)&d_in, sizeof(int) * total));
    CUDA_CHECK(cudaMalloc((void **)&d_scratch, sizeof(int) * (scratch ? scratch : 1)));
    CUDA_CHECK(cudaMalloc((void **)&d_out, sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d_in, host, sizeof(int) * total, cudaMemcpyHostToDevice));
    wb_poison_ints(d_scratch, scratch);
    wb_poison_ints(d_out, 1);

    reduce_sum(stage, d_in, n, block_size, d_scratch, d_out);
    int got;
    CUDA_CHECK(cudaMemcpy(&got, d_out, sizeof(int), cudaMemcpyDeviceToHost));
    if (got != expected && got == cpu_sum(host, n + 1))
        cr_assert_fail("%s: the sum includes the element after the last one: a thread "
                       "reads past n " WB_SEED_HINT, what, wb_seed());
    wb_assert_ints_equal(&got, &expected, 1, what);

    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_scratch));
    CUDA_CHECK(cudaFree(d_out));
    free(host);
}

/* Empty, tiny, around a warp, several passes, and large sizes whose last
 * block is only partly used (2^22 + 13, 2^26 + 1). */
static const int sizes[] = {0, 1, 2, 31, 33, 1000, 1 << 22, (1 << 22) + 13, (1 << 26) + 1};

/* Every supported block size, at a size that needs three to four passes
 * with small blocks and is no multiple of any block. */
#define BLOCK_TEST_N ((1 << 20) + 7)

static void check_sizes(int stage)
{
    /* One test covers all sizes (the message names the one that failed):
     * each test is a process with its own CUDA context, which costs more
     * than a sum. */
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        check_sum(stage, sizes[k], 256);
}

static void check_block_sizes(int stage)
{
    for (int block = REDUCE_MIN_BLOCK; block <= REDUCE_MAX_BLOCK; block *= 2)
        check_sum(stage, BLOCK_TEST_N, block);
}

/* Two tests per stage, named stageN_... so that the tools map them. */
Test(reduction, stage0_sizes) { check_sizes(0); }
Test(reduction, stage0_block_sizes) { check_block_sizes(0); }
Test(reduction, stage1_sizes) { check_sizes(1); }
Test(reduction, stage1_block_sizes) { check_block_sizes(1); }
Test(reduction, stage2_sizes) { check_sizes(2); }
Test(reduction, stage2_block_sizes) { check_block_sizes(2); }
Test(reduction, stage3_sizes) { check_sizes(3); }
Test(reduction, stage3_block_sizes) { check_block_sizes(3); }
Test(reduction, stage4_sizes) { check_sizes(4); }
Test(reduction, stage4_block_sizes) { check_block_sizes(4); }
Test(reduction, stage5_sizes) { check_sizes(5); }
Test(reduction, stage5_block_sizes) { check_block_sizes(5); }
Test(reduction, stage6_sizes) { check_sizes(6); }
Test(reduction, stage6_block_sizes) { check_block_sizes(6); }
Test(reduction, stage7_sizes) { check_sizes(7); }
Test(reduction, stage7_block_sizes) { check_block_sizes(7); }

typedef struct {
    int stage, n;
    int *in, *scratch, *out;
} timed_sum;

static void run_timed(void *context)
{
    timed_sum *t = context;
    reduce_sum(t->stage, t->in, t->n, 256, t->scratch, t->out);
}

Test(reduction, timing_2e24, .description = "every stage at 2^24 ints, blocks of 256")
{
    /* 64 MB: more than the H100's 50 MB L2, so much of it comes from DRAM.
     * bench.c has the full tables. */
    const int n = 1 << 24;
    int *host = malloc(sizeof(int) * (size_t)n);
    cr_assert(host, "out of host memory");
    wb_rng rng = wb_rng_for("reduction timing");
    wb_fill_ints(host, (size_t)n, -1000, 1000, &rng);
    timed_sum t = {0, n, NULL, NULL, NULL};
    CUDA_CHECK(cudaMalloc((void **)&t.in, sizeof(int) * (size_t)n));
    CUDA_CHECK(cudaMalloc((void **)&t.scratch, sizeof(int) * reduce_scratch_ints(n)));
    CUDA_CHECK(cudaMalloc((void **)&t.out, sizeof(int)));
    CUDA_CHECK(cudaMemcpy(t.in, host, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice));
    free(host);
    wb_table *table = wb_table_new("reduction", "reduction, n = 2^24, blocks of 256 (median of 10)",
                                   "stage|kernel|time (ms)|GB/s");
    for (t.stage = 0; t.stage < REDUCE_STAGES; t.stage++) {
        wb_timing timing = wb_time_gpu(run_timed, &t, 2, 10);
        wb_table_row(table, "%d|%s|%.3f|%.0f", t.stage, reduce_stage_name(t.stage),
                     timing.median_ms, wb_gbps(sizeof(int) * (double)n, timing.median_ms));
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    CUDA_CHECK(cudaFree(t.in));
    CUDA_CHECK(cudaFree(t.scratch));
    CUDA_CHECK(cudaFree(t.out));
}
