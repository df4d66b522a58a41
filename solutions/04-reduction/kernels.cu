/*
 * Lab 04, reference: parallel reduction, Mark Harris's ladder plus a modern
 * last step. Every stage is a small change from the one before:
 *
 *   0  interleaved addressing, divergent branch (tid % (2s) == 0)
 *   1  interleaved addressing, strided index: no divergence, bank conflicts
 *   2  sequential addressing: no conflicts, but half the threads idle at once
 *   3  first add during load: each thread loads two elements, half the blocks
 *   4  unroll the last warp (with __syncwarp, not the lecture's volatile)
 *   5  complete unroll: the block size is a template parameter
 *   6  many elements per thread: a grid-stride loop, a grid sized to the GPU
 *   7  warp shuffles, 16-byte loads, one launch (atomicAdd of block sums)
 *
 * Stages 0-6 leave one partial sum per block; blocks cannot wait for each
 * other, so the host launches the same kernel again over the partial sums
 * (the launch boundary is the global barrier) until one block remains.
 * The kernels and the host code are given in given.cuh; this file has the
 * functions they call, the skeleton's TODOs filled in.
 * Indices are unsigned, as in the lecture: n fits in an int, but i + s may not.
 */
#include "lab.h"
#include "workbook.h"

// Given, the same for every stage and both sides: the kernels around these
// functions, and the host side.
#include "given.cuh"

// Stage 0: neighbours in pairs, then pairs of pairs... Threads with
// tid % (2s) != 0 sit out, so every warp stays active but mostly idle.
__device__ __forceinline__ void tree_interleaved(int *sdata, unsigned tid)
{
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
}

// Stage 1: the same tree, but the working threads are the first ones, so
// whole warps retire. Thread tid touches word 2*s*tid, bank 2*s*tid % 32: a
// 2-way bank conflict at s = 1, 4-way at s = 2, ..., 32-way from s = 16.
__device__ __forceinline__ void tree_strided(int *sdata, unsigned tid)
{
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        unsigned index = 2 * s * tid;
        if (index < blockDim.x)
            sdata[index] += sdata[index + s];
        __syncthreads();
    }
}

/* Stage 2, sequential addressing: fold the upper half of the live range
 * onto the lower half. Consecutive threads touch consecutive words (no
 * conflicts). Stops when `stop` words are left (0: the whole tree). */
__device__ __forceinline__ void fold_halves(int *sdata, unsigned tid, unsigned stop)
{
    for (unsigned s = blockDim.x / 2; s > stop; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
}

/* Stage 3, first add during load: stages 3-5 cover 2 * blockDim.x elements
 * per block; the first level of the tree is done while loading, by every
 * thread. */
__device__ __forceinline__ int load_pair(const int *in, unsigned n)
{
    unsigned i = blockIdx.x * (2 * blockDim.x) + threadIdx.x;
    return load_or_zero(in, n, i) + load_or_zero(in, n, i + blockDim.x);
}

/* Stage 4: the last 64 words, folded by the first warp alone: no
 * __syncthreads and no loop. Since Volta the threads of a warp are not
 * guaranteed to run in lockstep, so each step reads, waits for the whole
 * warp (__syncwarp), then writes and waits again; the lecture's
 * volatile-only version races here. The `tid < s` test keeps a 32-thread
 * block inside its 32 words. */
__device__ __forceinline__ void warp_fold(int *sdata, unsigned tid, unsigned block_size)
{
    int sum = sdata[tid];
#pragma unroll
    for (unsigned s = 32; s > 0; s >>= 1) {
        if (block_size >= 2 * s && tid < s)
            sum += sdata[tid + s];
        __syncwarp();
        sdata[tid] = sum;
        __syncwarp();
    }
}

/* Stage 5, complete unroll: stage 4's tree with the block size known at
 * compile time: every `if` on B disappears and no loop is left. */
template <unsigned B>
__device__ __forceinline__ void fold_unrolled(int *sdata, unsigned tid)
{
    if (B >= 1024) { if (tid < 512) sdata[tid] += sdata[tid + 512]; __syncthreads(); }
    if (B >= 512) { if (tid < 256) sdata[tid] += sdata[tid + 256]; __syncthreads(); }
    if (B >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
    if (B >= 128) { if (tid < 64) sdata[tid] += sdata[tid + 64]; __syncthreads(); }
    if (tid < 32)
        warp_fold(sdata, tid, B);
}

// Stage 6: each thread first adds up many pairs, striding over the whole
// grid, in a register; the tree then runs once per block, not once per
// 2 * B elements.
template <unsigned B>
__device__ __forceinline__ int thread_pair_sum(const int *in, unsigned n)
{
    int sum = 0;
    for (unsigned i = blockIdx.x * (2 * B) + threadIdx.x; i < n; i += 2 * B * gridDim.x)
        sum += in[i] + load_or_zero(in, n, i + B);
    return sum;
}

/* Stage 7: sum over a warp through registers: each step adds the value of
 * the lane `offset` above; after five steps lane 0 holds the warp's sum. */
__device__ __forceinline__ int warp_sum(int value)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        value += __shfl_down_sync(0xffffffffu, value, offset);
    return value;
}

// Stage 7: 16-byte loads, a quarter of the load instructions, in a
// grid-stride loop over the n / 4 vectors.
__device__ __forceinline__ int thread_vector_sum(const int *__restrict__ in, unsigned n)
{
    const int4 *in4 = reinterpret_cast<const int4 *>(in);
    unsigned n4 = n / 4, stride = blockDim.x * gridDim.x;
    unsigned thread = blockIdx.x * blockDim.x + threadIdx.x, i = thread;
    int sum = 0;
    // Four independent loads per trip: with one, each thread waits a whole
    // DRAM latency per 16 bytes and the SMs cannot keep enough bytes in
    // flight to reach full bandwidth.
    for (; i + 3 * stride < n4; i += 4 * stride)
        sum += add4(in4[i]) + add4(in4[i + stride]) + add4(in4[i + 2 * stride]) +
               add4(in4[i + 3 * stride]);
    for (; i < n4; i += stride)
        sum += add4(in4[i]);
    // The last n % 4 elements do not fill a vector.
    if (thread < n % 4)
        sum += in[4 * n4 + thread];
    return sum;
}
