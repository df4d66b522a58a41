/*
 * Lab 08: the code given for every stage (the skeleton and the reference
 * both include it at their top): every kernel around the functions of
 * kernels.cu (the loads, the conversion between inclusive and exclusive,
 * the stores), the tile scan of stages 3-5 built from stage 2's warp scans,
 * the tile status of stages 4 and 5 and the claim of a tile number, the
 * two atomic yardsticks of stage 5, and the host side: stage names, tile and
 * scratch sizes, argument checks, launches. The kernels call the functions
 * of kernels.cu, which come after this file, so it declares each of them,
 * "written in kernels.cu".
 */
#include <cuda/atomic>
#include <stdint.h>

#define FULL_WARP 0xffffffffu

/* ------------------------------------------------------------ stage 0 */

// Written in kernels.cu: the inclusive scan of one value per thread.
__device__ unsigned hillis_steele_scan(unsigned *buffers, unsigned x);

/* Inclusive to exclusive: the sum before element i is the sum up to i less
 * element i. Exact even when the sums wrap: unsigned + and - are arithmetic
 * modulo 2^32, where every value has an inverse. (For an operator without
 * inverses, max for instance, an exclusive scan shifts the inclusive one by
 * one element instead.) */
__device__ __forceinline__ unsigned as_kind(scan_kind kind, unsigned inclusive, unsigned x)
{
    return kind == SCAN_INCLUSIVE ? inclusive : inclusive - x;
}

// One element per thread, one tile of blockDim.x elements per block.
__global__ void scan_stage0(scan_kind kind, const unsigned *in, unsigned *out, unsigned n)
{
    extern __shared__ unsigned buffers[];   // 2 * blockDim.x words
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = i < n ? in[i] : 0;
    unsigned inclusive = hillis_steele_scan(buffers, x);
    if (i < n)
        out[i] = as_kind(kind, inclusive, x);
}

/* ------------------------------------------------------------ stage 1 */

// Written in kernels.cu: the padded index, the two sweeps.
__host__ __device__ unsigned padded(unsigned i);
__device__ void up_sweep(unsigned *s, unsigned tile);
__device__ void down_sweep(unsigned *s, unsigned tile);

/* The shared words of a tile of `tile` elements with the reference's
 * padding, one word after every 32: the last index is tile - 1 + (tile - 1)
 * / 32. Exactly that, so that a padding that reaches one word further
 * writes past the block's shared memory (and the padding test says so). */
static unsigned padded_words(unsigned tile) { return tile + (tile - 1) / 32; }

// Two elements per thread, blockDim.x apart: a tile of 2 * blockDim.x.
__global__ void scan_stage1(scan_kind kind, const unsigned *in, unsigned *out, unsigned n)
{
    extern __shared__ unsigned s[];   // padded_words(2 * blockDim.x) words
    unsigned tile = 2 * blockDim.x, first = blockIdx.x * tile;
    unsigned a = threadIdx.x, b = threadIdx.x + blockDim.x;
    unsigned xa = first + a < n ? in[first + a] : 0;
    unsigned xb = first + b < n ? in[first + b] : 0;
    s[padded(a)] = xa;
    s[padded(b)] = xb;
    up_sweep(s, tile);      // starts with a barrier: the loads above are other threads' input
    down_sweep(s, tile);    // leaves the exclusive scan in s
    __syncthreads();
    // Exclusive to inclusive: add the element itself.
    if (first + a < n)
        out[first + a] = kind == SCAN_EXCLUSIVE ? s[padded(a)] : s[padded(a)] + xa;
    if (first + b < n)
        out[first + b] = kind == SCAN_EXCLUSIVE ? s[padded(b)] : s[padded(b)] + xb;
}

/* ------------------------------------------------------------ stage 2 */

// Written in kernels.cu: the inclusive scan over a warp's 32 lanes, and the
// exclusive scan of the warps' totals over the block.
__device__ unsigned warp_inclusive_scan(unsigned x);
__device__ unsigned warps_exclusive_scan(unsigned warp_total, unsigned *totals,
                                         unsigned *block_total);

// One element per thread: warp scans, then the scan of the warps' totals.
// block_totals (NULL but in the test's scan_stage2_block_totals): where
// each thread leaves the block total it got, the second output.
__global__ void scan_stage2(scan_kind kind, const unsigned *in, unsigned *out, unsigned n,
                            unsigned *block_totals)
{
    __shared__ unsigned totals[SCAN_MAX_BLOCK / 32];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = i < n ? in[i] : 0;
    unsigned inclusive = warp_inclusive_scan(x);
    unsigned warp_total = __shfl_sync(FULL_WARP, inclusive, 31), block_total;
    unsigned before = warps_exclusive_scan(warp_total, totals, &block_total);
    if (i < n)
        out[i] = as_kind(kind, before + inclusive, x);
    if (block_totals)
        block_totals[i] = block_total;
}

