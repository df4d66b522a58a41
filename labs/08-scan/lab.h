/* Lab 08, prefix sum (scan): the entry points that the skeleton (labs/) and
 * the reference (solutions/) both define, and that test.c and bench.c call.
 *
 * Values are unsigned 32-bit ints and every sum is taken modulo 2^32: the
 * wrap-around is defined (unsigned arithmetic wraps by the C and C++
 * standards, where signed overflow is undefined), the tests feed values
 * from the whole 32-bit range so that nearly every prefix wraps, and the CPU
 * reference wraps the same way. Read the results as int if you like: the
 * bits are those of two's-complement int addition. */
#ifndef LAB_SCAN_H
#define LAB_SCAN_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stages 0 ... SCAN_STAGES - 1 of the scan, as in handouts/08-scan.md;
 * stage 5, compaction, has its own entry point (compact, below). */
#define SCAN_STAGES 5
#define SCAN_COMPACTION_STAGE 5

/* Block sizes every stage supports: the powers of two from 32 to 1024. */
#define SCAN_MIN_BLOCK 32
#define SCAN_MAX_BLOCK 1024

/* Elements per thread in stages 3-5: SCAN_ROUNDS 16-byte vectors (8: 32
 * elements, 128 bytes in flight per thread). */
#define SCAN_ROUNDS 8
#define SCAN_ITEMS_PER_THREAD (4 * SCAN_ROUNDS)

typedef enum {
    SCAN_INCLUSIVE,   /* out[i] = in[0] + ... + in[i] */
    SCAN_EXCLUSIVE    /* out[i] = in[0] + ... + in[i - 1]; out[0] = 0 */
} scan_kind;

/* The lecture's name for a stage ("Hillis-Steele, double-buffered", ...). */
const char *scan_stage_name(int stage);

/* Elements one block of `stage` scans (its tile): block_size for stages 0
 * and 2, 2 * block_size for stage 1, SCAN_ITEMS_PER_THREAD * block_size for
 * stages 3-5. 0 for a stage or block size that does not exist. */
int scan_tile_size(int stage, int block_size);

/* Bytes of device scratch memory scan needs (0 for stages 0-2). */
size_t scan_scratch_bytes(int stage, int n, int block_size);

/* out = the inclusive or exclusive scan of in[0 .. n), with stage `stage`'s
 * kernels in blocks of block_size threads.
 *   - Stages 0-2 are one-block scans: each block scans its own tile of
 *     scan_tile_size(stage, block_size) elements, on its own. For n up to
 *     one tile that is the scan of the whole input; for larger n, out holds
 *     the scan of each tile (what stage 3 then joins).
 *   - Stages 3 and 4 scan any n (up to INT_MAX).
 * d_in and d_out are device memory (16-byte aligned for stages 3 and 4:
 * cudaMalloc gives that) and must not overlap; d_scratch holds
 * scan_scratch_bytes(stage, n, block_size) bytes (NULL when that is 0).
 * Asynchronous on the default stream: returns after the launches, which it
 * has checked. Bad arguments are reported through wb_fail. */
void scan(int stage, scan_kind kind, const unsigned *d_in, unsigned *d_out, int n,
          int block_size, void *d_scratch);
void scan_async(int stage, scan_kind kind, const unsigned *d_in, unsigned *d_out, int n,
                int block_size, void *d_scratch, cudaStream_t stream);

/* Stage 1's padded shared-memory index of word i (the student's padded(),
 * run on the CPU), and the words of shared memory the stage-1 kernel has
 * for a tile of `tile` elements: exactly padded(tile - 1) + 1 of the
 * reference's padding, not one more, so that a padding that reaches past
 * it shows. For the test of the padding. */
unsigned scan_padded_index(unsigned i);
unsigned scan_padded_words(unsigned tile);

/* ---- what a stage writes besides its output, for the tests */

/* Stage 1's sweeps on their own: one block of tile / 2 threads loads the
 * tile's `tile` words from d_in (a power of two from 2 * SCAN_MIN_BLOCK to
 * 2 * SCAN_MAX_BLOCK) into padded shared memory, runs up_sweep when
 * SCAN_UP_SWEEP is set in `sweeps`, then down_sweep when SCAN_DOWN_SWEEP is,
 * and writes the words back in order to d_out. The up-sweep alone leaves
 * the reduction tree; the down-sweep alone, given that tree, the exclusive
 * scan. */
enum { SCAN_UP_SWEEP = 1, SCAN_DOWN_SWEEP = 2 };
void scan_sweeps_probe(const unsigned *d_in, unsigned *d_out, unsigned tile, int sweeps);

