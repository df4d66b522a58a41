/*
 * Lab 06, given: the kernel every version runs. saxpy.cu launches it for
 * versions 0 to 4 (saxpy_launch); stage 5's version in kernels.cu launches
 * it itself. `static`: each file that includes it gets its own copy, so the
 * two copies never clash at link time.
 */
#ifndef LAB_STREAMS_SAXPY_KERNEL_CUH
#define LAB_STREAMS_SAXPY_KERNEL_CUH

// r dependent FMAs per element: r sets how long the kernel runs per byte
// copied, from copy-bound (r = 1) to compute-bound (r in the thousands).
// fmaf rounds once per step, so the CPU can reproduce r = 1 exactly.
static __global__ void saxpy_repeat_kernel(float a, const float *x, float *y, int n, int repeat)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xi = x[i], zi = y[i];
#pragma unroll 8
        for (int k = 0; k < repeat; k++)
            zi = fmaf(a, xi, zi);
        y[i] = zi;
    }
}

#endif