/* -------------------------------------------- stages 3-5: tiles of vectors */

/* A tile is SCAN_ITEMS_PER_THREAD * blockDim.x consecutive elements. Warp w
 * of the block owns the w-th stretch of 32 * SCAN_ITEMS_PER_THREAD of them,
 * and reads it in SCAN_ROUNDS rounds: in round r, lane l holds the 16-byte
 * vector of the four elements that start at item_index(tile, r). Each
 * round's 32 vectors are 512 consecutive bytes, one coalesced access, and
 * each thread has SCAN_ROUNDS (8) independent loads in flight, 128 bytes.
 * Eight rather than four: a tile of twice the values has half as many
 * tiles to look back over, publish and wait for per byte, and more bytes
 * in flight per thread (stage 4 on an H100 at 2^28, blocks of 256: 83% of
 * CUB's bandwidth with eight, 71% with four).
 *
 * Eight vectors take 32 registers a thread; the tile kernels of stages 3-5
 * come to 64 in all, and say so: __launch_bounds__(SCAN_MAX_BLOCK) holds
 * the compiler to the 64 registers a thread that lets a block of 1024
 * threads launch (64 x 1024 = the SM's 65,536), without spilling any on
 * sm_90 (nvcc -Xptxas -v; for sm_86, sm_89 and sm_120 one kernel spills 8
 * bytes). Blocks of 256 then fit 4 to an SM. */
__device__ __forceinline__ unsigned item_index(unsigned tile, unsigned round)
{
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    return (tile * blockDim.x + warp * 32) * SCAN_ITEMS_PER_THREAD + (round * 32 + lane) * 4;
}

// Written in kernels.cu: a tile's vectors in and out, the last partial tile
// included.
__device__ void load_tile(const unsigned *in, unsigned n, unsigned tile,
                          uint4 v[SCAN_ROUNDS]);
__device__ void store_tile(unsigned *out, unsigned n, unsigned tile,
                           const uint4 v[SCAN_ROUNDS]);

__device__ __forceinline__ unsigned add4(uint4 v) { return (v.x + v.y) + (v.z + v.w); }

/* The exclusive scan of a tile, in registers: start[r] gets the sum of the
 * tile's elements before the vector x[r]. Returns the tile's total (its
 * aggregate), in every thread. totals: 32 words of shared memory for stage
 * 2's warps_exclusive_scan, used once.
 *
 * Each lane adds up its vector of each round; a warp scan per round gives
 * every lane the sum of the lanes before it in that round; the rounds
 * follow each other, so round r also starts after the totals of rounds
 * 0 .. r - 1. Then stage 2's scan of the warps' totals puts each warp after
 * the warps before it. (Only these SCAN_ROUNDS starts stay in registers,
 * not a scan of every element: fewer registers, more blocks per SM.) */
__device__ unsigned tile_scan(const uint4 x[SCAN_ROUNDS], unsigned start[SCAN_ROUNDS],
                              unsigned *totals)
{
    unsigned warp_so_far = 0;
#pragma unroll
    for (int r = 0; r < SCAN_ROUNDS; r++) {
        unsigned mine = add4(x[r]);
        unsigned inclusive = warp_inclusive_scan(mine);
        start[r] = warp_so_far + inclusive - mine;
        warp_so_far += __shfl_sync(FULL_WARP, inclusive, 31);
    }
    unsigned tile_total;
    unsigned warp_before = warps_exclusive_scan(warp_so_far, totals, &tile_total);
#pragma unroll
    for (int r = 0; r < SCAN_ROUNDS; r++)
        start[r] += warp_before;
    return tile_total;
}

/* The exclusive scan of one vector, starting from `start`. */
__device__ __forceinline__ uint4 vector_exclusive(uint4 x, unsigned start)
{
    return make_uint4(start, start + x.x, start + x.x + x.y, start + x.x + x.y + x.z);
}

/* The results of a tile, written over x: the exclusive scan plus the
 * tile's prefix (what the tiles before it add up to), plus the element
 * itself for an inclusive scan. The element is added through a mask (all
 * ones or zero): with a factor of 1 or 0, or with a branch on the kind,
 * nvcc made a version of the finish and stores for each kind and spilled at
 * 64 registers. */
