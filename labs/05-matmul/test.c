/*
 * Lab 05 tests: every stage against a double-precision CPU product, on
 * shapes that cut through every tile (1, tile - 1, tile + 1, primes; m, n
 * and k all different; k = 0 and empty matrices). A and B lie in guard
 * zones of NaN, so a load past either end poisons the element it feeds
 * (a zero from the other tile does not hide NaN); C is filled with a finite
 * sentinel first and guarded, so unwritten elements and stray stores show.
 * Then the argument checks of the given matmul(), and a timing table at
 * 1024^3 with cuBLAS beside it. Which check catches which mistake:
 * handouts/05-matmul.md, "Classic mistakes".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(matmul, .timeout = 120);

/* Relative norm error allowed: float sums of up to 1000 products. */
#define TOLERANCE 1e-5

/* C's contents before the run: 0x7F bytes, 3.39e38, a value no product of
 * numbers in [-1, 1] comes near and that is not NaN (NaN means a read past
 * an input). */
#define SENTINEL_BYTE 0x7F

typedef struct {
    int m, n, k;
} shape;

/* Every tile of every stage is cut: 16, 32 and 64 (stages 0-4) and the K
 * steps 16 and 8 (stages 4, 5). k = 0 makes C all zeros; m or n = 0 is an
 * empty C and must launch nothing. k and n multiples of 4 but not of the
 * tiles (65 x 68 x 36, 200 x 132 x 20) take stage 4's float4 loads to the
 * edges; odd k or n take its one-float-at-a-time loads. */
static const shape any_sizes[] = {
    {1, 1, 1},     {3, 5, 0},     {0, 5, 7},     {5, 0, 7},     {15, 17, 31},
    {33, 31, 65},  {63, 65, 17},  {61, 67, 71},  {1, 129, 33},  {129, 1, 257},
    {127, 95, 1},  {257, 191, 129}, {1000, 1, 1000}, {512, 384, 257}, {65, 68, 36},
    {200, 132, 20},
};

/* The product in double, and beside it the sum of |a| |b| over each dot
 * product: a float dot product of k terms, summed in any order, is within
 * k u of it (u = 2^-24). i-k-j order walks rows of B and C. Only the terms
 * p = lo ... hi - 1 of each dot product are summed (0 and k: all of them). */
static void cpu_matmul(const float *A, const float *B, int m, int n, int k, int lo, int hi,
                       double *C, double *C_abs)
{
    memset(C, 0, sizeof(double) * (size_t)m * n);
    memset(C_abs, 0, sizeof(double) * (size_t)m * n);
    for (int i = 0; i < m; i++)
        for (int p = lo; p < hi; p++) {
            double a = A[(size_t)i * k + p];
            for (int j = 0; j < n; j++) {
                C[(size_t)i * n + j] += a * B[(size_t)p * n + j];
                C_abs[(size_t)i * n + j] += fabs(a * B[(size_t)p * n + j]);
            }
        }
}

static float *to_guarded(const float *host, size_t count)
{
    float *device = wb_guarded_malloc(sizeof(float) * count);
    if (count)
        CUDA_CHECK(cudaMemcpy(device, host, sizeof(float) * count, cudaMemcpyHostToDevice));
    return device;
}

/* Whether every element of C lies within float rounding of the product
 * over only the terms p = lo ... hi - 1 of its dot product. */
static bool is_partial_product(const float *A, const float *B, const float *got,
                               const double *expected_abs, int m, int n, int k, int lo, int hi)
{
    size_t count = (size_t)m * n;
    double *part = malloc(sizeof(double) * count + 1);
    double *part_abs = malloc(sizeof(double) * count + 1);
    cr_assert(part && part_abs, "out of host memory for a %d x %d product", m, n);
    cpu_matmul(A, B, m, n, k, lo, hi, part, part_abs);
    bool all = true;
    for (size_t i = 0; i < count && all; i++)
        all = fabs(got[i] - part[i]) <= 2.0 * (k + 1) * ldexp(expected_abs[i], -24);
    free(part);
    free(part_abs);
    return all;
}

