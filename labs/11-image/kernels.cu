/*
 * Lab 11: image kernels, from a naive convolution to a histogram without
 * contention. Read handouts/11-image.md first.
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
 * Each stage is a small change from the one before; the TODOs are numbered
 * in the order of the stages. The masks' homes (mask_global, mask_constant,
 * row_constant, column_constant), the boundary conditions
 * (pixel_or_boundary), each stage's grid and the argument checks are given
 * in given.cuh, included at the top. Check a stage with
 *     meson test -C build --suite image-student --print-errorlogs
 * (tests stageN_...), time them with `build/image-bench-student`, and ask
 * for a hint with `grading/workbook hint image 2`.
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
    // TODO 1 (stage 0): sum mask[dy * side + dx] * the input at
    // (x + dx - radius, y + dy - radius) over dy (outer loop) and dx
    // (inner), both 0 ... side - 1 with side = 2 radius + 1, reading the
    // input with pixel_or_boundary (it knows the boundary), and return it.
    (void)in, (void)mask, (void)x, (void)y, (void)width, (void)height, (void)radius,
        (void)boundary;
    return 0.0f;
}

/* Stage 0: every tap of every pixel from global memory, and the mask too. */
__global__ void conv_naive(const float *__restrict__ in, float *__restrict__ out, int width,
                           int height, const float *__restrict__ mask, int radius, int boundary)
{
    // TODO 2 (stage 0): this thread's pixel (x, y) from the block and
    // thread indices in x and y (x along threadIdx.x); threads past the
    // image do nothing. Store convolve_pixel's sum at out[y * width + x].
    (void)in, (void)out, (void)width, (void)height, (void)mask, (void)radius, (void)boundary;
}

/* Host: the mask into constant memory (its symbol, not a pointer). */
static void copy_mask_to_constant(const float *mask, int taps)
{
    // TODO 3 (stage 1): copy the `taps` floats at mask (host memory) into
    // mask_constant with cudaMemcpyToSymbol, inside CUDA_CHECK. The size is
    // in bytes.
    (void)mask, (void)taps;
}

/* Stage 1: stage 0 with the mask in constant memory. All threads of a warp
 * are at the same tap at once, so each mask read is one address for the
 * whole warp: the constant cache broadcasts it. */
__global__ void conv_constant(const float *__restrict__ in, float *__restrict__ out, int width,
                              int height, int radius, int boundary)
{
    // TODO 4 (stage 1): stage 0 with mask_constant in place of mask. The
    // tap's index must be the same for every thread of a warp at a time (it
    // depends on dy and dx only, never on the thread): constant memory
    // serves one address per warp at a time.
    (void)in, (void)out, (void)width, (void)height, (void)radius, (void)boundary;
}

/* Stage 2: the block's 32 x 8 outputs need (32 + 2r) x (8 + 2r) input
 * pixels, the tile and its halo: loaded once into shared memory, then every
 * tap of every output is read from there. */
__global__ void conv_tile_halo(const float *__restrict__ in, float *__restrict__ out, int width,
                               int height, int radius, int boundary)
{
    // TODO 5 (stage 2): declare a shared tile of (IMAGE_TILE_Y +
    // 2 IMAGE_MAX_RADIUS) x (IMAGE_TILE_X + 2 IMAGE_MAX_RADIUS) floats. The
    // block's outputs start at (x0, y0) = (blockIdx.x * IMAGE_TILE_X,
    // blockIdx.y * IMAGE_TILE_Y); its tile is the (IMAGE_TILE_X + 2 radius)
    // x (IMAGE_TILE_Y + 2 radius) input pixels from (x0 - radius,
    // y0 - radius) on. All 256 threads load it together (pixel i of the
    // tile by thread i, i + 256, ...), through pixel_or_boundary. Wait until
    // the whole tile is stored; then each thread inside the image computes
    // its output as in stage 1, reading tile[threadIdx.y + dy][threadIdx.x +
    // dx].
    (void)in, (void)out, (void)width, (void)height, (void)radius, (void)boundary;
}

/* Stage 3: only the block's own 32 x 8 pixels go to shared memory, one per
 * thread; a tap outside the tile (the halo), or outside the image, is read
 * from global memory, where the neighbouring blocks' loads have just put it
 * into L1 and L2. */
__global__ void conv_tile_cached_halo(const float *__restrict__ in, float *__restrict__ out,
                                      int width, int height, int radius, int boundary)
{
    // TODO 6 (stage 3): a shared IMAGE_TILE_Y x IMAGE_TILE_X tile; each
    // thread stores its own pixel (0 past the image), then wait. For each
    // tap, the tile holds the pixel when it lies in the tile and in the
    // image; otherwise read it with pixel_or_boundary. Threads past the
    // image return after the barrier.
    (void)in, (void)out, (void)width, (void)height, (void)radius, (void)boundary;
}

/* Host: the two masks of a separable one into constant memory. */
static void copy_separable_to_constant(const float *row, const float *column, int side)
{
    // TODO 7 (stage 4): row into row_constant and column into
    // column_constant, `side` floats each, as in TODO 3.
    (void)row, (void)column, (void)side;
}

