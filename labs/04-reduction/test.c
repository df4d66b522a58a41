/*
 * Lab 04 tests: every stage sums random ints over the whole int range (so
 * that partial sums wrap around) exactly, on awkward sizes and on every block
 * size, each sum run three times; then the argument checks of the given host
 * code, and one timing table. Each stage has its own tests, stageN_..., so
 * that `workbook status` can tell which stages work.
 *
 * What catches which mistake (handouts/04-reduction.md, "Classic mistakes"):
 *   - reads past n: the input is followed by CANARY values, then a guard
 *     zone (-1); the difference from the true sum says how many were read;
 *   - writes past the partial sums or the result: guard zones, checked;
 *   - results never written: the result and the scratch are poisoned;
 *   - races (a missing barrier): large sizes give tens of thousands of
 *     blocks a chance to lose one, every sum runs three times, and stage 7
 *     has a test in which every block reaches the given atomicAdd at the
 *     same moment, 50 times;
 *   - index and stride mistakes: random data, sizes around a block and its
 *     double, a prime, and sizes where the grid-stride loops wrap or end
 *     exactly on a boundary.
 * A sum alone cannot say which line is wrong, so every failure names the
 * pattern it recognises, else the classic mistakes of the stage.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(reduction, .timeout = 120);

/* Ints after the n to sum, all CANARY: a stage that reads k of them is off
 * by exactly k * CANARY. */
#define CANARIES 4096
#define CANARY 1000003

/* Each sum runs this often on the same input: a race that loses a different
 * part each time shows as two different answers. */
#define RUNS 3

static const char *const classic_mistakes[REDUCE_STAGES] = {
    "tree_interleaved: a missing __syncthreads() after a level (it belongs after every level, "
    "outside the if), a tree loop that runs to s <= blockDim.x, = instead of +=",
    "tree_strided: index = 2 * s * tid, the bound index < blockDim.x (not <=), a missing "
    "__syncthreads() after a level, = instead of +=",
    "fold_halves: s from blockDim.x / 2 while s > stop, tid < s (not <=), a missing "
    "__syncthreads() after a level, = instead of +=",
    "load_pair: block b starts at b * 2 * blockDim.x (with blockIdx.x), its second element "
    "blockDim.x further, both through load_or_zero; a missing __syncthreads() in fold_halves",
    "warp_fold: read into a register, __syncwarp(), write, __syncwarp() (without the second one "
    "a lane reads a word before its neighbour wrote it), the guard block_size >= 2 * s; "
    "fold_halves: s > stop (not >=), a missing __syncthreads() after a level (the last one lets "
    "the last warp start)",
    "fold_unrolled: one level per block size from 1024 down to 128, tid < half (not <=), a "
    "missing __syncthreads() after a level, then warp_fold for tid < 32",
    "thread_pair_sum's grid-stride loop: start at blockIdx.x * 2 * B + threadIdx.x, step "
    "2 * B * gridDim.x (a loop that steps by blockDim.x adds elements twice), the bound i < n "
    "(not <=), the second element through load_or_zero, sum += (not =)",
    "warp_sum: value += (not =) the lane offset 16, 8, 4, 2, 1 above; thread_vector_sum's int4 "
    "loops: stride blockDim.x * gridDim.x, bounds i + 3 * stride < n4 and i < n4 (not <=), "
    "sum += (not =); the tail: thread < n % 4, over the whole grid",
};

/* The CPU reference, with the GPU's int wrap-around: unsigned arithmetic
 * wraps by definition, and + modulo 2^32 gives the same sum in any order. */
static uint32_t sum_u32(const int *values, size_t n)
{
    uint32_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (uint32_t)values[i];
    return sum;
}

/* Elements one block of `stage` covers in its first pass, before any
 * grid-stride loop (0: the stage has no fixed share). */
static size_t block_share(int stage, int block_size)
{
    return stage <= 2 ? (size_t)block_size : stage <= 5 ? 2 * (size_t)block_size : 0;
}

/* ------------------------------------------- known mistakes, on the CPU */

/* A whole idea done differently often gives a wrong sum that is exactly
 * what the mistake computes. Each known mistake is modelled here: the given
 * host code's passes run on the CPU, each block summing what its threads
 * would load (load_share) with the tree the mistake builds (tree_sum). A
 * wrong sum equal to a model's names that mistake. Races are not modelled:
 * they rarely give the same wrong sum twice. */
typedef struct {
    const uint32_t *in;
    unsigned n, block, size, grid;   /* size: threads per block */
} block_view;

static uint32_t zero_past_n(const block_view *v, size_t i)
{
    return i < v->n ? v->in[i] : 0;
}

/* Stages 3-5: the two elements of a pair, block b from b * 2 * size. */
static uint32_t pair_share(const block_view *v, unsigned tid)
{
    size_t i = (size_t)v->block * 2 * v->size + tid;
    return zero_past_n(v, i) + zero_past_n(v, i + v->size);
}

