/*
 * Lab 11: the code given for every stage (the skeleton and the reference
 * both include it at their top): where the masks live, the boundary
 * conditions, and the host side: stage names, each stage's grid and
 * launch, and the argument checks. The kernels and the two mask uploads
 * are written in kernels.cu, which comes after this file, so it declares
 * each of them, "written in kernels.cu".
 */
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------ the masks */

/* Stage 0's mask: an array in global memory, which the kernel gets as a
 * pointer (image_convolve copies the host's mask into it). */
__device__ float mask_global[IMAGE_MAX_TAPS];
/* Stages 1-3: the mask in constant memory, 64 KiB that every SM caches and
 * that serves one address to a whole warp in one go (a broadcast). */
__constant__ float mask_constant[IMAGE_MAX_TAPS];
/* Stage 4: the two masks of a separable one. */
__constant__ float row_constant[IMAGE_MAX_SIDE];
__constant__ float column_constant[IMAGE_MAX_SIDE];

/* ------------------------------------------------- boundary conditions */

__device__ __forceinline__ int clamp_to(int c, int n)
{
    return c < 0 ? 0 : c >= n ? n - 1 : c;
}

/* Pixel (x, y) of the image, or what the boundary condition puts there
 * when (x, y) lies outside it (lab.h): 0, or the nearest pixel. */
__device__ __forceinline__ float pixel_or_boundary(const float *__restrict__ in, int x, int y,
                                                   int width, int height, int boundary)
{
    if (x >= 0 && x < width && y >= 0 && y < height)
        return in[y * width + x];
    if (boundary == IMAGE_ZERO)
        return 0.0f;
    return in[clamp_to(y, height) * width + clamp_to(x, width)];
}

/* ------------------------------------------------ written in kernels.cu */

// The convolution stages: each thread (stage 4: each lane of a warp's
// march) writes the output pixels it owns. Stage 4's radius is a template
// parameter (kernels.cu says why): image_convolve_separable launches the
// kernel of the mask's radius.
__global__ void conv_naive(const float *__restrict__ in, float *__restrict__ out, int width,
                           int height, const float *__restrict__ mask, int radius, int boundary);
__global__ void conv_constant(const float *__restrict__ in, float *__restrict__ out, int width,
                              int height, int radius, int boundary);
__global__ void conv_tile_halo(const float *__restrict__ in, float *__restrict__ out, int width,
                               int height, int radius, int boundary);
__global__ void conv_tile_cached_halo(const float *__restrict__ in, float *__restrict__ out,
                                      int width, int height, int radius, int boundary);
template <int RADIUS, int BOUNDARY>
__global__ void conv_separable(const float *__restrict__ in, float *__restrict__ out, int width,
                               int height);
// The histogram stages: add the counts of their bytes to bins (zeroed
// before the launch). Stage 7's shared bins are HISTOGRAM_COPIES copies of
// the IMAGE_BINS bins, one per lane of a warp: bin b of lane l's copy is
// word b * HISTOGRAM_COPIES + l, in shared-memory bank l (32 banks of 4
// bytes), so that the 32 lanes of a warp never count into the same bank.
#define HISTOGRAM_COPIES 32
__global__ void histogram_global(const unsigned char *__restrict__ data, size_t n,
                                 unsigned int *bins);
__global__ void histogram_private(const unsigned char *__restrict__ data, size_t n,
                                  unsigned int *bins);
__global__ void histogram_aggregated(const unsigned char *__restrict__ data, size_t n,
                                     unsigned int *bins);

// Host: copy `taps` floats of a mask into mask_constant, and a separable
// mask's `side` taps into row_constant and column_constant.
static void copy_mask_to_constant(const float *mask, int taps);
static void copy_separable_to_constant(const float *row, const float *column, int side);

/* ------------------------------------------------------------ host side */

static const char *const stage_names[IMAGE_STAGES] = {
    "conv, naive, mask in global memory",
    "conv, mask in constant memory",
    "conv, shared tile with halo",
    "conv, shared tile, halo from the cache",
    "conv, separable, a march per warp",
    "histogram, global atomics",
    "histogram, privatized in shared memory",
    "histogram, a copy per lane, 16 bytes a load"};

const char *image_stage_name(int stage)
{
    return stage >= 0 && stage < IMAGE_STAGES ? stage_names[stage] : "no such stage";
}

const char *image_boundary_name(int boundary)
{
    return boundary == IMAGE_ZERO    ? "zero"
           : boundary == IMAGE_CLAMP ? "clamp"
                                     : "no such boundary condition";
}

static unsigned blocks_for(long long items, long long per_block)
{
    return (unsigned)((items + per_block - 1) / per_block);
}

/* The naive stages' block: rows of 32 threads (a warp reads 32
 * neighbouring pixels of a row), as many rows as the benchmark's --block
 * asks for. */
static int naive_block_threads = IMAGE_TILE_X * IMAGE_TILE_Y;

void image_set_naive_block(int threads)
{
    if (threads < 32 || threads > 1024 || threads % 32 != 0)
        wb_fail("image_set_naive_block(%d): a multiple of 32, at most 1024", threads);
    naive_block_threads = threads;
}

