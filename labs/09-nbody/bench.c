/*
 * Lab 09 benchmark: every stage's force evaluation at 2^17 bodies with
 * blocks of 128, 256 and 512, in pairs per second and GFLOP/s (20 flops per
 * pair, lab.h) next to the FP32 peak at the SM clock measured in the same
 * run; the given one-field kernel (x += dx) in each layout, where AOS and
 * SOA differ, next to the copy bandwidth; with --sweep, stages 2-4 over
 * sizes from 2^12 to 2^18 bodies. The target: the best stage at 2^17
 * bodies reaches --target of the FP32 peak. Every stage's accelerations are
 * checked on a sample of bodies against the CPU before they are timed.
 * `nbody-bench-reference --help` for the options (common/bench.h).
 */
#include <math.h>
#include <stdlib.h>

#include "bench.h"
#include "bodies.h"
#include "lab.h"
#include "workbook.h"

#define EPS 0.05f
#define CHECKED 64            /* bodies whose accelerations the CPU checks */
#define ERROR_ALLOWED 1e-4    /* relative norm error over them */

static void *device_alloc(size_t bytes)
{
    void *p;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
}

static void device_free(void *p) { CUDA_CHECK(cudaFree(p)); }

/* n random bodies in every layout on the device, and acc. */
typedef struct {
    int n;
    nbody_body *host;
    nbody_system layouts[3];
    float *acc;
} bodies_everywhere;

static bodies_everywhere make_bodies(int n)
{
    bodies_everywhere b = {.n = n, .host = malloc(sizeof(nbody_body) * (size_t)n)};
    if (!b.host)
        wb_fail("out of host memory for %d bodies", n);
    wb_rng rng = wb_rng_for("nbody bench");
    nbody_random_bodies(b.host, n, &rng);
    for (int l = NBODY_AOS; l <= NBODY_FLOAT4; l++) {
        b.layouts[l] = nbody_alloc_system((nbody_layout)l, n, device_alloc);
        nbody_upload(&b.layouts[l], b.host);
    }
    b.acc = device_alloc(3 * sizeof(float) * (size_t)n);
    return b;
}

static void free_bodies(bodies_everywhere *b)
{
    for (int l = NBODY_AOS; l <= NBODY_FLOAT4; l++)
        nbody_free_system(&b->layouts[l], device_free);
    device_free(b->acc);
    free(b->host);
}

typedef struct {
    int stage, block;
    nbody_system *bodies;
    float *acc;
} force_job;

static void run_forces(void *context)
{
    force_job *j = context;
    nbody_accelerations(j->stage, j->bodies, EPS, j->block, j->acc);
}

/* The relative norm error of acc over CHECKED bodies spread over all n,
 * against the CPU in double. */
static double sampled_error(const bodies_everywhere *b)
{
    float *got = malloc(3 * sizeof(float) * (size_t)b->n);
    if (!got)
        wb_fail("out of host memory");
    CUDA_CHECK(cudaMemcpy(got, b->acc, 3 * sizeof(float) * (size_t)b->n, cudaMemcpyDeviceToHost));
    double diff = 0.0, size = 0.0;
    for (int c = 0; c < CHECKED && c < b->n; c++) {
        int i = (int)((long long)c * (b->n - 1) / (CHECKED - 1));
        double want[3];
        nbody_cpu_acceleration(b->host, b->n, i, EPS, NBODY_LAW, want, NULL);
        for (int k = 0; k < 3; k++) {
            diff += (got[3 * i + k] - want[k]) * (got[3 * i + k] - want[k]);
            size += want[k] * want[k];
        }
    }
    free(got);
    return size > 0.0 ? sqrt(diff / size) : sqrt(diff);
}

/* One stage at one block size: checked, then timed. Returns GFLOP/s (0
 * when the result is wrong; *ok is then false). */
static double time_stage(bodies_everywhere *b, int stage, int block, int reps, wb_timing *t,
                         double *error, bool *ok)
{
    force_job j = {stage, block, &b->layouts[nbody_stage_layout(stage)], b->acc};
    wb_poison_floats(b->acc, 3 * (size_t)b->n);
    run_forces(&j);
    *error = sampled_error(b);
    if (!(*error < ERROR_ALLOWED)) {
        fprintf(stderr, "stage %d (block %d) differs from the CPU: relative error %g\n", stage,
                block, *error);
        *ok = false;
    }
    /* The naive stages take a tenth of a second at 2^17: fewer runs past
     * 10^10 pairs. */
    double pairs = (double)b->n * b->n;
    *t = wb_time_gpu_for_ms(run_forces, &j, stage <= 2 && pairs > 1e10 ? (reps + 1) / 2 : reps,
                            WB_MIN_RUN_MS, NULL);
    double gflops = wb_gflops(NBODY_FLOPS_PER_INTERACTION * pairs, t->median_ms);
    return *error < ERROR_ALLOWED ? gflops : 0.0;
}