__device__ __forceinline__ void finish_tile(scan_kind kind, uint4 x[SCAN_ROUNDS],
                                            const unsigned start[SCAN_ROUNDS], unsigned prefix)
{
    unsigned self = kind == SCAN_INCLUSIVE ? ~0u : 0u;   // x or nothing
#pragma unroll
    for (int r = 0; r < SCAN_ROUNDS; r++) {
        uint4 e = vector_exclusive(x[r], prefix + start[r]);
        x[r] = make_uint4(e.x + (self & x[r].x), e.y + (self & x[r].y), e.z + (self & x[r].z),
                          e.w + (self & x[r].w));
    }
}

/* ------------------------------------------------------------ stage 3 */

// Stage 3, pass 1: every tile scanned on its own; its total goes to
// tile_sums[tile].
// The levels below the first scan their tile sums in place (in == out):
// each thread reads its own vectors before it writes them back, and no
// thread touches another's.
__global__ void __launch_bounds__(SCAN_MAX_BLOCK)
    scan_tiles(scan_kind kind, const unsigned *in, unsigned *out, unsigned n, unsigned *tile_sums)
{
    __shared__ unsigned totals[SCAN_MAX_BLOCK / 32];
    uint4 x[SCAN_ROUNDS];
    unsigned start[SCAN_ROUNDS];
    load_tile(in, n, blockIdx.x, x);
    unsigned total = tile_scan(x, start, totals);
    if (threadIdx.x == 0)
        tile_sums[blockIdx.x] = total;
    finish_tile(kind, x, start, 0);
    store_tile(out, n, blockIdx.x, x);
}

// Stage 3, pass 3: tile t adds prefixes[t], the sum of the tiles before it,
// to each of its elements. (Tile 0 adds 0: one block of the grid that could
// be left out, at the price of an offset in every index.)
__global__ void __launch_bounds__(SCAN_MAX_BLOCK)
    add_tile_prefix(unsigned *out, unsigned n, const unsigned *prefixes)
{
    uint4 v[SCAN_ROUNDS];
    unsigned prefix = prefixes[blockIdx.x];
    load_tile(out, n, blockIdx.x, v);
#pragma unroll
    for (int r = 0; r < SCAN_ROUNDS; r++) {
        v[r].x += prefix;
        v[r].y += prefix;
        v[r].z += prefix;
        v[r].w += prefix;
    }
    store_tile(out, n, blockIdx.x, v);
}

static unsigned tiles_of(unsigned n, unsigned tile) { return (n + tile - 1) / tile; }

/* Where the next level's tile sums go in stage 3's scratch, after this
 * level's `tiles` sums: rounded up to whole 16-byte vectors, which the
 * next level's loads need. */
static inline unsigned level_words(unsigned tiles) { return (tiles + 3) / 4 * 4; }
static inline unsigned *next_level_sums(unsigned *sums, unsigned tiles)
{
    return sums + level_words(tiles);
}

// Written in kernels.cu: the three passes, recursive over the tile sums.
// sums: room for the tile sums of this level and of every level below.
static void scan_then_propagate(scan_kind kind, const unsigned *in, unsigned *out, unsigned n,
                                int block_size, unsigned *sums, cudaStream_t stream);

/* ------------------------------------------------- stages 4 and 5: status */

/* Per tile (lab.h: the flags TILE_EMPTY, TILE_AGGREGATE, TILE_PREFIX, and
 * their layout in the scratch): the flag, and the two values, each in a word of its own that is
 * written once: a reader who saw the flag TILE_AGGREGATE may read the
 * aggregate while the owner is already writing the prefix. */
typedef struct {
    unsigned *flag, *aggregate, *prefix;
} tile_status;

using device_flag = cuda::atomic_ref<unsigned, cuda::thread_scope_device>;

/* How long a look-back sleeps (__nanosleep): once before its first look
 * (FIRST_WAIT_NS), and each lane between two reads of a flag that says
 * TILE_EMPTY (WAIT_NS). These are CUB's waits for sums of 4-byte values on
 * sm_90 (cub/device/dispatch/tuning/tuning_scan.cuh, sm90_tuning:
 * fixed_delay_constructor_t<648, 1245>). Sleeping that long is faster than
 * asking often: the look-backs of hundreds of resident blocks poll the
 * same few newest flags, in the same L2 slices where the tiles they wait
 * for are publishing, and every early poll that finds TILE_EMPTY is one
 * more request those publishing writes (and their release fences) queue
 * behind. The first wait covers the time the tiles just before this one,
 * claimed a moment earlier, still need to scan and publish; a look before
 * it would mostly find them empty. Measured on an H100 at 2^28 (tiles of
 * 256 x 16): 71% of CUB's bandwidth with 100 ns between looks and no first
 * wait, 85% with these two. */
