/*
 * Lab 11 tests: every convolution stage against a double-precision CPU
 * convolution, on images that are odd and not square (so that x and y
 * cannot be swapped unnoticed) and that cut every tile (a pixel, a row, a
 * tile plus one, primes), with both boundary conditions and radii 1 to 4;
 * every histogram stage against the CPU's counts on uniform bytes, on bytes
 * that are all one value (the contention case), on runs of equal bytes, on
 * sizes and start addresses that cut every load of 16 bytes, and past 2^31
 * bytes (an int index overflows); then the source rules for the barriers,
 * the argument checks of the given code, and one timing table.
 *
 * How each run is set up, so that the classic mistakes show:
 *   - the output image is filled with 3.39e38 (0x7F bytes): a pixel never
 *     written shows as that;
 *   - the input and output lie in guard zones of NaN (bytes: 0xFF), with
 *     unmapped memory after them: a read before the image feeds NaN into a
 *     pixel, a read past it faults, a write outside it shows in the guard
 *     check;
 *   - shared memory is filled with 0xFF bytes before each run
 *     (wb_dirty_shared_memory): a halo pixel read but never loaded is NaN,
 *     a shared histogram never cleared starts at 0xFFFFFFFF;
 *   - masks are random and lopsided, so that a mask turned round or with
 *     x and y swapped gives another image, which the test recognises.
 * Each failure names the pattern it recognises, then the classic mistakes
 * of the stage (handouts/11-image.md, "Classic mistakes").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_image.h"
#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(image, .timeout = 120);

/* The output's bytes before a run: 3.39e38, a value no convolution of
 * these inputs comes near and that is not NaN (NaN means a read of the
 * guard zone or of shared memory never stored). */
#define SENTINEL_BYTE 0x7F
#define UNWRITTEN_ABOVE 1e30

static const char *const classic_mistakes[IMAGE_STAGES] = {
    "conv_naive: x from the x dimension (blockIdx.x * blockDim.x + threadIdx.x) and pixel "
    "(x, y) at y * width + x (x and y swapped show on images that are not square), the guard "
    "x < width && y < height, every input read through pixel_or_boundary (not in[(y + dy) * "
    "width + x + dx]: that leaves the image), the tap mask[dy * side + dx] at input "
    "(x + dx - radius, y + dy - radius) (not turned round, not transposed)",
    "copy_mask_to_constant: cudaMemcpyToSymbol(mask_constant, mask, sizeof(float) * taps) (the "
    "size in bytes, the symbol itself, not its address); conv_constant: stage 0 with "
    "mask_constant, its index the same for every thread of a warp",
    "conv_tile_halo: the tile is (IMAGE_TILE_X + 2 radius) x (IMAGE_TILE_Y + 2 radius) pixels "
    "from (x0 - radius, y0 - radius) on (a halo on all four sides: off by one on one side "
    "leaves a row or column of the tile never stored), loaded by every thread of the block, "
    "also those past the image; __syncthreads() between the load and the first read (not inside "
    "an if); the tap at tile[threadIdx.y + dy][threadIdx.x + dx]",
    "conv_tile_cached_halo: the tile holds the block's own pixels only; a tap is read from it "
    "only when it lies in the tile (0 <= tx < IMAGE_TILE_X, 0 <= ty < IMAGE_TILE_Y, signed: "
    "threadIdx.x + dx - radius may be negative) and in the image (a tile cut by the image's "
    "edge holds 0 there, which the clamp boundary must not see), else through "
    "pixel_or_boundary; __syncthreads() after the tile is stored",
    "conv_separable: a warp's outputs are 32 columns from blockIdx.x * IMAGE_TILE_X and "
    "IMAGE_MARCH_ROWS rows from (blockIdx.y * IMAGE_MARCH_WARPS + threadIdx.y) * "
    "IMAGE_MARCH_ROWS; it walks the IMAGE_MARCH_ROWS + 2 RADIUS input rows from RADIUS above "
    "them, each lane loading its pixel at column x - RADIUS and lanes < 2 RADIUS also the one "
    "32 further (clamped_pixel: column and row clamped into the image, 0 outside it for the "
    "zero boundary); each row stored in the warp's row buffer between two __syncwarp()s, "
    "filtered along x with row_constant[dx] * row_buffer[lane + dx], pushed at the end of the "
    "window (window[d] = window[d + 1]: the oldest row at index 0 meets column_constant[0]); "
    "an output written only once the window is full (from input row 2 RADIUS of the march "
    "on), and only where x < width and y < height; copy_separable_to_constant: row into "
    "row_constant, column into column_constant",
    "histogram_global: a grid-stride loop (i += gridDim.x * blockDim.x) with a size_t index, "
    "atomicAdd(&bins[data[i]], 1u) (a plain bins[data[i]]++ loses counts)",
    "histogram_private: the shared bins cleared before counting, a __syncthreads() after the "
    "clear and one after the counting, before the merge (a bin merged while other warps still "
    "count loses their counts), shared atomics for the counting, every bin merged with a global "
    "atomicAdd",
    "histogram_aggregated: all IMAGE_BINS * HISTOGRAM_COPIES shared counters cleared (every "
    "lane's copy, not IMAGE_BINS of them), stage 6's two barriers; each thread counts into its "
    "lane's copy, byte v at counts[v * HISTOGRAM_COPIES + threadIdx.x % HISTOGRAM_COPIES] (with "
    "threadIdx.x in place of the lane the index runs past the array); a chunk counted as one "
    "atomic of 16 only when all four of its words are its first byte repeated, any other byte "
    "by byte, all four words of the uint4; the head bytes before the first 16-byte boundary and "
    "the tail after the last whole chunk each counted once (and only those), the chunks from "
    "data + head; the merge adding all HISTOGRAM_COPIES copies of a bin",
};

/* ---------------------------------------------------------- convolution */

typedef struct {
    int width, height;
} size2;

static size_t pixels_of(size2 s) { return (size_t)s.width * s.height; }

/* A lopsided random mask of the radius, from the test's stream: no two taps
 * alike, so that a mask read in another order gives another image. */
static void random_mask(float *mask, int taps, const char *stream)
{
    wb_rng rng = wb_rng_for(stream);
    wb_fill_floats(mask, (size_t)taps, -1.0f, 1.0f, &rng);
}

/* The mask turned round (180 degrees: the classic convolution against the
 * correlation of lab.h) and with x and y swapped. */
static void turned_mask(const float *mask, int side, float *turned)
{
    for (int k = 0; k < side * side; k++)
        turned[k] = mask[side * side - 1 - k];
}

/* The mask upside down (its rows in reverse order) or left to right: a
 * separable mask's column or row mask turned round alone. */
static void flipped_mask(const float *mask, int side, bool upside_down, float *flipped)
{
    for (int dy = 0; dy < side; dy++)
        for (int dx = 0; dx < side; dx++)
            flipped[dy * side + dx] = upside_down ? mask[(side - 1 - dy) * side + dx]
                                                  : mask[dy * side + side - 1 - dx];
}

static void transposed_mask(const float *mask, int side, float *transposed)
{
    for (int dy = 0; dy < side; dy++)
        for (int dx = 0; dx < side; dx++)
            transposed[dx * side + dy] = mask[dy * side + dx];
}

/* A pixel is right within float rounding of its sum: |error| below 1e-5
 * times the sum of the mask's magnitudes (the inputs are in [0, 1)). */
static double tolerance_of(const float *mask, int taps)
{
    double magnitude = 0.0;
    for (int k = 0; k < taps; k++)
        magnitude += fabs(mask[k]);
    return 1e-5 * magnitude;
}

static bool pixel_ok(float got, double expected, double tolerance)
{
    return fabs((double)got - expected) <= tolerance;   /* false for NaN */
}

static size_t bad_pixels(const float *got, const double *expected, size_t n, double tolerance)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += !pixel_ok(got[i], expected[i], tolerance);
    return bad;
}