/* Stage 6: a thread's pairs over the whole grid (with_second false: the
 * first element of each only). */
static uint32_t grid_pairs(const block_view *v, unsigned tid, bool with_second)
{
    uint32_t sum = 0;
    size_t step = 2 * (size_t)v->size * v->grid;
    for (size_t i = (size_t)v->block * 2 * v->size + tid; i < v->n; i += step)
        sum += v->in[i] + (with_second ? zero_past_n(v, i + v->size) : 0);
    return sum;
}

static uint32_t grid_pairs_share(const block_view *v, unsigned tid)
{
    return grid_pairs(v, tid, true);
}

/* Stage 7: a thread's int4 vectors over the whole grid, then the tail (the
 * n % 4 elements after the last whole vector), one element for each of the
 * grid's first n % 4 threads; the two mistakes after it take the tail
 * differently. */
static uint32_t vectors_share(const block_view *v, unsigned tid)
{
    size_t thread = (size_t)v->block * v->size + tid, vectors = v->n / 4;
    uint32_t sum = 0;
    for (size_t i = thread; i < vectors; i += (size_t)v->size * v->grid)
        sum += v->in[4 * i] + v->in[4 * i + 1] + v->in[4 * i + 2] + v->in[4 * i + 3];
    return sum;
}

static uint32_t vectors_and_tail_share(const block_view *v, unsigned tid)
{
    size_t thread = (size_t)v->block * v->size + tid;
    return vectors_share(v, tid) + (thread < v->n % 4 ? v->in[v->n / 4 * 4 + thread] : 0);
}

static uint32_t tail_in_every_block(const block_view *v, unsigned tid)
{
    return vectors_share(v, tid) + (tid < v->n % 4 ? v->in[v->n / 4 * 4 + tid] : 0);
}

static uint32_t tail_indexed_in_vectors(const block_view *v, unsigned tid)
{
    size_t thread = (size_t)v->block * v->size + tid;
    return vectors_share(v, tid) + (thread < v->n % 4 ? v->in[v->n / 4 + thread] : 0);
}

static uint32_t pair_from_block_size(const block_view *v, unsigned tid)
{
    size_t i = (size_t)v->block * v->size + tid;
    return zero_past_n(v, i) + zero_past_n(v, i + v->size);
}

static uint32_t pair_of_neighbours(const block_view *v, unsigned tid)
{
    size_t i = (size_t)v->block * 2 * v->size + tid;
    return zero_past_n(v, i) + zero_past_n(v, i + 1);
}

static uint32_t first_of_each_pair(const block_view *v, unsigned tid)
{
    return grid_pairs(v, tid, false);
}

/* Sequential addressing on the CPU: the levels s = from, from / 2, ...
 * while s > stop, each adding word t + s to word t for t < s. */
static void fold_levels(uint32_t *sdata, unsigned from, unsigned stop)
{
    for (unsigned s = from; s > stop; s >>= 1)
        for (unsigned t = 0; t < s; t++)
            sdata[t] += sdata[t + s];
}

static uint32_t whole_tree(uint32_t *sdata, unsigned size)
{
    fold_levels(sdata, size / 2, 0);
    return sdata[0];
}

/* The last warp starts at s = 16, as if 32 words were left, not 64. */
static uint32_t last_warp_from_16(uint32_t *sdata, unsigned size)
{
    fold_levels(sdata, size / 2, 32);
    fold_levels(sdata, 16, 0);
    return sdata[0];
}

/* The last warp's s = 32 step, done twice: once by fold_halves (s >= stop)
 * and once by warp_fold. */
static uint32_t level_32_twice(uint32_t *sdata, unsigned size)
{
    fold_levels(sdata, size / 2, 16);
    fold_levels(sdata, size >= 64 ? 32 : 16, 0);
    return sdata[0];
}

/* fold_halves folds all the way down (stop ignored), then the last warp folds again. */
static uint32_t stop_ignored(uint32_t *sdata, unsigned size)
{
    fold_levels(sdata, size / 2, 0);
    fold_levels(sdata, size >= 64 ? 32 : 16, 0);
    return sdata[0];
}

/* Mark Harris's unrolled tree starts at 512 (his largest block). */
static uint32_t unrolled_from_512(uint32_t *sdata, unsigned size)
{
    fold_levels(sdata, size < 1024 ? size / 2 : 256, 0);
    return sdata[0];
}

/* warp_sum's shuffles start at offset 32, from a lane that does not exist:
 * __shfl_down_sync gives the lane its own value, doubling it, in both of
 * the kernel's warp sums. */
static uint32_t shuffles_from_32(uint32_t *sdata, unsigned size)
{
    return 4 * whole_tree(sdata, size);
}

#define STAGE(s) (1u << (s))

