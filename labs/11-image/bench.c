/*
 * Lab 11 benchmark: every stage next to the yardsticks measured in the same
 * run. `image-bench-reference --help` for the options (common/bench.h).
 *
 *   - convolution, 5 x 5 mask (radius 2) on 8192^2 floats (256 MiB in,
 *     256 MiB out, far beyond L2): effective bandwidth = 8 bytes per pixel
 *     (one read + one write, the least a convolution moves) / time, next to
 *     the device-to-device copy bandwidth, which moves the same 8 bytes per
 *     float; target: the best stage at --target (0.8) of the copy;
 *   - convolution, 9 x 9 mask (radius 4): 81 multiply-adds a pixel, where
 *     the arithmetic catches up with the memory: GFLOP/s next to the FP32
 *     peak at the SM clock measured in the same run (as lab 09); stage 4
 *     does 2 x 9 of them, and its "2D-equivalent" GFLOP/s counts 81;
 *   - histogram of 2^28 bytes (more where they would hold the L2 less than
 *     4 times) into 256 bins, uniform and all one value
 *     (every atomic on one bin): GB/s next to CUB's
 *     DeviceHistogram::HistogramEven on the same bytes; targets: the best
 *     stage at --target-histogram (0.9) of CUB on uniform bytes, and stages
 *     6 and 7 each at least --target-contention (10) times stage 5's speed
 *     on bytes all one value.
 * Every stage is checked against the CPU before it is timed. Each timed
 * run makes as many calls back to back as take about 1 ms (at least one,
 * wb_calls_for_ms); the median over --reps runs is reported per call.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cpu_image.h"
#include "cub_histogram.h"
#include "lab.h"
#include "workbook.h"

#define FULL_SIDE 8192
#define CHECKED_PIXELS 4096

/* ---------------------------------------------------------- convolution */

typedef struct {
    int stage, side, radius;
    float *in, *out;   /* device */
    float mask[IMAGE_MAX_TAPS], row[IMAGE_MAX_SIDE], column[IMAGE_MAX_SIDE];
} conv_job;

static void run_conv(void *context)
{
    conv_job *j = context;
    if (j->stage == IMAGE_SEPARABLE_STAGE)
        image_convolve_separable(IMAGE_CLAMP, j->in, j->out, j->side, j->side, j->row,
                                 j->column, j->radius);
    else
        image_convolve(j->stage, IMAGE_CLAMP, j->in, j->out, j->side, j->side, j->mask,
                       j->radius);
}

/* Validate before timing: a fast wrong kernel is not a result. The four
 * corners and CHECKED_PIXELS others drawn at random against the CPU's
 * values from the host's copy of the input. */
static void validate_conv(conv_job *j, const float *host_in)
{
    size_t n = (size_t)j->side * j->side;
    wb_poison_floats(j->out, n);
    run_conv(j);
    float *got = malloc(sizeof(float) * n);
    if (!got)
        wb_fail("out of host memory for %zu pixels", n);
    CUDA_CHECK(cudaMemcpy(got, j->out, sizeof(float) * n, cudaMemcpyDeviceToHost));
    int side = 2 * j->radius + 1, last = j->side - 1;
    double magnitude = 0.0;
    for (int k = 0; k < side * side; k++)
        magnitude += fabs(j->mask[k]);
    wb_rng rng = wb_rng_for("image bench, checked pixels");
    for (int k = 0; k < CHECKED_PIXELS + 4; k++) {
        int x = k < 4 ? (k & 1) * last : wb_rng_int(&rng, 0, last);
        int y = k < 4 ? (k >> 1) * last : wb_rng_int(&rng, 0, last);
        double expected = 0.0;
        for (int dy = 0; dy < side; dy++)
            for (int dx = 0; dx < side; dx++) {
                int sx = x + dx - j->radius, sy = y + dy - j->radius;
                sx = sx < 0 ? 0 : sx > last ? last : sx;
                sy = sy < 0 ? 0 : sy > last ? last : sy;
                expected += (double)j->mask[dy * side + dx] * host_in[(size_t)sy * j->side + sx];
            }
        float value = got[(size_t)y * j->side + x];
        if (!(fabs(value - expected) <= 1e-5 * magnitude))
            wb_fail("stage %d (%s), %d^2 pixels, radius %d: pixel (%d, %d) is %g, expected %g; "
                    "run the tests first", j->stage, image_stage_name(j->stage), j->side,
                    j->radius, x, y, value, expected);
    }
    free(got);
}

/* FP32 lanes per SM, as wb_fp32_peak_gflops counts them (lab 09). */
static double fp32_lanes(const wb_device *dev)
{
    return wb_fp32_peak_gflops() / (2.0 * dev->sm_count * dev->clock_khz * 1e-6);
}