/* Within `band` pixels of a piece's first or last pixel on an axis cut
 * into pieces of `piece`, or of the axis' last pixel. */
static bool near_piece_edge(int c, int n, int piece, int band)
{
    int at = c % piece;
    return at < band || at >= piece - band || c >= n - band;
}

/* Every bad pixel of a run and what all of them have in common. A
 * pattern counts only where some pixel of the image lies outside it: in a
 * 1 x 1 image every pixel is on the edge, and says nothing. */
/* The four sides of a tile, in the order of tile_sides below. */
enum { TOP, BOTTOM, LEFT, RIGHT, SIDES };

typedef struct {
    size_t bad, unwritten, nan, first;
    bool all_image_edge, all_tile_edge, all_partial_tile, nan_tile_edge;
    bool all_halo_columns;
    int one_tile_side;   /* TOP ... RIGHT when every bad pixel is near that side; else -1 */
} census;

/* Where a pixel lies: on the image's edge (within the radius), near a
 * tile's edge, near one side of its tile (the taps that reach into the halo
 * on that side), in the last, partial tiles, and (stage 4) in the last
 * 2 radius columns of a warp's 32, whose row pass reads the pixels that the
 * halo lanes load 32 columns further. */
enum {
    IMAGE_EDGE, TILE_EDGE, TILE_TOP, TILE_BOTTOM, TILE_LEFT, TILE_RIGHT, PARTIAL_TILE,
    HALO_COLUMNS, PLACES
};

static void places_of(int stage, size2 s, int radius, int x, int y, bool *place)
{
    /* Stage 4's pieces are a warp's march: 32 columns, IMAGE_MARCH_ROWS rows. */
    int tile_y = stage == IMAGE_SEPARABLE_STAGE ? IMAGE_MARCH_ROWS : IMAGE_TILE_Y;
    place[IMAGE_EDGE] = x < radius || y < radius || x >= s.width - radius ||
                        y >= s.height - radius;
    place[TILE_EDGE] = near_piece_edge(x, s.width, IMAGE_TILE_X, radius) ||
                       near_piece_edge(y, s.height, tile_y, radius);
    place[TILE_TOP] = y % tile_y < radius;
    place[TILE_BOTTOM] = y % tile_y >= tile_y - radius || y >= s.height - radius;
    place[TILE_LEFT] = x % IMAGE_TILE_X < radius;
    place[TILE_RIGHT] = x % IMAGE_TILE_X >= IMAGE_TILE_X - radius || x >= s.width - radius;
    place[PARTIAL_TILE] = (s.width > IMAGE_TILE_X && x >= s.width / IMAGE_TILE_X * IMAGE_TILE_X) ||
                          (s.height > tile_y && y >= s.height / tile_y * tile_y);
    place[HALO_COLUMNS] = x % IMAGE_TILE_X >= IMAGE_TILE_X - 2 * radius;
}

static census count_bad_pixels(int stage, size2 s, int radius, const float *got,
                               const double *expected, double tolerance)
{
    census c = {0, 0, 0, 0, true, true, true, true, true, -1};
    bool all_bad[PLACES], whole_image[PLACES];
    for (int p = 0; p < PLACES; p++)
        all_bad[p] = whole_image[p] = true;
    for (size_t i = 0; i < pixels_of(s); i++) {
        bool place[PLACES];
        places_of(stage, s, radius, (int)(i % (size_t)s.width), (int)(i / (size_t)s.width),
                  place);
        for (int p = 0; p < PLACES; p++)
            whole_image[p] &= place[p];
        if (pixel_ok(got[i], expected[i], tolerance))
            continue;
        if (c.bad++ == 0)
            c.first = i;
        for (int p = 0; p < PLACES; p++)
            all_bad[p] &= place[p];
        if (isnan(got[i])) {
            c.nan++;
            c.nan_tile_edge &= place[TILE_EDGE];
        } else if (fabsf(got[i]) > UNWRITTEN_ABOVE) {
            c.unwritten++;
        }
    }
    c.all_image_edge = all_bad[IMAGE_EDGE] && !whole_image[IMAGE_EDGE];
    c.all_tile_edge = all_bad[TILE_EDGE] && !whole_image[TILE_EDGE];
    for (int side = TOP; side < SIDES; side++)
        if (all_bad[TILE_TOP + side] && !whole_image[TILE_TOP + side])
            c.one_tile_side = c.one_tile_side == -1 ? side : SIDES;   /* SIDES: more than one */
    if (c.one_tile_side == SIDES)
        c.one_tile_side = -1;
    c.all_partial_tile = all_bad[PARTIAL_TILE] && !whole_image[PARTIAL_TILE];
    c.nan_tile_edge &= !whole_image[TILE_EDGE];
    c.all_halo_columns = all_bad[HALO_COLUMNS] && !whole_image[HALO_COLUMNS];
    return c;
}

/* What the convolution of the same input with another mask or boundary
 * condition gives, to recognise a result as that. */
static bool result_is(const float *got, const float *in, size2 s, int boundary,
                      const float *mask, int radius, double tolerance)
{
    size_t n = pixels_of(s);
    double *other = malloc(sizeof(double) * n);
    cr_assert(other, "out of host memory");
    image_cpu_convolve(boundary, in, other, s.width, s.height, mask, radius);
    bool same = bad_pixels(got, other, n, tolerance) == 0;
    free(other);
    return same;
}

/* Whether got is the right result moved: pixel (x, y) holding what belongs
 * at (x + shift_x, y + shift_y), wherever that lies in the image. */
static bool result_is_shifted(const float *got, const double *expected, size2 s, int shift_x,
                              int shift_y, double tolerance)
{
    size_t compared = 0, same = 0;
    for (int y = 0; y + shift_y < s.height; y++)
        for (int x = 0; x + shift_x < s.width; x++, compared++)
            same += pixel_ok(got[(size_t)y * s.width + x],
                             expected[(size_t)(y + shift_y) * s.width + x + shift_x], tolerance);
    return compared > 0 && same == compared;
}

/* One sentence naming what the wrong image looks like; expected: the
 * right result, the CPU's. */
