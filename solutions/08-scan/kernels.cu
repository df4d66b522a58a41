/*
 * Lab 08, reference: prefix sum (scan), from one block to a single pass
 * over any n, and the worklist it builds:
 *
 *   0  Hillis-Steele in one block: log2(B) levels, double-buffered
 *   1  Blelloch in one block: up-sweep, down-sweep, padded against conflicts
 *   2  warp shuffles: warp scans, then a scan of the warps' totals
 *   3  any n: scan the tiles, scan their sums (recursively), add back
 *   4  one pass: decoupled look-back over per-tile status flags
 *   5  stream compaction: a frontier of flags, written in order, by stage 4
 *
 * The kernels and the host side are given in given.cuh; this file has the
 * functions they call, the skeleton's TODOs filled in.
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
 * writes the other; the barrier after the writes lets every thread see the
 * whole level before the next one reads it, and (since the next level
 * writes the buffer this one read) keeps a fast thread from overwriting a
 * word a slow one still has to read. */
__device__ unsigned hillis_steele_scan(unsigned *buffers, unsigned x)
{
    unsigned tid = threadIdx.x;
    unsigned *from = buffers, *to = buffers + blockDim.x;
    from[tid] = x;
    __syncthreads();
    for (unsigned offset = 1; offset < blockDim.x; offset *= 2) {
        to[tid] = tid >= offset ? from[tid] + from[tid - offset] : from[tid];
        __syncthreads();
        unsigned *swap = from;
        from = to;
        to = swap;
    }
    return from[tid];
}

/* Stage 1: one padding word after every 32. Without it, level d of the
 * sweeps has thread t touch word 2d * t + ...: every thread of a warp in the
 * same bank from d = 16 on. With it, word i moves i / 32 further, and
 * stride-32 neighbours fall into different banks. */
__host__ __device__ unsigned padded(unsigned i) { return i + (i >> 5); }

/* Stage 1, up-sweep: a reduction tree in place. At level d (1, 2, 4, ...)
 * thread t adds the word ending the left half of its pair of 2d words into
 * the word ending the right half; the root, the last word, ends up holding
 * the tile's total. Each level reads what the level before wrote, often in
 * another warp: a barrier before every level (the first also waits for the
 * loads). */
__device__ void up_sweep(unsigned *s, unsigned tile)
{
    unsigned tid = threadIdx.x;
    for (unsigned d = 1; d < tile; d *= 2) {
        __syncthreads();
        if (tid < tile / (2 * d)) {
            unsigned left = d * (2 * tid + 1) - 1, right = d * (2 * tid + 2) - 1;
            s[padded(right)] += s[padded(left)];
        }
    }
}

/* Stage 1, down-sweep: the root becomes 0 (nothing comes before the tile);
 * then, from the top level down, each pair passes its prefix to the left
 * half and the prefix plus the left half's sum to the right half. What is
 * left is the exclusive scan. */
__device__ void down_sweep(unsigned *s, unsigned tile)
{
    unsigned tid = threadIdx.x;
    if (tid == 0)
        s[padded(tile - 1)] = 0;
    for (unsigned d = tile / 2; d >= 1; d /= 2) {
        __syncthreads();
        if (tid < tile / (2 * d)) {
            unsigned left = d * (2 * tid + 1) - 1, right = d * (2 * tid + 2) - 1;
            unsigned left_sum = s[padded(left)];
            s[padded(left)] = s[padded(right)];
            s[padded(right)] += left_sum;
        }
    }
}

/* Stage 2: Hillis-Steele again, in registers: lane l adds the value of lane
 * l - offset (__shfl_up_sync) for offset 1, 2, 4, 8, 16. The shuffle reads
 * every lane's value before any lane changes it, so no buffer is needed. */
__device__ unsigned warp_inclusive_scan(unsigned x)
{
    unsigned lane = threadIdx.x % 32;
#pragma unroll
    for (unsigned offset = 1; offset < 32; offset *= 2) {
        unsigned left = __shfl_up_sync(FULL_WARP, x, offset);
        if (lane >= offset)
            x += left;
    }
    return x;
}

