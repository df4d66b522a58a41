/* The yardstick: CUB's cub::DeviceScan::InclusiveSum, wrapped for C
 * (cub_scan.cu). */
#ifndef LAB_SCAN_CUB_SCAN_H
#define LAB_SCAN_CUB_SCAN_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of device temporary storage cub_inclusive_sum needs for n values. */
size_t cub_scan_temp_bytes(int n);

/* out = the inclusive scan of in[0 .. n) (modulo 2^32), by CUB;
 * asynchronous on `stream`. */
void cub_inclusive_sum(const unsigned *d_in, unsigned *d_out, int n, void *d_temp,
                       size_t temp_bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