typedef struct {
    unsigned stages;   /* the stages whose sums it changes (STAGE bits) */
    uint32_t (*load_share)(const block_view *, unsigned tid);   /* NULL: the stage's own */
    uint32_t (*tree_sum)(uint32_t *sdata, unsigned size);       /* NULL: the whole tree */
    const char *says;
} known_mistake;

static const known_mistake known_mistakes[] = {
    {STAGE(3) | STAGE(4) | STAGE(5), pair_from_block_size, NULL,
     "load_pair starts block b at b * blockDim.x: the blocks' pairs overlap, so elements are "
     "added twice and the last ones never (block b covers 2 * blockDim.x elements from "
     "b * 2 * blockDim.x)"},
    {STAGE(3) | STAGE(4) | STAGE(5), pair_of_neighbours, NULL,
     "load_pair adds neighbours, in[i] and in[i + 1]: the second element of a pair is "
     "blockDim.x further, in[i + blockDim.x]"},
    {STAGE(4) | STAGE(5) | STAGE(6), NULL, last_warp_from_16,
     "warp_fold starts at s = 16, so words 32-63 are never added: the block-wide levels stop "
     "at 64 words (fold_halves runs while s > 32), and the last warp's first step is s = 32"},
    {STAGE(4), NULL, level_32_twice,
     "words 32-63 were added twice: fold_halves runs while s >= stop, doing the s = 32 step "
     "that warp_fold does again (s > stop; with stop = 0, s >= 0 never ends)"},
    {STAGE(4), NULL, stop_ignored,
     "fold_halves ignores stop and folds down to one word, then warp_fold folds the first 64 "
     "words again: stop at s > stop, leaving warp_fold 64 words"},
    {STAGE(5) | STAGE(6), NULL, unrolled_from_512,
     "fold_unrolled starts at 512 as in the lecture, whose largest block was 512: a block of "
     "1024 never adds words 512-1023; start with if (B >= 1024) { if (tid < 512) ... }"},
    {STAGE(6), first_of_each_pair, NULL,
     "thread_pair_sum adds only the first element of each pair, in[i]: each trip covers a pair, "
     "in[i] + in[i + B] (through load_or_zero)"},
    {STAGE(7), tail_in_every_block, NULL,
     "every block added the n % 4 tail elements: the tail test uses threadIdx.x, where it needs "
     "the thread's index in the whole grid (thread < n % 4)"},
    {STAGE(7), tail_indexed_in_vectors, NULL,
     "the tail was read at in[n4 + thread], an index in vectors where the array counts ints: "
     "the tail starts at element 4 * n4"},
    {STAGE(7), NULL, shuffles_from_32,
     "the sum is 4 times the right one: warp_sum's first shuffle has offset 32, past the warp, "
     "where __shfl_down_sync returns the lane's own value, doubling it in each of the two warp "
     "sums; the offsets are 16, 8, 4, 2, 1"},
};

/* Blocks of one pass of `stage` over n elements, as the given host code
 * launches them. */
static unsigned model_pass_blocks(int stage, unsigned n, unsigned size)
{
    unsigned covered = stage == 7 ? 4 * size : stage >= 3 ? 2 * size : size;
    unsigned blocks = (n + covered - 1) / covered;
    if (stage >= 6 && blocks > reduce_resident_blocks(stage, (int)size))
        blocks = reduce_resident_blocks(stage, (int)size);
    return blocks;
}

static uint32_t stage_share(int stage, const block_view *v, unsigned tid)
{
    return stage <= 2 ? zero_past_n(v, (size_t)v->block * v->size + tid)
         : stage <= 5 ? pair_share(v, tid)
         : stage == 6 ? grid_pairs_share(v, tid)
                      : vectors_and_tail_share(v, tid);
}

/* The sum `mistake` gives: the passes of the given host code, each block
 * loading its threads' shares and summing them with the mistake's tree;
 * stage 7's blocks all add into one result in a single pass. */
static uint32_t sum_with(const known_mistake *mistake, int stage, const int *host, unsigned n,
                         unsigned size)
{
    if (n == 0)   /* the given code writes the empty sum, launching nothing */
        return 0;
    uint32_t *values = malloc(sizeof(uint32_t) * n), *sums = malloc(sizeof(uint32_t) * n);
    uint32_t *sdata = malloc(sizeof(uint32_t) * size);
    cr_assert(values && sums && sdata, "out of host memory for n = %u", n);
    memcpy(values, host, sizeof(uint32_t) * n);
    for (;;) {
        unsigned blocks = model_pass_blocks(stage, n, size);
        for (unsigned b = 0; b < blocks; b++) {
            block_view v = {values, n, b, size, blocks};
            for (unsigned t = 0; t < size; t++)
                sdata[t] = mistake->load_share ? mistake->load_share(&v, t)
                                               : stage_share(stage, &v, t);
            sums[b] = mistake->tree_sum ? mistake->tree_sum(sdata, size)
                                        : whole_tree(sdata, size);
        }
        if (stage == 7)   /* one pass: every block adds its sum into the result */
            for (unsigned b = 1; b < blocks; b++)
                sums[0] += sums[b];
        if (stage == 7 || blocks == 1)
            break;
        uint32_t *next_input = sums;
        sums = values;
        values = next_input;
        n = blocks;
    }
    uint32_t total = sums[0];
    free(values);
    free(sums);
    free(sdata);
    return total;
}