/* Stage 2's second output: runs stage 2 (inclusive) and writes the
 * *block_total that warps_exclusive_scan gave each thread to
 * d_block_totals[blockIdx.x * block_size + threadIdx.x], for every thread
 * of every block (tiles * block_size words; the sum of the block's tile
 * when right). */
void scan_stage2_block_totals(const unsigned *d_in, unsigned *d_out, int n, int block_size,
                              unsigned *d_block_totals);

/* Stage 3's scratch after a scan: words 0 .. tiles - 1 hold the first
 * level's tile sums, scanned in place (exclusively) when there is more than
 * one tile; word scan_stage3_total_word(n, block_size) holds the top level's
 * single tile sum, the sum of all n elements. */
size_t scan_stage3_total_word(int n, int block_size);

/* What a tile of stage 4 has published so far (its decoupled look-back):
 * nothing yet, its aggregate (the sum of its own elements), or its
 * inclusive prefix (the sum of its elements and of every tile before it). */
enum { TILE_EMPTY = 0, TILE_AGGREGATE = 1, TILE_PREFIX = 2 };

/* Stage 4's scratch (and stage 5's): the tile status, `tiles` words each
 * of the flags, the aggregates and the inclusive prefixes, in that order,
 * then the tile counter. */
enum { SCAN_STATUS_FLAGS, SCAN_STATUS_AGGREGATES, SCAN_STATUS_PREFIXES, SCAN_STATUS_ARRAYS };

/* Stage 4's look-back on its own, for the test: tile 0 publishes its
 * inclusive prefix v0 after 2 * delay_us microseconds, tile 1 publishes v1
 * with flag tile1_flag (TILE_AGGREGATE: its aggregate; TILE_PREFIX: its
 * inclusive prefix) after delay_us, and meanwhile tile 2 looks back at once,
 * writing what it finds (v0 + v1 for an aggregate, v1 for a prefix, when
 * right) to *d_result. Every value of the tile status is poisoned before: a
 * look-back that reads a value before its flag reads 0xA5A5A5A5. */
void scan_look_back_probe(unsigned v0, unsigned v1, unsigned tile1_flag, int delay_us,
                          unsigned *d_result);

/* Stage 4's order of publishing, for the test: tile 1 runs
 * tile_exclusive_prefix(aggregate v1) while tile 0 watches tile 1's flag
 * for up to delay_us microseconds before it publishes its prefix v0 (by
 * tile_exclusive_prefix too). A decoupled look-back has published tile 1's
 * aggregate by then; a chained one waits for tile 0 first. */
typedef struct {
    unsigned flag_seen, value_seen;   /* tile 1's flag (and its value) tile 0 saw before publishing */
    unsigned returned;                /* what tile 1's tile_exclusive_prefix returned (v0) */
    unsigned final_flag, final_prefix;   /* tile 1's status after the kernel (TILE_PREFIX, v0 + v1) */
} scan_publish_probe;
void scan_publish_order_probe(unsigned v0, unsigned v1, int delay_us,
                              scan_publish_probe *d_result);

/* ---- stage 5: stream compaction, the worklist of a data-driven graph
 * algorithm (an SSSP frontier): list gets the indices i with flags[i] != 0
 * and *count their number. COMPACT_SCAN writes them in increasing order
 * (stage 5: a single-pass scan of the flags, then a scatter); the two
 * yardsticks of lab 02's worklist (given code) reserve slots with atomics
 * and write them in whatever order the atomics happen. */
typedef enum {
    COMPACT_SCAN,       /* stage 5: scan of the flags, ordered, no atomic per item */
    COMPACT_PER_ITEM,   /* given: one atomicAdd per kept item */
    COMPACT_PER_WARP,   /* given: one atomicAdd per warp (ballot, popc) */
    COMPACT_VERSIONS
} compact_version;
const char *compact_version_name(int version);

/* Bytes of device scratch memory compact needs. */
size_t compact_scratch_bytes(int n, int block_size);

/* d_flags: n device ints (16-byte aligned for COMPACT_SCAN); d_list: room
 * for n indices; d_count: one device int. Asynchronous, like scan. */
void compact(int version, const unsigned *d_flags, int n, unsigned *d_list, unsigned *d_count,
             int block_size, void *d_scratch);
void compact_async(int version, const unsigned *d_flags, int n, unsigned *d_list,
                   unsigned *d_count, int block_size, void *d_scratch, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