#define FIRST_WAIT_NS 1245
#define WAIT_NS 648

/* As CUB, only in a grid of at least WAIT_MIN_BLOCKS blocks: in a smaller
 * one few look-backs poll at once, there is little traffic to spare, and
 * the scan's time is mostly the latency of the chain of tiles, which a
 * sleep would only add to. (CUB puts a __threadfence_block() in its place,
 * so that the compiler cannot hoist the load out of the loop; an acquire
 * load is never hoisted.) */
#define WAIT_MIN_BLOCKS 500
__device__ __forceinline__ void look_back_sleep(unsigned ns)
{
    if (gridDim.x >= WAIT_MIN_BLOCKS)
        __nanosleep(ns);
}

// Written in kernels.cu: publishing a value (one thread), the look-back and
// the tile's exclusive prefix (a whole warp, every lane getting the result).
__device__ void publish(tile_status status, unsigned tile, unsigned flag, unsigned value);
__device__ unsigned look_back(tile_status status, unsigned tile);
__device__ unsigned tile_exclusive_prefix(tile_status status, unsigned tile, unsigned aggregate);

/* The sum of a value over the 32 lanes of a warp, in every lane. */
__device__ __forceinline__ unsigned warp_total(unsigned value)
{
    return __shfl_sync(FULL_WARP, warp_inclusive_scan(value), 31);
}

/* A tile number in the order in which the blocks start, not blockIdx.x.
 * A tile waits (in the look-back) for the tiles before it. The GPU runs the
 * blocks of a grid in no promised order and only as many at once as fit:
 * if tiles were blockIdx.x, block 5000 could be resident, spinning on tile
 * 4999, while block 4999 waits for a free SM that the spinning blocks never
 * give back: a deadlock. Numbered by an atomic counter, a block only ever
 * waits for tiles that blocks already running have claimed, and those can
 * always finish. Thread 0 claims; the barrier hands the number to all. */
__device__ __forceinline__ unsigned claim_tile(unsigned *tile_counter, unsigned *shared_tile)
{
    if (threadIdx.x == 0)
        *shared_tile = atomicAdd(tile_counter, 1u);
    __syncthreads();
    return *shared_tile;
}

/* ------------------------------------------------------------ stage 4 */

// Stage 4: one pass. Load and scan the tile, learn what the tiles before it
// add up to (the first warp, through the tile status), add that, store.
__global__ void __launch_bounds__(SCAN_MAX_BLOCK)
    scan_single_pass(scan_kind kind, const unsigned *__restrict__ in, unsigned *__restrict__ out,
                     unsigned n, tile_status status, unsigned *tile_counter)
{
    __shared__ unsigned totals[SCAN_MAX_BLOCK / 32];
    __shared__ unsigned shared_tile, shared_prefix;
    unsigned tile = claim_tile(tile_counter, &shared_tile);
    uint4 x[SCAN_ROUNDS];
    unsigned start[SCAN_ROUNDS];
    load_tile(in, n, tile, x);
    unsigned aggregate = tile_scan(x, start, totals);
    if (threadIdx.x < 32) {
        unsigned prefix = tile_exclusive_prefix(status, tile, aggregate);
        if (threadIdx.x == 0)
            shared_prefix = prefix;
    }
    __syncthreads();
    finish_tile(kind, x, start, shared_prefix);
    store_tile(out, n, tile, x);
}

/* For scan_sweeps_probe: stage 1's load and store around the sweeps asked
 * for, with a barrier before the store (the last level's writes are other
 * threads'). */
__global__ void sweeps_probe(const unsigned *in, unsigned *out, unsigned tile, int sweeps)
{
    extern __shared__ unsigned s[];   // padded_words(tile) words
    unsigned a = threadIdx.x, b = threadIdx.x + blockDim.x;
    s[padded(a)] = in[a];
    s[padded(b)] = in[b];
    if (sweeps & SCAN_UP_SWEEP)
        up_sweep(s, tile);
    else
        __syncthreads();   // down_sweep's first level reads other threads' loads
    if (sweeps & SCAN_DOWN_SWEEP)
        down_sweep(s, tile);
    __syncthreads();
    out[a] = s[padded(a)];
    out[b] = s[padded(b)];
}

/* For scan_look_back_probe: the warp of block 2 looks back from tile 2 at
 * once, while block 1 publishes v1 with tile1_flag after `delay` clock
 * cycles and block 0 tile 0's prefix after twice as many. */
