/*
 * Lab 11: image kernels, the reference. Read handouts/11-image.md first.
 *
 *   0  conv, naive: one thread per output pixel, every tap and every mask
 *      value from global memory
 *   1  conv, the mask in constant memory: every thread of a warp reads the
 *      same tap at the same time, a broadcast
 *   2  conv, shared tile with halo: a block loads its output tile and the
 *      halo around it once, then every tap comes from shared memory
 *   3  conv, shared tile, halo from the cache: the block loads only its own
 *      tile; taps beyond it come from global memory, which L1 and L2 hold
 *   4  conv, separable, a march: a warp walks down 32 columns, a row at a
 *      time, the row pass through its own row of shared memory, the column
 *      pass from a window of rows in registers
 *   5  histogram, one global atomicAdd per byte
 *   6  histogram, privatized: a block counts into shared memory and adds
 *      its counts to the global bins once
 *   7  histogram, a copy of the bins per lane in shared memory (no bank
 *      conflicts, no two lanes on one counter), 16 bytes a load, a chunk of
 *      16 equal bytes counted as one atomic of 16
 *
 * The masks' homes (mask_global, mask_constant, row_constant,
 * column_constant), the boundary conditions (pixel_or_boundary), each
 * stage's grid and the argument checks are given in given.cuh.
 */
#include "lab.h"
#include "workbook.h"

// Given, the same for every stage and both sides.
#include "given.cuh"

/* ----------------------------------------------------------- convolution */

/* Output pixel (x, y): tap (dx, dy) of mask times the input at (x + dx -
 * radius, y + dy - radius), through the boundary condition. Stages 0 and 1
 * call it; inlined, each reads the mask from where it lives (global memory,
 * constant memory). */
__device__ __forceinline__ float convolve_pixel(const float *__restrict__ in,
                                                const float *__restrict__ mask, int x, int y,
                                                int width, int height, int radius, int boundary)
{
    int side = 2 * radius + 1;
    float sum = 0.0f;
    for (int dy = 0; dy < side; dy++)
        for (int dx = 0; dx < side; dx++)
            sum += mask[dy * side + dx] *
                   pixel_or_boundary(in, x + dx - radius, y + dy - radius, width, height,
                                     boundary);
    return sum;
}

/* Stage 0: every tap of every pixel from global memory, and the mask too. */
__global__ void conv_naive(const float *__restrict__ in, float *__restrict__ out, int width,
                           int height, const float *__restrict__ mask, int radius, int boundary)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;
    out[y * width + x] = convolve_pixel(in, mask, x, y, width, height, radius, boundary);
}

/* Host: the mask into constant memory (its symbol, not a pointer). */
static void copy_mask_to_constant(const float *mask, int taps)
{
    CUDA_CHECK(cudaMemcpyToSymbol(mask_constant, mask, sizeof(float) * taps));
}

/* Stage 1: stage 0 with the mask in constant memory. All threads of a warp
 * are at the same tap at once, so each mask read is one address for the
 * whole warp: the constant cache broadcasts it. */
__global__ void conv_constant(const float *__restrict__ in, float *__restrict__ out, int width,
                              int height, int radius, int boundary)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;
    out[y * width + x] =
        convolve_pixel(in, mask_constant, x, y, width, height, radius, boundary);
}

/* The input pixels that a block's outputs read, the tile_w x tile_h pixels
 * from (x0 - radius, y0 - radius) on, into tile (rows IMAGE_TILE_X +
 * 2 IMAGE_MAX_RADIUS wide), the boundary condition's values where they lie
 * outside the image. Every thread of the block takes a share. */
__device__ void load_tile_with_halo(const float *__restrict__ in,
                                    float (*tile)[IMAGE_TILE_X + 2 * IMAGE_MAX_RADIUS], int x0,
                                    int y0, int tile_w, int tile_h, int width, int height,
                                    int radius, int boundary)
{
    int thread = threadIdx.y * blockDim.x + threadIdx.x, threads = blockDim.x * blockDim.y;
    for (int i = thread; i < tile_w * tile_h; i += threads) {
        int ty = i / tile_w, tx = i % tile_w;
        tile[ty][tx] =
            pixel_or_boundary(in, x0 - radius + tx, y0 - radius + ty, width, height, boundary);
    }
}

/* Stage 2: the block's 32 x 8 outputs need (32 + 2r) x (8 + 2r) input
 * pixels, the tile and its halo: loaded once into shared memory, then every
 * tap of every output is read from there. */
