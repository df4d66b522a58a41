/*
 * The lecture's five versions of "Let's sync-up!", as given (not student
 * work): three threads print 0 .. 9, thread t the numbers n with n % 3 == t.
 * They are generalised only in the block size (n % blockDim.x) and in the
 * count (10 in the lecture); the bugs are kept on purpose. Some are faulty:
 * predict what each prints before running sync-up-experiments.
 */
#include <stdio.h>

#include "workbook.h"

/* Version 1: no synchronisation at all. */
__global__ void version1(int count)
{
    for (int ii = 0; ii < count; ++ii)
        if (ii % blockDim.x == threadIdx.x)
            printf("%d: %d\n", threadIdx.x, ii);
}

/* Version 2: a shared counter and a barrier in the loop. */
__global__ void version2(int count)
{
    __shared__ int n;
    n = 0;
    __syncthreads();
    while (n < count) {
        if (n % blockDim.x == threadIdx.x) {
            printf("%d: %d\n", threadIdx.x, n);
            ++n;
        }
        __syncthreads();
    }
}

/* Version 3: a volatile counter in global memory, no barrier in the loop. */
__device__ volatile int global_n;

__global__ void version3(int count)
{
    global_n = 0;
    __syncthreads();
    while (global_n < count) {
        if (global_n % blockDim.x == threadIdx.x) {
            printf("%d: %d\n", threadIdx.x, global_n);
            ++global_n;
        }
    }
}

/* Version 4: the same with a volatile counter in shared memory. */
__global__ void version4(int count)
{
    volatile __shared__ int n;
    n = 0;
    __syncthreads();
    while (n < count) {
        if (n % blockDim.x == threadIdx.x) {
            printf("%d: %d\n", threadIdx.x, n);
            ++n;
        }
    }
}

/* Version 5: every thread takes a ticket with atomicInc. */
__global__ void version5(int count)
{
    __shared__ unsigned int n;
    n = 0;
    __syncthreads();
    while (n < (unsigned)count) {
        unsigned oldn = atomicInc(&n, 100);
        if (oldn % blockDim.x == threadIdx.x)
            printf("%d: %d\n", threadIdx.x, oldn);
    }
}

/* Runs version 1..5 with one block of `threads` threads and waits for it;
 * a CUDA error ends the process through the workbook's error handler. */
extern "C" void sync_up_experiment(int version, int count, int threads)
{
    void (*kernels[])(int) = {version1, version2, version3, version4, version5};
    kernels[version - 1]<<<1, threads>>>(count);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
}
