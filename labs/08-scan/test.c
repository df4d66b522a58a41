/*
 * Lab 08 tests: every stage scans random values from the whole 32-bit range
 * (so that nearly every prefix wraps past 2^32, and past INT_MAX as int),
 * inclusive and exclusive, exactly against the CPU, on awkward sizes and on
 * every block size, each scan run twice; stages 3 and 4 once more at 2^28;
 * stage 5 compacts flags into a frontier; then the source rules, the given
 * code's argument checks and yardsticks, and one timing table. Each stage
 * has its own tests, stageN_..., so that `workbook status` can tell which
 * stages work.
 *
 * What catches which mistake (handouts/08-scan.md, "Classic mistakes"):
 *   - results never written (a last partial tile left out): the output is
 *     poisoned before every run;
 *   - writes past n: guard zones around the output, the scratch and the
 *     list, checked; a read past n faults (nothing is mapped after);
 *   - races (the in-place Hillis-Steele, a missing barrier): tens of
 *     thousands of blocks each run, every scan twice, and source rules for
 *     the barriers no run may show;
 *   - inclusive for exclusive, a tile prefix that includes the tile itself,
 *     tiles never joined: recognised from the difference to the right
 *     answer and named;
 *   - the right sums by the wrong method in stage 1 (a whole scan inside
 *     up_sweep): stage1_sweeps runs each sweep alone against the CPU's
 *     reduction tree;
 *   - the look-back: its status values are poisoned, so a value read before
 *     its flag shows as the poison; stage4_look_back_waits makes it wait,
 *     and a source rule checks the release and the acquire.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(scan, .timeout = 180);

/* Each scan runs this often on the same input: a race that changes a
 * different element each time shows as two different answers. */
#define RUNS 2

#define POISON ((unsigned)WB_POISON_INT)

static const char *const classic_mistakes[SCAN_STAGES + 1] = {
    "hillis_steele_scan: the in-place update (one buffer read and written in the same level: "
    "thread t reads word t - offset while its owner overwrites it), a missing __syncthreads() "
    "after a level, tid >= offset (not >), the buffers not swapped, the wrong buffer returned",
    "up_sweep / down_sweep: a __syncthreads() before every level (the first also waits for the "
    "loads), tid < tile / (2d), the words d * (2t + 1) - 1 and d * (2t + 2) - 1, the root set "
    "to 0 before the down-sweep, every index through padded()",
    "warp_inclusive_scan: __shfl_up_sync (not down), lane >= offset (not >), x += (not =); "
    "warps_exclusive_scan: the barrier after lane 0 writes the total, 0 for lanes past the last "
    "warp, the exclusive prefix returned (the inclusive one minus the warp's own total), "
    "*block_total set in every thread to the sum of every warp's total",
    "load_tile / store_tile: a whole vector only when i + 4 <= n, the last partial tile element "
    "by element, nothing stored at n or after; scan_then_propagate: the tile count rounded up "
    "(the last partial tile), the tile sums scanned exclusively, the next level's sums at "
    "next_level_sums (not over this level's), the add-back after that scan",
    "publish: the value before the flag, the flag stored with memory_order_release; look_back: "
    "wait while the flag is TILE_EMPTY (acquire), read the value only after the flag, stop at "
    "TILE_PREFIX; tile_exclusive_prefix: the aggregate published before the look-back, the "
    "exclusive prefix returned (not the inclusive one)",
    "scatter_kept: only kept elements write, at tile_offset + position (the exclusive "
    "position), with the indices first_index, + 1, + 2, + 3",
};

static const char *kind_name(scan_kind kind)
{
    return kind == SCAN_INCLUSIVE ? "inclusive" : "exclusive";
}

/* The CPU reference: the scan of in[0 .. n), started again at every tile
 * of `tile` elements (0: one tile, the whole input). Unsigned, so that it
 * wraps exactly as the GPU's sums do. */
static void cpu_scan(const unsigned *in, size_t n, size_t tile, scan_kind kind, unsigned *out)
{
    unsigned sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (tile && i % tile == 0)
            sum = 0;
        out[i] = kind == SCAN_EXCLUSIVE ? sum : sum + in[i];
        sum += in[i];
    }
}

static void random_values(unsigned *v, size_t n, const char *stream)
{
    wb_rng rng = wb_rng_for(stream);
    for (size_t i = 0; i < n; i++)
        v[i] = (unsigned)(wb_rng_u64(&rng) >> 32);
}

/* before[t] = the sum of the tiles before tile t of `tile` elements, for
 * t = 0 .. tiles (before[tiles]: the sum of all n); malloc'd. */
static unsigned *tile_prefixes(const unsigned *in, size_t n, size_t tile, size_t tiles)
{
    unsigned *before = malloc(sizeof(unsigned) * (tiles + 1));
    cr_assert(before, "out of host memory");
    before[0] = 0;
    for (size_t t = 0; t < tiles; t++) {
        unsigned sum = before[t];
        for (size_t j = t * tile; j < n && j < (t + 1) * tile; j++)
            sum += in[j];
        before[t + 1] = sum;
    }
    return before;
}

/* Whether got is a scan that adds, for each element, only the `window`
 * elements ending at it (within its tile): what a Hillis-Steele scan that
 * stops before its last levels gives. The window (a power of two below the
 * tile), or 0 when no window fits. */
static size_t window_of_scan(const unsigned *in, const unsigned *got, const unsigned *expected,
                             size_t n, scan_kind kind, size_t tile)
{
    for (size_t window = 1; window < tile; window *= 2) {
        size_t i = 0;
        for (; i < n; i++) {
            /* The inclusive scan, from which a window is a difference. */
            unsigned up_to_i = kind == SCAN_INCLUSIVE ? expected[i] : expected[i] + in[i];
            size_t j = i - window;   /* the last element before the window */
            unsigned before = i % tile >= window ? (kind == SCAN_INCLUSIVE ? expected[j]
                                                                           : expected[j] + in[j])
                                                 : 0;
            unsigned sum = up_to_i - before;
            if (got[i] != (kind == SCAN_INCLUSIVE ? sum : sum - in[i]))
                break;
        }
        if (i == n)
            return window;
    }
    return 0;
}

/* Writes what a wrong scan looks like, when it has a pattern a classic
 * mistake leaves, else "". tile: the stage's tile (the reference starts
 * again at every tile for stages 0-2, and joins them from stage 3 on). */
