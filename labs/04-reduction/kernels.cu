/*
 * Lab 04: parallel reduction, stage by stage (Mark Harris's ladder plus a
 * modern last step). Read handouts/04-reduction.md first.
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
 * Each stage is a small change from the one before; the TODOs are numbered
 * in the order of the stages, one function each. The rest is given in
 * given.cuh, included at the top: every stage's kernel (it loads the block's
 * elements into shared memory, waits at a barrier, calls your tree and lets
 * thread 0 write the block's sum out; stage 7's adds the warps' sums and
 * atomicAdds the block's into the result) and the host code (grids, passes,
 * the template switch). Stages 0-6 leave one partial sum per block and
 * reduce_sum launches the same kernel again on those until one block is
 * left; stage 7 must finish in one launch. Check a stage with
 *     meson test -C build --suite reduction-student --print-errorlogs
 * (tests stageN_...), time them with `build/reduction-bench-student`, and ask
 * for a hint with `grading/workbook hint reduction N`.
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
    // TODO 1 (stage 0): the tree over sdata[0 .. blockDim.x). For s = 1, 2,
    // 4, ... below blockDim.x, the threads whose tid is a multiple of 2s add
    // the word s above theirs to their own; every thread waits for the
    // others before the next level.
}

// Stage 1: the same tree, but the working threads are the first ones, so
// whole warps retire. Thread tid touches word 2*s*tid, bank 2*s*tid % 32: a
// 2-way bank conflict at s = 1, 4-way at s = 2, ..., 32-way from s = 16.
__device__ __forceinline__ void tree_strided(int *sdata, unsigned tid)
{
    // TODO 2 (stage 1): the same tree, but let thread tid work on word
    // 2 * s * tid, so that the working threads are the first ones.
}

/* Stage 2, sequential addressing: fold the upper half of the live range
 * onto the lower half. Consecutive threads touch consecutive words (no
 * conflicts). Stops when `stop` words are left (0: the whole tree). */
__device__ __forceinline__ void fold_halves(int *sdata, unsigned tid, unsigned stop)
{
    // TODO 3 (stage 2): halve the live range, from blockDim.x / 2 down to
    // (but not including) stop: the first s threads add the word s above.
}

/* Stage 3, first add during load: stages 3-5 cover 2 * blockDim.x elements
 * per block; the first level of the tree is done while loading, by every
 * thread. */
__device__ __forceinline__ int load_pair(const int *in, unsigned n)
{
    // TODO 4 (stage 3): this block's first 2 * blockDim.x elements start
    // where? Return the sum of this thread's element and the one blockDim.x
    // above it (either may be past n).
    return 0;
}

/* Stage 4: the last 64 words, folded by the first warp alone: no
 * __syncthreads and no loop. Since Volta the threads of a warp are not
 * guaranteed to run in lockstep, so each step reads, waits for the whole
 * warp (__syncwarp), then writes and waits again; the lecture's
 * volatile-only version races here. The `tid < s` test keeps a 32-thread
 * block inside its 32 words. */
__device__ __forceinline__ void warp_fold(int *sdata, unsigned tid, unsigned block_size)
{
    // TODO 5 (stage 4): fold 64 words down to sdata[0] with s = 32, 16, ...,
    // 1, without __syncthreads. Only read words the block has (block_size),
    // and keep every thread's read apart from other threads' writes.
}

/* Stage 5, complete unroll: stage 4's tree with the block size known at
 * compile time: every `if` on B disappears and no loop is left. */
template <unsigned B>
__device__ __forceinline__ void fold_unrolled(int *sdata, unsigned tid)
{
    // TODO 6 (stage 5): stage 4's fold_halves(sdata, tid, 32) written out
    // level by level for a block of B threads (B = 1024 down to 64), then
    // the last warp as in stage 4.
}

// Stage 6: each thread first adds up many pairs, striding over the whole
// grid, in a register; the tree then runs once per block, not once per
// 2 * B elements.
template <unsigned B>
__device__ __forceinline__ int thread_pair_sum(const int *in, unsigned n)
{
    // TODO 7 (stage 6): the grid has fewer threads than pairs. Add up this
    // thread's pairs (stage 3's two elements, B apart), moving by the size
    // of the whole grid each time, in a register; then return the total.
    return 0;
}

/* Stage 7: sum over a warp through registers: each step adds the value of
 * the lane `offset` above; after five steps lane 0 holds the warp's sum. */
__device__ __forceinline__ int warp_sum(int value)
{
    // TODO 8 (stage 7): five __shfl_down_sync steps (offsets 16, 8, 4, 2, 1).
    return value;
}

// Stage 7: 16-byte loads, a quarter of the load instructions, in a
// grid-stride loop over the n / 4 vectors.
__device__ __forceinline__ int thread_vector_sum(const int *__restrict__ in, unsigned n)
{
    // TODO 9 (stage 7): a grid-stride loop over the n / 4 int4 vectors of in
    // (reinterpret_cast<const int4 *>(in)), adding all four ints of each
    // (add4), with several independent loads per trip; then the last n % 4
    // ints, which fill no vector. Return this thread's total.
    return 0;
}