static const char *diagnose(int stage, int boundary, size2 s, int radius, const census *c,
                            const float *got, const double *expected, const float *in,
                            const float *mask, double tolerance)
{
    int side = 2 * radius + 1;
    float other[IMAGE_MAX_TAPS];
    if (c->unwritten == c->bad && c->bad == pixels_of(s))
        return "no pixel was written (the output still holds the 3.39e38 it was filled "
               "with): the kernel stores nothing yet";
    if (c->unwritten)
        return "pixels were never written (they still hold the 3.39e38 the output was filled "
               "with): a thread that owns a pixel did not store it (the guard must be x < width "
               "&& y < height, not stricter; in stage 4 every one of the warp's IMAGE_MARCH_ROWS "
               "rows, the window's last row too), or x and y swapped (pixel (x, y) is at y * width "
               "+ x, with x along threadIdx.x)";
    bool tiled = stage >= 2;   /* stages with a tile in shared memory */
    if (stage == IMAGE_SEPARABLE_STAGE && c->all_halo_columns)
        return "only pixels in the last 2 radius columns of a warp's 32 are wrong: their row "
               "pass reads row_buffer[32 ... 31 + 2 radius], the pixels that lanes 0 ... 2 radius "
               "- 1 load 32 columns right of their first and store at row_buffer[32 + lane] "
               "(the halo lanes' second pixel: not loaded, not stored, or, where the pixels are "
               "NaN, read before they are stored, a missing __syncwarp() after the store)";
    if (tiled && c->nan && c->nan_tile_edge && c->one_tile_side == BOTTOM)
        return "NaN in the last rows of tiles: the halo below them was never loaded, so those "
               "taps read shared memory nobody stored (NaN before the run). The tile is "
               "IMAGE_TILE_Y + 2 radius rows high (the halo on both sides): a bound off by one "
               "or by radius on that side";
    if (tiled && c->nan && c->nan_tile_edge)
        return "NaN on the edges of tiles only: a halo not loaded (shared memory nobody stored "
               "was NaN before the run), or read before it was stored (a missing "
               "__syncthreads() between the tile load and its use). The halo is radius pixels "
               "wide on each of the four sides";
    if (c->nan)
        return "NaN pixels: a read of shared memory never stored (a tile not loaded, a "
               "missing __syncthreads() after the load) or of the guard zone before the "
               "image (an index below 0: a neighbour outside the image must come from "
               "pixel_or_boundary)";
    if (result_is(got, in, s, boundary == IMAGE_ZERO ? IMAGE_CLAMP : IMAGE_ZERO, mask, radius,
                  tolerance))
        return boundary == IMAGE_ZERO
                   ? "the result is the clamp boundary's: outside the image the zero boundary "
                     "reads 0, not the nearest pixel"
                   : "the result is the zero boundary's: outside the image the clamp boundary "
                     "reads the nearest pixel, not 0";
    turned_mask(mask, side, other);
    if (result_is(got, in, s, boundary, other, radius, tolerance))
        return "the result is the convolution with the mask turned round (180 degrees): tap "
               "mask[dy * side + dx] multiplies the input at (x + dx - radius, y + dy - "
               "radius), not (x - dx + radius, ...)";
    transposed_mask(mask, side, other);
    if (result_is(got, in, s, boundary, other, radius, tolerance))
        return stage == IMAGE_SEPARABLE_STAGE
                   ? "the result is the convolution with x and y of the mask swapped: the row "
                     "mask filters along x (within a row), the column mask along y"
                   : "the result is the convolution with x and y of the mask swapped: tap "
                     "(dx, dy) is mask[dy * side + dx], dy the row";
    if (stage == IMAGE_SEPARABLE_STAGE) {
        flipped_mask(mask, side, true, other);
        if (result_is(got, in, s, boundary, other, radius, tolerance))
            return "the result is the convolution with the column mask upside down: the window "
                   "must hold the oldest (top) row at index 0, where it meets "
                   "column_constant[0]: shift it toward index 0 (window[d] = window[d + 1]) "
                   "and put the newest row at its end";
        flipped_mask(mask, side, false, other);
        if (result_is(got, in, s, boundary, other, radius, tolerance))
            return "the result is the convolution with the row mask turned round: "
                   "row_buffer[lane + dx] (the pixel dx - radius columns from the lane's own) "
                   "meets row_constant[dx]";
    }
    /* The taps counted from the pixel itself, not radius before it: along
     * both axes, or (stage 4's passes) along one. */
    static const struct {
        int x, y;
        const char *centre;
    } shifts[] = {{1, 1, "(x + radius, y + radius)"}, {1, 0, "(x + radius, y)"},
                  {0, 1, "(x, y + radius)"}};
    for (size_t k = 0; k < sizeof shifts / sizeof shifts[0]; k++) {
        if (result_is_shifted(got, expected, s, shifts[k].x * radius, shifts[k].y * radius,
                              tolerance)) {
            static char text[400];
            snprintf(text, sizeof text,
                     "the result is the right one moved: pixel (x, y) holds the convolution "
                     "centred on %s. The taps start radius pixels before the pixel: tap (dx, "
                     "dy) reads the input at (x + dx - radius, y + dy - radius)%s",
                     shifts[k].centre,
                     stage == IMAGE_SEPARABLE_STAGE ? " (stage 4: each lane loads column "
                                                      "x - RADIUS; the march starts RADIUS rows "
                                                      "above its outputs)" : "");
            return text;
        }
    }
    if (c->all_image_edge)
        return stage == IMAGE_SEPARABLE_STAGE
                   ? "only pixels within the mask's radius of the image's edge are wrong: the "
                     "taps outside the image are not the boundary condition's (clamped_pixel: "
                     "the column and the row clamped into the image, then 0 for the zero "
                     "boundary where the pixel itself lies outside)"
                   : "only pixels within the mask's radius of the image's edge are wrong: the "
                     "taps outside the image are not the boundary condition's (read them "
                     "through pixel_or_boundary)";
    if (c->all_partial_tile)
        return stage == 2
                   ? "only pixels of the last, partial tiles are wrong: the image is no multiple "
                     "of the tile, and only there do threads lie past the image. A guard (x < "
                     "width && y < height) that returns before the tile load lets them leave "
                     "without loading their share of the tile: keep every thread through the "
                     "load and the __syncthreads(), and guard only the store. Else that tile's "
                     "bounds are off (a tap in the tile but past the image is the boundary "
                     "condition's)"
                   : "only pixels of the last, partial tiles are wrong: the image is no multiple "
                     "of the tile, and that tile's loads or bounds are off (a tap that lies in "
                     "the tile but past the image is the boundary condition's, not what the "
                     "tile holds there)";
    /* Stage 2 loads its halo into the tile; stage 3 reads it from the cache. */
    if (stage == 2 && c->one_tile_side != -1) {
        static const struct {
            const char *pixels, *halo, *extent;
        } tile_sides[SIDES] = {
            {"first rows", "above", "IMAGE_TILE_Y + 2 radius rows high, from y0 - radius"},
            {"last rows", "below", "IMAGE_TILE_Y + 2 radius rows high, from y0 - radius"},
            {"first columns", "left of", "IMAGE_TILE_X + 2 radius columns wide, from x0 - radius"},
            {"last columns", "right of", "IMAGE_TILE_X + 2 radius columns wide, from x0 - radius"},
        };
        static char text[512];
        snprintf(text, sizeof text,
                 "only the %s of tiles are wrong (within the mask's radius of that side): the "
                 "halo %s them was never loaded, or loaded from the wrong place, so those taps "
                 "read whatever shared memory held. The tile is %s: a bound or a start off by "
                 "one or by radius on that side",
                 tile_sides[c->one_tile_side].pixels, tile_sides[c->one_tile_side].halo,
                 tile_sides[c->one_tile_side].extent);
        return text;
    }
    if (tiled && c->all_tile_edge)
        return "only pixels within the mask's radius of a tile's edge are wrong: the halo is "
               "not loaded from the right place (the tile starts at (x0 - radius, y0 - "
               "radius)), or a tap outside the tile is read from the tile";
    return "pixels are off by more than float rounding allows (a tap missing or counted twice, "
           "a mask uploaded only in part: cudaMemcpyToSymbol takes bytes)";
}

/* Buffers of one convolution size, reused by its runs. */
typedef struct {
    size2 s;
    float *in;       /* host, random in [0, 1) */
    float *d_in, *d_out;
    float *got;
} conv_case;

static conv_case conv_case_new(size2 s, const char *stream)
{
    conv_case k = {s, malloc(sizeof(float) * pixels_of(s)), NULL, NULL,
                   malloc(sizeof(float) * pixels_of(s))};
    cr_assert(k.in && k.got, "out of host memory");
    wb_rng rng = wb_rng_for(stream);
    wb_fill_floats(k.in, pixels_of(s), 0.0f, 1.0f, &rng);
    k.d_in = wb_guarded_malloc(sizeof(float) * pixels_of(s));
    k.d_out = wb_guarded_malloc(sizeof(float) * pixels_of(s));
    CUDA_CHECK(cudaMemcpy(k.d_in, k.in, sizeof(float) * pixels_of(s), cudaMemcpyHostToDevice));
    return k;
}

static void conv_case_free(conv_case *k)
{
    wb_guarded_free(k->d_in);
    wb_guarded_free(k->d_out);
    free(k->in);
    free(k->got);
}

/* Runs stage `stage` (row and column: stage 4's separable mask, whose
 * product is mask) and checks the output against the CPU's. */