static void diagnose(const unsigned *in, const unsigned *got, const unsigned *expected, size_t n,
                     int stage, scan_kind kind, size_t tile, char *hint, size_t hint_len)
{
    hint[0] = '\0';
    size_t bad = 0;
    while (bad < n && got[bad] == expected[bad])
        bad++;
    if (bad == n)
        return;
    if (got[bad] == POISON) {
        size_t last_tile = (n - 1) / tile * tile, unwritten = bad;
        while (unwritten < n && got[unwritten] == POISON)
            unwritten++;
        /* The last vector named only where its tile holds whole vectors too:
         * a tile of that vector alone is also a tile count that rounds down. */
        if (stage >= 3 && n % 4 != 0 && n - n % 4 > last_tile && bad >= n - n % 4 &&
            unwritten == n)
            snprintf(hint, hint_len, "; elements %zu to %zu, in the last partial vector "
                     "(elements %zu to %zu), were never written: store_tile's element-by-element "
                     "branch stores .x, .y and .z, each where it is below n", bad, n - 1,
                     n - n % 4, n - 1);
        else if (bad >= last_tile && unwritten == n && n % tile != 0)
            snprintf(hint, hint_len, "; elements %zu to %zu, in the last partial tile (it starts "
                     "at %zu), were never written: a tile count that rounds down, or a store "
                     "that leaves out the elements of a partial vector", bad, n - 1, last_tile);
        else
            snprintf(hint, hint_len, "; element %zu was never written (nor the %zu after it)",
                     bad, unwritten - bad - 1);
        return;
    }
    /* The other kind: inclusive = exclusive + own element. */
    size_t i = 0;
    for (; i < n; i++) {
        unsigned other = kind == SCAN_INCLUSIVE ? expected[i] - in[i] : expected[i] + in[i];
        if (got[i] != other)
            break;
    }
    if (i == n) {
        snprintf(hint, hint_len, "; that is the %s scan, and the %s one was asked: "
                 "inclusive/exclusive confusion", kind_name(!kind), kind_name(kind));
        return;
    }
    if (stage == 0) {
        size_t window = window_of_scan(in, got, expected, n, kind, tile);
        if (window) {
            snprintf(hint, hint_len, "; every element holds the sum of only the %zu elements "
                     "ending at it: the levels stopped early (they run while offset < "
                     "blockDim.x; the last adds the word blockDim.x / 2 to the left)%s", window,
                     2 * window >= tile ? ", or the result read from the buffer the last level "
                                          "read, not the one it wrote"
                     : window == 1 ? ", or the input returned: the buffers never swapped "
                                     "(every level read the input's buffer, still in from[])"
                                   : "");
            return;
        }
    }
    uint32_t diff = got[bad] - expected[bad];
    for (uint32_t k = 1; k <= 4; k++) {
        if (diff == k * POISON || diff == (uint32_t)(-(int64_t)k * POISON)) {
            snprintf(hint, hint_len, "; element %zu is off by %u times the poison 0x%08X: a value "
                     "was read from memory nobody had written yet (stage 4: a tile's value read "
                     "before its flag said it was there; the status is poisoned)", bad, k,
                     POISON);
            return;
        }
    }
    if (stage < 3)
        return;
    if (n % 4 != 0 && n > 4 && bad >= n - n % 4) {   /* n < 4: a lone vector tells nothing */
        snprintf(hint, hint_len, "; only elements of the last partial vector (elements %zu to "
                 "%zu) are wrong: load_tile's element-by-element branch loads .x, .y and .z, "
                 "each from in where it is below n (0 past n), or store_tile's stores each "
                 "to its own element", n - n % 4, n - 1);
        return;
    }
    /* Stages 3 and 4: per tile, what came before it and what it holds. */
    unsigned *before = tile_prefixes(in, n, tile, (n + tile - 1) / tile);
    bool alone = true, own_sum_added = true;
    for (size_t j = 0; j < n && (alone || own_sum_added); j++) {
        size_t t = j / tile;
        alone = alone && got[j] == expected[j] - before[t];
        /* Tile 0 has no tile before it: stage 4 gives it 0 either way. */
        own_sum_added = own_sum_added && (got[j] == expected[j] + (before[t + 1] - before[t]) ||
                                          (t == 0 && got[j] == expected[j]));
    }
    free(before);
    if (alone)
        snprintf(hint, hint_len, "; every tile of %zu elements was scanned on its own: the sum of "
                 "the tiles before it never reached it (the scan of the tile sums and the "
                 "add-back, or the look-back)", tile);
    else if (own_sum_added)
        snprintf(hint, hint_len, "; every tile is off by its own total: it got the sum of the "
                 "tiles up to and including itself where the sum of the tiles before it belongs "
                 "(inclusive/exclusive confusion of the tile prefixes)");
}

/* A tile total that is off by -1, -2 or -3 in the last partial tile: the
 * words past n, the guard zone's -1s, went into it. */
static const char *past_n_hint(unsigned got, unsigned expected, size_t n)
{
    unsigned off = expected - got;
    return n % 4 != 0 && off >= 1 && off <= 3
               ? " (off by the -1s of the guard zone after the input: the last partial tile's "
                 "last vector was loaded whole, words at n and after entered the total; its "
                 "elements come out right because store_tile stops at n, but its total is "
                 "wrong)"
               : "";
}

/* Stage 1's sweeps on their own, each against the CPU: the up-sweep must
 * leave the reduction tree (word i holds the sum of the run of words that
 * ends at i and is as long as the lowest set bit of i + 1: a leaf, a pair,
 * a quad ... the root the tile's total), so that a whole scan done inside
 * up_sweep, right sums at n log n additions, shows; the down-sweep, given
 * that tree, must leave the exclusive scan. */
static unsigned tree_run(unsigned i) { return (i + 1) & -(i + 1); }

static void check_up_sweep(const unsigned *x, const unsigned *tree, const unsigned *got,
                           unsigned tile)
{
    unsigned inclusive = 0;
    for (unsigned i = 0; i < tile; i++) {
        inclusive += x[i];
        unsigned first = i + 1 - tree_run(i);
        cr_assert(got[i] == tree[i],
                  "stage 1, up_sweep alone on a tile of %u: word %u holds %u, expected %u, the "
                  "sum of x[%u .. %u] (after the up-sweep word i holds the run of words ending "
                  "at i that is as long as the lowest set bit of i + 1: level d adds only into "
                  "the word ending the right half of each pair, d * (2t + 2) - 1)%s. Classic "
                  "mistakes at this stage: %s " WB_SEED_HINT,
                  tile, i, got[i], tree[i], first, i,
                  got[i] == inclusive && tree[i] != inclusive
                      ? ": it holds x[0 .. i], the inclusive scan. up_sweep did a whole scan, "
                        "n log n additions like Hillis-Steele; the work-efficient up-sweep does "
                        "n - 1, a reduction tree"
                  : got[i] == 0 && i == tile - 1
                      ? ": the root, which must leave the up-sweep holding the tile's total; "
                        "down_sweep sets it to 0 when it starts"
                  : got[i] == x[i] ? ": word i kept its input, the level that adds into it "
                                     "(d = half its run) did not, or not in this thread"
                                   : "",
                  classic_mistakes[1], wb_seed());
    }
}

static void check_down_sweep(const unsigned *x, const unsigned *got, unsigned tile)
{
    unsigned exclusive = 0;
    for (unsigned i = 0; i < tile; i++) {
        cr_assert(got[i] == exclusive,
                  "stage 1, down_sweep alone on a tile of %u, given the up-sweep's tree: word "
                  "%u holds %u, expected %u, the sum of x[0 .. %u - 1] (the exclusive scan)%s. "
                  "Classic mistakes at this stage: %s " WB_SEED_HINT,
                  tile, i, got[i], exclusive, i,
                  got[i] == exclusive + x[i] && x[i] != 0
                      ? ": it holds x[0 .. i], the inclusive scan; the root becomes 0 first, "
                        "then each pair hands its prefix to the left half"
                      : "",
                  classic_mistakes[1], wb_seed());
        exclusive += x[i];
    }
}

Test(scan, stage1_sweeps, .description = "up_sweep leaves the reduction tree, down_sweep the "
                                         "exclusive scan, each alone")
{
    for (unsigned tile = 2 * SCAN_MIN_BLOCK; tile <= 2 * SCAN_MAX_BLOCK; tile *= 2) {
        size_t bytes = sizeof(unsigned) * tile;
        unsigned *x = malloc(bytes), *tree = malloc(bytes), *got = malloc(bytes);
        cr_assert(x && tree && got, "out of host memory");
        char label[64];
        snprintf(label, sizeof label, "sweeps, tile %u", tile);
        random_values(x, tile, label);
        for (unsigned i = 0; i < tile; i++) {
            tree[i] = 0;
            for (unsigned j = i + 1 - tree_run(i); j <= i; j++)
                tree[i] += x[j];
        }
        unsigned *d_in = wb_guarded_malloc(bytes), *d_out = wb_guarded_malloc(bytes);
        for (int sweep = SCAN_UP_SWEEP; sweep <= SCAN_DOWN_SWEEP; sweep *= 2) {
            CUDA_CHECK(cudaMemcpy(d_in, sweep == SCAN_UP_SWEEP ? x : tree, bytes,
                                  cudaMemcpyHostToDevice));
            wb_poison_ints((int *)d_out, tile);
            scan_sweeps_probe(d_in, d_out, tile, sweep);
            char fetched[96];
            snprintf(fetched, sizeof fetched, "%s, after %s", label,
                     sweep == SCAN_UP_SWEEP ? "up_sweep" : "down_sweep");
            wb_fetch(got, d_out, bytes, fetched);
            if (sweep == SCAN_UP_SWEEP)
                check_up_sweep(x, tree, got, tile);
            else
                check_down_sweep(x, got, tile);
            wb_guarded_check(d_out, fetched);
        }
        wb_guarded_free(d_in);
        wb_guarded_free(d_out);
        free(x);
        free(tree);
        free(got);
    }
}

/* Stage 2's kernel in blocks of SCAN_MAX_BLOCK, two per SM, over values
 * that are not 0: every SM's shared totals[] then holds 32 nonzero warp
 * totals, which the next launch of the same kernel finds there (its
 * shared memory is not cleared), so that a smaller block that reads the
 * totals of warps it does not have adds them in. (wb_dirty_shared_memory's
 * -1s may be cleared by the change of carve-out between two kernels.) */
