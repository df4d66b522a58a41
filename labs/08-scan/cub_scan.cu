/* CUB's device-wide inclusive scan, the library yardstick the lab's stages
 * are measured against (itself a single-pass scan with decoupled
 * look-back). CUB's two-phase API: the first call (no storage) only reports
 * how much temporary storage the second call needs. */
#include <cub/device/device_scan.cuh>

#include "cub_scan.h"
#include "workbook.h"

size_t cub_scan_temp_bytes(int n)
{
    size_t bytes = 0;
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, (const unsigned *)nullptr,
                                             (unsigned *)nullptr, n));
    return bytes;
}

void cub_inclusive_sum(const unsigned *d_in, unsigned *d_out, int n, void *d_temp,
                       size_t temp_bytes, cudaStream_t stream)
{
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(d_temp, temp_bytes, d_in, d_out, n, stream));
    CUDA_CHECK_LAUNCH();
}