/* The blocks a stage's grid has in y: CUDA allows 65535. */
static void check_grid_rows(const char *caller, dim3 grid, int height)
{
    if (grid.y > 65535)
        wb_fail("%s: %d rows would need %u blocks in y, more than the 65535 CUDA allows",
                caller, height, grid.y);
}

/* A mask is uploaded only when it differs from the one uploaded last to
 * the same place: a call then costs its kernel alone, as a library's
 * would (the upload waits for the kernels before it). One slot per place:
 * global memory, constant memory, the separable pair. */
enum { MASK_IN_GLOBAL, MASK_IN_CONSTANT, MASK_SEPARABLE, MASK_PLACES };
static float uploaded[MASK_PLACES][IMAGE_MAX_TAPS + IMAGE_MAX_SIDE];
static int uploaded_count[MASK_PLACES];

static bool mask_is_new(int place, const float *taps, int count, const float *more,
                        int more_count)
{
    size_t head = sizeof(float) * (size_t)count, tail = sizeof(float) * (size_t)more_count;
    if (uploaded_count[place] == count + more_count &&
        memcmp(uploaded[place], taps, head) == 0 &&
        (!more || memcmp(uploaded[place] + count, more, tail) == 0))
        return false;
    memcpy(uploaded[place], taps, head);
    if (more)
        memcpy(uploaded[place] + count, more, tail);
    uploaded_count[place] = count + more_count;
    return true;
}

static void check_image(const char *caller, int boundary, const float *d_in, const float *d_out,
                        int width, int height, int radius)
{
    if (boundary != IMAGE_ZERO && boundary != IMAGE_CLAMP)
        wb_fail("%s: boundary condition %d does not exist (IMAGE_ZERO or IMAGE_CLAMP)", caller,
                boundary);
    if (radius < 1 || radius > IMAGE_MAX_RADIUS)
        wb_fail("%s: radius %d: the mask's radius must be 1 to %d", caller, radius,
                IMAGE_MAX_RADIUS);
    if (width < 1 || height < 1)
        wb_fail("%s: an image of %d x %d pixels: both sides must be at least 1", caller, width,
                height);
    if ((int64_t)width * height > INT32_MAX)
        wb_fail("%s: %d x %d pixels are more than the 2^31 - 1 an int indexes", caller, width,
                height);
    if (!d_in || !d_out)
        wb_fail("%s: a buffer is NULL (d_in = %p, d_out = %p)", caller, (const void *)d_in,
                (const void *)d_out);
    if (d_in == d_out)
        wb_fail("%s: d_in and d_out are the same buffer: a pixel's neighbours must still be "
                "the input's when it is computed", caller);
}

void image_convolve(int stage, int boundary, const float *d_in, float *d_out, int width,
                    int height, const float *mask, int radius)
{
    if (stage == IMAGE_SEPARABLE_STAGE)
        wb_fail("image_convolve: stage %d takes a separable mask: call "
                "image_convolve_separable", stage);
    if (stage < 0 || stage >= IMAGE_SEPARABLE_STAGE)
        wb_fail("image_convolve: stage %d does not exist (the convolution stages with any mask "
                "are 0 to %d)", stage, IMAGE_SEPARABLE_STAGE - 1);
    check_image("image_convolve", boundary, d_in, d_out, width, height, radius);
    if (!mask)
        wb_fail("image_convolve: the mask is NULL");
    int side = 2 * radius + 1, taps = side * side;
    bool naive = stage <= 1;
    dim3 block = naive ? dim3(32, naive_block_threads / 32) : dim3(IMAGE_TILE_X, IMAGE_TILE_Y);
    dim3 grid(blocks_for(width, block.x), blocks_for(height, block.y));
    check_grid_rows("image_convolve", grid, height);
    if (stage == 0) {
        if (mask_is_new(MASK_IN_GLOBAL, mask, taps, NULL, 0))
            CUDA_CHECK(cudaMemcpyToSymbol(mask_global, mask, sizeof(float) * taps));
        float *mask_address;
        CUDA_CHECK(cudaGetSymbolAddress((void **)&mask_address, mask_global));
        conv_naive<<<grid, block>>>(d_in, d_out, width, height, mask_address, radius, boundary);
    } else {
        if (mask_is_new(MASK_IN_CONSTANT, mask, taps, NULL, 0))
            copy_mask_to_constant(mask, taps);
        if (stage == 1)
            conv_constant<<<grid, block>>>(d_in, d_out, width, height, radius, boundary);
        else if (stage == 2)
            conv_tile_halo<<<grid, block>>>(d_in, d_out, width, height, radius, boundary);
        else
            conv_tile_cached_halo<<<grid, block>>>(d_in, d_out, width, height, radius, boundary);
    }
    CUDA_CHECK_LAUNCH();
}

/* Stage 4's kernel of one radius, for either boundary: the boundary is a
 * template parameter too, so that each kernel holds only its own
 * boundary's code (kernels.cu says what that is worth). */