__global__ void look_back_probe(tile_status status, unsigned v0, unsigned v1,
                                unsigned tile1_flag, long long delay, unsigned *result)
{
    if (blockIdx.x == 2) {
        unsigned prefix = look_back(status, 2);
        if (threadIdx.x == 0)
            *result = prefix;
        return;
    }
    if (threadIdx.x != 0)
        return;
    long long start = clock64();
    while (clock64() - start < delay * (2 - (long long)blockIdx.x))
        ;
    if (blockIdx.x == 1)
        publish(status, 1, tile1_flag, v1);
    else
        publish(status, 0, TILE_PREFIX, v0);
}

/* For scan_publish_order_probe: block 1 is tile 1 (its whole warp calls
 * tile_exclusive_prefix); lane 0 of block 0 watches tile 1's flag for up to
 * `delay` clock cycles and notes what it saw, then block 0 is tile 0. A
 * tile 1 that publishes its aggregate only after its look-back is seen
 * TILE_EMPTY; the wait ends anyway, so that it cannot deadlock. */
__global__ void publish_order_probe(tile_status status, unsigned v0, unsigned v1,
                                    long long delay, scan_publish_probe *result)
{
    unsigned lane = threadIdx.x % 32;
    if (blockIdx.x == 1) {
        unsigned prefix = tile_exclusive_prefix(status, 1, v1);
        if (lane == 0)
            result->returned = prefix;
        return;
    }
    if (lane == 0) {
        long long start = clock64();
        unsigned flag;
        while ((flag = device_flag(status.flag[1]).load(cuda::memory_order_acquire)) ==
                   TILE_EMPTY &&
               clock64() - start < delay)
            ;
        result->flag_seen = flag;
        result->value_seen = flag == TILE_AGGREGATE ? status.aggregate[1]
                             : flag == TILE_PREFIX  ? status.prefix[1]
                                                    : 0;
    }
    __syncwarp();
    tile_exclusive_prefix(status, 0, v0);
}

/* ------------------------------------------------------------ stage 5 */

// Written in kernels.cu: writing a vector's kept indices to the list.
__device__ void scatter_kept(unsigned *list, unsigned first_index, uint4 keep, uint4 position,
                             unsigned tile_offset);

/* Stage 5: the frontier of the flags, in one pass. The tile's flags become
 * 0 or 1; their exclusive scan is each kept index's position in the tile,
 * the tile's total how many it keeps; the look-back of stage 4 gives the
 * number kept by the tiles before it, where the tile's part of the list
 * starts. The last tile knows the total. */
__global__ void __launch_bounds__(SCAN_MAX_BLOCK)
    compact_single_pass(const unsigned *__restrict__ flags, unsigned n,
                        unsigned *__restrict__ list, unsigned *count, tile_status status,
                        unsigned *tile_counter)
{
    __shared__ unsigned totals[SCAN_MAX_BLOCK / 32];
    __shared__ unsigned shared_tile, shared_offset;
    unsigned tile = claim_tile(tile_counter, &shared_tile);
    uint4 keep[SCAN_ROUNDS];
    unsigned start[SCAN_ROUNDS];
    load_tile(flags, n, tile, keep);
#pragma unroll
    for (int r = 0; r < SCAN_ROUNDS; r++)
        keep[r] = make_uint4(keep[r].x != 0, keep[r].y != 0, keep[r].z != 0, keep[r].w != 0);
    unsigned kept = tile_scan(keep, start, totals);
    if (threadIdx.x < 32) {
        unsigned offset = tile_exclusive_prefix(status, tile, kept);
        if (threadIdx.x == 0)
            shared_offset = offset;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < SCAN_ROUNDS; r++)
        scatter_kept(list, item_index(tile, r), keep[r], vector_exclusive(keep[r], start[r]),
                     shared_offset);
    if (tile == gridDim.x - 1 && threadIdx.x == 0)
        *count = shared_offset + kept;
}

/* The yardsticks, lab 02's worklist pushes with one flag per thread. One
 * atomicAdd per kept index: every kept index waits its turn at one counter. */
__global__ void compact_per_item(const unsigned *flags, unsigned n, unsigned *list,
                                 unsigned *count)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && flags[i] != 0)
        list[atomicAdd(count, 1u)] = i;
}

// One atomicAdd per warp: the ballot says which lanes keep their index, lane
// 0 reserves that many slots, each lane writes at its rank among them.
__global__ void compact_per_warp(const unsigned *flags, unsigned n, unsigned *list,
                                 unsigned *count)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
    bool keep = i < n && flags[i] != 0;
    unsigned keeping = __ballot_sync(FULL_WARP, keep), first = 0;
    if (lane == 0 && keeping != 0)
        first = atomicAdd(count, (unsigned)__popc(keeping));
    first = __shfl_sync(FULL_WARP, first, 0);
    if (keep)
        list[first + __popc(keeping & ((1u << lane) - 1))] = i;
}

