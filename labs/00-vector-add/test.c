/*
 * Lab 00 tests: correctness on awkward sizes and block sizes, with the output
 * poisoned first, then one timing line at 2^26 elements.
 */
#include <stdlib.h>

#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(vector_add, .timeout = 60);

typedef struct {
    int n;
    float *a, *b, *c;   /* device */
    float *host_a, *host_b;
} vectors;

/* Random inputs in [-1, 1) on host and device; the output poisoned. */
static vectors make_vectors(int n, const char *stream)
{
    vectors v = {n, NULL, NULL, NULL, malloc(sizeof(float) * (size_t)n),
                 malloc(sizeof(float) * (size_t)n)};
    cr_assert(v.host_a && v.host_b, "out of host memory for n = %d", n);
    wb_rng rng = wb_rng_for(stream);
    wb_fill_floats(v.host_a, (size_t)n, -1.0f, 1.0f, &rng);
    wb_fill_floats(v.host_b, (size_t)n, -1.0f, 1.0f, &rng);
    size_t bytes = sizeof(float) * (size_t)n;
    /* Guard zones: a thread past the end reads NaN and writes where the
     * check of c's guard zones sees it. */
    v.a = wb_guarded_malloc(bytes);
    v.b = wb_guarded_malloc(bytes);
    v.c = wb_guarded_malloc(bytes);
    CUDA_CHECK(cudaMemcpy(v.a, v.host_a, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(v.b, v.host_b, bytes, cudaMemcpyHostToDevice));
    wb_poison_floats(v.c, (size_t)n);
    return v;
}

static void free_vectors(vectors *v)
{
    wb_guarded_free(v->a);
    wb_guarded_free(v->b);
    wb_guarded_free(v->c);
    free(v->host_a);
    free(v->host_b);
}

static void check_vector_add(int n, int block_size)
{
    char what[96];
    snprintf(what, sizeof what, "vector_add(n = %d, block_size = %d)", n, block_size);
    vectors v = make_vectors(n, what);
    vector_add(v.a, v.b, v.c, n, block_size);
    CUDA_CHECK(cudaDeviceSynchronize());

    float *got = malloc(sizeof(float) * (size_t)n);
    double *expected = malloc(sizeof(double) * (size_t)n);
    cr_assert(got && expected, "out of host memory for n = %d", n);
    wb_fetch(got, v.c, sizeof(float) * (size_t)n, what);
    for (int i = 0; i < n; i++)
        expected[i] = (double)(v.host_a[i] + v.host_b[i]);  /* the same float add */
    /* One float addition rounds the same way on both sides: demand equality. */
    wb_assert_rel_error_below(got, expected, (size_t)n, 1e-12, what);
    wb_guarded_check(v.c, what);
    free(got);
    free(expected);
    free_vectors(&v);
}

ParameterizedTestParameters(vector_add, stage0_sizes)
{
    /* Edge sizes around a warp, a size that is no multiple of anything, and
     * a large one where a too-small grid shows. */
    static int sizes[] = {1, 31, 32, 33, 1000, (1 << 20) + 7, 1 << 26};
    return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int *n, vector_add, stage0_sizes, .description = "c = a + b for awkward sizes")
{
    check_vector_add(*n, 256);
}

ParameterizedTestParameters(vector_add, stage0_block_sizes)
{
    /* 96 and 1000 do not divide n = 100003; 1024 is the largest block. */
    static int block_sizes[] = {32, 96, 128, 256, 1000, 1024};
    return cr_make_param_array(int, block_sizes, sizeof block_sizes / sizeof block_sizes[0]);
}

ParameterizedTest(int *block_size, vector_add, stage0_block_sizes,
                  .description = "grids whose blocks do not divide n")
{
    check_vector_add(100003, *block_size);
}

Test(vector_add, stage0_n_zero_launches_nothing)
{
    /* An empty vector is valid input; the entry point must not launch a
     * grid of zero blocks (that is a launch error). */
    vector_add(NULL, NULL, NULL, 0, 256);
    CUDA_CHECK(cudaDeviceSynchronize());
}

typedef struct {
    vectors *v;
    int block_size;
} timed_call;

static void run_timed(void *context)
{
    timed_call *call = context;
    vector_add(call->v->a, call->v->b, call->v->c, call->v->n, call->block_size);
}

Test(vector_add, timing_2e26, .description = "time and bandwidth at 2^26 elements", .timeout = 120)
{
    const int n = 1 << 26;
    vectors v = make_vectors(n, "vector_add timing");
    timed_call call = {&v, 256};
    /* Bytes moved: read a and b, write c, 4 bytes each. */
    double bytes = 3.0 * sizeof(float) * n;
    wb_timing t = wb_observe_timing("vector_add 2^26", wb_time_gpu(run_timed, &call, 3, 20),
                                    bytes, 0.0);
    double gbps = wb_gbps(bytes, t.median_ms);
    double copy = wb_copy_bandwidth_gbps();
    wb_table *table = wb_table_new("vector-add", "vector add (median of 20 runs)",
                                   "n|block|time (ms)|GB/s|copy GB/s|% of copy");
    wb_table_row(table, "%d|%d|%.3f|%.0f|%.0f|%.1f", n, call.block_size, t.median_ms, gbps,
                 copy, 100.0 * gbps / copy);
    wb_table_print(table, stdout);
    wb_table_free(table);
    free_vectors(&v);
}