/* Stage 2: lane 0 of each warp leaves its warp's total in shared memory;
 * after the barrier every warp scans the (at most 32) totals itself, which
 * costs a few shuffles and saves a second barrier, and picks its own
 * exclusive prefix out of them. */
__device__ unsigned warps_exclusive_scan(unsigned warp_total, unsigned *totals,
                                         unsigned *block_total)
{
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    if (lane == 0)
        totals[warp] = warp_total;
    __syncthreads();
    unsigned total = lane < warps ? totals[lane] : 0;
    unsigned inclusive = warp_inclusive_scan(total);
    *block_total = __shfl_sync(FULL_WARP, inclusive, 31);
    return __shfl_sync(FULL_WARP, inclusive - total, warp);
}

/* Stage 3: a whole vector where all four elements are below n, one load;
 * the last partial tile's last vector element by element, zeros past n
 * (the identity of +, so the tile's total stays right). */
__device__ void load_tile(const unsigned *in, unsigned n, unsigned tile, uint4 v[SCAN_ROUNDS])
{
#pragma unroll
    for (int r = 0; r < SCAN_ROUNDS; r++) {
        unsigned i = item_index(tile, r);
        if (i + 4 <= n) {
            v[r] = *reinterpret_cast<const uint4 *>(in + i);
        } else {
            v[r].x = i < n ? in[i] : 0;
            v[r].y = i + 1 < n ? in[i + 1] : 0;
            v[r].z = i + 2 < n ? in[i + 2] : 0;
            v[r].w = 0;   // here i + 4 > n: the fourth is past n
        }
    }
}

// Stage 3: the same for the results, nothing written past n.
__device__ void store_tile(unsigned *out, unsigned n, unsigned tile, const uint4 v[SCAN_ROUNDS])
{
#pragma unroll
    for (int r = 0; r < SCAN_ROUNDS; r++) {
        unsigned i = item_index(tile, r);
        if (i + 4 <= n) {
            *reinterpret_cast<uint4 *>(out + i) = v[r];
        } else {
            if (i < n)
                out[i] = v[r].x;
            if (i + 1 < n)
                out[i + 1] = v[r].y;
            if (i + 2 < n)
                out[i + 2] = v[r].z;   // and the fourth is past n
        }
    }
}

/* Stage 3: scan the tiles (each tile's total into sums), scan the tile sums
 * exclusively (tile t needs the sum of the tiles before it, not including
 * its own), in place, by the same three passes one level down; then add
 * each tile's prefix. The recursion ends at a single tile: its sum needs
 * nobody's. 2^28 elements in tiles of 8192 (blocks of 256): 32768 sums,
 * then 4, then 1. */
static void scan_then_propagate(scan_kind kind, const unsigned *in, unsigned *out, unsigned n,
                                int block_size, unsigned *sums, cudaStream_t stream)
{
    unsigned tiles = tiles_of(n, SCAN_ITEMS_PER_THREAD * (unsigned)block_size);
    scan_tiles<<<tiles, block_size, 0, stream>>>(kind, in, out, n, sums);
    CUDA_CHECK_LAUNCH();
    if (tiles == 1)
        return;
    scan_then_propagate(SCAN_EXCLUSIVE, sums, sums, tiles, block_size,
                        next_level_sums(sums, tiles), stream);
    add_tile_prefix<<<tiles, block_size, 0, stream>>>(out, n, sums);
    CUDA_CHECK_LAUNCH();
}

/* Stage 4: the value first, in its own word, then the flag, as a release:
 * every write before the release (the value) is visible to a thread whose
 * acquire reads the flag. Device scope: the readers run on other SMs. A
 * plain or relaxed store of the flag would let the flag arrive first. */