/* FP32 lanes per SM, as wb_fp32_peak_gflops counts them. */
static double fp32_lanes(void)
{
    wb_device dev = wb_device_info();
    return wb_fp32_peak_gflops() / (2.0 * dev.sm_count * dev.clock_khz * 1e-6);
}

/* The forces table at n bodies; returns the best GFLOP/s. *clock_mhz: the
 * SM clock measured right after it. */
static double forces_table(int n, int only_stage, const int *blocks, int block_count, int reps,
                           double *clock_mhz, bool *ok)
{
    bodies_everywhere b = make_bodies(n);
    double pairs = (double)n * n, best = 0.0;
    wb_timing t[NBODY_STAGES][3];
    double gflops[NBODY_STAGES][3], error[NBODY_STAGES][3];
    for (int stage = 0; stage < NBODY_STAGES; stage++)
        for (int k = 0; k < block_count; k++)
            if (only_stage == WB_ALL_STAGES || stage == only_stage) {
                gflops[stage][k] = time_stage(&b, stage, blocks[k], reps, &t[stage][k],
                                              &error[stage][k], ok);
                best = fmax(best, gflops[stage][k]);
            }
    /* The clock after the heaviest work of the run: a GPU held back by its
     * power or temperature limit shows it here. */
    *clock_mhz = wb_sm_clock_mhz();
    wb_device dev = wb_device_info();
    double peak = dev.sm_count * fp32_lanes() * 2.0 * *clock_mhz * 1e-3;
    char title[512];
    snprintf(title, sizeof title,
             "n-body forces, n = %d on %s (median of %d runs, fewer for stages 0-2 past 10^10 "
             "pairs); %d flops per pair, n^2 pairs;\nFP32 peak %.0f GFLOP/s = %d SMs x %.0f "
             "lanes x 2 x %.0f MHz (the SM clock measured after this table)",
             n, dev.name, reps, NBODY_FLOPS_PER_INTERACTION, peak, dev.sm_count, fp32_lanes(),
             *clock_mhz);
    wb_table *table = wb_table_new("nbody-bench", title,
                                   "n|stage|kernel|block|time per call (ms)|pairs/s (1e9)|GFLOP/s|"
                                   "% of FP32 peak|error");
    for (int stage = 0; stage < NBODY_STAGES; stage++)
        for (int k = 0; k < block_count; k++)
            if (only_stage == WB_ALL_STAGES || stage == only_stage)
                wb_table_row(table, "%d|%d|%s|%d|%.3f|%.1f|%.0f|%.1f|%.1e", n, stage,
                             nbody_stage_name(stage), blocks[k], t[stage][k].median_ms,
                             wb_items_per_s(pairs, t[stage][k].median_ms) / 1e9,
                             wb_gflops(NBODY_FLOPS_PER_INTERACTION * pairs, t[stage][k].median_ms),
                             100.0 * gflops[stage][k] / peak, error[stage][k]);
    wb_table_print(table, stdout);
    wb_table_free(table);
    free_bodies(&b);
    return best / peak;
}

typedef struct {
    nbody_system *bodies;
} shift_job;

/* Shifts back and forth, so that the bodies stay where they are. */
static void run_shift(void *context)
{
    static float dx = 0.5f;
    nbody_shift_x(((shift_job *)context)->bodies, dx);
    dx = -dx;
}

/* The one-field kernel in each layout, next to the copy bandwidth: runs of
 * as many launches as last WB_MIN_RUN_MS (x of 60 Mi bodies in SOA, the
 * H200's default: 240 MiB read and written, some 0.12 ms a launch), so that
 * launch gaps do not count. */