static void leave_warp_totals_behind(void)
{
    int sms = wb_device_info().sm_count;
    size_t n = (size_t)2 * sms * SCAN_MAX_BLOCK;
    unsigned *d_in, *d_out, *d_totals;
    CUDA_CHECK(cudaMalloc((void **)&d_in, sizeof(unsigned) * n));
    CUDA_CHECK(cudaMalloc((void **)&d_out, sizeof(unsigned) * n));
    CUDA_CHECK(cudaMalloc((void **)&d_totals, sizeof(unsigned) * n));
    CUDA_CHECK(cudaMemset(d_in, 1, sizeof(unsigned) * n));
    scan_stage2_block_totals(d_in, d_out, (int)n, SCAN_MAX_BLOCK, d_totals);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_totals));
}

/* Stage 2's second output, *block_total: in every thread, the sum of its
 * block's tile (stage 3 publishes it as the tile's total). */
static void check_block_totals(const unsigned *in, size_t n, int block_size, const char *label,
                               const char *what, const unsigned *d_in, unsigned *d_out)
{
    size_t tiles = (n + block_size - 1) / block_size, threads = tiles * block_size;
    unsigned *before = tile_prefixes(in, n, block_size, tiles);
    unsigned *got = malloc(sizeof(unsigned) * threads);
    cr_assert(got, "out of host memory");
    unsigned *d_block_totals = wb_guarded_malloc(sizeof(unsigned) * threads);
    wb_poison_ints((int *)d_block_totals, threads);
    leave_warp_totals_behind();
    scan_stage2_block_totals(d_in, d_out, (int)n, block_size, d_block_totals);
    char fetched[200];
    snprintf(fetched, sizeof fetched, "%s, block totals", label);
    wb_fetch(got, d_block_totals, sizeof(unsigned) * threads, fetched);
    for (size_t i = 0; i < threads; i++) {
        size_t t = i / block_size;
        unsigned expected = before[t + 1] - before[t];
        cr_assert(got[i] == expected,
                  "%s: thread %zu of block %zu got *block_total = %u from warps_exclusive_scan, "
                  "expected %u, the sum of its block's %d elements%s (the scan itself is "
                  "right: stage 3 adds this total after the tile's, so only later stages would "
                  "show it). Classic mistakes: *block_total set in every thread to the last "
                  "lane's inclusive sum of the totals, 0 for lanes past the last warp (not "
                  "totals[lane] for every lane: words no warp wrote) " WB_SEED_HINT,
                  what, i % block_size, t, got[i], expected, block_size,
                  got[i] == POISON ? " (never written)" : "", wb_seed());
    }
    wb_guarded_check(d_block_totals, fetched);
    wb_guarded_free(d_block_totals);
    free(got);
    free(before);
}

/* Stage 3's tile sums after a scan: the first level scanned exclusively in
 * place (each tile's prefix), and the top level's single sum, the total. */
static void check_tile_sums(const unsigned *in, size_t n, int block_size, const char *label,
                            const char *what, const unsigned *d_scratch)
{
    size_t tile = (size_t)scan_tile_size(3, block_size), tiles = (n + tile - 1) / tile;
    size_t total_word = scan_stage3_total_word((int)n, block_size);
    unsigned *before = tile_prefixes(in, n, tile, tiles);
    unsigned *got = malloc(sizeof(unsigned) * (total_word + 1));
    cr_assert(got, "out of host memory");
    char fetched[200];
    snprintf(fetched, sizeof fetched, "%s, tile sums", label);
    wb_fetch(got, d_scratch, sizeof(unsigned) * (total_word + 1), fetched);
    unsigned total = before[tiles];
    cr_assert(got[total_word] == total,
              "%s: the top level's tile sum is %u, expected %u, the sum of all %zu elements%s. "
              "Classic mistakes at this stage: %s " WB_SEED_HINT,
              what, got[total_word], total, n,
              got[total_word] == POISON
                  ? " (never written: the top level's scan_tiles writes it, at the place "
                    "next_level_sums gives each level)"
                  : past_n_hint(got[total_word], total, n),
              classic_mistakes[3], wb_seed());
    for (size_t t = 0; tiles > 1 && t < tiles; t++)
        cr_assert(got[t] == before[t],
                  "%s: after the scan, the first level's sum of tile %zu is %u, expected %u: "
                  "the sum of the tiles before it (the tile sums are scanned exclusively, in "
                  "place, before the add-back). Classic mistakes at this stage: %s " WB_SEED_HINT,
                  what, t, got[t], before[t], classic_mistakes[3], wb_seed());
    free(got);
    free(before);
}

/* Stage 4's tile status after a scan: every tile ended with its inclusive
 * prefix published (else each later look-back walks past it, towards tile
 * 0), and every tile after the first published its aggregate (else the
 * look-back is chained: each tile waits for the one before it to finish). */
static void check_tile_status(const unsigned *in, size_t n, int block_size, const char *label,
                              const char *what, const unsigned *d_scratch)
{
    size_t tile = (size_t)scan_tile_size(4, block_size), tiles = (n + tile - 1) / tile;
    unsigned *before = tile_prefixes(in, n, tile, tiles);
    unsigned *status = malloc(sizeof(unsigned) * SCAN_STATUS_ARRAYS * tiles);
    cr_assert(status, "out of host memory");
    char fetched[200];
    snprintf(fetched, sizeof fetched, "%s, tile status", label);
    wb_fetch(status, d_scratch, sizeof(unsigned) * SCAN_STATUS_ARRAYS * tiles, fetched);
    const unsigned *flag = status + SCAN_STATUS_FLAGS * tiles;
    const unsigned *aggregate = status + SCAN_STATUS_AGGREGATES * tiles;
    const unsigned *prefix = status + SCAN_STATUS_PREFIXES * tiles;
    for (size_t t = 0; t < tiles; t++) {
        unsigned own = before[t + 1] - before[t];
        cr_assert(flag[t] == TILE_PREFIX,
                  "%s: after the scan, tile %zu's flag is %u, not TILE_PREFIX (%u): it never "
                  "published its inclusive prefix, so every later look-back walks past it "
                  "towards tile 0 (a look-back that is not decoupled: right sums, in time "
                  "that grows with the tile count). Classic mistakes at this stage: %s "
                  WB_SEED_HINT, what, t, flag[t], TILE_PREFIX, classic_mistakes[4], wb_seed());
        cr_assert(prefix[t] == before[t + 1],
                  "%s: tile %zu published the inclusive prefix %u, expected %u (the sum of the "
                  "tiles up to and including it)%s. Classic mistakes at this stage: %s "
                  WB_SEED_HINT, what, t, prefix[t], before[t + 1],
                  prefix[t] == POISON ? " (never written: the flag without the value)"
                  : prefix[t] == before[t] ? " (that is its exclusive prefix: its own aggregate "
                                             "left out)"
                  : t + 1 == tiles ? past_n_hint(prefix[t], before[t + 1], n) : "",
                  classic_mistakes[4], wb_seed());
        cr_assert(t == 0 || aggregate[t] == own,
                  "%s: tile %zu's aggregate is %u, expected %u (the sum of its own elements)%s. "
                  "Classic mistakes at this stage: %s " WB_SEED_HINT,
                  what, t, aggregate[t], own,
                  aggregate[t] == POISON
                      ? " (never published: without its aggregate a tile is invisible to the "
                        "look-backs until its own look-back ends, a chained scan, not a "
                        "decoupled one: publish the aggregate before looking back)"
                  : t + 1 == tiles ? past_n_hint(aggregate[t], own, n) : "",
                  classic_mistakes[4], wb_seed());
    }
    free(status);
    free(before);
}

/* Scans n random values with `stage` in blocks of block_size, `runs`
 * times, and checks every answer, the guard zones and the poison; then
 * what the stage writes besides the output (stage 2's block totals, stage
 * 3's tile sums, stage 4's tile status). */