/* A C whose wrong elements are all finite and written, recognised as the product over
 * part of k: the whole tiles only (a last, partial tile along k never
 * loaded), or the last tile only (the sum set to 0 in every phase). The
 * tiles are every stage's step along k: 8 to 64 terms. Writes the sentence
 * that names it, or returns false. */
static bool describe_partial_k(const float *A, const float *B, const float *got,
                               const double *expected_abs, int m, int n, int k, char *text,
                               size_t text_len)
{
    static const char off[] = "elements are off by more than float rounding allows: every "
                              "element of C is";
    if (k > 0 && is_partial_product(A, B, got, expected_abs, m, n, k, 0, 0)) {
        snprintf(text, text_len, "%s 0, as if no product were added: a loop of k / tile phases "
                 "runs none when k is less than a tile (run ceil(k / tile), with zeros loaded "
                 "past k), or the products are never added to the sum", off);
        return true;
    }
    static const int tiles[] = {8, 16, 32, 64};
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
        int whole = k - k % tiles[t], last = k > 0 ? (k - 1) / tiles[t] * tiles[t] : 0;
        if (whole > 0 && whole < k &&
            is_partial_product(A, B, got, expected_abs, m, n, k, 0, whole)) {
            snprintf(text, text_len, "%s the sum of only the first %d of its k = %d products, "
                     "those of the whole tiles along k: the last, partial tile is never added. "
                     "Run ceil(k / tile) phases (not k / tile), with zeros loaded past k", off,
                     whole, k);
            return true;
        }
        if (last > 0 && is_partial_product(A, B, got, expected_abs, m, n, k, last, k)) {
            snprintf(text, text_len, "%s the sum of only the last %d of its k = %d products, "
                     "those of the last tile along k: the running sum (sum, acc) starts again "
                     "from 0 in every phase (set it to 0 once, before the loop over the tiles of "
                     "k)%s", off, k - last, k,
                     k - last == 1 ? ", or = instead of += keeps only the last product" : "");
            return true;
        }
    }
    return false;
}

/* C against the CPU: the kind of wrong element names the likely mistake.
 * Unwritten elements still hold the sentinel; NaN came from an input's
 * guard zone; any other element must lie within float rounding of the
 * exact product (k + 1 roundings of the sum of |a| |b|, twice over). */
static void check_product(const float *A, const float *B, const float *got,
                          const double *expected, const double *expected_abs, int m, int n, int k,
                          const char *what)
{
    float sentinel;
    memset(&sentinel, SENTINEL_BYTE, sizeof sentinel);
    size_t count = (size_t)m * n, unwritten = 0, nan = 0, off = 0, first = 0;
    for (size_t i = 0; i < count; i++) {
        double allowed = 2.0 * (k + 1) * ldexp(expected_abs[i], -24);
        bool bad = got[i] == sentinel || isnan(got[i]) || !(fabs(got[i] - expected[i]) <= allowed);
        if (bad && unwritten + nan + off == 0)
            first = i;
        unwritten += got[i] == sentinel;
        nan += isnan(got[i]);
        off += bad && got[i] != sentinel && !isnan(got[i]);
    }
    if (unwritten + nan + off) {
        char report[1024], partial[400];
        wb_describe_float_mismatch(got, expected, count, TOLERANCE, report, sizeof report);
        const char *hint =
            nan ? "elements are NaN: a tile load read past the end of A or B (their guard zones "
                  "hold NaN) and fed a stored element: check the k bounds of the loads (a_col < "
                  "k, b_row < k; the zero loaded into the other tile does not hide NaN), the "
                  "number of phases and the loop bounds"
            : unwritten ? "elements were never written (they still hold 3.39e38): check the "
                          "row/column mapping (blockIdx, blockDim, threadIdx), the grid, and that "
                          "the store guard is row < m && col < n, not stricter"
            : describe_partial_k(A, B, got, expected_abs, m, n, k, partial, sizeof partial)
                ? partial
                : "elements are off by more than float rounding allows: a missing "
                  "__syncthreads (a tile read before it is complete, or overwritten while "
                  "others still read it), sum = instead of +=, an index or a loop bound";
        cr_assert_fail("%s: %zu of %zu %s; first at C[%zu][%zu] = %g, expected %g. %s " WB_SEED_HINT,
                       what, nan ? nan : unwritten ? unwritten : off, count, hint,
                       first / (size_t)n, first % (size_t)n, got[first], expected[first], report,
                       wb_seed());
    }
    wb_assert_rel_error_below(got, expected, count, TOLERANCE, what);
}