/* Appends to hint every known mistake whose sum is got: on a small input
 * several can give the same one. */
static void name_known_mistakes(const int *host, int stage, int n, int block_size, int got,
                                char *hint, size_t hint_len)
{
    const char *lead = hint[0] ? "; it is also the sum this mistake gives: "
                               : "; that is the sum this mistake gives: ";
    for (size_t k = 0; k < sizeof known_mistakes / sizeof known_mistakes[0]; k++) {
        const known_mistake *mistake = &known_mistakes[k];
        size_t used = strlen(hint);
        if ((mistake->stages & STAGE(stage)) && used + 1 < hint_len &&
            sum_with(mistake, stage, host, (unsigned)n, (unsigned)block_size) == (uint32_t)got) {
            snprintf(hint + used, hint_len - used, "%s%s", lead, mistake->says);
            lead = "; or this one: ";
        }
    }
}

/* Writes what a wrong sum `got` looks like, when it has a recognisable
 * pattern, and the known mistakes that give exactly that sum; else "". */
static void diagnose(const int *host, int stage, int n, int block_size, int got, int expected,
                     char *hint, size_t hint_len)
{
    uint32_t diff = (uint32_t)got - (uint32_t)expected;
    size_t share = block_share(stage, block_size);
    hint[0] = '\0';
    if (got == WB_POISON_INT) {
        snprintf(hint, hint_len, "; the result was never written (thread 0 of each block "
                 "writes out[blockIdx.x]; in stage 7 the blocks atomicAdd into *out)");
        return;
    }
    if (diff == (uint32_t)WB_POISON_INT) {
        snprintf(hint, hint_len, "; the sum started from the poison value left in *out: *out was "
                 "not set to 0 before the blocks added to it");
        return;
    }
    for (uint32_t k = 1; k <= 64; k++) {
        if (diff == k * (uint32_t)CANARY) {
            snprintf(hint, hint_len, "; the sum includes %u element(s) after the last one: a "
                     "thread reads past n (a bound such as i <= n, or a load without its check)",
                     k);
            return;
        }
    }
    /* Only a prefix: a tail (n % 4 in stage 7, a last partial block) or
     * every block but the first left out. */
    size_t prefixes[] = {(size_t)n - (size_t)n % 4, share ? (size_t)n - (size_t)n % share : 0,
                         share};
    for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
        size_t m = prefixes[p];
        if (m > 0 && m < (size_t)n && (uint32_t)got == sum_u32(host, m)) {
            snprintf(hint, hint_len, "; that is the sum of only the first %zu of the %d elements: "
                     "the rest were left out", m, n);
            break;
        }
    }
    /* Every block summed the first block's elements: got is a multiple of
     * their sum. */
    uint32_t first = hint[0] == '\0' && share && share < (size_t)n ? sum_u32(host, share) : 0;
    for (uint32_t k = 2; first != 0 && k <= (uint32_t)(n / share + 1); k++) {
        if ((uint32_t)got == k * first) {
            snprintf(hint, hint_len, "; that is %u times the sum of the first block's %zu "
                     "elements: every block read the first block's elements (an index without "
                     "blockIdx.x)", k, share);
            break;
        }
    }
    name_known_mistakes(host, stage, n, block_size, got, hint, hint_len);
}

/* Sums n random ints with `stage` in blocks of block_size, `runs` times,
 * and checks every answer, the guard zones and the poison. */