static void check_scan(int stage, scan_kind kind, int n, int block_size, int runs)
{
    /* label names the observations (it must not depend on the code under
     * test); what, with the stage's name, goes into the messages. */
    char label[160], what[200], hint[600];
    snprintf(label, sizeof label, "stage %d, %s, n = %d, block size %d", stage, kind_name(kind),
             n, block_size);
    snprintf(what, sizeof what, "stage %d (%s), %s scan, n = %d, block size %d", stage,
             scan_stage_name(stage), kind_name(kind), n, block_size);
    size_t tile = (size_t)scan_tile_size(stage, block_size), count = (size_t)n;
    unsigned *in = malloc(sizeof(unsigned) * (count + 1));
    unsigned *expected = malloc(sizeof(unsigned) * (count + 1));
    unsigned *got = malloc(sizeof(unsigned) * (count + 1));
    unsigned *first = runs > 1 ? malloc(sizeof(unsigned) * (count + 1)) : NULL;
    cr_assert(in && expected && got && (runs == 1 || first), "out of host memory for n = %d", n);
    /* The whole 32-bit range: the sums wrap all the time. */
    random_values(in, count, label);
    cpu_scan(in, count, stage < 3 ? tile : 0, kind, expected);

    size_t scratch_bytes = scan_scratch_bytes(stage, n, block_size);
    unsigned *d_in = wb_guarded_malloc(sizeof(unsigned) * count);
    unsigned *d_out = wb_guarded_malloc(sizeof(unsigned) * count);
    unsigned *d_scratch = scratch_bytes ? wb_guarded_malloc(scratch_bytes) : NULL;
    CUDA_CHECK(cudaMemcpy(d_in, in, sizeof(unsigned) * count, cudaMemcpyHostToDevice));
    for (int run = 0; run < runs; run++) {
        char fetched[200];
        snprintf(fetched, sizeof fetched, "%s, run %d", label, run + 1);
        wb_poison_ints((int *)d_out, count);
        if (d_scratch)   /* what a look-back reads before it is written shows */
            wb_poison_ints((int *)d_scratch, scratch_bytes / sizeof(int));
        wb_dirty_shared_memory();   /* shared memory read before it is written holds -1s */
        scan(stage, kind, d_in, d_out, n, block_size, d_scratch);
        if (stage >= 4)   /* a look-back can wait forever: say for what */
            wb_wait_for_gpu(what, "a look-back lane spins on a tile whose flag never leaves "
                            "TILE_EMPTY: every tile publishes its aggregate (the first warp, "
                            "before its look-back) and then its inclusive prefix, tile 0 its "
                            "prefix at once; a lane waits only for tiles before its own, and "
                            "reads the flag fresh each time (an atomic load)");
        wb_fetch(run == 0 && first ? first : got, d_out, sizeof(unsigned) * count, fetched);
        if (run > 0 && first && memcmp(first, got, sizeof(unsigned) * count) != 0) {
            size_t k = 0;
            while (first[k] == got[k])
                k++;
            cr_assert_fail("%s: %d identical runs gave different results (element %zu: %u in "
                           "run 1, %u in run %d, right: %u): a race, where threads see each "
                           "other's work at the wrong time. Classic mistakes at this stage: %s "
                           WB_SEED_HINT, what, runs, k, first[k], got[k], run + 1, expected[k],
                           classic_mistakes[stage], wb_seed());
        }
    }
    if (runs > 1 && first)
        memcpy(got, first, sizeof(unsigned) * count);
    char report[1024];
    if (wb_compare_ints((const int *)got, (const int *)expected, count, report, sizeof report)) {
        diagnose(in, got, expected, count, stage, kind, tile, hint, sizeof hint);
        cr_assert_fail("%s: %s%s. Classic mistakes at this stage: %s " WB_SEED_HINT, what,
                       report, hint, classic_mistakes[stage], wb_seed());
    }
    char zone[200];
    snprintf(zone, sizeof zone, "%s (output)", label);
    wb_guarded_check(d_out, zone);
    if (d_scratch) {
        snprintf(zone, sizeof zone, "%s (scratch)", label);
        wb_guarded_check(d_scratch, zone);
    }
    if (stage == 2 && n > 0)
        check_block_totals(in, count, block_size, label, what, d_in, d_out);
    if (stage == 3 && n > 0)
        check_tile_sums(in, count, block_size, label, what, d_scratch);
    if (stage == 4 && n > 0)
        check_tile_status(in, count, block_size, label, what, d_scratch);
    if (d_scratch)
        wb_guarded_free(d_scratch);
    wb_guarded_free(d_in);
    wb_guarded_free(d_out);
    free(in);
    free(expected);
    free(got);
    free(first);
}

/* Under compute-sanitizer a scan costs a thousand times more and the tools
 * see a race in one run: one run each, and no input past 2^20 + 7. */
static int runs(int wanted) { return wb_under_sanitizer() ? 1 : wanted; }
static bool too_large_for_the_tools(int n) { return wb_under_sanitizer() && n > (1 << 20) + 7; }

static void check_sizes(int stage)
{
    /* Empty, one, around a warp, around a tile, a prime, 2^20 + 7 (4097
     * tiles of 256 for stages 0 and 2, 129 tiles of 8192 for stages 3 and
     * 4, with a partial last tile), and for the multi-tile stages 2^24 + 1
     * (2049 tiles: two levels of tile sums in stage 3, a long look-back
     * chain in stage 4, whose waits sleep from 500 tiles on). Every
     * remainder of n by 4 (1, 2 and 3 after the last whole vector of stages
     * 3 and 4's loads and stores), so that each element-by-element branch
     * of the last vector runs next to the guard zone. Both kinds. */
    int tile = scan_tile_size(stage, 256);
    const int sizes[] = {0,    1,     30,    31, 32, 33, tile - 1, tile, tile + 1, tile + 2,
                         65537, (1 << 20) + 7, stage >= 3 ? (1 << 24) + 1 : 2 * tile + 3};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int kind = SCAN_INCLUSIVE; kind <= SCAN_EXCLUSIVE; kind++)
            if (!too_large_for_the_tools(sizes[k]))
                check_scan(stage, (scan_kind)kind, sizes[k], 256, runs(RUNS));
}

static void check_block_sizes(int stage)
{
    /* Every block size, at a size that is no multiple of any tile and
     * gives thousands of blocks. Largest first: shared memory is not cleared
     * between launches, so a smaller block that reads words it never wrote
     * finds the larger one's values there, not zeros that hide the mistake.
     * With blocks of 32, stage 3's tiles of 1024 need two levels of sums. */
    int n = wb_under_sanitizer() ? (1 << 16) + 7 : (1 << 20) + 7;
    scan_kind kind = SCAN_EXCLUSIVE;   /* the kinds take turns */
    for (int block = SCAN_MAX_BLOCK; block >= SCAN_MIN_BLOCK; block /= 2) {
        check_scan(stage, kind, n, block, runs(RUNS));
        kind = kind == SCAN_EXCLUSIVE ? SCAN_INCLUSIVE : SCAN_EXCLUSIVE;
    }
}

/* Two tests per stage, named stageN_... so that the tools map them. */
Test(scan, stage0_sizes) { check_sizes(0); }
Test(scan, stage0_block_sizes) { check_block_sizes(0); }
Test(scan, stage1_sizes) { check_sizes(1); }
Test(scan, stage1_block_sizes) { check_block_sizes(1); }
Test(scan, stage2_sizes) { check_sizes(2); }
Test(scan, stage2_block_sizes) { check_block_sizes(2); }
Test(scan, stage3_sizes) { check_sizes(3); }
Test(scan, stage3_block_sizes) { check_block_sizes(3); }
Test(scan, stage4_sizes) { check_sizes(4); }
Test(scan, stage4_block_sizes) { check_block_sizes(4); }

/* 2^28 values, 1 GB: 32768 tiles of 8192, three levels of tile sums in
 * stage 3, and in stage 4 a look-back over 32768 tiles of which only about
 * 500 are resident at once. Once each (the CPU side takes seconds). */
Test(scan, stage3_2e28, .description = "2^28 values, exclusive, blocks of 256")
{
    if (!wb_under_sanitizer())
        check_scan(3, SCAN_EXCLUSIVE, 1 << 28, 256, 1);
}

Test(scan, stage4_2e28, .description = "2^28 values, inclusive, blocks of 256")
{
    if (!wb_under_sanitizer())
        check_scan(4, SCAN_INCLUSIVE, 1 << 28, 256, 1);
}

