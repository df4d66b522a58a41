/*
 * Lab 05 tests: every stage against a double-precision CPU product on
 * random inputs in [-1, 1], output poisoned first; then a short timing
 * table at 1024^3 with cuBLAS beside it.
 */
#include <stdlib.h>

#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(matmul, .timeout = 120);

/* Relative norm error allowed: float sums of up to 1024 products. */
#define TOLERANCE 1e-5

typedef struct {
    int m, n, k;
} shape;

/* The sizes: single elements, a vector, primes and odd sizes that
 * cut through every tile, and one large square. */
static const shape any_sizes[] = {{1, 1, 1},       {1, 7, 1},       {17, 33, 65},
                                  {64, 64, 64},    {257, 511, 129}, {1000, 1, 1000},
                                  {512, 384, 257}, {1024, 1024, 1024}};

/* C = A x B on the CPU in double, in i-k-j order so the inner loop walks
 * rows of B and C (about a second at 1024^3). */
static double *cpu_matmul(const float *A, const float *B, int m, int n, int k)
{
    double *C = calloc((size_t)m * n, sizeof(double));
    cr_assert(C, "out of host memory for %d x %d", m, n);
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++) {
            double a = A[(size_t)i * k + p];
            for (int j = 0; j < n; j++)
                C[(size_t)i * n + j] += a * B[(size_t)p * n + j];
        }
    return C;
}

static float *to_device(const float *host, size_t count)
{
    float *device;
    CUDA_CHECK(cudaMalloc((void **)&device, sizeof(float) * count));
    CUDA_CHECK(cudaMemcpy(device, host, sizeof(float) * count, cudaMemcpyHostToDevice));
    return device;
}

/* Runs one stage on one size and compares it with the CPU. */
static void check_matmul(int stage, int tile_width, shape s)
{
    char what[128];
    snprintf(what, sizeof what, "stage %d (tile_width %d), m = %d, n = %d, k = %d", stage,
             tile_width, s.m, s.n, s.k);
    size_t a_count = (size_t)s.m * s.k, b_count = (size_t)s.k * s.n, c_count = (size_t)s.m * s.n;
    float *A = malloc(sizeof(float) * a_count), *B = malloc(sizeof(float) * b_count);
    float *got = malloc(sizeof(float) * c_count);
    cr_assert(A && B && got, "out of host memory for %s", what);
    wb_rng rng = wb_rng_for(what);
    wb_fill_floats(A, a_count, -1.0f, 1.0f, &rng);
    wb_fill_floats(B, b_count, -1.0f, 1.0f, &rng);
    float *dA = to_device(A, a_count), *dB = to_device(B, b_count), *dC;
    CUDA_CHECK(cudaMalloc((void **)&dC, sizeof(float) * c_count));
    wb_poison_floats(dC, c_count);
    matmul(stage, tile_width, dA, dB, dC, s.m, s.n, s.k);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(got, dC, sizeof(float) * c_count, cudaMemcpyDeviceToHost));
    double *expected = cpu_matmul(A, B, s.m, s.n, s.k);
    wb_assert_rel_error_below(got, expected, c_count, TOLERANCE, what);
    free(expected);
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
    free(A);
    free(B);
    free(got);
}

static void check_any_sizes(int stage, int tile_width)
{
    for (size_t i = 0; i < sizeof any_sizes / sizeof any_sizes[0]; i++)
        check_matmul(stage, tile_width, any_sizes[i]);
}

Test(matmul, stage0_naive) { check_any_sizes(0, 0); }

Test(matmul, stage1_coalesced) { check_any_sizes(1, 0); }

/* Stage 2 only takes multiples of its tile, square or not. */
static void check_multiples(int tile_width)
{
    const shape sizes[] = {{32, 32, 32}, {64, 96, 128}, {256, 256, 256}, {1024, 1024, 1024}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        check_matmul(2, tile_width, sizes[i]);
}

Test(matmul, stage2_tiled_16) { check_multiples(16); }

Test(matmul, stage2_tiled_32) { check_multiples(32); }

Test(matmul, stage3_any_size_16) { check_any_sizes(3, 16); }

Test(matmul, stage3_any_size_32) { check_any_sizes(3, 32); }

Test(matmul, stage4_register_tiles) { check_any_sizes(4, 0); }

Test(matmul, stage5_tuned)
{
    /* Whole 128 x 128 x 8 tiles (the fast path), then the sizes. */
    const shape whole[] = {{128, 128, 8}, {256, 384, 136}};
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
        check_matmul(5, 0, whole[i]);
    check_any_sizes(5, 0);
}

typedef struct {
    int stage, tile_width, m, n, k;
    const float *A, *B;
    float *C;
} timed_call;

static void run_timed(void *context)
{
    timed_call *c = context;
    if (c->stage < 0)
        matmul_cublas(c->A, c->B, c->C, c->m, c->n, c->k);
    else
        matmul(c->stage, c->tile_width, c->A, c->B, c->C, c->m, c->n, c->k);
}

Test(matmul, timing_1024, .description = "each stage at 1024^3 next to cuBLAS")
{
    const int size = 1024;
    size_t count = (size_t)size * size;
    float *host = malloc(sizeof(float) * count);
    cr_assert(host, "out of host memory");
    wb_rng rng = wb_rng_for("matmul timing");
    wb_fill_floats(host, count, -1.0f, 1.0f, &rng);
    float *dA = to_device(host, count), *dB = to_device(host, count), *dC;
    CUDA_CHECK(cudaMalloc((void **)&dC, sizeof(float) * count));
    free(host);
    wb_table *table = wb_table_new("matmul-test", "matmul 1024^3, median of 5 runs (cuBLAS: "
                                                  "pedantic FP32)",
                                   "stage|time (ms)|GFLOP/s|% of cuBLAS");
    const int stages[] = {-1, 0, 1, 2, 3, 4, 5};
    double cublas_ms = 0.0;
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) {
        timed_call call = {stages[i], 16, size, size, size, dA, dB, dC};
        wb_timing t = wb_time_gpu(run_timed, &call, 1, 5);
        if (stages[i] < 0)
            cublas_ms = t.median_ms;
        char name[16] = "cuBLAS";
        if (stages[i] >= 0)
            snprintf(name, sizeof name, "%d", stages[i]);
        wb_table_row(table, "%s|%.3f|%.0f|%.1f", name, t.median_ms,
                     wb_gflops(2.0 * size * size * size, t.median_ms),
                     100.0 * cublas_ms / t.median_ms);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
}