/* ------------------------------------------------------------ host side */

const char *scan_stage_name(int stage)
{
    static const char *names[SCAN_STAGES + 1] = {
        "Hillis-Steele, double-buffered", "Blelloch, padded", "warp shuffles",
        "scan, then propagate", "single pass, decoupled look-back", "compaction"};
    return stage >= 0 && stage <= SCAN_STAGES ? names[stage] : "no such stage";
}

const char *compact_version_name(int version)
{
    static const char *names[COMPACT_VERSIONS] = {"scan (stage 5)", "atomic per item",
                                                  "atomic per warp"};
    return version >= 0 && version < COMPACT_VERSIONS ? names[version] : "no such version";
}

static bool block_size_ok(int block_size)
{
    return block_size >= SCAN_MIN_BLOCK && block_size <= SCAN_MAX_BLOCK &&
           (block_size & (block_size - 1)) == 0;
}

int scan_tile_size(int stage, int block_size)
{
    if (!block_size_ok(block_size) || stage < 0 || stage > SCAN_COMPACTION_STAGE)
        return 0;
    return stage == 1 ? 2 * block_size : stage >= 3 ? SCAN_ITEMS_PER_THREAD * block_size
                                                    : block_size;
}

/* Stage 3: the tile sums of every level, each level's after the one above
 * (next_level_sums). */
static size_t propagate_words(unsigned n, unsigned tile)
{
    size_t words = 0;
    for (unsigned tiles = tiles_of(n, tile);; tiles = tiles_of(tiles, tile)) {
        words += level_words(tiles);   // the last level's single sum too: scan_tiles writes it
        if (tiles == 1)
            return words;
    }
}

// The top level is the last, of one tile: its sum is its first word.
size_t scan_stage3_total_word(int n, int block_size)
{
    int tile = scan_tile_size(3, block_size);
    if (tile == 0 || n <= 0)
        wb_fail("scan_stage3_total_word: n = %d, block size %d has no stage 3 scratch", n,
                block_size);
    return propagate_words((unsigned)n, (unsigned)tile) - level_words(1);
}

/* Stages 4 and 5: three words of status per tile, then the tile counter. */
static size_t status_words(unsigned n, unsigned tile)
{
    return SCAN_STATUS_ARRAYS * (size_t)tiles_of(n, tile) + 1;
}

size_t scan_scratch_bytes(int stage, int n, int block_size)
{
    int tile = scan_tile_size(stage, block_size);
    if (tile == 0 || n <= 0 || stage < 3)
        return 0;
    return sizeof(unsigned) * (stage == 3 ? propagate_words((unsigned)n, (unsigned)tile)
                                          : status_words((unsigned)n, (unsigned)tile));
}

size_t compact_scratch_bytes(int n, int block_size)
{
    return scan_scratch_bytes(4, n, block_size);
}

/* The status of `tiles` tiles in the scratch, every flag TILE_EMPTY (a
 * memset, in stream order before the kernel), and the counter at 0. */
static tile_status reset_status(void *scratch, unsigned tiles, unsigned **tile_counter,
                                cudaStream_t stream)
{
    unsigned *words = (unsigned *)scratch;
    tile_status status = {words + SCAN_STATUS_FLAGS * (size_t)tiles,
                          words + SCAN_STATUS_AGGREGATES * (size_t)tiles,
                          words + SCAN_STATUS_PREFIXES * (size_t)tiles};
    *tile_counter = words + SCAN_STATUS_ARRAYS * (size_t)tiles;
    CUDA_CHECK(cudaMemsetAsync(status.flag, 0, sizeof(unsigned) * tiles, stream));
    CUDA_CHECK(cudaMemsetAsync(*tile_counter, 0, sizeof(unsigned), stream));
    return status;
}

static void check_vectors(const char *entry, const void *p, const char *what)
{
    if ((uintptr_t)p % 16 != 0)
        wb_fail("%s: %s is not 16-byte aligned: stages 3-5 read and write 16-byte vectors "
                "(cudaMalloc gives an aligned pointer)", entry, what);
}