__global__ void conv_tile_halo(const float *__restrict__ in, float *__restrict__ out, int width,
                               int height, int radius, int boundary)
{
    __shared__ float tile[IMAGE_TILE_Y + 2 * IMAGE_MAX_RADIUS][IMAGE_TILE_X + 2 * IMAGE_MAX_RADIUS];
    int x0 = blockIdx.x * IMAGE_TILE_X, y0 = blockIdx.y * IMAGE_TILE_Y;
    load_tile_with_halo(in, tile, x0, y0, IMAGE_TILE_X + 2 * radius, IMAGE_TILE_Y + 2 * radius,
                        width, height, radius, boundary);
    __syncthreads();   // every pixel of the tile stored before any is read
    int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x >= width || y >= height)
        return;   // after the barrier: these threads loaded their share too
    int side = 2 * radius + 1;
    float sum = 0.0f;
    for (int dy = 0; dy < side; dy++)
        for (int dx = 0; dx < side; dx++)
            sum += mask_constant[dy * side + dx] * tile[threadIdx.y + dy][threadIdx.x + dx];
    out[y * width + x] = sum;
}

/* Stage 3: only the block's own 32 x 8 pixels go to shared memory, one per
 * thread; a tap outside the tile (the halo), or outside the image, is read
 * from global memory, where the neighbouring blocks' loads have just put it
 * into L1 and L2. */
__global__ void conv_tile_cached_halo(const float *__restrict__ in, float *__restrict__ out,
                                      int width, int height, int radius, int boundary)
{
    __shared__ float tile[IMAGE_TILE_Y][IMAGE_TILE_X];
    int x = blockIdx.x * IMAGE_TILE_X + threadIdx.x, y = blockIdx.y * IMAGE_TILE_Y + threadIdx.y;
    bool inside = x < width && y < height;
    tile[threadIdx.y][threadIdx.x] = inside ? in[y * width + x] : 0.0f;
    __syncthreads();   // the tile stored before any of it is read
    if (!inside)
        return;
    int side = 2 * radius + 1;
    float sum = 0.0f;
    for (int dy = 0; dy < side; dy++)
        for (int dx = 0; dx < side; dx++) {
            int tx = (int)threadIdx.x + dx - radius, ty = (int)threadIdx.y + dy - radius;
            int sx = x + dx - radius, sy = y + dy - radius;
            // In the tile and in the image: the tile holds it. A tile cut by
            // the image's edge holds 0 past it, which clamp must not see.
            bool in_tile = tx >= 0 && tx < IMAGE_TILE_X && ty >= 0 && ty < IMAGE_TILE_Y &&
                           sx < width && sy < height;
            float value = in_tile ? tile[ty][tx]
                                  : pixel_or_boundary(in, sx, sy, width, height, boundary);
            sum += mask_constant[dy * side + dx] * value;
        }
    out[y * width + x] = sum;
}

/* Host: the two masks of a separable one into constant memory. */
static void copy_separable_to_constant(const float *row, const float *column, int side)
{
    CUDA_CHECK(cudaMemcpyToSymbol(row_constant, row, sizeof(float) * side));
    CUDA_CHECK(cudaMemcpyToSymbol(column_constant, column, sizeof(float) * side));
}

/* Input pixel (x, y) as stage 4 loads it, x and y possibly outside the
 * image: always from inside it (both clamped: the clamp boundary's pixel),
 * then 0 in its place for the zero boundary where (x, y) lies outside. A
 * select, not a branch per pixel, and one address for both boundaries. */
__device__ __forceinline__ float clamped_pixel(const float *__restrict__ in, int x, int y,
                                               int width, int height, int boundary)
{
    float pixel = in[clamp_to(y, height) * width + clamp_to(x, width)];
    bool outside = x < 0 || x >= width || y < 0 || y >= height;
    return boundary == IMAGE_ZERO && outside ? 0.0f : pixel;
}