/* Runs one stage on one shape and compares it with the CPU. */
static void check_matmul(int stage, int tile_width, shape s)
{
    char what[128];
    snprintf(what, sizeof what, "stage %d (tile_width %d), m = %d, n = %d, k = %d", stage,
             tile_width, s.m, s.n, s.k);
    size_t a_count = (size_t)s.m * s.k, b_count = (size_t)s.k * s.n, c_count = (size_t)s.m * s.n;
    float *A = malloc(sizeof(float) * a_count + 1), *B = malloc(sizeof(float) * b_count + 1);
    float *got = malloc(sizeof(float) * c_count + 1);
    double *expected = malloc(sizeof(double) * c_count + 1);
    double *expected_abs = malloc(sizeof(double) * c_count + 1);
    cr_assert(A && B && got && expected && expected_abs, "out of host memory for %s", what);
    wb_rng rng = wb_rng_for(what);
    wb_fill_floats(A, a_count, -1.0f, 1.0f, &rng);
    wb_fill_floats(B, b_count, -1.0f, 1.0f, &rng);
    float *dA = to_guarded(A, a_count), *dB = to_guarded(B, b_count);
    float *dC = wb_guarded_malloc(sizeof(float) * c_count);
    CUDA_CHECK(cudaMemset(dC, SENTINEL_BYTE, sizeof(float) * c_count));
    wb_dirty_shared_memory();   /* a tile element never loaded is NaN, not a leftover */
    matmul(stage, tile_width, dA, dB, dC, s.m, s.n, s.k);
    CUDA_CHECK(cudaDeviceSynchronize());

    char label[200];
    snprintf(label, sizeof label, "%s: C (is every store guarded by row < m && col < n?)", what);
    wb_guarded_check(dC, label);
    wb_fetch(got, dC, sizeof(float) * c_count, what);
    cpu_matmul(A, B, s.m, s.n, s.k, 0, s.k, expected, expected_abs);
    check_product(A, B, got, expected, expected_abs, s.m, s.n, s.k, what);
    wb_guarded_free(dA);
    wb_guarded_free(dB);
    wb_guarded_free(dC);
    free(A);
    free(B);
    free(got);
    free(expected);
    free(expected_abs);
}

static void check_shapes(int stage, int tile_width, const shape *shapes, size_t count)
{
    for (size_t i = 0; i < count; i++)
        check_matmul(stage, tile_width, shapes[i]);
}

#define ANY_SIZES any_sizes, sizeof any_sizes / sizeof any_sizes[0]

Test(matmul, stage0_naive) { check_shapes(0, 0, ANY_SIZES); }

Test(matmul, stage1_coalesced) { check_shapes(1, 0, ANY_SIZES); }

/* Stage 2 only takes multiples of its tile: m, n and k all different,
 * including k = 0, an empty C, and one tile. */
static void check_multiples(int tile_width)
{
    const int t = tile_width;
    const shape sizes[] = {{t, t, t},         {2 * t, 3 * t, t},  {3 * t, t, 2 * t},
                           {t, 2 * t, 0},     {0, t, t},          {5 * t, 7 * t, 11 * t},
                           {8 * t, 4 * t, 6 * t}};
    check_shapes(2, tile_width, sizes, sizeof sizes / sizeof sizes[0]);
}

Test(matmul, stage2_tiled_16) { check_multiples(16); }

Test(matmul, stage2_tiled_32) { check_multiples(32); }

Test(matmul, stage3_any_size_16) { check_shapes(3, 16, ANY_SIZES); }

Test(matmul, stage3_any_size_32) { check_shapes(3, 32, ANY_SIZES); }

Test(matmul, stage4_register_tiles) { check_shapes(4, 0, ANY_SIZES); }

Test(matmul, stage5_tuned)
{
    /* Whole 128 x 128 x 8 tiles (the fast path), then the other sizes (the
     * fallback to stage 4). */
    const shape whole[] = {{128, 128, 8}, {256, 384, 136}, {384, 128, 24}, {128, 256, 0}};
    check_shapes(5, 0, whole, sizeof whole / sizeof whole[0]);
    check_shapes(5, 0, ANY_SIZES);
}

