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

/* Stage 4's look-back on its own, for the test: tile 0 publishes its
 * inclusive prefix v0 after 2 * delay_us microseconds, tile 1 its aggregate
 * v1 after delay_us, and meanwhile tile 2 looks back at once, writing what
 * it finds (v0 + v1 when right) to *d_result. Every value of the tile status
 * is poisoned before: a look-back that reads a value before its flag reads
 * 0xA5A5A5A5. */
void scan_look_back_probe(unsigned v0, unsigned v1, int delay_us, unsigned *d_result);

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
