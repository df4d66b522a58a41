/*
 * Lab 00, reference: vector add, c[i] = a[i] + b[i].
 *
 * Stage 0 is the whole lab: one thread per element, the lecture's index
 * formula, a bounds check, and a grid sized by ceiling division. It moves
 * 12 bytes per element (two 4-byte reads, one write) and does one add, so it
 * is memory-bound: the figure to compare with is the copy bandwidth.
 */
#include "lab.h"
#include "workbook.h"

__global__ void vector_add_kernel(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // The last block is usually only partly inside the arrays.
    if (i < n)
        c[i] = a[i] + b[i];
}

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;   // a grid of 0 blocks is a launch error, not an empty launch
    int blocks = (n + block_size - 1) / block_size;
    vector_add_kernel<<<blocks, block_size>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}
