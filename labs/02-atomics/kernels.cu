/*
 * Lab 02: atomics, locks and worklists.
 *
 * Your task: the numbered TODOs, stage by stage. Read handouts/02-atomics.md
 * first. Check your work with
 *     meson test -C build --suite atomics-student --print-errorlogs
 * (one stage: `build/atomics-student --filter 'atomics/stage2*'`) and ask for
 * a hint with `grading/workbook hint atomics 2`. Seven stages, from the lecture:
 *   0. ++x[0] loses updates; atomicAdd makes the count exact.
 *   1. sum and max with atomics: per element, per block, per warp.
 *   2. a spin lock from atomicCAS around a multi-field update.
 *   3. "single": one thread of the grid, or of each block, with atomicCAS.
 *   4. worklist push: an atomic per item, per thread, per warp, per block.
 *   5. lock-free insert into a linked list with an atomicCAS retry loop.
 *   6. the list with a lock per node: insert, and remove hand over hand.
 * Every kernel maps block b onto a "slot" b % slots (or a list) so that the
 * same code runs under high contention (one slot) and low contention (many).
 * The rest is given in given.cuh, included at the top: the entry points'
 * checks and launches, the racy counter, the wrong locks and the helpers
 * the kernels call (reduce_index, thread_fold, single_section, push_count,
 * write_items) and the kernel that runs stage 6's inserts and removes.
 */
#include "lab.h"
#include "workbook.h"

// Given, the same for every stage and both sides: checks, launches, helpers.
#include "given.cuh"

/* ================================================================ stage 0 */

__global__ void counter_atomic_kernel(int *x, int slots)
{
    // TODO 1: the same increment as counter_racy_kernel's, but exact however
    // many threads of the grid hit the same counter at once.
}

/* ================================================================ stage 1 */

template <class Op> __global__ void reduce_per_element(const int *in, int n, int *out, int slots)
{
    // TODO 2: fold each of this thread's elements (reduce_index(0 ..
    // REDUCE_ITEMS - 1), those below n) into out[blockIdx.x % slots] with
    // one atomic each.
}

template <class Op> __global__ void reduce_per_block(const int *in, int n, int *out, int slots)
{
    // TODO 3: fold the block's elements into one __shared__ partial result
    // first (thread_fold gives a thread's own), then let one thread fold the
    // partial into out[blockIdx.x % slots]. Mind who may read the partial
    // when: every thread's contribution must be in before it goes out.
}

template <class Op> __global__ void reduce_per_warp(const int *in, int n, int *out, int slots)
{
    // TODO 4: combine the 32 thread_fold results of each warp in registers,
    // with warp shuffles, and let one lane per warp fold the warp's result
    // into out[blockIdx.x % slots].
}

/* ================================================================ stage 2 */

struct SpinLock {
    // TODO 5: return only once this thread owns the lock: *word goes from 0
    // (free) to 1 (taken), and only one thread can be the one that did it.
    __device__ static void lock(int *word) {}
    // TODO 6: give the lock back, so that the next owner sees every write
    // this thread made inside the critical section.
    __device__ static void unlock(int *word) {}
};

/* ================================================================ stage 3 */

__global__ void single_per_grid_kernel(int *flag, int *hits, int *who)
{
    // TODO 7: exactly one thread of the grid may run this, whichever comes
    // first; *flag is 0 when the kernel starts. Use atomicCAS.
    single_section(hits, who, 0);
}

__global__ void single_per_block_kernel(int *hits, int *who)
{
    // TODO 8: exactly one thread of each block may run this, using
    // atomicCAS on a flag of the block's own (which memory space?).
    single_section(hits, who, blockIdx.x);
}

/* ================================================================ stage 4 */

// In every version, thread t = blockIdx.x * blockDim.x + threadIdx.x pushes
// push_count(a, t) items into list blockIdx.x % a.lists, whose length is
// a.sizes[list]; the list's items start at a.items + list * a.capacity.

__global__ void push_per_item(push_args a)
{
    // TODO 9: one atomic per item: each item takes the next free position
    // of the list and is written there (item k is worklist_item(t, k)).
}

__global__ void push_per_thread(push_args a)
{
    // TODO 10: one atomic per thread reserves a range of positions for all
    // of the thread's items at once; then write_items fills it.
}

__global__ void push_per_warp(push_args a)
{
    // TODO 11: one atomic per warp. The warp adds up its counts with
    // shuffles, one lane reserves the warp's whole range, and every lane
    // learns where that range starts. Then fill the range in rounds: in
    // round k, the lanes that have an item k write it to consecutive
    // positions (__ballot_sync and __popc give a lane its rank), so that the
    // warp's stores coalesce. Threads past a.threads push 0 items but still
    // take part.
}

__global__ void push_prefix_sum(push_args a)
{
    // TODO 12: positions within the block from a prefix sum of the block's
    // counts in shared memory (the launch gives blockDim.x + 1 ints of
    // dynamic shared memory), with barriers, not atomics; then one atomic per
    // block reserves the block's range.
}

/* ================================================================ stage 5 */

__global__ void list_insert_kernel(int *next, int anchors, int inserts)
{
    // TODO 13: thread t < inserts links node anchors + t in right behind
    // node t % anchors. Other threads insert behind the same node at the
    // same time: use atomicCAS so that no insert overwrites another's, and
    // retry when one got in first.
}

/* ================================================================ stage 6 */

// Each node v of the list has its own lock, the int locks[v]: 0 free, 1
// taken. The lock is stage 2's again, this time written with
// cuda::atomic_ref and memory orders (or with stage 2's fences).
struct NodeLock {
    // TODO 14: return only once this thread owns the lock; from then on it
    // must see every write the lock's last owner made while holding it.
    __device__ static void lock(int *word) {}
    // TODO 15: free the lock, so that its next owner sees this thread's
    // writes.
    __device__ static void unlock(int *word) {}
};

__device__ void locked_insert(int *next, int *locks, int prev, int node)
{
    // TODO 16: link node in right behind prev, under prev's lock. Other
    // threads insert behind prev, or walk through it, at the same time.
}

__device__ void locked_remove(int *next, int *locks, int anchor, int node)
{
    // TODO 17: unlink node, which is somewhere behind anchor (inserted by
    // this thread and still in the list). Walk from anchor to node's
    // predecessor holding locks hand over hand (the next one taken before
    // the last one is let go), then lock node as well, unlink it and free
    // both. Which order of the two locks can deadlock with another thread's
    // walk?
}