/* Stage 4: a separable mask costs 2 (2r + 1) multiply-adds a pixel
 * instead of (2r + 1)^2, and a march keeps the intermediate image in
 * registers. Each warp owns 32 output columns and walks IMAGE_MARCH_ROWS
 * output rows down them, reading the IMAGE_MARCH_ROWS + 2 RADIUS input
 * rows from RADIUS above its first one, one row a step: every lane loads
 * the pixel RADIUS columns left of its own, the first 2 RADIUS lanes also
 * the one 32 further (the row's 32 + 2 RADIUS pixels), and the warp stores
 * them in its own row of shared memory. Each lane filters its column of
 * that row along x (the row pass) and pushes the sum into its window, the
 * row pass of the last 2 RADIUS + 1 rows; once the window is full it holds
 * every row that the output RADIUS rows up needs, and the column pass
 * writes that output.
 *   - No block barrier: a warp reads only the row buffer it wrote itself,
 *     so its lanes need to wait only for each other: a __syncwarp() after
 *     the row is stored (lanes read their neighbours' pixels), and one
 *     before the next row overwrites it (every lane done reading).
 *   - Rows loaded ahead: the memory stays busy only with about bandwidth x
 *     latency bytes in flight (Little's law), and a warp that loaded each
 *     row at the step that needs it would have none in flight while it
 *     computes. So each row is loaded IMAGE_MARCH_AHEAD steps early.
 *   - The window in registers: each of its rows feeds 2 RADIUS + 1
 *     outputs of the lane's column, and registers are the fastest place.
 *     An array is registers only when its size and every index are
 *     constants: hence RADIUS a template parameter and the loops unrolled
 *     (given.cuh launches the kernel of the mask's radius).
 *   - The boundary a template parameter too: with BOUNDARY a constant,
 *     the clamp kernel has no zero test and the zero kernel no second
 *     case, and a march issues few instructions a pixel besides its loads.
 *     On an H200 (8192^2, r = 2) the same code with the boundary an
 *     argument reached 73.5% of the copy bandwidth, with it a constant
 *     83.6% (handouts/11-image.md, "Separable masks, and a march per
 *     warp"). */
template <int RADIUS, int BOUNDARY>
__global__ void __launch_bounds__(IMAGE_TILE_X * IMAGE_MARCH_WARPS)
    conv_separable(const float *__restrict__ in, float *__restrict__ out, int width, int height)
{
    constexpr int SIDE = 2 * RADIUS + 1, INPUT_ROWS = IMAGE_MARCH_ROWS + 2 * RADIUS;
    // The input rows loaded and not yet used: row k in slot k % SLOTS.
    constexpr int SLOTS = IMAGE_MARCH_AHEAD + 1;
    __shared__ float row_buffers[IMAGE_MARCH_WARPS][IMAGE_TILE_X + 2 * RADIUS];
    float *row_buffer = row_buffers[threadIdx.y];   // this warp's
    int lane = threadIdx.x, x = blockIdx.x * IMAGE_TILE_X + lane;
    int first_y = (blockIdx.y * IMAGE_MARCH_WARPS + threadIdx.y) * IMAGE_MARCH_ROWS;
    bool halo_lane = lane < 2 * RADIUS;
    float own[SLOTS], halo[SLOTS], window[SIDE] = {};
#pragma unroll
    for (int k = 0; k < INPUT_ROWS + IMAGE_MARCH_AHEAD; k++) {
        if (k < INPUT_ROWS) {   // load input row k
            int y = first_y - RADIUS + k;
            own[k % SLOTS] = clamped_pixel(in, x - RADIUS, y, width, height, BOUNDARY);
            halo[k % SLOTS] = halo_lane ? clamped_pixel(in, x - RADIUS + IMAGE_TILE_X, y, width,
                                                        height, BOUNDARY)
                                        : 0.0f;
        }
        int row = k - IMAGE_MARCH_AHEAD;   // the input row this step uses
        if (row < 0)
            continue;
        __syncwarp();   // every lane done reading the last row before this one overwrites it
        row_buffer[lane] = own[row % SLOTS];
        if (halo_lane)
            row_buffer[IMAGE_TILE_X + lane] = halo[row % SLOTS];
        __syncwarp();   // the row stored before a lane reads its neighbours' pixels
        float filtered = 0.0f;
#pragma unroll
        for (int dx = 0; dx < SIDE; dx++)
            filtered += row_constant[dx] * row_buffer[lane + dx];
#pragma unroll
        for (int d = 0; d + 1 < SIDE; d++)
            window[d] = window[d + 1];
        window[SIDE - 1] = filtered;
        if (row >= 2 * RADIUS) {   // the window is full: output row y
            int y = first_y + row - 2 * RADIUS;
            float sum = 0.0f;
#pragma unroll
            for (int dy = 0; dy < SIDE; dy++)
                sum += column_constant[dy] * window[dy];
            if (x < width && y < height)
                out[y * width + x] = sum;
        }
    }
}

/* ------------------------------------------------------------- histogram */

/* Stage 5: every byte one atomicAdd on its global bin. */
__global__ void histogram_global(const unsigned char *__restrict__ data, size_t n,
                                 unsigned int *bins)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&bins[data[i]], 1u);
}

/* Stage 6: each block counts its bytes into its own bins in shared memory,
 * where an atomic costs a few cycles and only the block's threads contend,
 * then adds each bin to the global one once. */