static void check_sum(int stage, int n, int block_size, int runs)
{
    /* label names the observations (it must not depend on the code under
     * test); what, with the stage's name, goes into the messages. */
    char label[160], what[160], hint[1200];
    snprintf(label, sizeof label, "stage %d, n = %d, block size %d", stage, n, block_size);
    snprintf(what, sizeof what, "stage %d (%s), n = %d, block size %d", stage,
             reduce_stage_name(stage), n, block_size);

    size_t total = (size_t)n + CANARIES;
    int *host = malloc(sizeof(int) * total);
    int *got = malloc(sizeof(int) * (size_t)runs);
    cr_assert(host && got, "out of host memory for n = %d", n);
    /* The whole int range: partial sums wrap around all the time. */
    wb_rng rng = wb_rng_for(label);
    for (size_t i = 0; i < (size_t)n; i++)
        host[i] = (int)(uint32_t)(wb_rng_u64(&rng) >> 32);
    for (size_t i = (size_t)n; i < total; i++)
        host[i] = CANARY;
    int expected = (int)sum_u32(host, (size_t)n);

    /* Guard zones (-1) around everything: a read before the input or past
     * its canaries, a write past the partial sums or the result, shows. */
    size_t scratch = reduce_scratch_ints(n);
    int *d_in = wb_guarded_malloc(sizeof(int) * total);
    int *d_scratch = wb_guarded_malloc(sizeof(int) * scratch);
    int *d_out = wb_guarded_malloc(sizeof(int));
    CUDA_CHECK(cudaMemcpy(d_in, host, sizeof(int) * total, cudaMemcpyHostToDevice));
    wb_poison_ints(d_scratch, scratch);

    for (int run = 0; run < runs; run++) {
        char fetched[200];
        snprintf(fetched, sizeof fetched, "%s, run %d", label, run + 1);
        wb_poison_ints(d_out, 1);
        wb_dirty_shared_memory();   /* a read of shared memory never written sums -1s */
        reduce_sum(stage, d_in, n, block_size, d_scratch, d_out);
        wb_fetch(&got[run], d_out, sizeof(int), fetched);
    }
    for (int run = 1; run < runs; run++)
        cr_assert(got[run] == got[0],
                  "%s: %d identical runs gave different sums (run 1: %d, run %d: %d; the right "
                  "one is %d): a race, where threads or blocks see each other's work at the "
                  "wrong time or lose it. Classic mistakes at this stage: %s " WB_SEED_HINT,
                  what, runs, got[0], run + 1, got[run], expected, classic_mistakes[stage],
                  wb_seed());
    if (got[0] != expected) {
        diagnose(host, stage, n, block_size, got[0], expected, hint, sizeof hint);
        cr_assert_fail("%s: got %d, expected %d%s. Classic mistakes at this stage: %s "
                       WB_SEED_HINT, what, got[0], expected, hint, classic_mistakes[stage],
                       wb_seed());
    }
    char zone[200];
    snprintf(zone, sizeof zone, "%s (partial sums)", label);
    wb_guarded_check(d_scratch, zone);
    snprintf(zone, sizeof zone, "%s (result)", label);
    wb_guarded_check(d_out, zone);

    wb_guarded_free(d_in);
    wb_guarded_free(d_scratch);
    wb_guarded_free(d_out);
    free(host);
    free(got);
}

/* Threads in a full grid of stage 6 or 7 with blocks of block_size: the
 * given host code launches as many blocks as the GPU holds at once. */
static int full_grid_threads(int stage, int block_size)
{
    return (int)reduce_resident_blocks(stage, block_size) * block_size;
}

/* Under compute-sanitizer a sum costs a thousand times more (racecheck
 * most) and the tools see a race in one run: one run each, and no input
 * past 2^20 + 7 elements (every pattern of access shows at that size). */
static int runs(int wanted)
{
    return wb_under_sanitizer() ? 1 : wanted;
}

static bool too_large_for_the_tools(int n)
{
    return wb_under_sanitizer() && n > (1 << 20) + 7;
}

static void check_sizes(int stage)
{
    /* Empty, tiny, around a warp, around a block of 256 and its double (the
     * share of stages 3-5), a prime, several passes, a last block only
     * partly used, and 2^24 + 1: 65,537 blocks of 256 in which a race can
     * show, and every thread of stages 6 and 7 loops several times (not
     * larger, so that the sanitizers can still run this test). One test
     * covers all sizes (the message names the one that failed): each test
     * is a process with its own CUDA context, which costs more than a sum. */
    static const int sizes[] = {0,    1,     2,       31,              33,
                                255,  257,   513,     1000,            65537,
                                1 << 22, (1 << 22) + 13, (1 << 24) + 1};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        if (!too_large_for_the_tools(sizes[k]))
            check_sum(stage, sizes[k], 256, runs(RUNS));
    /* Stage 7's four-vector loop runs while i + 3 * stride < n / 4; with
     * n / 4 = 3.5 strides, its last trip ends exactly on the last vector
     * (and n % 4 = 3 leaves a tail). */
    int stride = full_grid_threads(7, 256), n = 4 * (3 * stride + stride / 2) + 3;
    if (!too_large_for_the_tools(n))
        check_sum(stage, n, 256, runs(RUNS));
}

