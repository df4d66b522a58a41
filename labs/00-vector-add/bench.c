/*
 * Lab 00 benchmark: vector add bandwidth against the measured copy bandwidth.
 * `vector-add-bench-reference --help` for the options (common/bench.h). Exits
 * 1 when the bandwidth is below --target of the copy bandwidth, so that
 * `meson test --benchmark` checks the lab's performance target.
 */
#include <limits.h>
#include <stdlib.h>

#include "bench.h"
#include "lab.h"
#include "workbook.h"

typedef struct {
    float *a, *b, *c;
    int n, block_size;
} job;

static void run(void *context)
{
    job *j = context;
    vector_add(j->a, j->b, j->c, j->n, j->block_size);
}

int main(int argc, char **argv)
{
    int stage = WB_ALL_STAGES, n = 0, only_block = 0, reps = 50;
    double target = 0.85;   /* H100 92%, H200 105% (handouts/00-vector-add.md) */
    const wb_option options[] = {
        {"stage", "S", WB_INT, &stage, 0, 0, "accepted, and the default"},
        {"n", "N", WB_INT, &n, 1, INT_MAX,
         "elements (default 2^26, more where a, b and c would hold the L2 less than 4 times)"},
        {"block", "B", WB_INT, &only_block, 0, 1024,
         "threads per block (default, or 0: every power of two from 32 to 1024)"},
        WB_REPS_OPTION(reps),
        WB_TARGET_OPTION(target,
         "fails unless the best block size reaches F of the device-to-device copy bandwidth"),
        {0}};
    wb_bench_options(argc, argv,
                     "Times vector add against the measured device-to-device copy bandwidth,\n"
                     "after checking its result.",
                     options);
    wb_bench_need_gpu();
    if (n == 0)
        n = (int)wb_bench_default_size("elements of a, b and c", (size_t)1 << 26, (size_t)1 << 20,
                                       3.0 * sizeof(float), 3.0 * sizeof(float));

    size_t bytes = sizeof(float) * (size_t)n;
    float *host_a = malloc(bytes), *host_b = malloc(bytes), *host_c = malloc(bytes);
    if (!host_a || !host_b || !host_c)
        wb_fail("out of host memory for n = %d", n);
    wb_rng rng = wb_rng_for("vector-add bench");
    job j = {NULL, NULL, NULL, n, only_block ? only_block : 256};
    CUDA_CHECK(cudaMalloc((void **)&j.a, bytes));
    CUDA_CHECK(cudaMalloc((void **)&j.b, bytes));
    CUDA_CHECK(cudaMalloc((void **)&j.c, bytes));
    wb_fill_floats(host_a, (size_t)n, -1.0f, 1.0f, &rng);
    wb_fill_floats(host_b, (size_t)n, -1.0f, 1.0f, &rng);
    CUDA_CHECK(cudaMemcpy(j.a, host_a, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(j.b, host_b, bytes, cudaMemcpyHostToDevice));

    /* Validate before timing: a fast wrong kernel is not a result. */
    wb_poison_floats(j.c, (size_t)n);
    run(&j);
    CUDA_CHECK(cudaMemcpy(host_c, j.c, bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (host_c[i] != host_a[i] + host_b[i])
            wb_fail("wrong result at index %d: got %g, expected %g; run the tests first",
                    i, host_c[i], host_a[i] + host_b[i]);
    free(host_a);
    free(host_b);
    free(host_c);

    wb_device dev = wb_device_info();
    if (only_block)
        wb_bench_launch("blocks of %d threads, the grid vector_add sizes (the lab's kernel: one "
                        "thread per element; the reference: four)|--block %d",
                        only_block, only_block);
    else
        wb_bench_launch("blocks of 32 to 1024 threads, one row each, the grid vector_add sizes "
                        "(the lab's kernel: one thread per element; the reference: four)|"
                        "the best block size differs between GPUs: the target takes the best row");
    wb_bench_working_set("a, b and c", 3.0 * (double)bytes);
    double copy = wb_copy_bandwidth_gbps();
    char title[640];
    snprintf(title, sizeof title,
             "vector add, n = %d, %s, median of %d runs of at least %.0f ms (as many calls as "
             "take that long); bytes moved = 12 n (read a, b; write c)\ncopy bandwidth %.0f GB/s "
             "(read + write); theoretical %.0f GB/s (%d MHz x 2 x %d bits)",
             n, dev.name, reps, WB_MIN_RUN_MS, copy, dev.theoretical_bandwidth_gbps,
             dev.memory_clock_khz / 1000, dev.memory_bus_bits);
    wb_table *table = wb_table_new("vector-add-bench", title,
                                   "block|calls per run|time per call (ms)|min (ms)|GB/s|"
                                   "% of copy");
    double best = 0.0;
    for (int block = 32; block <= 1024; block *= 2) {
        j.block_size = only_block ? only_block : block;
        int calls;
        wb_timing t = wb_time_gpu_for_ms(run, &j, reps, WB_MIN_RUN_MS, &calls);
        double gbps = wb_gbps(3.0 * (double)bytes, t.median_ms);
        best = gbps > best ? gbps : best;
        wb_table_row(table, "%d|%d|%.3f|%.3f|%.0f|%.1f", j.block_size, calls, t.median_ms,
                     t.min_ms, gbps, 100.0 * gbps / copy);
        if (only_block)
            break;
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    CUDA_CHECK(cudaFree(j.a));
    CUDA_CHECK(cudaFree(j.b));
    CUDA_CHECK(cudaFree(j.c));

    return wb_bench_target(best >= target * copy, "%.0f%% of copy bandwidth|best %.1f%%",
                           100.0 * target, 100.0 * best / copy) ? 0 : 1;
}
