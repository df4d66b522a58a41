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
 *   4  conv, separable and coarsened: a row pass then a column pass in one
 *      kernel, each thread IMAGE_COARSEN outputs of a column in registers
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

/* Stage 4: a separable mask costs 2 (2r + 1) taps a pixel instead of
 * (2r + 1)^2. The block's outputs are 32 x 32 pixels (each thread four of
 * its column); it loads their input tile with its halo, filters every row
 * of it along x into shared memory, then each thread filters its column
 * along y, keeping its four sums in registers, so that each value of the
 * row pass is read once for all the outputs it feeds. */
__global__ void conv_separable(const float *__restrict__ in, float *__restrict__ out, int width,
                               int height, int radius, int boundary)
{
    // TODO 8 (stage 4): the block's outputs start at (blockIdx.x *
    // IMAGE_TILE_X, blockIdx.y * IMAGE_TILE_Y * IMAGE_COARSEN). Declare two
    // shared arrays: `tile`, their input tile with its halo, loaded as in
    // stage 2 (IMAGE_TILE_Y * IMAGE_COARSEN + 2 radius rows), and `rows`,
    // IMAGE_TILE_X wide, where each row of the tile goes filtered along x
    // with row_constant; wait after each of the two. Then thread (tx, ty)
    // computes the outputs of rows ty * IMAGE_COARSEN + c (c = 0 ...
    // IMAGE_COARSEN - 1) of column tx: row k of `rows` adds
    // column_constant[k - c] times its value to sum c. Store the sums that
    // lie in the image.
    (void)in, (void)out, (void)width, (void)height, (void)radius, (void)boundary;
}

/* ------------------------------------------------------------- histogram */

/* Stage 5: every byte one atomicAdd on its global bin. */
__global__ void histogram_global(const unsigned char *__restrict__ data, size_t n,
                                 unsigned int *bins)
{
    // TODO 9 (stage 5): a grid-stride loop over the n bytes (its index a
    // size_t: n may pass 2^31), one atomicAdd(&bins[byte], 1u) each.
    (void)data, (void)n, (void)bins;
}

/* Stage 6: each block counts its bytes into its own bins in shared memory,
 * where an atomic costs a few cycles and only the block's threads contend,
 * then adds each bin to the global one once. */
__global__ void histogram_private(const unsigned char *__restrict__ data, size_t n,
                                  unsigned int *bins)
{
    // TODO 10 (stage 6): a shared array of IMAGE_BINS counters: clear it,
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
    // TODO 11 (stage 7): a shared array of IMAGE_BINS * HISTOGRAM_COPIES
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