/* Stage 6 takes whole 128 x 128 x 16 tiles only (matmul() refuses other
 * sizes): one tile, k = 16 (the second buffer never used) and k = 0, m, n
 * and k all different, the bench's 2048 x 6144 x 1536 scaled down by 8 and
 * by 16, and a long k (64 tiles: both buffers refilled many times). */
Test(matmul, stage6_warp_tiles)
{
    const shape whole[] = {{128, 128, 16}, {128, 128, 32},  {384, 256, 48},  {256, 384, 0},
                           {256, 768, 192}, {128, 384, 96}, {128, 256, 1024}};
    check_shapes(6, 0, whole, sizeof whole / sizeof whole[0]);
}

/* The given matmul() refuses bad arguments through wb_fail. */
static void expect_error(int stage, int tile_width, shape s, const char *about)
{
    char label[200];
    snprintf(label, sizeof label, "matmul(stage %d, tile_width %d, m = %d, n = %d, k = %d)",
             stage, tile_width, s.m, s.n, s.k);
    /* Inputs of 64 floats for every call: a call that should have been
     * refused reads in bounds and does not crash. */
    float *A = wb_guarded_malloc(64 * sizeof(float)), *B = wb_guarded_malloc(64 * sizeof(float)),
          *C = wb_guarded_malloc(64 * sizeof(float));
    wb_expect_error(label, about, matmul(stage, tile_width, A, B, C, s.m, s.n, s.k));
    wb_guarded_free(A);
    wb_guarded_free(B);
    wb_guarded_free(C);
}

/* A call on the bounds, which must run (an error fails the test). Every one
 * has m = 0 or n = 0: the given matmul() returns before launching, and C
 * stays as it was. */
static void expect_accepted(int stage, int tile_width, shape s)
{
    char label[200];
    snprintf(label, sizeof label, "matmul(stage %d, tile_width %d, m = %d, n = %d, k = %d): C",
             stage, tile_width, s.m, s.n, s.k);
    float *A = wb_guarded_malloc(64 * sizeof(float)), *B = wb_guarded_malloc(64 * sizeof(float)),
          *C = wb_guarded_malloc(64 * sizeof(float));
    wb_poison_floats(C, 64);
    matmul(stage, tile_width, A, B, C, s.m, s.n, s.k);
    CUDA_CHECK(cudaDeviceSynchronize());
    unsigned got[64];
    wb_fetch(got, C, sizeof got, label);
    wb_guarded_check(C, label);
    for (int i = 0; i < 64; i++)
        cr_assert(got[i] == 0xFFFFFFFFu, "%s: C[%d] was written, but an empty product has "
                  "nothing to write " WB_SEED_HINT, label, i, wb_seed());
    wb_guarded_free(A);
    wb_guarded_free(B);
    wb_guarded_free(C);
}

/* A tile's missing barrier rarely gives a wrong product on one GPU: the
 * warps of a block happen to stay in step (handouts/05-matmul.md, "Classic
 * mistakes"; racecheck sees it). These tests read kernels.cu (wb_test.h,
 * "source rules") and need no GPU. */
WB_SOURCE_SUITE(matmul_source);

#define TILE_BARRIERS                                                                      \
    "two barriers per phase: after the tile is loaded (read-after-write) and after it is " \
    "used (write-after-read, before the next phase overwrites it)"
/* And the tiles are what the products read: a stage that loads them and
 * then multiplies from A and B in global memory again tiles nothing. */
#define TILES_USED(function)                                                          \
    {function, .shared = "__shared__", .protects = WB_READ_BACK,                      \
     .why = "the products read the tiles just stored (As, Bs): read from A and B in " \
            "global memory again, the tiles save nothing"}
WB_SOURCE_RULES_TEST(matmul_source, stage2_barriers,
                     {"matmul_stage2", .barriers = 2, .shared = "__shared__",
                      .protects = WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ, .why = TILE_BARRIERS},
                     TILES_USED("matmul_stage2"))
WB_SOURCE_RULES_TEST(matmul_source, stage3_barriers,
                     {"matmul_stage3", .barriers = 2, .shared = "__shared__",
                      .protects = WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ, .why = TILE_BARRIERS},
                     TILES_USED("matmul_stage3"))