/* Input pixel (x, y) as stage 4 loads it, x and y possibly outside the
 * image: always from inside it (both clamped: the clamp boundary's pixel),
 * then 0 in its place for the zero boundary where (x, y) lies outside. A
 * select, not a branch per pixel, and one address for both boundaries. */
__device__ __forceinline__ float clamped_pixel(const float *__restrict__ in, int x, int y,
                                               int width, int height, int boundary)
{
    // TODO 8 (stage 4): read in[] at (x, y) clamped into the image with
    // clamp_to (given.cuh), both of them, and return it; for the zero
    // boundary return 0 instead where (x, y) itself lies outside the image.
    (void)in, (void)x, (void)y, (void)width, (void)height, (void)boundary;
    return 0.0f;
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
 *     each kernel keeps only its own boundary's code, and a march issues
 *     few instructions a pixel besides its loads (on an H200, 74% of the
 *     copy bandwidth with the boundary an argument, 84% a constant). */
template <int RADIUS, int BOUNDARY>
__global__ void __launch_bounds__(IMAGE_TILE_X * IMAGE_MARCH_WARPS)
    conv_separable(const float *__restrict__ in, float *__restrict__ out, int width, int height)
{
    // TODO 9 (stage 4): the warp's first output row is first_y =
    // (blockIdx.y * IMAGE_MARCH_WARPS + threadIdx.y) * IMAGE_MARCH_ROWS,
    // lane = threadIdx.x owns column x = blockIdx.x * IMAGE_TILE_X + lane.
    // Declare a shared row buffer per warp, [IMAGE_MARCH_WARPS][IMAGE_TILE_X
    // + 2 * RADIUS] floats, and in registers the window, float
    // window[2 * RADIUS + 1], and IMAGE_MARCH_AHEAD + 1 slots for each of
    // a lane's two pixels (own, halo). Walk k from 0 to IMAGE_MARCH_ROWS +
    // 2 RADIUS + IMAGE_MARCH_AHEAD - 1 with #pragma unroll:
    //   - while k < IMAGE_MARCH_ROWS + 2 RADIUS, load input row y = first_y -
    //     RADIUS + k into slot k % (IMAGE_MARCH_AHEAD + 1): own at column
    //     x - RADIUS, and for lanes < 2 RADIUS halo at x - RADIUS + 32
    //     (clamped_pixel, with BOUNDARY: a constant, so each kernel keeps
    //     only its boundary's code);
    //   - from k = IMAGE_MARCH_AHEAD on, use row r = k - IMAGE_MARCH_AHEAD:
    //     __syncwarp(), store its own pixel at row_buffer[lane] (a halo
    //     lane its halo pixel at [32 + lane] too), __syncwarp(); filter
    //     along x, the sum of row_constant[dx] * row_buffer[lane + dx];
    //     shift the window down one place (window[d] = window[d + 1]) and
    //     put the sum at its end;
    //   - once r >= 2 RADIUS the window is full: output row y = first_y + r
    //     - 2 RADIUS is the sum of column_constant[dy] * window[dy]; store
    //     it where x < width and y < height.
    (void)in, (void)out, (void)width, (void)height;
}

/* ------------------------------------------------------------- histogram */

/* Stage 5: every byte one atomicAdd on its global bin. */
__global__ void histogram_global(const unsigned char *__restrict__ data, size_t n,
                                 unsigned int *bins)
{
    // TODO 10 (stage 5): a grid-stride loop over the n bytes (its index a
    // size_t: n may pass 2^31), one atomicAdd(&bins[byte], 1u) each.
    (void)data, (void)n, (void)bins;
}

/* Stage 6: each block counts its bytes into its own bins in shared memory,
 * where an atomic costs a few cycles and only the block's threads contend,
 * then adds each bin to the global one once. */
__global__ void histogram_private(const unsigned char *__restrict__ data, size_t n,
                                  unsigned int *bins)
{
    // TODO 11 (stage 6): a shared array of IMAGE_BINS counters: clear it,
    // wait, count the block's bytes of stage 5's loop into it with shared
    // atomics, wait until every thread of the block has counted, then add
    // each nonzero bin to bins[] with one global atomicAdd.
    (void)data, (void)n, (void)bins;
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
    // TODO 12 (stage 7): a shared array of IMAGE_BINS * HISTOGRAM_COPIES
    // counters, a copy of the bins per lane (given.cuh): lane l = threadIdx.x
    // % HISTOGRAM_COPIES counts byte v at counts[v * HISTOGRAM_COPIES + l].
    // Clear all of it, wait. Read the data as uint4 from the first address
    // that is a multiple of 16: the head bytes before it (thread i takes
    // byte i) and the tail after the last whole chunk one by one. A chunk
    // whose 16 bytes are all equal (all four words equal to its first byte
    // times 0x01010101) is one shared atomicAdd of 16; any other chunk, one
    // atomicAdd of 1 per byte, into the thread's own copy. Wait until every
    // thread of the block has counted, then thread b adds the 32 copies of
    // bin b (starting at copy b % 32, so that a warp's reads fall in 32
    // different banks) and adds the sum, when it is not 0, to bins[b].
    (void)data, (void)n, (void)bins;
}
