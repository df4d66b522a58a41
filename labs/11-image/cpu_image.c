/* Lab 11: the CPU's convolution and histogram (cpu_image.h). */
#include "cpu_image.h"

#include <stdbool.h>
#include <string.h>

#include "lab.h"

static int clamp_to(int c, int n) { return c < 0 ? 0 : c >= n ? n - 1 : c; }

/* The boundary condition of lab.h: 0 or the nearest pixel outside. */
static double pixel(int boundary, const float *in, int x, int y, int width, int height)
{
    bool inside = x >= 0 && x < width && y >= 0 && y < height;
    if (!inside && boundary == IMAGE_ZERO)
        return 0.0;
    return in[(size_t)clamp_to(y, height) * width + clamp_to(x, width)];
}

void image_cpu_convolve(int boundary, const float *in, double *out, int width, int height,
                        const float *mask, int radius)
{
    int side = 2 * radius + 1;
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            double sum = 0.0;
            for (int dy = 0; dy < side; dy++)
                for (int dx = 0; dx < side; dx++)
                    sum += (double)mask[dy * side + dx] *
                           pixel(boundary, in, x + dx - radius, y + dy - radius, width, height);
            out[(size_t)y * width + x] = sum;
        }
}

void image_cpu_outer_mask(const float *row, const float *column, int radius, float *mask)
{
    int side = 2 * radius + 1;
    for (int dy = 0; dy < side; dy++)
        for (int dx = 0; dx < side; dx++)
            mask[dy * side + dx] = column[dy] * row[dx];
}

void image_cpu_histogram(const unsigned char *data, size_t n, unsigned int *bins)
{
    memset(bins, 0, sizeof(unsigned int) * IMAGE_BINS);
    for (size_t i = 0; i < n; i++)
        bins[data[i]]++;
}