template <int RADIUS>
static void launch_separable(int boundary, dim3 grid, dim3 block, const float *d_in,
                             float *d_out, int width, int height)
{
    if (boundary == IMAGE_ZERO)
        conv_separable<RADIUS, IMAGE_ZERO><<<grid, block>>>(d_in, d_out, width, height);
    else
        conv_separable<RADIUS, IMAGE_CLAMP><<<grid, block>>>(d_in, d_out, width, height);
}

void image_convolve_separable(int boundary, const float *d_in, float *d_out, int width,
                              int height, const float *row, const float *column, int radius)
{
    check_image("image_convolve_separable", boundary, d_in, d_out, width, height, radius);
    if (!row || !column)
        wb_fail("image_convolve_separable: a mask is NULL (row = %p, column = %p)",
                (const void *)row, (const void *)column);
    int side = 2 * radius + 1;
    if (mask_is_new(MASK_SEPARABLE, row, side, column, side))
        copy_separable_to_constant(row, column, side);
    dim3 grid(blocks_for(width, IMAGE_TILE_X),
              blocks_for(height, IMAGE_MARCH_WARPS * IMAGE_MARCH_ROWS)),
        block(IMAGE_TILE_X, IMAGE_MARCH_WARPS);
    check_grid_rows("image_convolve_separable", grid, height);
    // One kernel per radius: a lane's window holds the row pass of 2 radius
    // + 1 rows in registers, and an array is registers only when its size
    // is a constant (check_image has refused any other radius).
    static_assert(IMAGE_MAX_RADIUS == 4, "a case for every radius 1 ... IMAGE_MAX_RADIUS");
    switch (radius) {
    case 1: launch_separable<1>(boundary, grid, block, d_in, d_out, width, height); break;
    case 2: launch_separable<2>(boundary, grid, block, d_in, d_out, width, height); break;
    case 3: launch_separable<3>(boundary, grid, block, d_in, d_out, width, height); break;
    case 4: launch_separable<4>(boundary, grid, block, d_in, d_out, width, height); break;
    }
    CUDA_CHECK_LAUNCH();
}

/* A histogram stage's grid: as many blocks as fill every SM (the occupancy
 * API says how many fit on one), fewer when the bytes run out first; the
 * kernels walk the data in grid-sized strides. */
static unsigned histogram_grid(const void *kernel, size_t n, size_t bytes_per_thread)
{
    int device, sms, per_sm;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel,
                                                             IMAGE_HISTOGRAM_BLOCK, 0));
    size_t needed = (n + IMAGE_HISTOGRAM_BLOCK * bytes_per_thread - 1) /
                    (IMAGE_HISTOGRAM_BLOCK * bytes_per_thread);
    size_t full = (size_t)sms * (size_t)(per_sm > 0 ? per_sm : 1);
    return (unsigned)(needed < full ? needed : full);
}

void image_histogram(int stage, const unsigned char *d_data, size_t n, unsigned int *d_bins)
{
    if (stage < IMAGE_FIRST_HISTOGRAM_STAGE || stage >= IMAGE_STAGES)
        wb_fail("image_histogram: stage %d does not exist (the histogram stages are %d to %d)",
                stage, IMAGE_FIRST_HISTOGRAM_STAGE, IMAGE_STAGES - 1);
    if (!d_bins)
        wb_fail("image_histogram: d_bins is NULL");
    if (n > UINT32_MAX)
        wb_fail("image_histogram: %zu bytes: a bin counts at most 2^32 - 1 of them", n);
    if (n > 0 && !d_data)
        wb_fail("image_histogram: d_data is NULL");
    CUDA_CHECK(cudaMemsetAsync(d_bins, 0, sizeof(unsigned int) * IMAGE_BINS));
    if (n == 0)
        return;   // nothing to count: every bin stays 0
    // The tests fill every SM's shared memory with 0xFF before a launch they
    // check (wb_dirty_shared_memory), with the largest shared-memory share
    // of the SM. A kernel that asks for a smaller share makes the SM change
    // its split between L1 and shared memory, which can wipe what was there:
    // bins never cleared would then start at 0 and pass. The same share for
    // the histogram kernels keeps the 0xFF; it costs them nothing (they
    // stream their bytes once, L1 does not help).
    // Once per process (the setting stays), not in every timed call.
    static bool share_set = false;
    const void *kernels[] = {(const void *)histogram_private, (const void *)histogram_aggregated};
    for (int k = 0; k < 2 && !share_set; k++)
        CUDA_CHECK(cudaFuncSetAttribute(kernels[k], cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared));
    share_set = true;
    if (stage == 5)
        histogram_global<<<histogram_grid((const void *)histogram_global, n, 1),
                           IMAGE_HISTOGRAM_BLOCK>>>(d_data, n, d_bins);
    else if (stage == 6)
        histogram_private<<<histogram_grid((const void *)histogram_private, n, 1),
                            IMAGE_HISTOGRAM_BLOCK>>>(d_data, n, d_bins);
    else
        histogram_aggregated<<<histogram_grid((const void *)histogram_aggregated, n, 16),
                               IMAGE_HISTOGRAM_BLOCK>>>(d_data, n, d_bins);
    CUDA_CHECK_LAUNCH();
}