Test(scan, stage4_look_back_waits,
     .description = "tile 2 looks back while tiles 1 and 0 publish late")
{
    /* Tile 1 publishes its aggregate after 50 us, tile 0 its prefix after
     * 100 us; tile 2 starts looking at once, so it must wait for both
     * flags, and read each value only after its flag. */
    static const unsigned values[][2] = {{7, 11}, {0xfffffff0u, 0x20u}, {0x80000000u, 1}};
    unsigned *d_result = wb_guarded_malloc(sizeof(unsigned));
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
        unsigned v0 = values[k][0], v1 = values[k][1], expected = v0 + v1, got;
        char label[96];
        snprintf(label, sizeof label, "look-back from tile 2, case %zu", k + 1);
        wb_poison_ints((int *)d_result, 1);
        scan_look_back_probe(v0, v1, TILE_AGGREGATE, 50, d_result);
        wb_fetch(&got, d_result, sizeof got, label);
        const char *pattern =
            got == POISON ? "nothing was written to the result"
            : got == 0 ? "it returned 0: it did not wait while the flags were TILE_EMPTY"
            : got == v1 ? "it has tile 1's aggregate but not tile 0's prefix: it stopped "
                          "before tile 0 published"
            : got == v0 ? "it has tile 0's prefix but not tile 1's aggregate"
            : got - v0 == POISON || got - v1 == POISON || got == 2 * POISON ||
                      got == POISON + POISON + v0
                ? "it added the poison the status values were filled with: it read a tile's "
                  "value before its flag said the value was there (it read the value first, or "
                  "did not wait while a flag was TILE_EMPTY)"
                : "";
        cr_assert(got == expected,
                  "look_back from tile 2, with tile 1's aggregate %u published after 50 us and "
                  "tile 0's prefix %u after 100 us: got %u, expected %u; %s. Classic mistakes: "
                  "%s " WB_SEED_HINT,
                  v1, v0, got, expected, pattern, classic_mistakes[4], wb_seed());
    }
    wb_guarded_check(d_result, "look-back result");
    wb_guarded_free(d_result);
}

Test(scan, stage4_look_back_stops_at_prefix,
     .description = "tile 2 looks back at tile 1's inclusive prefix and stops there")
{
    /* Tile 1 publishes its inclusive prefix v1 after 50 us, tile 0 its
     * prefix v0 after 100 us: the walk ends at tile 1, with v1. */
    static const unsigned values[][2] = {{7, 11}, {0x80000000u, 0x7fffffffu}};
    unsigned *d_result = wb_guarded_malloc(sizeof(unsigned));
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
        unsigned v0 = values[k][0], v1 = values[k][1], got;
        char label[96];
        snprintf(label, sizeof label, "look-back from tile 2 to a prefix, case %zu", k + 1);
        wb_poison_ints((int *)d_result, 1);
        scan_look_back_probe(v0, v1, TILE_PREFIX, 50, d_result);
        wb_fetch(&got, d_result, sizeof got, label);
        cr_assert(got == v1,
                  "look_back from tile 2, with tile 1's inclusive prefix %u published after 50 "
                  "us and tile 0's prefix %u after 100 us: got %u, expected %u%s. Classic "
                  "mistakes: %s " WB_SEED_HINT,
                  v1, v0, got, v1,
                  got == v0 + v1 ? "; it walked past tile 1's TILE_PREFIX and added tile 0's "
                                   "too: the walk stops at the nearest inclusive prefix, which "
                                   "already holds everything before it"
                  : got == POISON || got - v0 == POISON
                      ? "; it read a value that tile 1 never published (its aggregate, where "
                        "its flag said TILE_PREFIX: the prefix is the value to read)"
                      : "",
                  classic_mistakes[4], wb_seed());
    }
    wb_guarded_check(d_result, "look-back result");
    wb_guarded_free(d_result);
}

Test(scan, stage4_aggregate_before_look_back,
     .description = "tile 1 publishes its aggregate before tile 0 has published anything")
{
    /* Tile 0 waits up to 200 ms for tile 1's flag before it publishes its
     * own prefix: a decoupled tile 1 publishes its aggregate at once (and
     * the wait ends there, in microseconds); one that waits for tile 0
     * first (a chained scan) is still TILE_EMPTY. Long, so that other
     * processes sharing the GPU in time slices (a grader's batch) cannot
     * delay tile 1 past it: only the chained scan pays the whole wait. Ten
     * times longer under the tools. */
    static const unsigned v0 = 0x12345678u, v1 = 0xfedcba98u;
    const int wait_us = wb_under_sanitizer() ? 2000000 : 200000;
    scan_publish_probe *d_probe = wb_guarded_malloc(sizeof(scan_publish_probe));
    scan_publish_probe probe;
    wb_poison_ints((int *)d_probe, sizeof probe / sizeof(int));
    scan_publish_order_probe(v0, v1, wait_us, d_probe);
    wb_fetch(&probe, d_probe, sizeof probe, "publish order, tile 1's status");
    cr_assert(probe.flag_seen == TILE_AGGREGATE && probe.value_seen == v1,
              "tile 1, with aggregate %u, while tile 0 had published nothing for %d us: its "
              "flag was %u (%s), expected TILE_AGGREGATE (%u) with the aggregate%s. Classic "
              "mistakes: %s " WB_SEED_HINT,
              v1, wait_us, probe.flag_seen,
              probe.flag_seen == TILE_EMPTY ? "TILE_EMPTY" : probe.flag_seen == TILE_PREFIX
                                                                 ? "TILE_PREFIX"
                                                                 : "no flag",
              TILE_AGGREGATE,
              probe.flag_seen == TILE_EMPTY
                  ? ": it publishes nothing until its look-back ends, so each tile waits for "
                    "the whole chain before it (a chained scan, not a decoupled look-back): "
                    "publish the aggregate first, then look back"
              : probe.flag_seen == TILE_AGGREGATE ? ", but its value is not the aggregate"
                                                  : "",
              classic_mistakes[4], wb_seed());
    cr_assert(probe.returned == v0,
              "tile 1's tile_exclusive_prefix returned %u, expected %u (tile 0's prefix: the "
              "exclusive prefix of tile 1)%s. Classic mistakes: %s " WB_SEED_HINT,
              probe.returned, v0,
              probe.returned == v0 + v1 ? " (that is the inclusive one)" : "",
              classic_mistakes[4], wb_seed());
    cr_assert(probe.final_flag == TILE_PREFIX && probe.final_prefix == v0 + v1,
              "tile 1's status after its look-back: flag %u, prefix %u; expected TILE_PREFIX "
              "(%u) and %u (its inclusive prefix)%s. Classic mistakes: %s " WB_SEED_HINT,
              probe.final_flag, probe.final_prefix, TILE_PREFIX, v0 + v1,
              probe.final_flag == TILE_AGGREGATE
                  ? ": it never published its inclusive prefix, so every later look-back walks "
                    "past it towards tile 0 (not decoupled)"
                  : "",
              classic_mistakes[4], wb_seed());
    wb_guarded_check(d_probe, "publish order probe");
    wb_guarded_free(d_probe);
}

/* ------------------------------------------------------------- stage 5 */

/* Compacts n flags, `permille` of them set (to random nonzero values),
 * with `version`, and checks the count, the list (in order for the scan,
 * as a set for the atomics), that nothing was written past the count, and
 * the guard zones. */
static int compare_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

/* What a wrong list of kept indices looks like, when it has a pattern a
 * classic mistake of scatter_kept leaves, else "". */
static const char *list_pattern(const unsigned *list, const unsigned *expected, size_t kept,
                                int block_size)
{
    size_t written = 0;
    while (written < kept && list[written] != POISON)
        written++;
    bool rest_unwritten = written < kept;
    for (size_t i = written; i < kept; i++)
        rest_unwritten = rest_unwritten && list[i] == POISON;
    bool first_tile_only =
        rest_unwritten && memcmp(list, expected, sizeof(unsigned) * written) == 0;
    if (rest_unwritten && written <= (size_t)scan_tile_size(SCAN_COMPACTION_STAGE, block_size))
        return first_tile_only ?
               " (only the first tile's kept indices were written, the rest never: every tile "
               "wrote at the start of the list, tile 0 last, or the other tiles wrote nothing; "
               "a tile's kept indices go at its own offset, tile_offset + position)" :
               " (the list was written only up to one tile's worth of indices, the rest never: "
               "every tile wrote at the start of the list; a tile's kept indices go at its own "
               "offset, tile_offset + position)";
    bool vector_starts = true, all_starts = true;
    for (size_t i = 0; i < kept; i++) {
        vector_starts = vector_starts && list[i] == (expected[i] & ~3u);
        all_starts = all_starts && expected[i] % 4 == 0;
    }
    if (vector_starts && !all_starts)
        return " (every index is the first of its vector of four: a kept .y, .z or .w wrote "
               "first_index where first_index + 1, + 2 or + 3 belongs)";
    return "";
}