static void check_block_sizes(int stage)
{
    /* Every supported block size at a size that needs three or four passes
     * with small blocks and is no multiple of any block. Largest first:
     * shared memory is not cleared between launches, so a smaller block
     * that reads past its own words finds the larger one's sums there, not
     * zeros that would hide the mistake. */
    for (int block = REDUCE_MAX_BLOCK; block >= REDUCE_MIN_BLOCK; block /= 2)
        check_sum(stage, wb_under_sanitizer() ? (1 << 16) + 7 : (1 << 20) + 7, block, runs(RUNS));
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

Test(reduction, stage7_atomic_contention,
     .description = "every block of a full grid adds its sum into *out at the same moment")
{
    /* One int4 per thread of a full grid: every block does the same tiny
     * amount of work, so hundreds of blocks reach the final add within a
     * microsecond. A plain *out += sum then loses some in almost every run;
     * 25 runs per block size make a pass by luck practically impossible.
     * 1024 first, so that a 256-thread block reading warp_sums past its 8
     * warps finds stale sums there. */
    check_sum(7, 4 * full_grid_threads(7, 1024), 1024, runs(25));
    check_sum(7, 4 * full_grid_threads(7, 256), 256, runs(25));
}

/* ---------------------------------------------------------- source rules */

/* A barrier left out of a tree rarely gives a wrong sum on one GPU: the
 * warps happen to stay close enough (handouts/04-reduction.md, "Classic
 * mistakes"; racecheck sees it). These tests read kernels.cu (wb_test.h,
 * "source rules") and need no GPU. The barrier after the loads, stage 7's
 * barrier and its atomicAdd are in the given kernels (given.cuh); the
 * functions of stages 3, 6 and 7 load and add in registers, and their
 * trees are those of stages 2 and 5: no rule of their own. */
WB_SOURCE_SUITE(reduction_source);

#define TREE_LEVEL_BARRIER "a barrier per level of the tree, after the adds (outside the if)"
#define TREE_LEVEL_PROTECTS (WB_READ_AFTER_WRITE | WB_EACH_ITERATION)
/* given.cuh's kernels pass threadIdx.x as tid (the second parameter): an if
 * on it is divergent, and a barrier inside one is not reached by all. */
static const wb_source_rule stage0_rules[] = {
    {"tree_interleaved", .barriers = 1, .shared = "sdata", .protects = TREE_LEVEL_PROTECTS,
     .thread_parameter = 2, .why = TREE_LEVEL_BARRIER},
};
static const wb_source_rule stage1_rules[] = {
    {"tree_strided", .barriers = 1, .shared = "sdata", .protects = TREE_LEVEL_PROTECTS,
     .thread_parameter = 2, .why = TREE_LEVEL_BARRIER},
};
static const wb_source_rule stage2_rules[] = {
    {"fold_halves", .barriers = 1, .shared = "sdata", .protects = TREE_LEVEL_PROTECTS,
     .thread_parameter = 2, .why = TREE_LEVEL_BARRIER},
};
static const wb_source_rule stage4_rules[] = {
    {"warp_fold", .barriers = 2,
     .why = "threads of a warp do not run in lockstep (Volta and newer): each step reads, "
            "__syncwarp(), writes, __syncwarp(). The volatile-only lecture version races."},
};
static const wb_source_rule stage5_rules[] = {
    {"fold_unrolled", .barriers = 4,
     .why = "one __syncthreads() per level written out (1024 to 64 words: four levels)"},
};
Test(reduction_source, stage0_barriers) { WB_CHECK_SOURCE_RULES(stage0_rules); }
Test(reduction_source, stage1_barriers) { WB_CHECK_SOURCE_RULES(stage1_rules); }
Test(reduction_source, stage2_barriers) { WB_CHECK_SOURCE_RULES(stage2_rules); }
Test(reduction_source, stage4_barriers) { WB_CHECK_SOURCE_RULES(stage4_rules); }
Test(reduction_source, stage5_barriers) { WB_CHECK_SOURCE_RULES(stage5_rules); }

/* ------------------------------------------- the given argument checks */

/* reduce_sum must refuse bad arguments through wb_fail (given host code:
 * a failure here means it was changed, restore it). */
#define expect_refusal(what, stage, in, n, block_size, about) \
    wb_expect_error(what, about, reduce_sum(stage, in, n, block_size, d_scratch, d_out))

Test(reduction, given_argument_checks,
     .description = "the given host code refuses stages, block sizes and inputs it cannot sum")
{
    int *d_in, *d_scratch, *d_out;
    CUDA_CHECK(cudaMalloc((void **)&d_in, 64 * sizeof(int)));
    CUDA_CHECK(cudaMalloc((void **)&d_scratch, reduce_scratch_ints(64) * sizeof(int)));
    CUDA_CHECK(cudaMalloc((void **)&d_out, sizeof(int)));
    CUDA_CHECK(cudaMemset(d_in, 0, 64 * sizeof(int)));
    expect_refusal("stage -1", -1, d_in, 64, 256, "does not exist");
    expect_refusal("stage 8", REDUCE_STAGES, d_in, 64, 256, "does not exist");
    expect_refusal("block size 16", 0, d_in, 64, REDUCE_MIN_BLOCK / 2, "power of two");
    expect_refusal("block size 2048", 0, d_in, 64, 2 * REDUCE_MAX_BLOCK, "power of two");
    expect_refusal("block size 96", 0, d_in, 64, 96, "power of two");
    expect_refusal("n = -1", 0, d_in, -1, 256, "negative");
    /* On the bounds, accepted (an error fails the test): the first and last
     * stage, the smallest and largest block size, n = 0. With n = 0 only
     * the given code runs: it writes the empty sum, 0. */
    static const int on_bounds[][2] = {
        {0, REDUCE_MIN_BLOCK}, {REDUCE_STAGES - 1, REDUCE_MAX_BLOCK},
        {0, REDUCE_MAX_BLOCK}, {REDUCE_STAGES - 1, REDUCE_MIN_BLOCK},
    };
    for (size_t i = 0; i < sizeof on_bounds / sizeof on_bounds[0]; i++) {
        char what[96];
        snprintf(what, sizeof what, "reduce_sum(stage %d, n = 0, block size %d): the sum",
                 on_bounds[i][0], on_bounds[i][1]);
        wb_poison_ints(d_out, 1);
        reduce_sum(on_bounds[i][0], d_in, 0, on_bounds[i][1], d_scratch, d_out);
        int sum;
        wb_fetch(&sum, d_out, sizeof sum, what);
        cr_assert(sum == 0, "%s = %d, expected 0: the given code writes the empty sum (restore "
                  "it) " WB_SEED_HINT, what, sum, wb_seed());
    }
    /* Every stage has its name, and only those stages do. */
    for (int stage = -1; stage <= REDUCE_STAGES; stage++) {
        bool valid = stage >= 0 && stage < REDUCE_STAGES;
        const char *name = reduce_stage_name(stage);
        cr_assert(name && (strcmp(name, "no such stage") != 0) == valid,
                  "reduce_stage_name(%d) = \"%s\": the given code names stages 0 to %d and "
                  "says \"no such stage\" for the others (restore it)",
                  stage, name ? name : "(null)", REDUCE_STAGES - 1);
    }
    /* Last: without its check, the misaligned int4 loads end the context. */
    expect_refusal("stage 7, input not 16-byte aligned", 7, d_in + 1, 60, 256, "16-byte");
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_scratch));
    CUDA_CHECK(cudaFree(d_out));
}

