/*
 * Lab 08: prefix sum (scan), from one block to a single pass over any n,
 * and the worklist it builds. Read handouts/08-scan.md first.
 *
 *   0  Hillis-Steele in one block: log2(B) levels, double-buffered
 *   1  Blelloch in one block: up-sweep, down-sweep, padded against conflicts
 *   2  warp shuffles: warp scans, then a scan of the warps' totals
 *   3  any n: scan the tiles, scan their sums (recursively), add back
 *   4  one pass: decoupled look-back over per-tile status flags
 *   5  stream compaction: a frontier of flags, written in order, by stage 4
 *
 * Each stage is a small change from the one before; the TODOs are numbered
 * in the order of the stages. The rest is given in given.cuh, included at
 * the top: every kernel around your functions (the loads, the conversion
 * between inclusive and exclusive, the stores; stage 3-5's tile scan, built
 * from your stage-2 functions; stage 4's tile numbers) and the host code.
 * Check a stage with
 *     meson test -C build --suite scan-student --print-errorlogs
 * (tests stageN_...), time them with `build/scan-bench-student`, and ask for
 * a hint with `grading/workbook hint scan N`.
 * Values and sums are unsigned: they wrap modulo 2^32 by definition.
 */
#include "lab.h"
#include "workbook.h"

// Given, the same for every stage and both sides: the kernels around these
// functions, and the host side.
#include "given.cuh"

/* Stage 0: level k adds the value 2^k to the left. Reading and writing one
 * array in the same level races: thread t would read word t - offset while
 * thread t - offset overwrites it. So each level reads one buffer and
 * writes the other. */
__device__ unsigned hillis_steele_scan(unsigned *buffers, unsigned x)
{
    // TODO 1 (stage 0): buffers holds 2 * blockDim.x words: two buffers of
    // one word per thread. Store x in the first, wait for the block; then
    // for offset = 1, 2, 4, ... below blockDim.x, each thread writes into
    // the other buffer its word plus the word `offset` to its left (its
    // word alone when there is none), waits for the block, and the two
    // buffers swap roles. Return this thread's word of the last level: the
    // sum of the values of threads 0 .. threadIdx.x.
    return x;
}

/* Stage 1: one padding word after every 32, so that words 32 apart fall
 * into different banks. */
__host__ __device__ unsigned padded(unsigned i)
{
    // TODO 2 (stage 1): first return i (no padding) and write the sweeps;
    // then word i moves one word further for every 32 words before it.
    return i;
}

/* Stage 1, up-sweep: a reduction tree in place; the last word ends up
 * holding the tile's total. */
__device__ void up_sweep(unsigned *s, unsigned tile)
{
    // TODO 3 (stage 1): for d = 1, 2, 4, ... below tile: wait for the block,
    // then thread t < tile / (2d) adds word d * (2t + 1) - 1 (the end of the
    // left half of its pair) into word d * (2t + 2) - 1 (the end of the
    // right half). Every index goes through padded().
}

/* Stage 1, down-sweep: what is left in s is the exclusive scan. */
__device__ void down_sweep(unsigned *s, unsigned tile)
{
    // TODO 4 (stage 1): one thread sets the last word (the root) to 0.
    // Then for d = tile / 2 down to 1: wait for the block, and thread
    // t < tile / (2d), with the same two words as in the up-sweep, puts
    // the right word into the left one and adds the left one's old value
    // to the right one.
}

/* Stage 2: Hillis-Steele again, in registers. */
__device__ unsigned warp_inclusive_scan(unsigned x)
{
    // TODO 5 (stage 2): for offset = 1, 2, 4, 8, 16, add the value of the
    // lane `offset` below (__shfl_up_sync, every lane calling it) when
    // there is one. Return lane l's sum of lanes 0 .. l.
    return x;
}

/* Stage 2: the exclusive scan of the warps' totals over the block. */
__device__ unsigned warps_exclusive_scan(unsigned warp_total, unsigned *totals,
                                         unsigned *block_total)
{
    // TODO 6 (stage 2): every lane of warp w has warp_total. Lane 0 writes
    // it to totals[w]; after a barrier, scan the blockDim.x / 32 totals in
    // a warp (warp_inclusive_scan, 0 for lanes past the last warp). Set
    // *block_total to the sum of all of them and return the sum of the
    // totals of warps 0 .. w - 1 (__shfl_sync picks a lane's value).
    *block_total = 0;
    return 0;
}

