/* Lab 11: CUB's histogram of bytes into the lab's IMAGE_BINS bins, the
 * benchmark's yardstick (cub_histogram.cu). */
#ifndef LAB_IMAGE_CUB_H
#define LAB_IMAGE_CUB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Asynchronous, like image_histogram; n at most 2^31 - 1. Keeps its scratch
 * memory between calls. */
void cub_histogram_bytes(const unsigned char *d_data, size_t n, unsigned int *d_bins);

#ifdef __cplusplus
}
#endif

#endif