WB_SOURCE_RULES_TEST(matmul_source, stage4_barriers,
                     {"matmul_stage4", .barriers = 2, .shared = "__shared__",
                      .protects = WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ, .why = TILE_BARRIERS},
                     TILES_USED("matmul_stage4"))
/* Stages 5 and 6 have one barrier before the loop and one per tile: the
 * second orders both the stores into the buffer just filled (read after
 * write) and the reads of the other one (write after read). Their rules
 * check read after write only: a tile's stores follow the reads of the
 * other buffer without a barrier, which the text cannot tell apart. */
WB_SOURCE_RULES_TEST(matmul_source, stage5_barriers,
                     {"matmul_stage5", .barriers = 2, .shared = "__shared__",
                      .protects = WB_READ_AFTER_WRITE, .why = TILE_BARRIERS},
                     TILES_USED("matmul_stage5"))
WB_SOURCE_RULES_TEST(matmul_source, stage6_barriers,
                     {"matmul_stage6", .barriers = 2, .shared = "__shared__",
                      .protects = WB_READ_AFTER_WRITE,
                      .why = "one barrier after the first tile is stored and one after each "
                             "next tile is stored into the other buffer"},
                     TILES_USED("matmul_stage6"))

Test(matmul, given_refuses_bad_arguments, .description = "the given matmul() refuses bad input")
{
    expect_error(0, 0, (shape){-1, 4, 4}, "negative");
    expect_error(0, 0, (shape){4, -1, 4}, "negative");
    expect_error(0, 0, (shape){4, 4, -1}, "negative");
    expect_error(3, 8, (shape){4, 4, 4}, "tile_width 16 or 32");
    expect_error(2, 16, (shape){8, 16, 16}, "multiples of tile_width");
    expect_error(2, 16, (shape){16, 8, 16}, "multiples of tile_width");
    expect_error(2, 16, (shape){16, 16, 8}, "multiples of tile_width");
    expect_error(7, 0, (shape){4, 4, 4}, "no stage 7");
    expect_error(6, 0, (shape){128, 128, 8}, "stage 6 needs");
    expect_error(6, 0, (shape){64, 128, 16}, "stage 6 needs");
    expect_error(6, 0, (shape){128, 192, 16}, "stage 6 needs");
    expect_error(-1, 0, (shape){4, 4, 4}, "no stage -1");
    expect_error(2, 8, (shape){16, 16, 16}, "tile_width 16 or 32");
    /* On the bounds: sizes of 0 (none negative), both tile widths of stages
     * 2 and 3, and any tile width where no stage needs one. */
    expect_accepted(0, 0, (shape){0, 4, 4});
    expect_accepted(0, 0, (shape){4, 0, 4});
    expect_accepted(0, 0, (shape){0, 4, 0});
    expect_accepted(0, 0, (shape){0, 0, 0});
    expect_accepted(3, 16, (shape){0, 4, 4});
    expect_accepted(3, 32, (shape){4, 0, 4});
    expect_accepted(2, 16, (shape){0, 16, 16});
    expect_accepted(2, 32, (shape){32, 0, 32});
    expect_accepted(1, 8, (shape){0, 4, 4});
    expect_accepted(6, 0, (shape){0, 128, 16});
    expect_accepted(6, 0, (shape){128, 0, 0});
    /* Stages 4 to 6 move float4: a pointer off by one float is refused. */
    float *buffer = wb_guarded_malloc(65 * sizeof(float));
    for (int stage = 4; stage <= 6; stage++)
        wb_expect_error("matmul with A one float past a 16-byte boundary", "16-byte aligned",
                        matmul(stage, 0, buffer + 1, buffer, buffer, 0, 128, 16));
    wb_expect_error("matmul(stage 6) with C one float past a 16-byte boundary",
                    "16-byte aligned", matmul(6, 0, buffer, buffer, buffer + 1, 0, 128, 16));
    wb_guarded_free(buffer);
}

/* ------------------------------------------------------------------ timing */