static void check_compact(int version, int n, int permille, int block_size, int runs)
{
    char label[160], what[200];
    snprintf(label, sizeof label, "compact %d, n = %d, %d per mille kept, block size %d",
             version, n, permille, block_size);
    snprintf(what, sizeof what, "compaction (%s), n = %d, %d per mille kept, block size %d",
             compact_version_name(version), n, permille, block_size);
    size_t count = (size_t)n;
    unsigned *flags = malloc(sizeof(unsigned) * (count + 1));
    unsigned *expected = malloc(sizeof(unsigned) * (count + 1));
    unsigned *list = malloc(sizeof(unsigned) * (count + 1));
    cr_assert(flags && expected && list, "out of host memory for n = %d", n);
    wb_rng rng = wb_rng_for(label);
    unsigned kept = 0;
    for (size_t i = 0; i < count; i++) {
        bool keep = wb_rng_int(&rng, 0, 999) < permille;
        flags[i] = keep ? (unsigned)(wb_rng_u64(&rng) >> 40) + 1 : 0;   /* any nonzero value */
        if (keep)
            expected[kept++] = (unsigned)i;
    }
    size_t scratch_bytes = compact_scratch_bytes(n, block_size);
    unsigned *d_flags = wb_guarded_malloc(sizeof(unsigned) * count);
    unsigned *d_list = wb_guarded_malloc(sizeof(unsigned) * count);
    unsigned *d_count = wb_guarded_malloc(sizeof(unsigned));
    unsigned *d_scratch = scratch_bytes ? wb_guarded_malloc(scratch_bytes) : NULL;
    CUDA_CHECK(cudaMemcpy(d_flags, flags, sizeof(unsigned) * count, cudaMemcpyHostToDevice));
    for (int run = 0; run < runs; run++) {
        char fetched[200];
        unsigned got;
        wb_poison_ints((int *)d_list, count);
        wb_poison_ints((int *)d_count, 1);
        if (d_scratch)
            wb_poison_ints((int *)d_scratch, scratch_bytes / sizeof(int));
        compact(version, d_flags, n, d_list, d_count, block_size, d_scratch);
        snprintf(fetched, sizeof fetched, "%s, run %d, count", label, run + 1);
        wb_fetch(&got, d_count, sizeof got, fetched);
        snprintf(fetched, sizeof fetched, "%s, run %d, list", label, run + 1);
        wb_fetch(list, d_list, sizeof(unsigned) * count, fetched);
        cr_assert(got == kept,
                  "%s, run %d: the count is %u, expected %u%s. Classic mistakes: %s " WB_SEED_HINT,
                  what, run + 1, got, kept,
                  got == POISON ? " (never written)"
                  : got > kept && got - kept <= 3
                      ? " (more than there are: flags at n or after were counted, as a load "
                        "past n in the last partial tile's last vector does; or a tile's "
                        "offset that includes its own count)"
                      : "",
                  classic_mistakes[5], wb_seed());
        for (size_t i = kept; i < count; i++)
            cr_assert(list[i] == POISON,
                      "%s, run %d: list[%zu] = %u was written, past the %u kept indices: a "
                      "dropped element wrote its index, or a position one too far (the "
                      "inclusive scan where the exclusive one gives the slot). Classic "
                      "mistakes: %s " WB_SEED_HINT,
                      what, run + 1, i, list[i], kept, classic_mistakes[5], wb_seed());
        if (version != COMPACT_SCAN)   /* the atomics' order is the order they happened in */
            qsort(list, kept, sizeof(unsigned), compare_unsigned);
        char report[1024];
        if (wb_compare_ints((const int *)list, (const int *)expected, kept, report,
                            sizeof report)) {
            const char *pattern = list_pattern(list, expected, kept, block_size);
            qsort(list, kept, sizeof(unsigned), compare_unsigned);
            bool as_a_set = memcmp(list, expected, sizeof(unsigned) * kept) == 0;
            cr_assert_fail("%s, run %d: the list differs: %s%s. Classic mistakes: %s "
                           WB_SEED_HINT, what, run + 1, report,
                           as_a_set ? " (the right indices, in the wrong order: the scan gives "
                                      "each kept index its place, in order)"
                                    : pattern,
                           classic_mistakes[5], wb_seed());
        }
    }
    char zone[200];
    snprintf(zone, sizeof zone, "%s (list)", label);
    wb_guarded_check(d_list, zone);
    snprintf(zone, sizeof zone, "%s (count)", label);
    wb_guarded_check(d_count, zone);
    if (d_scratch) {
        snprintf(zone, sizeof zone, "%s (scratch)", label);
        wb_guarded_check(d_scratch, zone);
        wb_guarded_free(d_scratch);
    }
    wb_guarded_free(d_flags);
    wb_guarded_free(d_list);
    wb_guarded_free(d_count);
    free(flags);
    free(expected);
    free(list);
}

/* Densities of a frontier: none, a few (the usual SSSP round), half, all. */
static const int densities[] = {0, 10, 500, 1000};

Test(scan, stage5_frontier, .description = "flags compacted into an ordered list, any density")
{
    int tile = scan_tile_size(SCAN_COMPACTION_STAGE, 256);
    const int sizes[] = {0, 1, 33, tile - 1, tile + 1, 65537, (1 << 20) + 7, (1 << 24) + 1};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (size_t d = 0; d < sizeof densities / sizeof densities[0]; d++)
            if (!too_large_for_the_tools(sizes[k]))
                check_compact(COMPACT_SCAN, sizes[k], densities[d], 256, runs(RUNS));
}

Test(scan, stage5_block_sizes)
{
    for (int block = SCAN_MAX_BLOCK; block >= SCAN_MIN_BLOCK; block /= 2)
        check_compact(COMPACT_SCAN, (1 << 20) + 7, 500, block, runs(RUNS));
}

Test(scan, given_compaction_yardsticks,
     .description = "the atomic versions of lab 02 (given code) compact the same flags")
{
    for (int version = COMPACT_PER_ITEM; version < COMPACT_VERSIONS; version++)
        for (size_t d = 0; d < sizeof densities / sizeof densities[0]; d++)
            check_compact(version, (1 << 20) + 7, densities[d], 256, 1);
}

/* ---------------------------------------------------------- source rules */

/* A barrier left out rarely gives a wrong scan on one GPU, and an acquire
 * or release made relaxed practically never does on an H100 (see the
 * handout): these tests read kernels.cu (wb_test.h, "source rules") and
 * need no GPU. */
WB_SOURCE_SUITE(scan_source);

/* Where barriers must stand (wb_test.h): read after write everywhere; the
 * write after a read is not checked where a right version may write what
 * no one reads any more without a barrier (the other buffer of the
 * Hillis-Steele scan, or a warp scanning the totals in place). */
WB_SOURCE_RULES_TEST(scan_source, stage0_barriers,
    {"hillis_steele_scan", .barriers = 2, .shared = "buffers",
     .protects = WB_READ_AFTER_WRITE | WB_EACH_ITERATION, .thread_parameter = 2,
     .why = "a barrier after the first store (the first level reads other threads' words) and "
            "one per level, after the writes (outside any if)"})
WB_SOURCE_RULES_TEST(scan_source, stage1_barriers,
    {"up_sweep", .barriers = 1, .shared = "s", .protects = WB_EACH_ITERATION,
     .why = "a barrier before every level of the up-sweep: each level reads words that other "
            "warps wrote in the level before (the first, the loads)"},
    {"down_sweep", .barriers = 1, .shared = "s", .protects = WB_EACH_ITERATION,
     .why = "a barrier before every level of the down-sweep, for the same reason"})
WB_SOURCE_RULES_TEST(scan_source, stage2_barriers,
    {"warps_exclusive_scan", .barriers = 1, .shared = "totals",
     .protects = WB_READ_AFTER_WRITE, .thread_parameter = 1,
     .why = "a barrier between lane 0's writes of the warps' totals and every warp's reads"})
WB_SOURCE_RULES_TEST(scan_source, stage4_memory_order,
    {"publish", .orderings = 1, .fresh_accesses = 1,
     .why = "the flag is an atomic store with memory_order_release, after the value: without "
            "the release a reader on another SM may see the flag and still the old value"},
    {"look_back", .orderings = 1, .fresh_accesses = 1,
     .why = "the flag is an atomic load with memory_order_acquire, before the value: a relaxed "
            "(or plain) load may be answered from an old copy, or let the value's load go "
            "first"},
    {"publish", .fence_after = "value",
     .why = "the value first, then the flag's release store: a flag stored before the value "
            "lets a reader on another SM take the value before it is written"})

/* Stage 4's look-back is the warp's: 32 tiles a step, decided together.
 * One lane walking alone (or every lane walking the same tiles) gives the
 * right sums, two memory round trips a tile later; only the code shows it. */