__device__ void publish(tile_status status, unsigned tile, unsigned flag, unsigned value)
{
    if (flag == TILE_AGGREGATE)
        status.aggregate[tile] = value;
    else
        status.prefix[tile] = value;
    device_flag(status.flag[tile]).store(flag, cuda::memory_order_release);
}

/* Stage 4, by a whole warp: walk back over the tiles before this one, 32 at
 * a time, lane l taking the tile l + 1 places back in the window. Each lane
 * waits while its tile has published nothing: it has been claimed (tile
 * numbers are handed out in order), so its block is running and will
 * publish. The flag is read with acquire, and the value only after it: a
 * value read before its flag may be older than the flag. The nearest tile
 * with its inclusive prefix ends the walk: the lanes up to it add their
 * values (aggregates, and that prefix); without one, all 32 aggregates
 * count and the window moves 32 tiles back. Tile 0 always publishes its
 * prefix, so the walk ends there at the latest; lanes before tile 0 add 0.
 * One lane walking alone would pay two memory round trips per tile.
 * The warp sleeps before its first look (the tiles just before this one
 * were claimed a moment ago and are still scanning), and a lane that finds
 * nothing yet sleeps before it asks again: the lanes of hundreds of waiting
 * warps all ask for the same few newest flags, and each of those requests
 * queues in L2 beside the writes of the tiles that are publishing them.
 * The waits are CUB's (given.cuh, FIRST_WAIT_NS and WAIT_NS); in a small
 * grid look_back_sleep does not sleep. */
__device__ unsigned look_back(tile_status status, unsigned tile)
{
    unsigned lane = threadIdx.x % 32, prefix = 0;
    look_back_sleep(FIRST_WAIT_NS);
    for (long long window = (long long)tile - 1;; window -= 32) {
        long long t = window - lane;
        unsigned flag = TILE_PREFIX, value = 0;
        if (t >= 0) {
            while ((flag = device_flag(status.flag[t]).load(cuda::memory_order_acquire)) ==
                   TILE_EMPTY)
                look_back_sleep(WAIT_NS);
            value = flag == TILE_PREFIX ? status.prefix[t] : status.aggregate[t];
        }
        unsigned with_prefix = __ballot_sync(FULL_WARP, flag == TILE_PREFIX);
        unsigned nearest = with_prefix ? __ffs(with_prefix) - 1 : 31;
        prefix += warp_total(lane <= nearest ? value : 0);
        if (with_prefix)
            return prefix;
    }
}

/* Stage 4, the first warp of each tile: publish the aggregate at once, so
 * that later tiles can walk past this one without waiting for its
 * look-back (the "decoupled" of the name), then look back, then publish the
 * inclusive prefix, which ends the later tiles' walks here. Tile 0 has no
 * tile before it: its prefix is its aggregate. One lane publishes; every
 * lane returns the exclusive prefix. */
__device__ unsigned tile_exclusive_prefix(tile_status status, unsigned tile, unsigned aggregate)
{
    bool first_lane = threadIdx.x % 32 == 0;
    if (tile == 0) {
        if (first_lane)
            publish(status, 0, TILE_PREFIX, aggregate);
        return 0;
    }
    if (first_lane)
        publish(status, tile, TILE_AGGREGATE, aggregate);
    unsigned prefix = look_back(status, tile);
    if (first_lane)
        publish(status, tile, TILE_PREFIX, prefix + aggregate);
    return prefix;
}

/* Stage 5: each kept element's index goes to the list at the tile's offset
 * plus its exclusive position among the tile's kept elements. Only kept
 * ones write: a dropped element has the position of the next kept one. */
__device__ void scatter_kept(unsigned *list, unsigned first_index, uint4 keep, uint4 position,
                             unsigned tile_offset)
{
    if (keep.x)
        list[tile_offset + position.x] = first_index;
    if (keep.y)
        list[tile_offset + position.y] = first_index + 1;
    if (keep.z)
        list[tile_offset + position.z] = first_index + 2;
    if (keep.w)
        list[tile_offset + position.w] = first_index + 3;
}