/* The graded time: stage 4 at 1024^3, the last stage every student writes.
 * Each timed run makes TIMED_CALLS products, each with an A, B and C of its
 * own: before the run (fresh_products) A and B are filled fresh from the
 * run's seed and C is poisoned (NaN), and after it (check_products) a sample
 * of each C is checked against the CPU's dot products of the same inputs,
 * recomputed from their hash. A product kept from an earlier call, or a
 * call skipped, shows as a wrong or NaN element instead of a fast time. */
#define TIMED_SIZE 1024
#define TIMED_RUNS 5
/* 48 products of about 0.1 ms (stage 4 on the H100), so that a timed run
 * lasts about 5 ms: the grader's hand-shake around it then costs under 1%. */
#define TIMED_CALLS 48
#define CHECKED_PER_CALL 256   /* elements of each C, at positions drawn from the seed */

typedef struct {
    int calls;
    float *A[TIMED_CALLS], *B[TIMED_CALLS], *C[TIMED_CALLS];   /* device */
    uint64_t seed_a[TIMED_CALLS], seed_b[TIMED_CALLS];       /* this run's inputs */
    size_t positions[CHECKED_PER_CALL];
    float got[CHECKED_PER_CALL];
} timed_products;

static void run_timed_products(void *context)
{
    timed_products *t = context;
    for (int c = 0; c < t->calls; c++)
        matmul(4, 16, t->A[c], t->B[c], t->C[c], TIMED_SIZE, TIMED_SIZE, TIMED_SIZE);
}

static void fresh_products(void *context, int repetition, uint64_t seed)
{
    timed_products *t = context;
    const size_t count = (size_t)TIMED_SIZE * TIMED_SIZE;
    (void)repetition;
    for (int c = 0; c < t->calls; c++) {
        t->seed_a[c] = wb_hash_u64(seed, 2 * (uint64_t)c);
        t->seed_b[c] = wb_hash_u64(seed, 2 * (uint64_t)c + 1);
        wb_fill_floats_on_gpu(t->A[c], count, -1.0f, 1.0f, t->seed_a[c]);
        wb_fill_floats_on_gpu(t->B[c], count, -1.0f, 1.0f, t->seed_b[c]);
        wb_poison_floats(t->C[c], count);
    }
}

/* Each sampled element within float rounding of the exact dot product, as
 * check_product allows: k + 1 roundings of the sum of |a| |b|, twice over. */
static void check_products(void *context, int repetition)
{
    timed_products *t = context;
    const int size = TIMED_SIZE;
    for (int c = 0; c < t->calls; c++) {
        char what[96];
        snprintf(what, sizeof what, "timed run %d of %d, call %d of %d: stage 4's C",
                 repetition + 1, TIMED_RUNS, c + 1, t->calls);
        size_t count = wb_sample_positions(t->positions, CHECKED_PER_CALL, (size_t)size * size,
                                           t->seed_a[c] ^ t->seed_b[c]);
        wb_fetch_sample(t->got, NULL, t->C[c], sizeof(float), t->positions, count, what);
        for (size_t s = 0; s < count; s++) {
            size_t row = t->positions[s] / size, col = t->positions[s] % size;
            double expected = 0.0, magnitude = 0.0;
            for (int p = 0; p < size; p++) {
                double term = (double)wb_hash_float(t->seed_a[c], row * size + p, -1.0f, 1.0f) *
                              wb_hash_float(t->seed_b[c], (size_t)p * size + col, -1.0f, 1.0f);
                expected += term;
                magnitude += fabs(term);
            }
            double allowed = 2.0 * (size + 1) * ldexp(magnitude, -24);
            cr_assert(fabs(t->got[s] - expected) <= allowed,
                      "%s[%zu][%zu] = %g, expected %g: %s " WB_SEED_HINT, what, row, col,
                      t->got[s], expected,
                      isnan(t->got[s])
                          ? "NaN, as C was poisoned: never written; each timed run must make "
                            "every call, each on its own A and B"
                          : "not this run's product: each call must compute its C from its A "
                            "and B when it is made, never reuse an earlier result",
                      wb_seed());
        }
    }
}

