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
 * Indices are unsigned, as in the lecture: n fits in an int, but i + s may not.
 */
#include "lab.h"
#include "workbook.h"

/* Out-of-range threads contribute the identity of +, so that every block
 * can run the full tree whatever n is. */
__device__ __forceinline__ int load_or_zero(const int *in, unsigned n, unsigned i)
{
    return i < n ? in[i] : 0;
}

// Stage 0: neighbours in pairs, then pairs of pairs... Threads with
// tid % (2s) != 0 sit out, so every warp stays active but mostly idle.
__global__ void reduce_stage0(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_or_zero(in, n, blockIdx.x * blockDim.x + tid);
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

// Stage 1: the same tree, but the working threads are the first ones, so
// whole warps retire. Thread tid touches word 2*s*tid, bank 2*s*tid % 32: a
// 2-way bank conflict at s = 1, 4-way at s = 2, ..., 32-way from s = 16.
__global__ void reduce_stage1(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_or_zero(in, n, blockIdx.x * blockDim.x + tid);
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        unsigned index = 2 * s * tid;
        if (index < blockDim.x)
            sdata[index] += sdata[index + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

/* Sequential addressing: fold the upper half of the live range onto the
 * lower half. Consecutive threads touch consecutive words (no conflicts).
 * Stops when `stop` words are left (0: the whole tree). */
__device__ __forceinline__ void fold_halves(int *sdata, unsigned tid, unsigned stop)
{
    for (unsigned s = blockDim.x / 2; s > stop; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
}

// Stage 2: sequential addressing.
__global__ void reduce_stage2(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_or_zero(in, n, blockIdx.x * blockDim.x + tid);
    __syncthreads();
    fold_halves(sdata, tid, 0);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

/* Stages 3-5 cover 2 * blockDim.x elements per block: the first level of
 * the tree is done while loading, by every thread. */
__device__ __forceinline__ int load_pair(const int *in, unsigned n)
{
    unsigned i = blockIdx.x * (2 * blockDim.x) + threadIdx.x;
    return load_or_zero(in, n, i) + load_or_zero(in, n, i + blockDim.x);
}

// Stage 3: first add during load.
__global__ void reduce_stage3(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_pair(in, n);
    __syncthreads();
    fold_halves(sdata, tid, 0);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

/* The last 64 words, folded by the first warp alone: no __syncthreads and
 * no loop. Since Volta the threads of a warp are not guaranteed to run in
 * lockstep, so each step reads, waits for the whole warp (__syncwarp), then
 * writes and waits again; the lecture's volatile-only version races here.
 * The `tid < s` test keeps a 32-thread block inside its 32 words. */
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

// Stage 4: stop the block-wide loop at 32 words; the last warp finishes.
__global__ void reduce_stage4(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_pair(in, n);
    __syncthreads();
    fold_halves(sdata, tid, 32);
    if (tid < 32)
        warp_fold(sdata, tid, blockDim.x);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

/* Stage 4's tree with the block size known at compile time: every `if` on
 * B disappears and no loop is left. */
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

// Stage 5: complete unroll.
template <unsigned B>
__global__ void reduce_stage5(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_pair(in, n);
    __syncthreads();
    fold_unrolled<B>(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

// Stage 6: each thread first adds up many pairs, striding over the whole
// grid, in a register; the tree then runs once per block, not once per
// 2 * B elements.
template <unsigned B>
__global__ void reduce_stage6(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    int sum = 0;
    for (unsigned i = blockIdx.x * (2 * B) + tid; i < n; i += 2 * B * gridDim.x)
        sum += in[i] + load_or_zero(in, n, i + B);
    sdata[tid] = sum;
    __syncthreads();
    fold_unrolled<B>(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

/* Sum over a warp through registers: each step adds the value of the lane
 * `offset` above; after five steps lane 0 holds the warp's sum. */
__device__ __forceinline__ int warp_sum(int value)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        value += __shfl_down_sync(0xffffffffu, value, offset);
    return value;
}

__device__ __forceinline__ int add4(int4 v) { return (v.x + v.y) + (v.z + v.w); }

// Stage 7: 16-byte loads (a quarter of the load instructions), shuffles
// instead of shared memory except for one word per warp, and one atomicAdd
// per block into the result, so one launch is enough.
__global__ void reduce_stage7(const int *__restrict__ in, int *out, unsigned n)
{
    __shared__ int warp_sums[REDUCE_MAX_BLOCK / 32];
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

    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    sum = warp_sum(sum);
    if (lane == 0)
        warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = warp_sum(lane < blockDim.x / 32 ? warp_sums[lane] : 0);
        if (lane == 0)
            atomicAdd(out, sum);
    }
}

/* ------------------------------------------------------------ host side */

// Given, the same for every stage and both sides: grids, passes, checks.
#include "given.cuh"