static void check_conv_run(int stage, int boundary, conv_case *k, int radius, const float *mask,
                           const float *row, const float *column)
{
    size2 s = k->s;
    size_t n = pixels_of(s);
    char label[200], what[280];
    snprintf(label, sizeof label, "stage %d, %s, %d x %d, radius %d", stage,
             image_boundary_name(boundary), s.width, s.height, radius);
    snprintf(what, sizeof what, "stage %d (%s), %s boundary, image %d x %d, radius %d", stage,
             image_stage_name(stage), image_boundary_name(boundary), s.width, s.height, radius);
    CUDA_CHECK(cudaMemset(k->d_out, SENTINEL_BYTE, sizeof(float) * n));
    wb_dirty_shared_memory();   /* a halo pixel read but never loaded is NaN */
    if (stage == IMAGE_SEPARABLE_STAGE)
        image_convolve_separable(boundary, k->d_in, k->d_out, s.width, s.height, row, column,
                                 radius);
    else
        image_convolve(stage, boundary, k->d_in, k->d_out, s.width, s.height, mask, radius);
    char observed[280];
    snprintf(observed, sizeof observed, "%s: the output", label);
    wb_fetch(k->got, k->d_out, sizeof(float) * n, observed);
    snprintf(observed, sizeof observed, "%s: the input (does anything write it?)", label);
    wb_guarded_check(k->d_in, observed);
    snprintf(observed, sizeof observed, "%s: the output (is every store inside the image?)",
             label);
    wb_guarded_check(k->d_out, observed);

    double *expected = malloc(sizeof(double) * n);
    cr_assert(expected, "out of host memory");
    image_cpu_convolve(boundary, k->in, expected, s.width, s.height, mask, radius);
    double tolerance = tolerance_of(mask, (2 * radius + 1) * (2 * radius + 1));
    census c = count_bad_pixels(stage, s, radius, k->got, expected, tolerance);
    if (c.bad) {
        int x = (int)(c.first % (size_t)s.width), y = (int)(c.first / (size_t)s.width);
        const char *pattern =
            diagnose(stage, boundary, s, radius, &c, k->got, expected, k->in, mask, tolerance);
        cr_assert_fail("%s: %zu of %zu pixels wrong (%zu NaN, %zu never written); the first at "
                       "(x, y) = (%d, %d): %g, expected %g. %s. Classic mistakes at this "
                       "stage: %s " WB_SEED_HINT,
                       what, c.bad, n, c.nan, c.unwritten, x, y, (double)k->got[c.first],
                       expected[c.first], pattern, classic_mistakes[stage], wb_seed());
    }
    free(expected);
}

/* Images that are odd and not square and cut every tile: first a few that
 * are large enough for a failure to show its pattern (a tile's edge, the
 * image's edge, a partial tile), then a pixel, a single row or column, a
 * tile (32 x 8; stage 4's warp 32 x 16, its block 32 x 64) plus one, images
 * narrower than 32 and shorter than a warp's march, primes, masks wider
 * than the image. */
static const size2 sizes[] = {
    {100, 66}, {65, 17},  {33, 7},   {7, 33},    {1, 1},     {1, 9},    {9, 1},
    {3, 2},    {5, 7},    {31, 9},   {40, 70},   {257, 35},  {129, 263}, {1001, 97},
};
static const int radii[] = {1, 2, 3, 4};

static void check_stage(int stage, int boundary)
{
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char stream[96];
        snprintf(stream, sizeof stream, "image %d x %d", sizes[i].width, sizes[i].height);
        conv_case k = conv_case_new(sizes[i], stream);
        for (size_t r = 0; r < sizeof radii / sizeof radii[0]; r++) {
            int radius = radii[r], side = 2 * radius + 1;
            float mask[IMAGE_MAX_TAPS], row[IMAGE_MAX_SIDE], column[IMAGE_MAX_SIDE];
            snprintf(stream, sizeof stream, "mask, radius %d", radius);
            if (stage == IMAGE_SEPARABLE_STAGE) {
                random_mask(row, side, stream);
                snprintf(stream, sizeof stream, "column mask, radius %d", radius);
                random_mask(column, side, stream);
                image_cpu_outer_mask(row, column, radius, mask);
            } else {
                random_mask(mask, side * side, stream);
            }
            check_conv_run(stage, boundary, &k, radius, mask, row, column);
        }
        conv_case_free(&k);
    }
}

/* About 1.7 million pixels, thousands of blocks (a race has its chances),
 * with the largest mask; under compute-sanitizer some thirty times fewer:
 * the tools check the pattern, not the count. */
static void check_large(int stage)
{
    size2 s = wb_under_sanitizer() ? (size2){259, 201} : (size2){1283, 1301};
    conv_case k = conv_case_new(s, "image, large");
    int radius = IMAGE_MAX_RADIUS, side = 2 * radius + 1;
    float mask[IMAGE_MAX_TAPS], row[IMAGE_MAX_SIDE], column[IMAGE_MAX_SIDE];
    random_mask(row, side, "large, row mask");
    random_mask(column, side, "large, column mask");
    if (stage == IMAGE_SEPARABLE_STAGE)
        image_cpu_outer_mask(row, column, radius, mask);
    else
        random_mask(mask, side * side, "large, mask");
    for (int boundary = 0; boundary < IMAGE_BOUNDARIES; boundary++)
        check_conv_run(stage, boundary, &k, radius, mask, row, column);
    conv_case_free(&k);
}

Test(image, stage0_zero) { check_stage(0, IMAGE_ZERO); }
Test(image, stage0_clamp) { check_stage(0, IMAGE_CLAMP); }
Test(image, stage0_large) { check_large(0); }
Test(image, stage1_zero) { check_stage(1, IMAGE_ZERO); }
Test(image, stage1_clamp) { check_stage(1, IMAGE_CLAMP); }
Test(image, stage1_large) { check_large(1); }
Test(image, stage2_zero) { check_stage(2, IMAGE_ZERO); }
Test(image, stage2_clamp) { check_stage(2, IMAGE_CLAMP); }
Test(image, stage2_large) { check_large(2); }
Test(image, stage3_zero) { check_stage(3, IMAGE_ZERO); }
Test(image, stage3_clamp) { check_stage(3, IMAGE_CLAMP); }
Test(image, stage3_large) { check_large(3); }
Test(image, stage4_zero) { check_stage(4, IMAGE_ZERO); }
Test(image, stage4_clamp) { check_stage(4, IMAGE_CLAMP); }
Test(image, stage4_large) { check_large(4); }

/* Constant memory serves one address to a warp at a time: a mask index
 * that differs between the threads of a warp (each starting at another
 * tap, say) gives the right image, 32 reads in turn where one would do.
 * Stage 1 must then not be much slower than stage 0, whose mask comes
 * through the L1 cache, which serves 32 addresses at once. A radius-4 mask
 * on 2048 x 2048 pixels: 81 mask reads per pixel, about a millisecond. On
 * the H200 the right stage 1 takes about as long as stage 0, and a
 * divergent one 4.5 to 5 times as long: the bound is 3 times, and each time
 * is the median of 9 runs, so that other processes sharing the GPU (a
 * grader's batch) cannot make a right stage 1 fail. */
typedef struct {
    int stage;
    float *d_in, *d_out, mask[IMAGE_MAX_TAPS];
} broadcast_job;

static void run_broadcast(void *context)
{
    broadcast_job *j = context;
    image_convolve(j->stage, IMAGE_ZERO, j->d_in, j->d_out, 2048, 2048, j->mask,
                   IMAGE_MAX_RADIUS);
}

