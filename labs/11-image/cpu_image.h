/* Lab 11: the CPU's convolution (in double precision) and histogram, that
 * the tests and the benchmark check every stage against (lab.h states the
 * rules). */
#ifndef LAB_IMAGE_CPU_H
#define LAB_IMAGE_CPU_H

#include <stddef.h>

/* The convolution of in (width x height floats) with mask ((2 radius + 1)^2
 * floats) into out, as doubles. */
void image_cpu_convolve(int boundary, const float *in, double *out, int width, int height,
                        const float *mask, int radius);

/* The separable mask column(dy) * row(dx) as one (2 radius + 1)^2 mask. */
void image_cpu_outer_mask(const float *row, const float *column, int radius, float *mask);

/* bins[v] = the number of the n bytes at data equal to v, for every v. */
void image_cpu_histogram(const unsigned char *data, size_t n, unsigned int *bins);

#endif