/* The convolution table of one radius over stages first..last; returns the
 * best stage's share of the copy bandwidth. */
static double conv_table(int radius, int side, int first, int last, int reps, double copy,
                         const wb_device *dev)
{
    conv_job j = {.side = side, .radius = radius};
    size_t n = (size_t)side * side, bytes = sizeof(float) * n;
    CUDA_CHECK(cudaMalloc((void **)&j.in, bytes));
    CUDA_CHECK(cudaMalloc((void **)&j.out, bytes));
    float *host_in = malloc(bytes);
    if (!host_in)
        wb_fail("out of host memory for %zu pixels", n);
    wb_rng rng = wb_rng_for("image bench");
    wb_fill_floats(host_in, n, 0.0f, 1.0f, &rng);
    CUDA_CHECK(cudaMemcpy(j.in, host_in, bytes, cudaMemcpyHostToDevice));
    int taps_side = 2 * radius + 1;
    wb_fill_floats(j.row, (size_t)taps_side, -1.0f, 1.0f, &rng);
    wb_fill_floats(j.column, (size_t)taps_side, -1.0f, 1.0f, &rng);
    image_cpu_outer_mask(j.row, j.column, radius, j.mask);

    double results[IMAGE_FIRST_HISTOGRAM_STAGE][3];   /* ms, calls, GB/s */
    double best = 0.0;
    for (j.stage = first; j.stage <= last && j.stage < IMAGE_FIRST_HISTOGRAM_STAGE; j.stage++) {
        validate_conv(&j, host_in);
        int calls;
        double ms = wb_time_gpu_for_ms(run_conv, &j, reps, WB_MIN_RUN_MS, &calls).median_ms;
        results[j.stage][0] = ms;
        results[j.stage][1] = calls;
        results[j.stage][2] = wb_gbps(2.0 * bytes, ms);
        best = fmax(best, results[j.stage][2]);
    }
    /* The clock after the heaviest work of the run (lab 09). */
    double clock_mhz = wb_sm_clock_mhz();
    double peak = dev->sm_count * fp32_lanes(dev) * 2.0 * clock_mhz * 1e-3;
    double flops = 2.0 * taps_side * taps_side * (double)n;
    char title[768];
    snprintf(title, sizeof title,
             "convolution, %d x %d mask, %d^2 floats (%.0f MiB each way), clamp, %s, median of "
             "%d runs; GB/s = 8 bytes per pixel (one read + one write);\ncopy bandwidth %.0f "
             "GB/s (read + write, same run); FP32 peak %.0f GFLOP/s at %.0f MHz measured; "
             "GFLOP/s count %d multiply-adds a pixel (stage 4 does %d)",
             taps_side, taps_side, side, bytes / 1048576.0, dev->name, reps, copy, peak,
             clock_mhz, taps_side * taps_side, 2 * taps_side);
    char name[40];
    snprintf(name, sizeof name, "image-bench-conv-r%d", radius);
    wb_table *table = wb_table_new(name, title,
                                   "stage|kernel|calls per run|ms per call|GB/s|% of copy|"
                                   "GFLOP/s|% of FP32 peak");
    for (int stage = first; stage <= last && stage < IMAGE_FIRST_HISTOGRAM_STAGE; stage++) {
        double gflops = wb_gflops(flops, results[stage][0]);
        wb_table_row(table, "%d|%s|%.0f|%.4f|%.0f|%.1f|%.0f|%.1f", stage,
                     image_stage_name(stage), results[stage][1], results[stage][0],
                     results[stage][2], 100.0 * results[stage][2] / copy, gflops,
                     100.0 * gflops / peak);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    CUDA_CHECK(cudaFree(j.in));
    CUDA_CHECK(cudaFree(j.out));
    free(host_in);
    return best / copy;
}

/* ------------------------------------------------------------ histogram */

#define CUB_ROW (-1)   /* the table's yardstick row */

typedef struct {
    int stage;   /* a histogram stage, or CUB_ROW */
    const unsigned char *data;
    size_t n;
    unsigned int *bins;
} histogram_job;

static void run_histogram(void *context)
{
    histogram_job *j = context;
    if (j->stage == CUB_ROW)
        cub_histogram_bytes(j->data, j->n, j->bins);
    else
        image_histogram(j->stage, j->data, j->n, j->bins);
}

/* One data set's table: stages first..last and CUB, each checked against
 * the CPU's bins first. speed[stage] receives GB/s (speed[0]: CUB's). */
static void histogram_table(const char *name, const char *kind, const unsigned char *host,
                            size_t n, int first, int last, int reps, const wb_device *dev,
                            double *speed)
{
    unsigned char *d_data;
    unsigned int *d_bins, expected[IMAGE_BINS], got[IMAGE_BINS];
    CUDA_CHECK(cudaMalloc((void **)&d_data, n));
    CUDA_CHECK(cudaMalloc((void **)&d_bins, sizeof got));
    CUDA_CHECK(cudaMemcpy(d_data, host, n, cudaMemcpyHostToDevice));
    image_cpu_histogram(host, n, expected);
    char title[512];
    snprintf(title, sizeof title, "histogram of %zu bytes (%s) into %d bins, %s, median of %d "
             "runs; GB/s = bytes read once", n, kind, IMAGE_BINS, dev->name, reps);
    wb_table *table = wb_table_new(name, title,
                                   "stage|kernel|calls per run|ms per call|GB/s|% of CUB");
    int rows[IMAGE_STAGES + 1], count = 0;
    rows[count++] = CUB_ROW;
    for (int stage = first; stage <= last; stage++)
        if (stage >= IMAGE_FIRST_HISTOGRAM_STAGE)
            rows[count++] = stage;
    double ms[IMAGE_STAGES + 1];
    int calls[IMAGE_STAGES + 1];
    for (int r = 0; r < count; r++) {
        histogram_job j = {rows[r], d_data, n, d_bins};
        wb_poison_ints((int *)d_bins, IMAGE_BINS);
        run_histogram(&j);
        CUDA_CHECK(cudaMemcpy(got, d_bins, sizeof got, cudaMemcpyDeviceToHost));
        for (int b = 0; b < IMAGE_BINS; b++)
            if (got[b] != expected[b])
                wb_fail("%s on %s: bin %d is %u, expected %u; run the tests first",
                        rows[r] == CUB_ROW ? "CUB" : image_stage_name(rows[r]), kind, b, got[b],
                        expected[b]);
        calls[r] = wb_calls_for_ms(run_histogram, &j, WB_MIN_RUN_MS);
        /* Stage 5 on one value takes long: fewer runs of it. The runs
         * that chose the calls were the warm-up. */
        int runs = calls[r] == 1 && reps > 3 ? 3 : reps;
        ms[r] = wb_time_gpu_calls(run_histogram, &j, 0, runs, calls[r]).median_ms;
        speed[rows[r] == CUB_ROW ? 0 : rows[r]] = wb_gbps((double)n, ms[r]);
    }
    for (int r = 0; r < count; r++) {
        double gbps = wb_gbps((double)n, ms[r]);
        char stage[8] = "-";
        if (rows[r] != CUB_ROW)
            snprintf(stage, sizeof stage, "%d", rows[r]);
        wb_table_row(table, "%s|%s|%d|%.4f|%.0f|%.1f", stage,
                     rows[r] == CUB_ROW ? "CUB DeviceHistogram::HistogramEven"
                                        : image_stage_name(rows[r]),
                     calls[r], ms[r], gbps, 100.0 * gbps / speed[0]);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    CUDA_CHECK(cudaFree(d_data));
    CUDA_CHECK(cudaFree(d_bins));
}

int main(int argc, char **argv)
{
    int only_stage = WB_ALL_STAGES, side = FULL_SIDE, reps = 10,
        naive_block = IMAGE_TILE_X * IMAGE_TILE_Y;
    double target = 0.8, target_histogram = 0.9, target_contention = 10.0;
    const wb_option options[] = {
        {"stage", "S", WB_INT, &only_stage, 0, IMAGE_STAGES - 1,
         "time only stage S (default: all)"},
        {"n", "N", WB_INT, &side, 1, 46340, "side of the convolution's image, N x N floats"},
        {"block", "B", WB_WARPS, &naive_block, 32, 1024,
         "threads per block of stages 0 and 1, in rows of 32; the other stages' blocks are "
         "their tiles (IMAGE_TILE_X x IMAGE_TILE_Y) or IMAGE_HISTOGRAM_BLOCK, fixed in lab.h"},
        WB_REPS_OPTION(reps),
        WB_TARGET_OPTION(target, "fails unless the best 5 x 5 convolution stage reaches F of "
                                 "the copy bandwidth"),
        {"target-histogram", "F", WB_REAL, &target_histogram, 0, 10,
         "fails unless the best histogram stage reaches F of CUB's speed on uniform bytes"},
        {"target-contention", "F", WB_REAL, &target_contention, 0, 1e6,
         "fails unless stages 6 and 7 each reach F times stage 5's speed on bytes all one "
         "value"},
        {0}};
    wb_bench_options(argc, argv,
                     "Times the convolution stages (5 x 5 and 9 x 9 masks on N^2 floats) next to\n"
                     "the copy bandwidth and the FP32 peak, and the histogram stages (2^28 bytes,\n"
                     "more where they would hold the L2 less than 4 times; uniform and all one\n"
                     "value) next to CUB, each checked first.",
                     options);
    if (naive_block != IMAGE_TILE_X * IMAGE_TILE_Y && only_stage != WB_ALL_STAGES &&
        only_stage > 1)
        wb_bench_usage_error("--block sets the blocks of stages 0 and 1; stage %d's block is "
                             "fixed in lab.h", only_stage);
    image_set_naive_block(naive_block);
    wb_bench_need_gpu();
    wb_device dev = wb_device_info();
    bool all = only_stage == WB_ALL_STAGES;
    int first = all ? 0 : only_stage, last = all ? IMAGE_STAGES - 1 : only_stage;
    wb_bench_launch("convolution blocks of stages 0-1 32 x %d threads, of stages 2-4 %d x %d "
                    "(stage 4: %d x %d outputs each); histogram blocks %d threads, as many per "
                    "SM as the occupancy API allows|%s; the tiles are fixed in lab.h, and the "
                    "histogram's grid follows the SM count", naive_block / 32, IMAGE_TILE_X,
                    IMAGE_TILE_Y, IMAGE_TILE_X, IMAGE_TILE_Y * IMAGE_COARSEN,
                    IMAGE_HISTOGRAM_BLOCK,
                    naive_block == IMAGE_TILE_X * IMAGE_TILE_Y
                        ? "the naive blocks have the tiles' shape"
                        : "--block set the naive blocks");
    if (first < IMAGE_FIRST_HISTOGRAM_STAGE)
        wb_bench_working_set("the convolution's image in and out",
                             2.0 * sizeof(float) * (double)side * side);
    size_t histogram_bytes = 0;   /* a multiple of 8: the bytes are drawn 8 at a time */
    if (last >= IMAGE_FIRST_HISTOGRAM_STAGE) {
        histogram_bytes = wb_bench_default_size("the histogram's bytes", (size_t)1 << 28,
                                                (size_t)1 << 20, 1.0, 1.0);
        wb_bench_working_set("the histogram's bytes", (double)histogram_bytes);
    }
    bool met = true;

    if (first < IMAGE_FIRST_HISTOGRAM_STAGE) {
        double copy = wb_copy_bandwidth_gbps();
        double share = conv_table(2, side, first, last, reps, copy, &dev);
        conv_table(IMAGE_MAX_RADIUS, side, first, last, reps, copy, &dev);
        met &= wb_bench_target(share >= target, "best 5 x 5 convolution stage >= %.0f%% of copy "
                               "bandwidth at %d^2|best %.1f%%", 100.0 * target, side,
                               100.0 * share);
    }
    if (last >= IMAGE_FIRST_HISTOGRAM_STAGE) {
        unsigned char *host = malloc(histogram_bytes);
        if (!host)
            wb_fail("out of host memory for %zu bytes", histogram_bytes);
        wb_rng rng = wb_rng_for("image bench, bytes");
        for (size_t i = 0; i < histogram_bytes; i += 8) {
            uint64_t word = wb_rng_u64(&rng);
            memcpy(host + i, &word, 8);
        }
        double uniform[IMAGE_STAGES] = {0}, one_value[IMAGE_STAGES] = {0};
        histogram_table("image-bench-histogram-uniform", "uniform", host, histogram_bytes,
                        first, last, reps, &dev, uniform);
        memset(host, 0xA7, histogram_bytes);
        histogram_table("image-bench-histogram-one-value", "every byte 0xA7", host,
                        histogram_bytes, first, last, reps, &dev, one_value);
        free(host);
        double best = fmax(uniform[5], fmax(uniform[6], uniform[7]));
        met &= wb_bench_target(best >= target_histogram * uniform[0],
                               "best histogram stage >= %.0f%% of CUB on %.0f MiB of uniform "
                               "bytes|best %.1f%%", 100.0 * target_histogram,
                               histogram_bytes / 1048576.0,
                               100.0 * best / uniform[0]);
        if (all) {
            double slowest = fmin(one_value[6], one_value[7]);
            met &= wb_bench_target(slowest >= target_contention * one_value[5],
                                   "stages 6 and 7 each >= %.0fx stage 5 on %.0f MiB of bytes "
                                   "all one value|stage 6 %.1fx, stage 7 %.1fx", target_contention,
                                   histogram_bytes / 1048576.0,
                                   one_value[6] / one_value[5], one_value[7] / one_value[5]);
        } else {
            printf("target: stages 6 and 7 each >= %.0fx stage 5 on bytes all one value: not "
                   "checked (it is for the full run, which --stage narrowed)\n",
                   target_contention);
        }
    }
    return met ? 0 : 1;
}