Test(image, stage1_broadcast,
     .description = "stage 1 (mask in constant memory) at most 3 times stage 0's time, radius 4")
{
    const size_t n = (size_t)2048 * 2048;
    broadcast_job j;
    CUDA_CHECK(cudaMalloc((void **)&j.d_in, sizeof(float) * n));
    CUDA_CHECK(cudaMalloc((void **)&j.d_out, sizeof(float) * n));
    wb_rng rng = wb_rng_for("broadcast");
    wb_fill_floats_on_gpu(j.d_in, n, 0.0f, 1.0f, wb_rng_u64(&rng));
    random_mask(j.mask, IMAGE_MAX_TAPS, "broadcast mask");
    /* The image first: a fast stage 1 that computes nothing is no result. */
    conv_case small = conv_case_new((size2){67, 45}, "broadcast, check");
    check_conv_run(1, IMAGE_ZERO, &small, IMAGE_MAX_RADIUS, j.mask, NULL, NULL);
    conv_case_free(&small);
    double ms[2];
    for (j.stage = 0; j.stage <= 1; j.stage++) {
        char what[96];
        snprintf(what, sizeof what, "stage %d, 2048 x 2048, radius 4: median ms", j.stage);
        ms[j.stage] = wb_observe_double(what, wb_time_gpu(run_broadcast, &j, 1, 9).median_ms);
    }
    CUDA_CHECK(cudaFree(j.d_in));
    CUDA_CHECK(cudaFree(j.d_out));
    if (wb_under_sanitizer())
        return;   /* the tools' times say nothing about the GPU's */
    cr_assert(ms[1] <= 3.0 * ms[0],
              "stage 1 takes %.3f ms, stage 0 %.3f ms: more than 3 times as long with the mask "
              "in constant memory. The mask's index differs between the threads of a warp "
              "(divergent constant indexing: constant memory then serves the warp's 32 "
              "addresses one after the other); every thread must read tap dy * side + dx at "
              "the same time, the index depending on the loop only " WB_SEED_HINT,
              ms[1], ms[0], wb_seed());
}

/* ------------------------------------------------------------ histogram */

/* The n bytes at host start at `offset` bytes into their device buffer (a
 * start that is no multiple of 16 tests stage 7's head). */
/* Fewer counts than bytes, recognised as the histogram of the first or the
 * last got_total bytes only: the bytes after or before them never counted.
 * Writes the sentence that names it, or returns false. */
static bool describe_lost_bytes(const unsigned char *data, size_t n, const unsigned int *got,
                                long long got_total, char *text, size_t text_len)
{
    size_t counted = (size_t)got_total;
    unsigned int part[IMAGE_BINS];
    image_cpu_histogram(data, counted, part);
    if (memcmp(part, got, sizeof part) == 0) {
        snprintf(text, text_len, "fewer counts than bytes: counts were lost, exactly those of the "
                 "%zu bytes after the first %zu: the counting stops before n (one pass over the "
                 "grid's threads where a grid-stride loop, i += gridDim.x * blockDim.x, must run "
                 "until n; stage 7: the tail after the last whole chunk not counted)",
                 n - counted, counted);
        return true;
    }
    image_cpu_histogram(data + n - counted, counted, part);
    if (memcmp(part, got, sizeof part) == 0) {
        snprintf(text, text_len, "fewer counts than bytes: counts were lost, exactly those of the "
                 "first %zu bytes: the counting starts too late (stage 7: the head, the bytes "
                 "before the first 16-byte boundary, not counted)", n - counted);
        return true;
    }
    return false;
}

static void check_histogram(int stage, const unsigned char *data, size_t n, size_t offset,
                            const char *kind)
{
    char label[160], what[240];
    snprintf(label, sizeof label, "stage %d, %s, %zu bytes from offset %zu", stage, kind, n,
             offset);
    snprintf(what, sizeof what, "stage %d (%s), %s, %zu bytes starting %zu bytes into the "
             "buffer", stage, image_stage_name(stage), kind, n, offset);
    unsigned char *d_data = wb_guarded_malloc(n + offset);
    unsigned int *d_bins = wb_guarded_malloc(sizeof(unsigned int) * IMAGE_BINS);
    if (n > 0)
        CUDA_CHECK(cudaMemcpy(d_data + offset, data, n, cudaMemcpyHostToDevice));
    wb_poison_ints((int *)d_bins, IMAGE_BINS);
    wb_dirty_shared_memory();   /* a shared histogram never cleared starts at 0xFFFFFFFF */
    image_histogram(stage, d_data + offset, n, d_bins);
    unsigned int got[IMAGE_BINS], expected[IMAGE_BINS];
    char observed[240];
    snprintf(observed, sizeof observed, "%s: the bins", label);
    wb_fetch(got, d_bins, sizeof got, observed);
    snprintf(observed, sizeof observed, "%s: the bins (is every count inside them?)", label);
    wb_guarded_check(d_bins, observed);
    wb_guarded_free(d_bins);
    wb_guarded_free(d_data);
    image_cpu_histogram(data, n, expected);
    /* Shared counters not cleared start at 0xFFFFFFFF (-1): every block's
     * merge then adds -1 per counter not cleared, the same to every bin
     * that has such counters: all of them, or those past the part that was
     * cleared (stage 6's clear of IMAGE_BINS counters in stage 7 clears
     * bins 0-7). So: are the wrong bins the last ones, from some bin to bin
     * 255, at least 8 of them, all off by the same count? (A few bytes lost
     * or counted twice can leave a few bins off by one each.) Counted
     * modulo 2^32, as the GPU adds: a bin of 0 short by 32 reads 2^32 - 32,
     * which is 32 short. */
    long long got_total = 0, first = -1, delta = 0;
    int wrong = 0;
    bool same_delta = true;
    for (int b = 0; b < IMAGE_BINS; b++) {
        got_total += got[b];
        long long d = (int32_t)(got[b] - expected[b]);
        if (d == 0)
            continue;
        if (wrong++ == 0) {
            first = b;
            delta = d;
        }
        same_delta &= d == delta;
    }
    if (first < 0)
        return;
    same_delta &= wrong >= 8 && first + wrong == IMAGE_BINS;
    char lost[400];
    const char *pattern =
        got_total == 0 ? "every bin is 0: nothing was counted"
        : same_delta && delta < 0
            ? "the wrong bins are all short by the same count: each block's shared counters "
              "started at 0xFFFFFFFF (the shared histogram was not cleared before counting, or "
              "only part of it: stage 7 has IMAGE_BINS * HISTOGRAM_COPIES counters), and every "
              "block's merge added -1 for each counter of a bin not cleared"
        : same_delta
            ? "the wrong bins are all too high by the same count: the shared bins were not "
              "cleared and held an earlier run's counts"
        : got_total < (long long)n &&
                describe_lost_bytes(data, n, got, got_total, lost, sizeof lost)
            ? lost
        : got_total < (long long)n
            ? "fewer counts than bytes: counts were lost (a plain ++ or += instead of atomicAdd, "
              "in the counting or the merge; a bin merged before every thread of the block had "
              "counted, a missing __syncthreads() before the merge; a merge that adds only "
              "some of a bin's copies; bytes skipped: the head, the tail, a word of the uint4, "
              "or an index that overflows)"
        : got_total > (long long)n
            ? "more counts than bytes: bytes counted twice (a loop that steps by blockDim.x, "
              "not gridDim.x * blockDim.x: every block also counts the bytes of the blocks "
              "after it; the head or the tail counted by more threads than its bytes, or also "
              "as part of a chunk), or shared bins not cleared (they held an earlier kernel's "
              "leftovers)"
            : "as many counts as bytes, in the wrong bins: a byte counted under another value "
              "(a chunk counted as 16 of its first byte when not all its bytes are equal: all "
              "four words must be checked; a byte taken from the wrong position of its word; "
              "a copy's counter read by the merge under another bin than it was counted in)";
    cr_assert_fail("%s: bin %lld = %u, expected %u; %lld counts in all, expected %zu. %s. "
                   "Classic mistakes at this stage: %s " WB_SEED_HINT,
                   what, first, got[first], expected[first], got_total, n, pattern,
                   classic_mistakes[stage], wb_seed());
}

static unsigned char *random_bytes(size_t n, const char *stream)
{
    unsigned char *data = malloc(n ? n : 1);
    cr_assert(data, "out of host memory");
    wb_rng rng = wb_rng_for(stream);
    for (size_t i = 0; i < n; i++)
        data[i] = (unsigned char)wb_rng_int(&rng, 0, 255);
    return data;
}

