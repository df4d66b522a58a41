/* Lab 11, image kernels: the entry points that the skeleton (labs/) and the
 * reference (solutions/) both define, and that test.c and bench.c call.
 *
 * The image. A float image of width x height pixels is stored row by row:
 * pixel (x, y) is at y * width + x, so x is the fast index.
 *
 * Convolution (stages 0-4). The mask has radius r (1 to IMAGE_MAX_RADIUS):
 * 2r + 1 taps on a side, stored row by row, tap (dx, dy) for dx, dy in
 * [-r, r] at (dy + r) * (2r + 1) + (dx + r). Output pixel (x, y) is
 *     out(x, y) = sum over dy, dx of mask(dx, dy) * in(x + dx, y + dy)
 * with the sum taken over dy (outer) and dx (inner), and where x + dx or
 * y + dy leaves the image the boundary condition says what "in" is there:
 *   IMAGE_ZERO   0 (the image sits in a frame of zeros);
 *   IMAGE_CLAMP  the nearest pixel of the image (the edge repeats).
 * A separable mask (stage 4) is given as two masks of 2r + 1 taps, a row
 * mask (along x) and a column mask (along y): mask(dx, dy) = column(dy) *
 * row(dx).
 *
 * Histogram (stages 5-7): n bytes counted into IMAGE_BINS bins, one per
 * byte value: bins[v] = the number of bytes equal to v.
 */
#ifndef LAB_IMAGE_H
#define LAB_IMAGE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stages 0 ... IMAGE_STAGES - 1, as in handouts/11-image.md: 0-3 are
 * convolutions with any mask, 4 with a separable one, 5-7 histograms. */
#define IMAGE_STAGES 8
#define IMAGE_SEPARABLE_STAGE 4
#define IMAGE_FIRST_HISTOGRAM_STAGE 5

#define IMAGE_ZERO 0
#define IMAGE_CLAMP 1
#define IMAGE_BOUNDARIES 2

#define IMAGE_MAX_RADIUS 4
#define IMAGE_MAX_SIDE (2 * IMAGE_MAX_RADIUS + 1)
#define IMAGE_MAX_TAPS (IMAGE_MAX_SIDE * IMAGE_MAX_SIDE)

/* Blocks of the convolution stages 0-3: IMAGE_TILE_X x IMAGE_TILE_Y
 * threads, one output pixel each. */
#define IMAGE_TILE_X 32
#define IMAGE_TILE_Y 8
/* Stage 4, a march: a block is IMAGE_MARCH_WARPS warps; each owns
 * IMAGE_TILE_X output columns and walks IMAGE_MARCH_ROWS output rows down
 * them, loading each input row IMAGE_MARCH_AHEAD steps before it uses it.
 * A block's outputs are IMAGE_TILE_X x (IMAGE_MARCH_WARPS *
 * IMAGE_MARCH_ROWS) pixels. */
#define IMAGE_MARCH_WARPS 4
#define IMAGE_MARCH_ROWS 16
#define IMAGE_MARCH_AHEAD 2

/* The histogram's bins, and the threads of a histogram block. */
#define IMAGE_BINS 256
#define IMAGE_HISTOGRAM_BLOCK 512

/* Threads per block of stages 0 and 1 from now on, in rows of 32 (a
 * multiple of 32, at most 1024; IMAGE_TILE_X x IMAGE_TILE_Y until set): the
 * benchmark's --block. The other stages' blocks are their tiles, fixed
 * above. */
void image_set_naive_block(int threads);

/* The lecture's name for a stage ("naive, mask in global memory", ...) and
 * for boundary conditions "zero" and "clamp". */
const char *image_stage_name(int stage);
const char *image_boundary_name(int boundary);

/* Stage 0-3 (`stage`) of the convolution of d_in (device, width x height
 * floats) with `mask` (host memory, (2 radius + 1)^2 floats, the layout
 * above) into d_out (device, as large, not d_in). Asynchronous: returns
 * after the launches, which it has checked. A stage, boundary condition,
 * radius or size that does not exist and NULL or identical buffers are
 * reported through wb_fail. */
void image_convolve(int stage, int boundary, const float *d_in, float *d_out, int width,
                    int height, const float *mask, int radius);

/* Stage 4: the same with the separable mask column(dy) * row(dx) (both in
 * host memory, 2 radius + 1 floats each), in one pass over the image. */
void image_convolve_separable(int boundary, const float *d_in, float *d_out, int width,
                              int height, const float *row, const float *column, int radius);

/* Stage 5-7 (`stage`): the histogram of the n bytes at d_data (device, any
 * address; n from 0 to 2^32 - 1, so that every count fits) into d_bins
 * (device, IMAGE_BINS counters), which it overwrites. Asynchronous, checked
 * as above. */
void image_histogram(int stage, const unsigned char *d_data, size_t n, unsigned int *d_bins);

#ifdef __cplusplus
}
#endif

#endif