WB_SOURCE_RULES_TEST(scan_source, stage4_warp_look_back,
    {"look_back", .uses = "__ballot_sync __any_sync __all_sync __match_any_sync warp_total "
                          "__shfl_sync __shfl_down_sync __shfl_up_sync __shfl_xor_sync "
                          "__reduce_add_sync .ballot .any .all .match_any .shfl .shfl_down "
                          ".shfl_up .shfl_xor",
     .why = "the warp walks back together, lane l taking the tile l + 1 places back in the "
            "window: a ballot finds the nearest tile with its prefix, and warp_total adds the "
            "values up to it. A walk tile by tile, by one lane or by every lane alike, gives "
            "the right sums at two memory round trips a tile"})

/* Stage 1's padding, on the CPU: every padded index inside the block's
 * shared memory, no two words on one index, and at most 2-way bank
 * conflicts left in any level of either sweep (without padding: up to
 * 32-way). */
WB_SOURCE_SUITE(scan_padding);

/* The worst bank conflict of one sweep level: threads t < active touch word
 * d * (2t + 1) - 1 (left) or d * (2t + 2) - 1 (right), padded; a warp's k
 * different words in one bank cost k passes. */
static int worst_conflict(const unsigned *index, unsigned tile, unsigned d, bool right)
{
    unsigned active = tile / (2 * d);
    int worst = 1;
    for (unsigned warp = 0; warp * 32 < active; warp++) {
        unsigned words[32];
        int used = 0;
        for (unsigned t = warp * 32; t < active && t < warp * 32 + 32; t++)
            words[used++] = index[right ? d * (2 * t + 2) - 1 : d * (2 * t + 1) - 1];
        for (int a = 0; a < used; a++) {
            int same_bank = 0;
            for (int b = 0; b < used; b++)
                same_bank += words[b] % 32 == words[a] % 32 && words[b] != words[a];
            worst = same_bank + 1 > worst ? same_bank + 1 : worst;
        }
    }
    return worst;
}

Test(scan_padding, stage1_padding)
{
    for (unsigned tile = 2 * SCAN_MIN_BLOCK; tile <= 2 * SCAN_MAX_BLOCK; tile *= 2) {
        unsigned words = scan_padded_words(tile);
        unsigned *index = malloc(sizeof(unsigned) * tile);
        char *taken = calloc(words, 1);
        cr_assert(index && taken, "out of host memory");
        for (unsigned i = 0; i < tile; i++)
            index[i] = scan_padded_index(i);
        char label[64];
        snprintf(label, sizeof label, "padded(0 .. %u)", tile - 1);
        wb_observe(label, index, sizeof(unsigned) * tile);
        for (unsigned i = 0; i < tile; i++) {
            cr_assert(index[i] < words,
                      "padded(%u) = %u, past the %u words of shared memory a tile of %u has "
                      "(padded(i) = i + i / 32: word %u is the last): padding off by one",
                      i, index[i], words, tile, words - 1);
            cr_assert(!taken[index[i]], "padded(%u) = %u, a word another index has too: two "
                      "elements would share one word", i, index[i]);
            taken[index[i]] = 1;
        }
        for (unsigned d = 1; d < tile; d *= 2)
            for (int right = 0; right <= 1; right++) {
                int worst = worst_conflict(index, tile, d, right);
                cr_assert(worst <= 2,
                          "tile %u, sweep level d = %u: the %s words of a warp hit one bank "
                          "%d times (a %d-way bank conflict; padding one word after every 32 "
                          "leaves at most 2-way)",
                          tile, d, right ? "right" : "left", worst, worst);
            }
        free(index);
        free(taken);
    }
}

/* ------------------------------------------- the given argument checks */

Test(scan, given_argument_checks,
     .description = "the given host code refuses stages, block sizes and inputs it cannot scan")
{
    unsigned *d_in, *d_out, *d_count;
    size_t scratch = scan_scratch_bytes(4, 1024, 256);
    void *d_scratch;
    CUDA_CHECK(cudaMalloc((void **)&d_in, 1024 * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc((void **)&d_out, 1024 * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc((void **)&d_count, sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&d_scratch, scratch));
    CUDA_CHECK(cudaMemset(d_in, 0, 1024 * sizeof(unsigned)));
    wb_expect_error("stage -1", "does not exist",
                    scan(-1, SCAN_INCLUSIVE, d_in, d_out, 64, 256, d_scratch));
    wb_expect_error("stage 5", "does not exist",
                    scan(SCAN_STAGES, SCAN_INCLUSIVE, d_in, d_out, 64, 256, d_scratch));
    wb_expect_error("block size 16", "power of two",
                    scan(0, SCAN_INCLUSIVE, d_in, d_out, 64, SCAN_MIN_BLOCK / 2, d_scratch));
    wb_expect_error("block size 2048", "power of two",
                    scan(0, SCAN_INCLUSIVE, d_in, d_out, 64, 2 * SCAN_MAX_BLOCK, d_scratch));
    wb_expect_error("block size 96", "power of two",
                    scan(2, SCAN_INCLUSIVE, d_in, d_out, 64, 96, d_scratch));
    wb_expect_error("kind 7", "neither", scan(0, (scan_kind)7, d_in, d_out, 64, 256, d_scratch));
    wb_expect_error("n = -1", "negative", scan(4, SCAN_INCLUSIVE, d_in, d_out, -1, 256, d_scratch));
    wb_expect_error("d_in NULL", "NULL", scan(0, SCAN_INCLUSIVE, NULL, d_out, 64, 256, NULL));
    wb_expect_error("d_out NULL", "NULL", scan(0, SCAN_INCLUSIVE, d_in, NULL, 64, 256, NULL));
    wb_expect_error("stage 4 without scratch", "scratch",
                    scan(4, SCAN_INCLUSIVE, d_in, d_out, 64, 256, NULL));
    wb_expect_error("stage 3, input not 16-byte aligned", "16-byte",
                    scan(3, SCAN_INCLUSIVE, d_in + 1, d_out, 60, 256, d_scratch));
    wb_expect_error("stage 4, output not 16-byte aligned", "16-byte",
                    scan(4, SCAN_INCLUSIVE, d_in, d_out + 2, 60, 256, d_scratch));
    wb_expect_error("compact version 3", "does not exist",
                    compact(COMPACT_VERSIONS, d_in, 64, d_out, d_count, 256, d_scratch));
    wb_expect_error("compact n = -5", "negative",
                    compact(COMPACT_SCAN, d_in, -5, d_out, d_count, 256, d_scratch));
    wb_expect_error("compact without a count", "NULL",
                    compact(COMPACT_SCAN, d_in, 64, d_out, NULL, 256, d_scratch));
    wb_expect_error("compact block size 48", "power of two",
                    compact(COMPACT_PER_WARP, d_in, 64, d_out, d_count, 48, d_scratch));
    wb_expect_error("compact scan without scratch", "scratch",
                    compact(COMPACT_SCAN, d_in, 64, d_out, d_count, 256, NULL));
    /* n = 0 is accepted by every stage and version; compact writes count 0. */
    for (int stage = 0; stage < SCAN_STAGES; stage++)
        scan(stage, SCAN_EXCLUSIVE, d_in, d_out, 0, 256, d_scratch);
    for (int version = 0; version < COMPACT_VERSIONS; version++) {
        char what[64];
        unsigned count;
        snprintf(what, sizeof what, "compact(%s, n = 0): the count",
                 compact_version_name(version));
        wb_poison_ints((int *)d_count, 1);
        compact(version, d_in, 0, d_out, d_count, 256, d_scratch);
        wb_fetch(&count, d_count, sizeof count, what);
        cr_assert(count == 0, "%s = %u, expected 0: the given code writes it (restore it)", what,
                  count);
    }
    /* Every stage has its name, and only those stages do. */
    for (int stage = -1; stage <= SCAN_STAGES + 1; stage++) {
        bool valid = stage >= 0 && stage <= SCAN_COMPACTION_STAGE;
        const char *name = scan_stage_name(stage);
        cr_assert(name && (strcmp(name, "no such stage") != 0) == valid,
                  "scan_stage_name(%d) = \"%s\": the given code names stages 0 to %d and says "
                  "\"no such stage\" for the others (restore it)",
                  stage, name ? name : "(null)", SCAN_COMPACTION_STAGE);
    }
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_count));
    CUDA_CHECK(cudaFree(d_scratch));
}

/* ----------------------------------------------------------------- timing */