/* Bytes uniform in 0 ... 255: little contention, every bin counted. */
static void check_uniform(int stage)
{
    static const size_t sizes_n[] = {1 << 20, (1 << 22) + 13};
    for (size_t i = 0; i < sizeof sizes_n / sizeof sizes_n[0]; i++) {
        unsigned char *data = random_bytes(sizes_n[i], "histogram, uniform");
        check_histogram(stage, data, sizes_n[i], 0, "uniform bytes");
        free(data);
    }
}

/* Every byte the same: all threads on one bin, the contention case; the
 * first and last bins, and one in between. */
static void check_one_value(int stage)
{
    static const int values[] = {0, 255, 0xA7};
    size_t n = wb_under_sanitizer() ? (1 << 16) + 5 : (1 << 20) + 5;
    unsigned char *data = malloc(n);
    cr_assert(data, "out of host memory");
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
        memset(data, values[v], n);
        char kind[64];
        snprintf(kind, sizeof kind, "every byte %d", values[v]);
        check_histogram(stage, data, n, 0, kind);
    }
    free(data);
}

/* Runs of equal bytes of random lengths (1 to 40): runs that cross words
 * and loads of 16 bytes, and end on them. */
static void check_runs(int stage)
{
    size_t n = (1 << 20) + 77;
    unsigned char *data = malloc(n);
    cr_assert(data, "out of host memory");
    wb_rng rng = wb_rng_for("histogram, runs");
    for (size_t i = 0; i < n;) {
        int value = wb_rng_int(&rng, 0, 255), length = wb_rng_int(&rng, 1, 40);
        for (int k = 0; k < length && i < n; k++)
            data[i++] = (unsigned char)value;
    }
    check_histogram(stage, data, n, 0, "runs of equal bytes");
    free(data);
}

/* No bytes, fewer than a load of 16, around a block's and a grid's share,
 * at starts that are no multiple of 16. */
static void check_histogram_sizes(int stage)
{
    static const size_t sizes_n[] = {0, 1, 2, 15, 16, 17, 31, 33, 255, 1000, 8191, 8193, 65537};
    static const size_t offsets[] = {0, 1, 7, 15};
    unsigned char *data = random_bytes(65537, "histogram, sizes");
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
        for (size_t i = 0; i < sizeof sizes_n / sizeof sizes_n[0]; i++)
            check_histogram(stage, data, sizes_n[i], offsets[o], "random bytes");
    free(data);
}

/* Past 2^31 bytes, where an int index (or an int n) overflows: byte i is
 * i % 256 (set with strided memsets, 2^23 bytes of each value), then a
 * random tail. Under compute-sanitizer 2^20 bytes: the tools check the
 * pattern of the accesses, which a smaller input has too. */
static void check_past_2_31(int stage)
{
    const size_t tail = 4096 + 5, rows = wb_under_sanitizer() ? 1 << 12 : (size_t)1 << 23;
    const size_t n = rows * IMAGE_BINS + tail;
    if (wb_device_info().global_mem_bytes < 2 * n)
        cr_skip_test("%zu bytes of input need more GPU memory than this GPU's %zu", n,
                     wb_device_info().global_mem_bytes);
    unsigned char *d_data;
    unsigned int *d_bins;
    CUDA_CHECK(cudaMalloc((void **)&d_data, n));
    CUDA_CHECK(cudaMalloc((void **)&d_bins, sizeof(unsigned int) * IMAGE_BINS));
    for (int v = 0; v < IMAGE_BINS; v++)
        CUDA_CHECK(cudaMemset2D(d_data + v, IMAGE_BINS, v, 1, rows));
    unsigned char *tail_bytes = random_bytes(tail, "histogram, past 2^31");
    CUDA_CHECK(cudaMemcpy(d_data + rows * IMAGE_BINS, tail_bytes, tail, cudaMemcpyHostToDevice));
    wb_poison_ints((int *)d_bins, IMAGE_BINS);
    image_histogram(stage, d_data, n, d_bins);
    unsigned int got[IMAGE_BINS], expected[IMAGE_BINS];
    char what[160];
    snprintf(what, sizeof what, "stage %d, %zu bytes (past 2^31): the bins", stage, n);
    wb_fetch(got, d_bins, sizeof got, what);
    CUDA_CHECK(cudaFree(d_data));
    CUDA_CHECK(cudaFree(d_bins));
    image_cpu_histogram(tail_bytes, tail, expected);
    free(tail_bytes);
    long long got_total = 0;
    for (int b = 0; b < IMAGE_BINS; b++) {
        expected[b] += (unsigned int)rows;
        got_total += got[b];
    }
    /* What the total says: none counted, some but no more than 2^31, or
     * another mistake (the other tests name those). */
    const char *pattern =
        got_total == 0
            ? "No byte was counted: n held in an int is negative past 2^31, so no loop ran; n "
              "and the indices into data are size_t"
        : got_total < (long long)n && got_total <= (1LL << 31)
            ? "Only part of the bytes was counted, no more than 2^31: the grid does not stride "
              "over the whole input (each thread loops i += gridDim.x * blockDim.x while i < "
              "n), or an int overflows (the index i, the stride or n held in an int; indices "
              "into data are size_t)"
            : "Counts are wrong on a large input";
    for (int b = 0; b < IMAGE_BINS; b++)
        cr_assert(got[b] == expected[b],
                  "%s: bin %d = %u, expected %u; %lld counts in all, expected %zu. %s. Classic "
                  "mistakes at this stage: %s " WB_SEED_HINT,
                  what, b, got[b], expected[b], got_total, n, pattern, classic_mistakes[stage],
                  wb_seed());
}

Test(image, stage5_uniform) { check_uniform(5); }
Test(image, stage5_one_value) { check_one_value(5); }
Test(image, stage5_runs) { check_runs(5); }
Test(image, stage5_sizes) { check_histogram_sizes(5); }
Test(image, stage5_past_2_31) { check_past_2_31(5); }
Test(image, stage6_uniform) { check_uniform(6); }
Test(image, stage6_one_value) { check_one_value(6); }
Test(image, stage6_runs) { check_runs(6); }
Test(image, stage6_sizes) { check_histogram_sizes(6); }
Test(image, stage6_past_2_31) { check_past_2_31(6); }
Test(image, stage7_uniform) { check_uniform(7); }
Test(image, stage7_one_value) { check_one_value(7); }
Test(image, stage7_runs) { check_runs(7); }
Test(image, stage7_sizes) { check_histogram_sizes(7); }
Test(image, stage7_past_2_31) { check_past_2_31(7); }

/* ---------------------------------------------------------- source rules */

/* A missing barrier in a tile often gives right answers on one GPU: the
 * warps of a block happen to run close together (handouts/11-image.md,
 * "Classic mistakes"; racecheck sees it). These tests read kernels.cu
 * (wb_test.h, "source rules") and need no GPU. */
WB_SOURCE_SUITE(image_source);

WB_SOURCE_RULES_TEST(image_source, stage2_barriers,
    {"conv_tile_halo", .barriers = 1, .shared = "__shared__", .protects = WB_READ_AFTER_WRITE,
     .why = "a __syncthreads() between storing the tile and reading it: without it a thread "
            "may read a pixel of the tile or its halo that another warp has not stored yet "
            "(the missing barrier between the tile load and its use)"},
    {"conv_tile_halo", .shared = "__shared__", .protects = WB_READ_BACK,
     .why = "the taps read the tile (and its halo) just stored: read from global memory "
            "again, the tile saves nothing"})
