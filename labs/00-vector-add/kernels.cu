/*
 * Lab 00: vector add, c[i] = a[i] + b[i].
 *
 * Your task: fill in the three TODOs so that one GPU thread computes one
 * element. Read handouts/00-vector-add.md first. Check your work with
 *     meson test -C build --suite vector-add-student --print-errorlogs
 * and ask for a hint with `grading/workbook hint vector-add 0`.
 */
#include "lab.h"
#include "workbook.h"

__global__ void vector_add_kernel(const float *a, const float *b, float *c, int n)
{
    // TODO 1: compute this thread's global index i from blockIdx.x,
    // blockDim.x and threadIdx.x (every thread of the grid gets its own i).
    int i = 0;

    // TODO 2: the grid usually has more threads than there are elements.
    // Make the threads with i >= n do nothing.
    c[i] = a[i] + b[i];
}

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;
    // TODO 3: enough blocks of block_size threads to cover all n elements:
    // the ceiling of n / block_size, in integer arithmetic.
    int blocks = 1;
    vector_add_kernel<<<blocks, block_size>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}