static void layout_table(int n, int reps)
{
    bodies_everywhere b = make_bodies(n);
    double copy = wb_copy_bandwidth_gbps();
    char title[256];
    snprintf(title, sizeof title,
             "x += dx over %d bodies (given shift_x, median of %d runs of at least %.0f ms); "
             "device-to-device copy %.0f GB/s (read + written)", n, reps, WB_MIN_RUN_MS, copy);
    wb_table *table = wb_table_new("nbody-layouts", title,
                                   "layout|floats between two x|calls per run|"
                                   "time per call (ms)|x GB/s|sector GB/s|% of copy");
    for (int l = NBODY_AOS; l <= NBODY_FLOAT4; l++) {
        shift_job j = {&b.layouts[l]};
        int calls;
        wb_timing t = wb_time_gpu_for_ms(run_shift, &j, reps, WB_MIN_RUN_MS, &calls);
        /* x GB/s: the 4 bytes of x read and written per body, what the
         * kernel needs. Sector GB/s: the 32-byte sectors that hold some x,
         * read and written back, what the memory moves: with x every
         * stride floats, every sector of the array holds one when the
         * stride is below 8 floats. */
        int stride = l == NBODY_AOS ? (int)(sizeof(nbody_body) / sizeof(float))
                     : l == NBODY_SOA ? 1 : 4;
        double x_bytes = 2.0 * sizeof(float) * n, sector_bytes = x_bytes * stride;
        double sector_gbps = wb_gbps(sector_bytes, t.median_ms);
        wb_table_row(table, "%s|%d|%d|%.3f|%.0f|%.0f|%.1f", nbody_layout_name((nbody_layout)l),
                     stride, calls, t.median_ms, wb_gbps(x_bytes, t.median_ms), sector_gbps,
                     100.0 * sector_gbps / copy);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    free_bodies(&b);
}

/* Stages 2-4 over sizes: how many bodies it takes to fill the GPU. */
static void size_sweep(int reps, bool *ok)
{
    wb_table *table = wb_table_new("nbody-sweep",
                                   "stages 2-4 by number of bodies, blocks of 256 (GFLOP/s)",
                                   "n|blocks of 256|2|3|4");
    for (int n = 1 << 12; n <= 1 << 18; n *= 2) {
        bodies_everywhere b = make_bodies(n);
        double g[3];
        for (int stage = 2; stage <= 4; stage++) {
            wb_timing t;
            double error;
            g[stage - 2] = time_stage(&b, stage, 256, reps, &t, &error, ok);
        }
        wb_table_row(table, "%d|%d|%.0f|%.0f|%.0f", n, (n + 255) / 256, g[0], g[1], g[2]);
        free_bodies(&b);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
}

int main(int argc, char **argv)
{
    int only_stage = WB_ALL_STAGES, n = 1 << 17, block = 0, reps = 5, layout_n = -1;
    double target = 0.5;
    bool sweep = false;
    const wb_option options[] = {
        {"stage", "S", WB_INT, &only_stage, 0, NBODY_STAGES - 1,
         "time only stage S (default: all)"},
        {"n", "N", WB_INT, &n, 1, 1 << 20, "bodies in the forces table"},
        {"block", "B", WB_WARPS, &block, NBODY_MIN_BLOCK, NBODY_MAX_BLOCK,
         "threads per block, the tile of stages 3 and 4 (default: 128, 256 and 512)"},
        WB_REPS_OPTION(reps),
        WB_TARGET_OPTION(target, "fails unless the best stage at 2^17 bodies reaches F of the "
                                 "FP32 peak at the measured clock"),
        {"layout-n", "N", WB_INT, &layout_n, 0, 1 << 28,
         "bodies in the layout table of the one-field kernel (default 2^24, more where their "
         "x would hold the L2 less than 4 times; 0: no table)"},
        {"sweep", NULL, WB_FLAG, &sweep, 0, 0,
         "also stages 2-4 at 2^12 to 2^18 bodies, blocks of 256"},
        {0}};
    wb_bench_options(argc, argv,
                     "Times the n-body stages in pairs/s and GFLOP/s next to the FP32 peak, and\n"
                     "the given one-field kernel in each layout next to the copy bandwidth;\n"
                     "each stage's accelerations are checked against the CPU first.",
                     options);
    wb_bench_need_gpu();
    if (block)
        wb_bench_launch("one thread per body, blocks of %d threads (the tile of stages 3 and 4)|"
                        "--block %d", block, block);
    else
        wb_bench_launch("one thread per body, blocks of 128, 256 and 512 threads, one row each "
                        "(the block is the tile of stages 3 and 4)|the best block size differs "
                        "between GPUs: the target takes the best row");
    wb_bench_working_set("the forces table's bodies (AOS, 28 bytes each)",
                         sizeof(nbody_body) * (double)n);
    /* The layout table times x alone in SOA: 4 bytes a body make its
     * working set. On the device each body takes 28 bytes in AOS and in
     * SOA, 32 in FLOAT4 and 12 of accelerations. */
    if (layout_n < 0)
        layout_n = (int)wb_bench_default_size("the layout table's bodies (x, 4 bytes each)",
                                              (size_t)1 << 24, (size_t)1 << 20, sizeof(float),
                                              2.0 * sizeof(nbody_body) + 11.0 * sizeof(float));
    if (layout_n > 0)
        wb_bench_working_set("the layout table's bodies (AOS)",
                             sizeof(nbody_body) * (double)layout_n);

    bool ok = true;
    const int all_blocks[] = {128, 256, 512};
    double clock_mhz;
    double share = block ? forces_table(n, only_stage, &block, 1, reps, &clock_mhz, &ok)
                         : forces_table(n, only_stage, all_blocks, 3, reps, &clock_mhz, &ok);
    if (layout_n > 0)
        layout_table(layout_n, reps);
    if (sweep)
        size_sweep(reps, &ok);
    bool met = wb_bench_target(share >= target,
                               "best stage at 2^17 bodies >= %.0f%% of the FP32 peak|best %.1f%% "
                               "at %.0f MHz", 100.0 * target, 100.0 * share, clock_mhz);
    return ok && met ? 0 : 1;
}