WB_SOURCE_RULES_TEST(image_source, stage3_barriers,
    {"conv_tile_cached_halo", .barriers = 1, .shared = "__shared__",
     .protects = WB_READ_AFTER_WRITE,
     .why = "a __syncthreads() between storing the tile and reading it: a thread reads its "
            "neighbours' pixels, which other warps store"},
    {"conv_tile_cached_halo", .shared = "__shared__", .protects = WB_READ_BACK,
     .why = "the taps inside the tile read it from shared memory, just stored (only the halo "
            "comes from the cache): read from global memory again, the tile saves nothing"})
/* Stage 4 has no block barrier: each warp reads only its own row buffer,
 * and two __syncwarp()s a row order its lanes. The source rules check where
 * __syncthreads() stands, not __syncwarp(); they count both: stage 4 needs
 * two, one before each row's store and one after it. */
WB_SOURCE_RULES_TEST(image_source, stage4_barriers,
    {"conv_separable", .barriers = 2,
     .why = "two __syncwarp()s around the store of each row into the warp's row buffer: one "
            "before it, so that no lane overwrites the last row while another lane still "
            "reads it (the missing __syncwarp before the next row overwrites the buffer), and "
            "one after it, before the row pass reads the neighbours' pixels"})

/* The histograms' two barriers: the bins cleared before any is counted, and
 * every byte of the block counted before any bin is merged. Atomics on the
 * bins need none between them; a merge that starts early reads a bin that a
 * later warp still counts into, and its count is lost, which a run rarely
 * shows (the warps of a block finish their bytes close together). */
#define HISTOGRAM_BARRIERS                                                               \
    "a __syncthreads() after the shared bins are cleared, before any byte is counted, " \
    "and one after every byte of the block is counted, before any bin is merged into "  \
    "bins[] (the missing barrier between the counting and the merge: a bin merged "     \
    "early misses what later warps count into it)"
WB_SOURCE_RULES_TEST(image_source, stage6_barriers,
    {"histogram_private", .barriers = 2, .shared = "__shared__",
     .protects = WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ, .why = HISTOGRAM_BARRIERS})
WB_SOURCE_RULES_TEST(image_source, stage7_barriers,
    {"histogram_aggregated", .barriers = 2, .shared = "__shared__",
     .protects = WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ, .why = HISTOGRAM_BARRIERS})

/* ------------------------------------------- the given argument checks */

Test(image, given_argument_checks,
     .description = "the given entry points refuse stages, boundaries, radii, sizes and buffers "
                    "they cannot handle")
{
    float *in = wb_guarded_malloc(64 * sizeof(float)), *out = wb_guarded_malloc(64 * sizeof(float));
    unsigned int *bins = wb_guarded_malloc(sizeof(unsigned int) * IMAGE_BINS);
    float mask[IMAGE_MAX_TAPS] = {1.0f}, row[IMAGE_MAX_SIDE] = {1.0f};
    const int Z = IMAGE_ZERO;
    wb_expect_error("conv stage -1", "does not exist",
                    image_convolve(-1, Z, in, out, 8, 8, mask, 1));
    wb_expect_error("conv stage 4", "separable", image_convolve(4, Z, in, out, 8, 8, mask, 1));
    wb_expect_error("conv stage 5", "does not exist",
                    image_convolve(5, Z, in, out, 8, 8, mask, 1));
    wb_expect_error("boundary 2", "does not exist",
                    image_convolve(0, IMAGE_BOUNDARIES, in, out, 8, 8, mask, 1));
    wb_expect_error("radius 0", "radius", image_convolve(1, Z, in, out, 8, 8, mask, 0));
    wb_expect_error("radius 5", "radius", image_convolve(2, Z, in, out, 8, 8, mask, 5));
    wb_expect_error("width 0", "at least 1", image_convolve(0, Z, in, out, 0, 8, mask, 1));
    wb_expect_error("65536 x 65536 pixels", "2^31",
                    image_convolve(0, Z, in, out, 65536, 65536, mask, 1));
    wb_expect_error("1 x 600000 pixels", "65535", image_convolve(2, Z, in, out, 1, 600000, mask, 1));
    wb_expect_error("naive block of 48 threads", "multiple of 32", image_set_naive_block(48));
    wb_expect_error("d_in NULL", "NULL", image_convolve(0, Z, NULL, out, 8, 8, mask, 1));
    wb_expect_error("d_in == d_out", "same buffer", image_convolve(3, Z, in, in, 8, 8, mask, 1));
    wb_expect_error("mask NULL", "NULL", image_convolve(1, Z, in, out, 8, 8, NULL, 1));
    wb_expect_error("separable, row NULL", "NULL",
                    image_convolve_separable(Z, in, out, 8, 8, NULL, row, 1));
    wb_expect_error("separable, radius 9", "radius",
                    image_convolve_separable(Z, in, out, 8, 8, row, row, 9));
    wb_expect_error("histogram stage 4", "does not exist",
                    image_histogram(4, (unsigned char *)in, 8, bins));
    wb_expect_error("histogram stage 8", "does not exist",
                    image_histogram(IMAGE_STAGES, (unsigned char *)in, 8, bins));
    wb_expect_error("histogram, bins NULL", "NULL",
                    image_histogram(5, (unsigned char *)in, 8, NULL));
    wb_expect_error("histogram, data NULL", "NULL", image_histogram(6, NULL, 8, bins));
    wb_expect_error("histogram of 2^32 bytes", "2^32 - 1",
                    image_histogram(7, (unsigned char *)in, (size_t)1 << 32, bins));
    /* Every stage and boundary condition has its name, and only those do. */
    for (int stage = -1; stage <= IMAGE_STAGES; stage++) {
        bool valid = stage >= 0 && stage < IMAGE_STAGES;
        cr_assert((strcmp(image_stage_name(stage), "no such stage") != 0) == valid,
                  "image_stage_name(%d) = \"%s\": the given code names stages 0 to %d (restore "
                  "it)", stage, image_stage_name(stage), IMAGE_STAGES - 1);
    }
    cr_assert(strcmp(image_boundary_name(IMAGE_BOUNDARIES), "no such boundary condition") == 0,
              "image_boundary_name(%d): the given code names only the boundary conditions that "
              "exist (restore it)", IMAGE_BOUNDARIES);
    wb_guarded_free(in);
    wb_guarded_free(out);
    wb_guarded_free(bins);
}

/* ----------------------------------------------------------------- timing */

/* The graded time (grading/rubric.toml) is stage 4's: a separable 5 x 5
 * mask (the target's size) on 8192 x 8192 pixels, 256 MiB in and 256 MiB
 * out: about 0.16 ms at an H200's copy bandwidth, so each timed run makes
 * TIMED_CALLS calls, each on its own pair of buffers, the input filled
 * fresh from the run's seed before it (untimed) and a sample of every
 * output checked after it (one call's against the CPU, the others against
 * the judge's own): an output cached from an earlier run, or a call
 * skipped, fails instead of looking fast. 24 calls make a run of about
 * 4 ms, long enough that the grader's hand-shake costs under 1% of it. */
#define TIMED_SIDE 8192
#define TIMED_PIXELS ((size_t)TIMED_SIDE * TIMED_SIDE)
#define TIMED_RADIUS 2
#define TIMED_CALLS 24
#define TIMED_RUNS 10
#define CHECKED_PER_CALL 64
/* The histogram rows: 2^28 bytes, uniform. */
#define TIMED_BYTES ((size_t)1 << 28)

typedef struct {
    int stage, calls;
    float *in[TIMED_CALLS], *out[TIMED_CALLS];   /* device */
    uint64_t seed[TIMED_CALLS];
    int cpu_checked;
    float mask[IMAGE_MAX_TAPS], row[IMAGE_MAX_SIDE], column[IMAGE_MAX_SIDE];
    unsigned char *bytes;                         /* device, the histogram rows' */
    unsigned int *bins;
    size_t positions[CHECKED_PER_CALL];
    float got[CHECKED_PER_CALL], own[CHECKED_PER_CALL];
} timed_runs;