__global__ void histogram_private(const unsigned char *__restrict__ data, size_t n,
                                  unsigned int *bins)
{
    __shared__ unsigned int counts[IMAGE_BINS];
    for (int b = threadIdx.x; b < IMAGE_BINS; b += blockDim.x)
        counts[b] = 0;
    __syncthreads();   // every bin cleared before any is counted
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&counts[data[i]], 1u);
    __syncthreads();   // every byte of the block counted before any bin is merged
    for (int b = threadIdx.x; b < IMAGE_BINS; b += blockDim.x)
        if (counts[b] > 0)
            atomicAdd(&bins[b], counts[b]);
}

/* Stage 7 counts into its lane's own copy of the bins (lane_bins points at
 * word `lane` of the shared array; bin b of the copy is HISTOGRAM_COPIES
 * words further per bin): only lane l of each warp of the block counts
 * there, so the 32 atomics of a warp go to 32 different banks whatever
 * their bytes, and two of them never wait on the same word. */
__device__ __forceinline__ void count_byte(unsigned int *lane_bins, unsigned int byte)
{
    atomicAdd(&lane_bins[byte * HISTOGRAM_COPIES], 1u);
}

__device__ __forceinline__ void count_word(unsigned int *lane_bins, unsigned int word)
{
#pragma unroll
    for (int k = 0; k < 4; k++)
        count_byte(lane_bins, (word >> (8 * k)) & 0xFFu);
}

/* A chunk whose 16 bytes are all equal (all four words are its first byte
 * repeated) is one atomic of 16: on bytes all one value a thread makes one
 * atomic per 16 bytes. Any other chunk, one atomic per byte. */
__device__ __forceinline__ void count_chunk(unsigned int *lane_bins, uint4 chunk)
{
    unsigned int first = chunk.x & 0xFFu;
    if (chunk.x == first * 0x01010101u && chunk.y == chunk.x && chunk.z == chunk.x &&
        chunk.w == chunk.x) {
        atomicAdd(&lane_bins[first * HISTOGRAM_COPIES], 16u);
    } else {
        count_word(lane_bins, chunk.x);
        count_word(lane_bins, chunk.y);
        count_word(lane_bins, chunk.z);
        count_word(lane_bins, chunk.w);
    }
}

/* Stage 7: stage 6 with a copy of the bins per lane (replication: no bank
 * conflict and no two lanes of a warp on one word, even on bytes all one
 * value), a chunk of 16 equal bytes counted as one atomic of 16
 * (aggregation), and 16 bytes a load (uint4, from the first 16-byte
 * boundary on; the bytes before it and after the last whole 16 one by
 * one). The merge adds a bin's 32 copies. */
__global__ void histogram_aggregated(const unsigned char *__restrict__ data, size_t n,
                                     unsigned int *bins)
{
    __shared__ unsigned int counts[IMAGE_BINS * HISTOGRAM_COPIES];
    for (int i = threadIdx.x; i < IMAGE_BINS * HISTOGRAM_COPIES; i += blockDim.x)
        counts[i] = 0;
    __syncthreads();   // every copy cleared before any byte is counted
    unsigned int *lane_bins = counts + threadIdx.x % HISTOGRAM_COPIES;
    size_t thread = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t threads = (size_t)gridDim.x * blockDim.x;
    size_t head = (16 - ((uintptr_t)data & 15)) & 15;
    head = head < n ? head : n;
    size_t chunks = (n - head) / 16, tail = head + 16 * chunks;
    const uint4 *chunk = (const uint4 *)(data + head);
    if (thread < head)
        count_byte(lane_bins, data[thread]);
    // Two chunks an iteration, both loaded before either is counted: two
    // loads of 16 bytes in flight per thread, enough to keep DRAM busy.
    size_t c = thread;
    for (; c + threads < chunks; c += 2 * threads) {
        uint4 first = chunk[c], second = chunk[c + threads];
        count_chunk(lane_bins, first);
        count_chunk(lane_bins, second);
    }
    if (c < chunks)
        count_chunk(lane_bins, chunk[c]);
    if (tail + thread < n)
        count_byte(lane_bins, data[tail + thread]);
    __syncthreads();   // every byte of the block counted before any copy is merged
    // Thread b adds the copies of bin b, starting at copy b % 32: at each
    // step the 32 threads of a warp read 32 different copies, in 32
    // different banks (the same copy of 32 bins would be one bank).
    for (int b = threadIdx.x; b < IMAGE_BINS; b += blockDim.x) {
        unsigned int sum = 0;
        for (int k = 0; k < HISTOGRAM_COPIES; k++)
            sum += counts[b * HISTOGRAM_COPIES + (b + k) % HISTOGRAM_COPIES];
        if (sum > 0)
            atomicAdd(&bins[b], sum);
    }
}