/* The graded time (grading/rubric.toml) is stage 4's. Each of its timed
 * runs scans TIMED_CALLS arrays, each into its own output with its own
 * scratch, all filled fresh from the run's seed before it (untimed) and a
 * sample of every output checked after it: a scan cached from an earlier
 * run, or a call skipped because its output already looked right, fails
 * instead of looking fast. Stage 4 takes about 0.13 ms a scan of 2^26
 * values on an H200 (512 MB moved at about its copy bandwidth): 40 calls
 * make a run of about 5 ms, long enough that the grader's hand-shake around
 * each run (tens of us) costs under 1%. */
#define TIMED_N (1 << 26)
#define TIMED_CALLS 40
#define TIMED_RUNS 10
#define TIMED_BLOCK 256
#define GRADED_STAGE (SCAN_STAGES - 1)
/* Elements of each output checked after each timed run. */
#define CHECKED_PER_CALL 1024

typedef struct {
    int stage, calls;
    unsigned *in[TIMED_CALLS], *out[TIMED_CALLS];   /* device */
    void *scratch[TIMED_CALLS];
    uint64_t seed[TIMED_CALLS];   /* this run's inputs */
    int cpu_checked;              /* the call whose sample the CPU recomputes */
    size_t positions[CHECKED_PER_CALL];
    unsigned got[CHECKED_PER_CALL], own[CHECKED_PER_CALL], cpu[CHECKED_PER_CALL];
} timed_scans;

static void run_timed(void *context)
{
    timed_scans *t = context;
    for (int k = 0; k < t->calls; k++)
        scan(t->stage, SCAN_INCLUSIVE, t->in[k], t->out[k], TIMED_N, TIMED_BLOCK, t->scratch[k]);
}

/* One call of stage 0-3, for the table's other rows (not graded). */
static void run_first_call(void *context)
{
    timed_scans *t = context;
    scan(t->stage, SCAN_INCLUSIVE, t->in[0], t->out[0], TIMED_N, TIMED_BLOCK, t->scratch[0]);
}

/* Random values over the whole unsigned range (a scan of zeros would
 * write zeros), element i from the hash of (seed, i). */
static unsigned timed_value(uint64_t seed, size_t i)
{
    return (unsigned)wb_hash_int(seed, i, INT32_MIN, INT32_MAX);
}

static void fresh_inputs(void *context, int repetition, uint64_t seed)
{
    timed_scans *t = context;
    (void)repetition;
    for (int k = 0; k < t->calls; k++) {
        t->seed[k] = wb_hash_u64(seed, (uint64_t)k);
        wb_fill_ints_on_gpu((int *)t->in[k], TIMED_N, INT32_MIN, INT32_MAX, t->seed[k]);
        wb_poison_ints((int *)t->out[k], TIMED_N);
    }
    t->cpu_checked = (int)(wb_hash_u64(seed, TIMED_CALLS) % (uint64_t)t->calls);
}

/* The inclusive scan of one call's inputs at the (increasing) positions,
 * from their hash. */
static void cpu_scan_at(uint64_t seed, const size_t *positions, size_t count, unsigned *out)
{
    unsigned sum = 0;
    size_t i = 0;
    for (size_t j = 0; j < count; j++) {
        for (; i <= positions[j]; i++)
            sum += timed_value(seed, i);
        out[j] = sum;
    }
}

/* A sample of every output of the run against the judge's own (the
 * reference's scan of the same inputs; in the submission's own process,
 * its own values), and one call's, drawn from the run's seed, against the
 * CPU's: recomputing all 40 would cost seconds a run. */
static void check_timed_run(void *context, int repetition)
{
    timed_scans *t = context;
    for (int k = 0; k < t->calls; k++) {
        char what[96];
        wb_timed_call_label(what, sizeof what, repetition, TIMED_RUNS, k, t->calls, "out");
        size_t count = wb_sample_positions(t->positions, CHECKED_PER_CALL, TIMED_N,
                                           wb_hash_u64(t->seed[k], TIMED_N));
        wb_fetch_sample(t->got, t->own, t->out[k], sizeof(unsigned), t->positions, count, what);
        bool on_cpu = k == t->cpu_checked;
        const unsigned *expected = t->own;
        if (on_cpu) {
            cpu_scan_at(t->seed[k], t->positions, count, t->cpu);
            expected = t->cpu;
        }
        for (size_t j = 0; j < count; j++)
            cr_assert(t->got[j] == expected[j], "%s[%zu] = %u, expected %u (%s): %s " WB_SEED_HINT,
                      what, t->positions[j], t->got[j], expected[j],
                      on_cpu ? "the CPU's scan" : "the reference's scan of the same inputs",
                      wb_timed_call_mistake(t->got[j] == (unsigned)WB_POISON_INT),
                      wb_seed());
    }
}

Test(scan, timing_2e26, .description = "every stage at 2^26 values, blocks of 256")
{
    /* 256 MB in and 256 MB out, ten times the H100's 50 MB L2: the time is
     * DRAM's. Stage 4, the end of the ladder, is timed first: that time is
     * the lab's performance grade; the others complete the table, one call
     * at a time on the first array. Every stage reads 4 n bytes and writes
     * 4 n: the work the grader's floor is computed from (stages 0-2 scan
     * each tile on their own; stage 3 moves each byte twice more). bench.c
     * has the full tables, with CUB. */
    const double bytes = 2.0 * sizeof(unsigned) * (double)TIMED_N;
    timed_scans *t = calloc(1, sizeof *t);
    cr_assert(t, "out of host memory");
    size_t scratch = scan_scratch_bytes(3, TIMED_N, TIMED_BLOCK) >
                             scan_scratch_bytes(4, TIMED_N, TIMED_BLOCK)
                         ? scan_scratch_bytes(3, TIMED_N, TIMED_BLOCK)
                         : scan_scratch_bytes(4, TIMED_N, TIMED_BLOCK);
    /* On a GPU whose half holds fewer than 40 sets (512 MB each), a run
     * has fewer calls: shorter, so the grader's hand-shake weighs more in
     * its time. */
    t->calls = wb_buffer_sets(TIMED_CALLS, 2 * sizeof(unsigned) * (size_t)TIMED_N + scratch);
    for (int k = 0; k < t->calls; k++) {
        CUDA_CHECK(cudaMalloc((void **)&t->in[k], sizeof(unsigned) * (size_t)TIMED_N));
        CUDA_CHECK(cudaMalloc((void **)&t->out[k], sizeof(unsigned) * (size_t)TIMED_N));
        CUDA_CHECK(cudaMalloc(&t->scratch[k], scratch));
    }
    /* The warm-up's inputs; every timed run gets its own (fresh_inputs). */
    wb_rng warm_up = wb_rng_for("scan timing, warm-up");
    fresh_inputs(t, -1, wb_rng_u64(&warm_up));
    wb_timing times[SCAN_STAGES];
    for (int k = 0; k < SCAN_STAGES; k++) {
        char what[64];
        t->stage = (GRADED_STAGE + k) % SCAN_STAGES;   /* 4, 0, 1, 2, 3 */
        snprintf(what, sizeof what, "stage %d, 2^26 values, blocks of 256", t->stage);
        wb_timing timing = t->stage == GRADED_STAGE
            ? wb_time_gpu_reps(run_timed, t, 1, TIMED_RUNS, t->calls,
                               (wb_rep_checks){fresh_inputs, check_timed_run})
            : wb_time_gpu(run_first_call, t, 2, TIMED_RUNS);
        times[t->stage] = wb_observe_timing(what, timing, bytes, 0.0);
    }
    double copy = wb_copy_bandwidth_gbps();
    char title[256];
    snprintf(title, sizeof title, "scan, n = 2^26, inclusive, blocks of 256 (median of %d; "
             "stage %d: runs of %d calls, each on fresh inputs, time per call; GB/s count 4 n "
             "bytes read + 4 n written)", TIMED_RUNS, GRADED_STAGE, t->calls);
    wb_table *table = wb_table_new("scan", title, "stage|kernel|time (ms)|GB/s|% of copy");
    for (int stage = 0; stage < SCAN_STAGES; stage++) {
        double gbps = wb_gbps(bytes, times[stage].median_ms);
        wb_table_row(table, "%d|%s|%.3f|%.0f|%.1f", stage, scan_stage_name(stage),
                     times[stage].median_ms, gbps, 100.0 * gbps / copy);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    for (int k = 0; k < t->calls; k++) {
        CUDA_CHECK(cudaFree(t->in[k]));
        CUDA_CHECK(cudaFree(t->out[k]));
        CUDA_CHECK(cudaFree(t->scratch[k]));
    }
    free(t);
}

