/* The yardstick: CUB's cub::DeviceReduce::Sum, wrapped for C (cub_sum.cu). */
#ifndef LAB_REDUCTION_CUB_SUM_H
#define LAB_REDUCTION_CUB_SUM_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of device temporary storage cub_sum needs for n ints. */
size_t cub_sum_temp_bytes(int n);

/* *d_out = sum of d_in[0 .. n), by CUB; asynchronous on `stream`. */
void cub_sum(const int *d_in, int n, int *d_out, void *d_temp, size_t temp_bytes,
             cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