/* Stage 3: a tile's SCAN_ROUNDS vectors in, the last partial tile included. */
__device__ void load_tile(const unsigned *in, unsigned n, unsigned tile, uint4 v[SCAN_ROUNDS])
{
    // TODO 7 (stage 3): for each round r, the four elements that start at
    // i = item_index(tile, r): one 16-byte load (reinterpret_cast<const
    // uint4 *>) when all four are below n, else element by element, with 0
    // for those at n and after.
    for (int r = 0; r < SCAN_ROUNDS; r++)
        v[r] = make_uint4(0, 0, 0, 0);
}

/* Stage 3: the same for the results. */
__device__ void store_tile(unsigned *out, unsigned n, unsigned tile, const uint4 v[SCAN_ROUNDS])
{
    // TODO 8 (stage 3): store_tile is load_tile backwards: nothing may be
    // written at n or after.
}

/* Stage 3: scan the tiles, scan their sums, add back. */
static void scan_then_propagate(scan_kind kind, const unsigned *in, unsigned *out, unsigned n,
                                int block_size, unsigned *sums, cudaStream_t stream)
{
    // TODO 9 (stage 3): tiles of SCAN_ITEMS_PER_THREAD * block_size
    // elements (tiles_of). Launch scan_tiles, one block per tile, on
    // `stream` (it writes each tile's total to sums[tile]); check the
    // launch. When there is more than one tile: scan the sums in place by
    // the same function (which scan do the tiles need: the sum of the tiles
    // before them, or up to and including them?), with the next level's
    // sums at next_level_sums(sums, tiles); then launch add_tile_prefix.
    (void)kind, (void)in, (void)out, (void)n, (void)block_size, (void)sums, (void)stream;
}

/* Stage 4: make `value` visible as tile `tile`'s aggregate or inclusive
 * prefix (flag TILE_AGGREGATE or TILE_PREFIX). */
__device__ void publish(tile_status status, unsigned tile, unsigned flag, unsigned value)
{
    // TODO 10 (stage 4): write the value into its own word
    // (status.aggregate or status.prefix), then the flag, so that a thread
    // on another SM that reads the flag is sure to read the value too:
    // device_flag(status.flag[tile]) is a cuda::atomic_ref; which memory
    // order does its store need?
}

/* Stage 4, by a whole warp: the sum of every tile before `tile`, in every
 * lane. */
__device__ unsigned look_back(tile_status status, unsigned tile)
{
    // TODO 11 (stage 4): walk back over the tiles before `tile`, 32 at a
    // time: in each window, lane l takes the tile l + 1 places back. First
    // look_back_sleep(FIRST_WAIT_NS): the tiles just before this one are
    // still scanning. Each lane waits while its tile's flag is TILE_EMPTY
    // (which memory order for that load?), sleeping look_back_sleep(WAIT_NS)
    // between two tries so as not to flood the memory with requests for the
    // same flags, then reads the value the flag names (read a value only
    // after its flag). The nearest tile with TILE_PREFIX ends the walk
    // (__ballot_sync, __ffs): add the values of the lanes up to it
    // (warp_total) and return. Without one, add all 32 aggregates and move
    // the window 32 tiles back. Lanes before tile 0 add nothing.
    return 0;
}

/* Stage 4, the first warp of each tile: returns the exclusive prefix, in
 * every lane. */
__device__ unsigned tile_exclusive_prefix(tile_status status, unsigned tile, unsigned aggregate)
{
    // TODO 12 (stage 4): tile 0 publishes its aggregate as its prefix and
    // returns 0. Every other tile publishes its aggregate at once, looks
    // back (all 32 lanes), publishes its inclusive prefix and returns the
    // exclusive one. One lane publishes.
    return 0;
}

/* Stage 5: a vector's kept indices into the list. */
__device__ void scatter_kept(unsigned *list, unsigned first_index, uint4 keep, uint4 position,
                             unsigned tile_offset)
{
    // TODO 13 (stage 5): the four elements have the indices first_index,
    // + 1, + 2, + 3; keep says which of them (1) go into the list, position
    // where among the tile's kept ones (the exclusive scan of keep), and
    // tile_offset how many the tiles before kept. Write only the kept ones.
}