void scan_async(int stage, scan_kind kind, const unsigned *d_in, unsigned *d_out, int n,
                int block_size, void *d_scratch, cudaStream_t stream)
{
    if (stage < 0 || stage >= SCAN_STAGES)
        wb_fail("scan: stage %d does not exist (0 to %d; stage %d is compact)", stage,
                SCAN_STAGES - 1, SCAN_COMPACTION_STAGE);
    if (!block_size_ok(block_size))
        wb_fail("scan: block size %d is not a power of two from %d to %d", block_size,
                SCAN_MIN_BLOCK, SCAN_MAX_BLOCK);
    if (kind != SCAN_INCLUSIVE && kind != SCAN_EXCLUSIVE)
        wb_fail("scan: kind %d is neither SCAN_INCLUSIVE nor SCAN_EXCLUSIVE", (int)kind);
    if (n < 0)
        wb_fail("scan: n = %d is negative", n);
    if (n == 0)   // nothing to write; a grid of 0 blocks would be a launch error
        return;
    if (!d_in || !d_out)
        wb_fail("scan: %s is NULL", d_in ? "d_out" : "d_in");
    if (scan_scratch_bytes(stage, n, block_size) > 0 && !d_scratch)
        wb_fail("scan: stage %d needs %zu bytes of scratch memory, d_scratch is NULL", stage,
                scan_scratch_bytes(stage, n, block_size));
    if (stage >= 3) {
        check_vectors("scan", d_in, "d_in");
        check_vectors("scan", d_out, "d_out");
    }
    unsigned tile = (unsigned)scan_tile_size(stage, block_size);
    unsigned tiles = tiles_of((unsigned)n, tile);
    switch (stage) {
    case 0:
        scan_stage0<<<tiles, block_size, 2 * block_size * sizeof(unsigned), stream>>>(
            kind, d_in, d_out, (unsigned)n);
        CUDA_CHECK_LAUNCH();
        break;
    case 1:
        scan_stage1<<<tiles, block_size, padded_words(tile) * sizeof(unsigned), stream>>>(
            kind, d_in, d_out, (unsigned)n);
        CUDA_CHECK_LAUNCH();
        break;
    case 2:
        scan_stage2<<<tiles, block_size, 0, stream>>>(kind, d_in, d_out, (unsigned)n, NULL);
        CUDA_CHECK_LAUNCH();
        break;
    case 3:
        scan_then_propagate(kind, d_in, d_out, (unsigned)n, block_size, (unsigned *)d_scratch,
                            stream);
        break;
    case 4: {
        unsigned *tile_counter;
        tile_status status = reset_status(d_scratch, tiles, &tile_counter, stream);
        scan_single_pass<<<tiles, block_size, 0, stream>>>(kind, d_in, d_out, (unsigned)n,
                                                           status, tile_counter);
        CUDA_CHECK_LAUNCH();
        break;
    }
    }
}

void scan(int stage, scan_kind kind, const unsigned *d_in, unsigned *d_out, int n,
          int block_size, void *d_scratch)
{
    scan_async(stage, kind, d_in, d_out, n, block_size, d_scratch, 0);
}

unsigned scan_padded_index(unsigned i) { return padded(i); }
unsigned scan_padded_words(unsigned tile) { return padded_words(tile); }

/* The status of `tiles` tiles for a probe, in its own cudaMalloc (*words,
 * for cudaFree): every value poisoned, every flag TILE_EMPTY. */
static tile_status poisoned_status(unsigned tiles, unsigned **words)
{
    size_t bytes = SCAN_STATUS_ARRAYS * tiles * sizeof(unsigned);
    CUDA_CHECK(cudaMalloc((void **)words, bytes));
    CUDA_CHECK(cudaMemset(*words, WB_POISON_INT_BYTE, bytes));
    tile_status status = {*words + SCAN_STATUS_FLAGS * tiles,
                          *words + SCAN_STATUS_AGGREGATES * tiles,
                          *words + SCAN_STATUS_PREFIXES * tiles};
    CUDA_CHECK(cudaMemset(status.flag, 0, tiles * sizeof(unsigned)));
    return status;
}

static long long clock_cycles(int delay_us)
{
    return (long long)delay_us * wb_device_info().clock_khz / 1000;
}

void scan_look_back_probe(unsigned v0, unsigned v1, unsigned tile1_flag, int delay_us,
                          unsigned *d_result)
{
    if (delay_us < 0 || !d_result || (tile1_flag != TILE_AGGREGATE && tile1_flag != TILE_PREFIX))
        wb_fail("scan_look_back_probe: need delay_us >= 0, TILE_AGGREGATE or TILE_PREFIX and a "
                "result pointer");
    unsigned *words;
    tile_status status = poisoned_status(3, &words);
    look_back_probe<<<3, 32>>>(status, v0, v1, tile1_flag, clock_cycles(delay_us), d_result);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFree(words));
}

