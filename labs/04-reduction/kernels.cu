/*
 * Lab 04: parallel reduction, stage by stage (Mark Harris's ladder plus a
 * modern last step). Read handouts/04-reduction.md first.
 *
 * Each stage is a small change from the one before; the TODOs are numbered
 * in the order of the stages. The host code (grids, passes, the template
 * switch) is given in given.cuh, included at the bottom: stages 0-6 leave
 * one partial sum per block and reduce_sum launches the same kernel again on
 * those until one block is left; stage 7 must finish in one launch. Check a stage with
 *     meson test -C build --suite reduction-student --print-errorlogs
 * (tests stageN_...), time them with build/reduction-bench-student, and ask
 * for a hint with `grading/workbook hint reduction N`.
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
    // TODO 1 (stage 0): the tree. For s = 1, 2, 4, ... below blockDim.x, the
    // threads whose tid is a multiple of 2s add the word s above theirs to
    // their own; every thread waits for the others before the next level.
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
    // TODO 2 (stage 1): the same tree, but let thread tid work on word
    // 2 * s * tid, so that the working threads are the first ones.
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

/* Sequential addressing: fold the upper half of the live range onto the
 * lower half. Consecutive threads touch consecutive words (no conflicts).
 * Stops when `stop` words are left (0: the whole tree). */
__device__ __forceinline__ void fold_halves(int *sdata, unsigned tid, unsigned stop)
{
    // TODO 3 (stage 2): halve the live range, from blockDim.x / 2 down to
    // (but not including) stop: the first s threads add the word s above.
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
    // TODO 4 (stage 3): this block's first 2 * blockDim.x elements start
    // where? Return the sum of this thread's element and the one blockDim.x
    // above it (either may be past n).
    return 0;
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
    // TODO 5 (stage 4): fold 64 words down to sdata[0] with s = 32, 16, ...,
    // 1, without __syncthreads. Only read words the block has (block_size),
    // and keep every thread's read apart from other threads' writes.
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
    // TODO 6 (stage 5): stage 4's fold_halves(sdata, tid, 32) written out
    // level by level for a block of B threads (B = 1024 down to 64), then
    // the last warp as in stage 4.
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
    // TODO 7 (stage 6): the grid has fewer threads than pairs. Add up this
    // thread's pairs (stage 3's two elements), moving by the size of the
    // whole grid each time, in a register; then store the total.
    sdata[tid] = 0;
    __syncthreads();
    fold_unrolled<B>(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

/* Sum over a warp through registers: each step adds the value of the lane
 * `offset` above; after five steps lane 0 holds the warp's sum. */
__device__ __forceinline__ int warp_sum(int value)
{
    // TODO 8 (stage 7): five __shfl_down_sync steps (offsets 16, 8, 4, 2, 1).
    return value;
}

__device__ __forceinline__ int add4(int4 v) { return (v.x + v.y) + (v.z + v.w); }

// Stage 7: 16-byte loads (a quarter of the load instructions), shuffles
// instead of shared memory except for one word per warp, and one atomicAdd
// per block into the result, so one launch is enough.
__global__ void reduce_stage7(const int *__restrict__ in, int *out, unsigned n)
{
    __shared__ int warp_sums[REDUCE_MAX_BLOCK / 32];
    int sum = 0;
    // TODO 9 (stage 7): a grid-stride loop over the n / 4 int4 vectors of in
    // (reinterpret_cast<const int4 *>(in)), adding all four ints of each
    // (add4), with several independent loads per trip; then the last n % 4
    // ints, which fill no vector.

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