/* ----------------------------------------------------------------- timing */

/* The graded time (grading/rubric.toml) is stage 7's. Each of its timed
 * runs sums TIMED_CALLS arrays, each with its own scratch and result, all
 * filled fresh from the run's seed before it (untimed) and every sum
 * checked after it: a sum cached from an earlier run, or a call skipped
 * because its result already looked right, fails instead of looking fast.
 * Stage 7 takes about 0.065 ms a sum of 2^26 ints on an H200 (256 MB read
 * at about its copy bandwidth): 80 calls make a run of about 5 ms, long enough that the grader's hand-shake around
 * each run (tens of us) costs under 1% of it. */
#define TIMED_N (1 << 26)
#define TIMED_CALLS 80
#define TIMED_RUNS 10
#define TIMED_BLOCK 256
#define GRADED_STAGE (REDUCE_STAGES - 1)
/* The inputs: a power-of-two span, so that the CPU recomputes 2^26 of them
 * from their hash in a fraction of a second; their sum still wraps. */
#define INPUT_LO (-(1 << 20))
#define INPUT_HI ((1 << 20) - 1)

typedef struct {
    int stage, calls;
    int *in[TIMED_CALLS], *scratch[TIMED_CALLS], *out[TIMED_CALLS];   /* device */
    uint64_t seed[TIMED_CALLS];   /* this run's inputs */
    int cpu_checked;              /* the call whose sum the CPU recomputes */
} timed_sums;

static void run_timed(void *context)
{
    timed_sums *t = context;
    for (int k = 0; k < t->calls; k++)
        reduce_sum(t->stage, t->in[k], TIMED_N, TIMED_BLOCK, t->scratch[k], t->out[k]);
}

/* One call of stage 0-6, for the table's other rows (not graded). */
static void run_first_call(void *context)
{
    timed_sums *t = context;
    reduce_sum(t->stage, t->in[0], TIMED_N, TIMED_BLOCK, t->scratch[0], t->out[0]);
}

static void fresh_inputs(void *context, int repetition, uint64_t seed)
{
    timed_sums *t = context;
    (void)repetition;
    for (int k = 0; k < t->calls; k++) {
        t->seed[k] = wb_hash_u64(seed, (uint64_t)k);
        wb_fill_ints_on_gpu(t->in[k], TIMED_N, INPUT_LO, INPUT_HI, t->seed[k]);
        wb_poison_ints(t->out[k], 1);
    }
    t->cpu_checked = (int)(wb_hash_u64(seed, TIMED_CALLS) % (uint64_t)t->calls);
}