void scan_publish_order_probe(unsigned v0, unsigned v1, int delay_us,
                              scan_publish_probe *d_result)
{
    if (delay_us < 0 || !d_result)
        wb_fail("scan_publish_order_probe: need delay_us >= 0 and a result pointer");
    unsigned *words;
    tile_status status = poisoned_status(2, &words);
    publish_order_probe<<<2, 32>>>(status, v0, v1, clock_cycles(delay_us), d_result);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemcpy(&d_result->final_flag, status.flag + 1, sizeof(unsigned),
                          cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaMemcpy(&d_result->final_prefix, status.prefix + 1, sizeof(unsigned),
                          cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaFree(words));
}

void scan_sweeps_probe(const unsigned *d_in, unsigned *d_out, unsigned tile, int sweeps)
{
    if (tile < 2 * SCAN_MIN_BLOCK || tile > 2 * SCAN_MAX_BLOCK || (tile & (tile - 1)) ||
        !d_in || !d_out || sweeps < 0 || sweeps > (SCAN_UP_SWEEP | SCAN_DOWN_SWEEP))
        wb_fail("scan_sweeps_probe: tile %u, sweeps %d: need a power of two from %d to %d, "
                "SCAN_UP_SWEEP and/or SCAN_DOWN_SWEEP and two pointers",
                tile, sweeps, 2 * SCAN_MIN_BLOCK, 2 * SCAN_MAX_BLOCK);
    sweeps_probe<<<1, tile / 2, padded_words(tile) * sizeof(unsigned)>>>(d_in, d_out, tile, sweeps);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
}

void scan_stage2_block_totals(const unsigned *d_in, unsigned *d_out, int n, int block_size,
                              unsigned *d_block_totals)
{
    if (!block_size_ok(block_size) || n <= 0 || !d_in || !d_out || !d_block_totals)
        wb_fail("scan_stage2_block_totals: n = %d, block size %d: need n > 0, a block size "
                "scan takes and three pointers", n, block_size);
    unsigned tiles = tiles_of((unsigned)n, (unsigned)block_size);
    scan_stage2<<<tiles, block_size>>>(SCAN_INCLUSIVE, d_in, d_out, (unsigned)n, d_block_totals);
    CUDA_CHECK_LAUNCH();
}

void compact_async(int version, const unsigned *d_flags, int n, unsigned *d_list,
                   unsigned *d_count, int block_size, void *d_scratch, cudaStream_t stream)
{
    if (version < 0 || version >= COMPACT_VERSIONS)
        wb_fail("compact: version %d does not exist (0 to %d)", version, COMPACT_VERSIONS - 1);
    if (!block_size_ok(block_size))
        wb_fail("compact: block size %d is not a power of two from %d to %d", block_size,
                SCAN_MIN_BLOCK, SCAN_MAX_BLOCK);
    if (n < 0)
        wb_fail("compact: n = %d is negative", n);
    if (!d_count || (n > 0 && (!d_flags || !d_list)))
        wb_fail("compact: %s is NULL", !d_count ? "d_count" : !d_flags ? "d_flags" : "d_list");
    CUDA_CHECK(cudaMemsetAsync(d_count, 0, sizeof(unsigned), stream));
    if (n == 0)
        return;
    if (version == COMPACT_SCAN) {
        if (!d_scratch)
            wb_fail("compact: the scan version needs %zu bytes of scratch memory, d_scratch is "
                    "NULL", compact_scratch_bytes(n, block_size));
        check_vectors("compact", d_flags, "d_flags");
        unsigned tiles = tiles_of((unsigned)n, SCAN_ITEMS_PER_THREAD * (unsigned)block_size);
        unsigned *tile_counter;
        tile_status status = reset_status(d_scratch, tiles, &tile_counter, stream);
        compact_single_pass<<<tiles, block_size, 0, stream>>>(d_flags, (unsigned)n, d_list,
                                                              d_count, status, tile_counter);
    } else {
        unsigned blocks = tiles_of((unsigned)n, (unsigned)block_size);
        if (version == COMPACT_PER_ITEM)
            compact_per_item<<<blocks, block_size, 0, stream>>>(d_flags, (unsigned)n, d_list,
                                                                d_count);
        else
            compact_per_warp<<<blocks, block_size, 0, stream>>>(d_flags, (unsigned)n, d_list,
                                                                d_count);
    }
    CUDA_CHECK_LAUNCH();
}

void compact(int version, const unsigned *d_flags, int n, unsigned *d_list, unsigned *d_count,
             int block_size, void *d_scratch)
{
    compact_async(version, d_flags, n, d_list, d_count, block_size, d_scratch, 0);
}
