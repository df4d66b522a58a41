/*
 * wb_dirty_shared_memory: the shared memory of every SM filled with 0xFF
 * bytes (NaN as floats, -1 as ints), so that a kernel launched next which
 * reads shared memory it never wrote (a loop bound one too far, a guard
 * that lets an extra thread read) reads that instead of a harmless leftover:
 * a fresh SM's zeros, or the right value from its own previous launch.
 * Blocks of the next kernel usually get the same shared memory as these
 * did; usually, not always, so a test calls it before each launch it checks.
 */
#include <cuda_runtime.h>

#include "workbook.h"

__global__ void dirty_shared_kernel(size_t words)
{
    extern __shared__ unsigned shared_words[];
    for (size_t i = threadIdx.x; i < words; i += blockDim.x)
        shared_words[i] = 0xFFFFFFFFu;
}

/* Launched past the launch counter (meson.build's --wrap): this is the
 * test's kernel, not the submission's. */
extern "C" cudaError_t __real_cudaLaunchKernel(const void *kernel, dim3 grid, dim3 block,
                                               void **args, size_t shared, cudaStream_t stream);

extern "C" void wb_dirty_shared_memory(void)
{
    int device = 0, sms = 0, most = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CUDA_CHECK(cudaFuncSetAttribute((const void *)dirty_shared_kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, most));
    size_t words = (size_t)most / sizeof(unsigned);
    void *args[] = {&words};
    /* One block fills an SM's shared memory; two per SM in case the
     * scheduler doubles up somewhere. */
    CUDA_CHECK(__real_cudaLaunchKernel((const void *)dirty_shared_kernel, dim3(2 * sms),
                                       dim3(1024), args, (size_t)most, 0));
    CUDA_CHECK(cudaDeviceSynchronize());
}