/* The graded time, observed; *calls: the calls of each timed run. */
static wb_timing graded_stage4(double flops, int *calls)
{
    const size_t bytes = sizeof(float) * TIMED_SIZE * TIMED_SIZE;
    timed_products *t = calloc(1, sizeof *t);
    cr_assert(t, "out of host memory");
    /* On a GPU whose half holds fewer than 48 sets of three matrices (12 MB
     * each, under 600 MB in all), a run has fewer calls: shorter, so the
     * grader's hand-shake weighs more in its time. */
    t->calls = wb_buffer_sets(TIMED_CALLS, 3 * bytes);
    for (int c = 0; c < t->calls; c++) {
        CUDA_CHECK(cudaMalloc((void **)&t->A[c], bytes));
        CUDA_CHECK(cudaMalloc((void **)&t->B[c], bytes));
        CUDA_CHECK(cudaMalloc((void **)&t->C[c], bytes));
    }
    /* The warm-up's inputs; every timed run gets its own (fresh_products). */
    wb_rng warm_up = wb_rng_for("matmul timing, warm-up");
    fresh_products(t, -1, wb_rng_u64(&warm_up));
    wb_timing timing = wb_time_gpu_reps(run_timed_products, t, 1, TIMED_RUNS, t->calls,
                                        (wb_rep_checks){fresh_products, check_products});
    timing = wb_observe_timing("stage 4", timing, 0.0, flops);
    for (int c = 0; c < t->calls; c++) {
        CUDA_CHECK(cudaFree(t->A[c]));
        CUDA_CHECK(cudaFree(t->B[c]));
        CUDA_CHECK(cudaFree(t->C[c]));
    }
    *calls = t->calls;
    free(t);
    return timing;
}

Test(matmul, timing_1024, .description = "each stage at 1024^3 next to cuBLAS")
{
    const int size = TIMED_SIZE;
    /* The work of one product is 2 m n k flops, which the grader turns into
     * the least time this GPU can take for it. Stage 4's time is the one the
     * grade uses: the first observed. */
    const double flops = 2.0 * size * size * size;
    int calls;
    wb_timing stage4 = graded_stage4(flops, &calls);
    /* The other stages, only shown, on one pair of inputs. */
    size_t count = (size_t)size * size;
    float *host = malloc(sizeof(float) * count);
    cr_assert(host, "out of host memory");
    wb_rng rng = wb_rng_for("matmul timing");
    wb_fill_floats(host, count, -1.0f, 1.0f, &rng);
    float *dA, *dB, *dC;
    CUDA_CHECK(cudaMalloc((void **)&dA, sizeof(float) * count));
    CUDA_CHECK(cudaMalloc((void **)&dB, sizeof(float) * count));
    CUDA_CHECK(cudaMalloc((void **)&dC, sizeof(float) * count));
    CUDA_CHECK(cudaMemcpy(dA, host, sizeof(float) * count, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, host, sizeof(float) * count, cudaMemcpyHostToDevice));
    free(host);
    char title[160];
    snprintf(title, sizeof title, "matmul 1024^3, median of %d runs (stage 4: of %d calls each, "
             "on fresh inputs; cuBLAS: the faster of its two FP32 modes)", TIMED_RUNS, calls);
    wb_table *table = wb_table_new("matmul-test", title, "stage|time (ms)|GFLOP/s|% of cuBLAS");
    /* cuBLAS (given code) first, as the table's yardstick. */
    const int stages[] = {-1, 4, 0, 1, 2, 3, 5, 6};
    double cublas_ms = 0.0;
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) {
        matmul_job job = {stages[i], 16, size, size, size, dA, dB, dC};
        char name[16] = "cuBLAS";
        wb_timing t = stage4;
        if (stages[i] < 0) {
            t = wb_time_gpu(matmul_run, &job, 1, TIMED_RUNS);
            cublas_ms = t.median_ms;
        } else {
            snprintf(name, sizeof name, "%d", stages[i]);
            char label[32];
            snprintf(label, sizeof label, "stage %d", stages[i]);
            if (stages[i] != 4)
                t = wb_observe_timing(label, wb_time_gpu(matmul_run, &job, 1, TIMED_RUNS), 0.0,
                                      flops);
        }
        wb_table_row(table, "%s|%.3f|%.0f|%.1f", name, t.median_ms, wb_gflops(flops, t.median_ms),
                     100.0 * cublas_ms / t.median_ms);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
}
