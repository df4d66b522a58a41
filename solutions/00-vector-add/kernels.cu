/*
 * Lab 00, reference: vector add, c[i] = a[i] + b[i].
 *
 * The lecture's kernel is one thread per element: the index formula, a
 * bounds check, and a grid sized by ceiling division; that is what the
 * skeleton asks for, and it passes every test. It moves 12 bytes per element
 * (two 4-byte reads, one write) and does one add, so it is memory-bound:
 * the figure to compare with is the copy bandwidth.
 *
 * The reference takes one step more, the one a memory-bound kernel needs on
 * a fast memory: ELEMENTS_PER_THREAD elements a thread, all its loads issued
 * before the first add. One element a thread keeps two loads in flight per
 * thread, too few bytes to cover the memory's latency on an H200 (80% of the
 * copy bandwidth there); four keep eight (103%). See "Bytes in flight" in
 * handouts/measuring-performance.md.
 */
#include "lab.h"
#include "workbook.h"

#define ELEMENTS_PER_THREAD 4

__global__ void vector_add_kernel(const float *a, const float *b, float *c, int n)
{
    // Block b covers ELEMENTS_PER_THREAD * blockDim.x consecutive elements;
    // thread t takes elements t, t + blockDim.x, ... of them, so each load
    // of a warp is still 32 neighbouring floats (coalesced). 64-bit, since
    // the last block's indices may pass INT_MAX.
    long long first = (long long)blockIdx.x * ELEMENTS_PER_THREAD * blockDim.x + threadIdx.x;
    float x[ELEMENTS_PER_THREAD], y[ELEMENTS_PER_THREAD];
    // Every load first: 2 x ELEMENTS_PER_THREAD of them on their way at once.
#pragma unroll
    for (int k = 0; k < ELEMENTS_PER_THREAD; k++) {
        long long i = first + (long long)k * blockDim.x;
        // The last block is usually only partly inside the arrays.
        if (i < n) {
            x[k] = a[i];
            y[k] = b[i];
        }
    }
#pragma unroll
    for (int k = 0; k < ELEMENTS_PER_THREAD; k++) {
        long long i = first + (long long)k * blockDim.x;
        if (i < n)
            c[i] = x[k] + y[k];
    }
}

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;   // a grid of 0 blocks is a launch error, not an empty launch
    long long per_block = (long long)ELEMENTS_PER_THREAD * block_size;
    int blocks = (int)((n + per_block - 1) / per_block);
    vector_add_kernel<<<blocks, block_size>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}