/* The sum of one call's inputs, with int wrap-around, from their hash. */
static int cpu_sum(uint64_t seed)
{
    uint32_t sum = 0;
    for (uint64_t i = 0; i < TIMED_N; i++)
        sum += (uint32_t)wb_hash_int(seed, i, INPUT_LO, INPUT_HI);
    return (int)sum;
}

/* Every sum of the run against the judge's own (the reference's sum of the
 * same inputs; in the submission's own process, its own value), and one
 * call's, drawn from the run's seed, against the CPU's: recomputing all 80
 * would cost seconds a run. */
static void check_timed_run(void *context, int repetition)
{
    timed_sums *t = context;
    size_t first = 0;
    for (int k = 0; k < t->calls; k++) {
        char what[96];
        wb_timed_call_label(what, sizeof what, repetition, TIMED_RUNS, k, t->calls, "the sum");
        int got, own;
        wb_fetch_sample(&got, &own, t->out[k], sizeof got, &first, 1, what);
        bool on_cpu = k == t->cpu_checked;
        int expected = on_cpu ? cpu_sum(t->seed[k]) : own;
        cr_assert(got == expected, "%s = %d, expected %d (%s): %s " WB_SEED_HINT, what, got,
                  expected, on_cpu ? "the CPU's sum" : "the reference's sum of the same inputs",
                  wb_timed_call_mistake(got == WB_POISON_INT),
                  wb_seed());
    }
}

Test(reduction, timing_2e26, .description = "every stage at 2^26 ints, blocks of 256")
{
    /* 256 MB an array, five times the H100's 50 MB L2: the time is DRAM's.
     * Stage 7, the end of the ladder, is timed first: that time is the
     * lab's performance grade; the others complete the table, one call at
     * a time on the first array. Every stage must read the 4 n bytes of
     * the input at least once: that is the work the grader's floor is
     * computed from. bench.c has the full tables. */
    const double bytes = sizeof(int) * (double)TIMED_N;
    timed_sums *t = calloc(1, sizeof *t);
    cr_assert(t, "out of host memory");
    /* On a GPU whose half holds fewer than 80 arrays, a run has fewer
     * calls: shorter, so the grader's hand-shake weighs more in its time. */
    size_t scratch_bytes = sizeof(int) * reduce_scratch_ints(TIMED_N);
    t->calls = wb_buffer_sets(TIMED_CALLS, sizeof(int) * (size_t)TIMED_N + scratch_bytes);
    for (int k = 0; k < t->calls; k++) {
        CUDA_CHECK(cudaMalloc((void **)&t->in[k], sizeof(int) * (size_t)TIMED_N));
        CUDA_CHECK(cudaMalloc((void **)&t->scratch[k], scratch_bytes));
        CUDA_CHECK(cudaMalloc((void **)&t->out[k], sizeof(int)));
    }
    /* The warm-up's inputs; every timed run gets its own (fresh_inputs). */
    wb_rng warm_up = wb_rng_for("reduction timing, warm-up");
    fresh_inputs(t, -1, wb_rng_u64(&warm_up));
    wb_timing times[REDUCE_STAGES];
    for (int k = 0; k < REDUCE_STAGES; k++) {
        char what[64];
        t->stage = (GRADED_STAGE + k) % REDUCE_STAGES;   /* 7, 0, 1, ..., 6 */
        snprintf(what, sizeof what, "stage %d, 2^26 ints, blocks of 256", t->stage);
        wb_timing timing = t->stage == GRADED_STAGE
            ? wb_time_gpu_reps(run_timed, t, 1, TIMED_RUNS, t->calls,
                               (wb_rep_checks){fresh_inputs, check_timed_run})
            : wb_time_gpu(run_first_call, t, 2, TIMED_RUNS);
        times[t->stage] = wb_observe_timing(what, timing, bytes, 0.0);
    }
    double copy = wb_copy_bandwidth_gbps();
    char title[160];
    snprintf(title, sizeof title, "reduction, n = 2^26, blocks of 256 (median of %d; stage %d: "
             "runs of %d calls, each on fresh inputs, time per call)", TIMED_RUNS, GRADED_STAGE,
             t->calls);
    wb_table *table = wb_table_new("reduction", title, "stage|kernel|time (ms)|GB/s|% of copy");
    for (int stage = 0; stage < REDUCE_STAGES; stage++) {
        double gbps = wb_gbps(bytes, times[stage].median_ms);
        wb_table_row(table, "%d|%s|%.3f|%.0f|%.1f", stage, reduce_stage_name(stage),
                     times[stage].median_ms, gbps, 100.0 * gbps / copy);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    for (int k = 0; k < t->calls; k++) {
        CUDA_CHECK(cudaFree(t->in[k]));
        CUDA_CHECK(cudaFree(t->scratch[k]));
        CUDA_CHECK(cudaFree(t->out[k]));
    }
    free(t);
}

