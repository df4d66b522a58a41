/* Lab 11: the benchmark's yardstick for the histogram, CUB's
 * DeviceHistogram::HistogramEven (header-only, part of the CUDA toolkit),
 * with the lab's bins: 256 of width 1 over the byte values. */
#include <cub/device/device_histogram.cuh>

#include "cub_histogram.h"
#include "lab.h"
#include "workbook.h"

static void *scratch;
static size_t scratch_bytes;

void cub_histogram_bytes(const unsigned char *d_data, size_t n, unsigned int *d_bins)
{
    if (n > INT32_MAX)
        wb_fail("cub_histogram_bytes: %zu bytes: CUB's histogram counts at most 2^31 - 1", n);
    size_t needed = 0;
    // The levels are bin edges: 257 of them, 0 to 256, for 256 bins.
    CUDA_CHECK(cub::DeviceHistogram::HistogramEven(nullptr, needed, d_data, d_bins,
                                                   IMAGE_BINS + 1, 0, IMAGE_BINS, (int)n));
    if (needed > scratch_bytes) {
        CUDA_CHECK(cudaFree(scratch));
        CUDA_CHECK(cudaMalloc(&scratch, needed));
        scratch_bytes = needed;
    }
    CUDA_CHECK(cub::DeviceHistogram::HistogramEven(scratch, scratch_bytes, d_data, d_bins,
                                                   IMAGE_BINS + 1, 0, IMAGE_BINS, (int)n));
    CUDA_CHECK_LAUNCH();
}