static void convolve_call(timed_runs *t, int k)
{
    if (t->stage == IMAGE_SEPARABLE_STAGE)
        image_convolve_separable(IMAGE_CLAMP, t->in[k], t->out[k], TIMED_SIDE, TIMED_SIDE,
                                 t->row, t->column, TIMED_RADIUS);
    else
        image_convolve(t->stage, IMAGE_CLAMP, t->in[k], t->out[k], TIMED_SIDE, TIMED_SIDE,
                       t->mask, TIMED_RADIUS);
}

static void run_timed(void *context)
{
    timed_runs *t = context;
    for (int k = 0; k < t->calls; k++)
        convolve_call(t, k);
}

/* One call of another stage, for the table's other rows (not graded). */
static void run_first_call(void *context)
{
    timed_runs *t = context;
    if (t->stage >= IMAGE_FIRST_HISTOGRAM_STAGE)
        image_histogram(t->stage, t->bytes, TIMED_BYTES, t->bins);
    else
        convolve_call(t, 0);
}

static void fresh_inputs(void *context, int repetition, uint64_t seed)
{
    timed_runs *t = context;
    (void)repetition;
    for (int k = 0; k < t->calls; k++) {
        t->seed[k] = wb_hash_u64(seed, (uint64_t)k);
        wb_fill_floats_on_gpu(t->in[k], TIMED_PIXELS, 0.0f, 1.0f, t->seed[k]);
        wb_poison_floats(t->out[k], TIMED_PIXELS);
    }
    t->cpu_checked = (int)(wb_hash_u64(seed, TIMED_CALLS) % (uint64_t)t->calls);
}

/* Output pixel `pixel` of the input of `seed`, on the CPU: its taps are
 * recomputed from the input's hash (clamp boundary). */
static double cpu_pixel(const timed_runs *t, uint64_t seed, size_t pixel)
{
    int x = (int)(pixel % TIMED_SIDE), y = (int)(pixel / TIMED_SIDE);
    int side = 2 * TIMED_RADIUS + 1;
    double sum = 0.0;
    for (int dy = 0; dy < side; dy++)
        for (int dx = 0; dx < side; dx++) {
            int sx = x + dx - TIMED_RADIUS, sy = y + dy - TIMED_RADIUS;
            sx = sx < 0 ? 0 : sx >= TIMED_SIDE ? TIMED_SIDE - 1 : sx;
            sy = sy < 0 ? 0 : sy >= TIMED_SIDE ? TIMED_SIDE - 1 : sy;
            sum += (double)t->mask[dy * side + dx] *
                   wb_hash_float(seed, (size_t)sy * TIMED_SIDE + (size_t)sx, 0.0f, 1.0f);
        }
    return sum;
}

static void check_timed_run(void *context, int repetition)
{
    timed_runs *t = context;
    double tolerance = tolerance_of(t->mask, (2 * TIMED_RADIUS + 1) * (2 * TIMED_RADIUS + 1));
    for (int k = 0; k < t->calls; k++) {
        char what[96];
        wb_timed_call_label(what, sizeof what, repetition, TIMED_RUNS, k, t->calls, "out");
        size_t count = wb_sample_positions(t->positions, CHECKED_PER_CALL, TIMED_PIXELS,
                                           wb_hash_u64(t->seed[k], TIMED_PIXELS));
        wb_fetch_sample(t->got, t->own, t->out[k], sizeof(float), t->positions, count, what);
        bool on_cpu = k == t->cpu_checked;
        for (size_t j = 0; j < count; j++) {
            double expected = on_cpu ? cpu_pixel(t, t->seed[k], t->positions[j]) : t->own[j];
            cr_assert(fabs(t->got[j] - expected) <= tolerance,
                      "%s: pixel %zu = %g, expected %.7g (%s): %s " WB_SEED_HINT, what,
                      t->positions[j], t->got[j], expected,
                      on_cpu ? "the CPU's" : "the reference's from the same input",
                      wb_timed_call_mistake(isnan(t->got[j])),
                      wb_seed());
        }
    }
}

Test(image, timing_stages,
     .description = "every stage: a 5 x 5 mask on 8192^2 pixels, a histogram of 2^28 bytes")
{
    timed_runs *t = calloc(1, sizeof *t);
    cr_assert(t, "out of host memory");
    random_mask(t->row, 2 * TIMED_RADIUS + 1, "timing, row mask");
    random_mask(t->column, 2 * TIMED_RADIUS + 1, "timing, column mask");
    image_cpu_outer_mask(t->row, t->column, TIMED_RADIUS, t->mask);
    t->calls = wb_buffer_sets(TIMED_CALLS, 2 * sizeof(float) * TIMED_PIXELS);
    for (int k = 0; k < t->calls; k++) {
        CUDA_CHECK(cudaMalloc((void **)&t->in[k], sizeof(float) * TIMED_PIXELS));
        CUDA_CHECK(cudaMalloc((void **)&t->out[k], sizeof(float) * TIMED_PIXELS));
    }
    CUDA_CHECK(cudaMalloc((void **)&t->bytes, TIMED_BYTES));
    CUDA_CHECK(cudaMalloc((void **)&t->bins, sizeof(unsigned int) * IMAGE_BINS));
    wb_rng rng = wb_rng_for("image timing");
    wb_fill_ints_on_gpu((int *)t->bytes, TIMED_BYTES / sizeof(int), INT32_MIN, INT32_MAX,
                        wb_rng_u64(&rng));
    /* The warm-up's images; every timed run gets its own (fresh_inputs). */
    fresh_inputs(t, -1, wb_rng_u64(&rng));
    wb_timing times[IMAGE_STAGES];
    for (int k = 0; k < IMAGE_STAGES; k++) {
        t->stage = (IMAGE_SEPARABLE_STAGE + k) % IMAGE_STAGES;   /* 4, 5, 6, 7, 0, 1, 2, 3 */
        bool graded = t->stage == IMAGE_SEPARABLE_STAGE, conv = t->stage < IMAGE_FIRST_HISTOGRAM_STAGE;
        char what[96];
        snprintf(what, sizeof what, "stage %d", t->stage);
        wb_timing timing = graded ? wb_time_gpu_reps(run_timed, t, 1, TIMED_RUNS, t->calls,
                                                     (wb_rep_checks){fresh_inputs, check_timed_run})
                                  : wb_time_gpu(run_first_call, t, 2, TIMED_RUNS);
        /* The least a call moves: the image read once and written once, or
         * the bytes read once. */
        double bytes = conv ? 2.0 * sizeof(float) * TIMED_PIXELS : (double)TIMED_BYTES;
        times[t->stage] = wb_observe_timing(what, timing, bytes, 0.0);
    }
    double copy = wb_copy_bandwidth_gbps();
    char title[256];
    snprintf(title, sizeof title, "image kernels: 5 x 5 mask (stage 4 separable) on %d^2 floats, "
             "clamp; histogram of 2^28 uniform bytes; median of %d runs (stage 4: runs of %d "
             "calls, each on a fresh image); GB/s = bytes read + written once",
             TIMED_SIDE, TIMED_RUNS, t->calls);
    wb_table *table = wb_table_new("image", title, "stage|kernel|ms|GB/s|% of copy");
    for (int stage = 0; stage < IMAGE_STAGES; stage++) {
        double bytes = stage < IMAGE_FIRST_HISTOGRAM_STAGE ? 2.0 * sizeof(float) * TIMED_PIXELS
                                                           : (double)TIMED_BYTES;
        double gbps = wb_gbps(bytes, times[stage].median_ms);
        wb_table_row(table, "%d|%s|%.4f|%.0f|%.1f", stage, image_stage_name(stage),
                     times[stage].median_ms, gbps, 100.0 * gbps / copy);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    for (int k = 0; k < t->calls; k++) {
        CUDA_CHECK(cudaFree(t->in[k]));
        CUDA_CHECK(cudaFree(t->out[k]));
    }
    CUDA_CHECK(cudaFree(t->bytes));
    CUDA_CHECK(cudaFree(t->bins));
    free(t);
}
