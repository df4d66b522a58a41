/*
 * Lab 02, reference: atomics, locks and worklists.
 *
 * Seven stages, each a small step from the lecture:
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
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    // The read-modify-write happens in one indivisible step at the memory.
    atomicAdd(&x[g % slots], 1);
}

/* ================================================================ stage 1 */

template <class Op> __global__ void reduce_per_element(const int *in, int n, int *out, int slots)
{
    int *target = out + blockIdx.x % slots;
    for (int k = 0; k < REDUCE_ITEMS; k++) {
        long long i = reduce_index(k);
        if (i < n)
            Op::atomic(target, in[i]);
    }
}

template <class Op> __global__ void reduce_per_block(const int *in, int n, int *out, int slots)
{
    __shared__ int partial;
    if (threadIdx.x == 0)
        partial = Op::identity;
    __syncthreads();
    // Shared-memory atomics stay inside the SM; only one goes out to L2.
    Op::atomic(&partial, thread_fold<Op>(in, n));
    __syncthreads();
    if (threadIdx.x == 0)
        Op::atomic(out + blockIdx.x % slots, partial);
}

template <class Op> __global__ void reduce_per_warp(const int *in, int n, int *out, int slots)
{
    int v = thread_fold<Op>(in, n);
    // Halve the number of live values five times: lane 0 ends with the warp's.
    for (int offset = 16; offset > 0; offset /= 2)
        v = Op::fold(v, __shfl_down_sync(0xffffffffu, v, offset));
    if (threadIdx.x % 32 == 0)
        Op::atomic(out + blockIdx.x % slots, v);
}

/* ================================================================ stage 2 */

struct SpinLock {
    __device__ static void lock(int *word)
    {
        // Only the thread that turns 0 into 1 leaves the loop.
        while (atomicCAS(word, 0, 1) != 0)
            ;
        // Reads in the critical section must not move before the lock.
        __threadfence();
    }
    __device__ static void unlock(int *word)
    {
        // Writes of the critical section must be visible before the lock is.
        __threadfence();
        atomicExch(word, 0);
    }
};

/* ================================================================ stage 3 */

__global__ void single_per_grid_kernel(int *flag, int *hits, int *who)
{
    // The first CAS finds 0 and sees it returned; every later one sees 1.
    if (atomicCAS(flag, 0, 1) == 0)
        single_section(hits, who, 0);
}

__global__ void single_per_block_kernel(int *hits, int *who)
{
    __shared__ int taken;
    if (threadIdx.x == 0)
        taken = 0;
    __syncthreads();
    if (atomicCAS(&taken, 0, 1) == 0)
        single_section(hits, who, blockIdx.x);
}

/* ================================================================ stage 4 */

__global__ void push_per_item(push_args a)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x, list = blockIdx.x % a.lists;
    int count = push_count(a, t);
    for (int k = 0; k < count; k++) {
        int position = atomicAdd(&a.sizes[list], 1);
        a.items[(long long)list * a.capacity + position] = worklist_item(t, k);
    }
}

__global__ void push_per_thread(push_args a)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x, list = blockIdx.x % a.lists;
    int count = push_count(a, t);
    // atomicAdd returns the old length: the start of a range nobody else gets.
    if (count > 0)
        write_items(a, list, t, atomicAdd(&a.sizes[list], count), count);
}

__global__ void push_per_warp(push_args a)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x, list = blockIdx.x % a.lists;
    int lane = threadIdx.x % 32, count = push_count(a, t);
    // The warp's total, in every lane: a butterfly of shuffles.
    int total = count;
    for (int offset = 16; offset > 0; offset /= 2)
        total += __shfl_xor_sync(0xffffffffu, total, offset);
    // One lane reserves the warp's range; every lane learns where it starts.
    int first = 0;
    if (lane == 0 && total > 0)
        first = atomicAdd(&a.sizes[list], total);
    first = __shfl_sync(0xffffffffu, first, 0);
    // Fill the range round by round: in round k the lanes that have an item
    // k write it to consecutive positions (their rank among those lanes), so
    // the warp's stores coalesce instead of landing count ints apart.
    int *list_items = a.items + (long long)list * a.capacity;
    unsigned lanes_below = (1u << lane) - 1;
    for (int k = 0;; k++) {
        unsigned pushing = __ballot_sync(0xffffffffu, k < count);
        if (pushing == 0)
            break;
        if (k < count)
            list_items[first + __popc(pushing & lanes_below)] = worklist_item(t, k);
        first += __popc(pushing);
    }
}

__global__ void push_prefix_sum(push_args a)
{
    extern __shared__ int end[];   // blockDim.x ints, then the block's start
    int *block_first = end + blockDim.x;
    int t = blockIdx.x * blockDim.x + threadIdx.x, list = blockIdx.x % a.lists;
    int count = push_count(a, t);
    // The lecture's inclusive scan: read, barrier, write, barrier, so that
    // no thread overwrites a value another has not read yet.
    end[threadIdx.x] = count;
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset *= 2) {
        int below = threadIdx.x >= offset ? end[threadIdx.x - offset] : 0;
        __syncthreads();
        end[threadIdx.x] += below;
        __syncthreads();
    }
    if (threadIdx.x == blockDim.x - 1)
        *block_first = atomicAdd(&a.sizes[list], end[threadIdx.x]);
    __syncthreads();
    write_items(a, list, t, *block_first + end[threadIdx.x] - count, count);
}

/* ================================================================ stage 5 */

__global__ void list_insert_kernel(int *next, int anchors, int inserts)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= inserts)
        return;
    int prev = t % anchors, node = anchors + t;
    // Point the new node at prev's successor, then swing prev over to the
    // new node only if prev's successor is still the one we saw. If another
    // insert got in first, the CAS returns its node: retry behind that one.
    int seen = relaxed_load(&next[prev]);   // others may be swinging it now
    for (;;) {
        next[node] = seen;
        __threadfence();   // the new node's link is visible before the node is
        int found = atomicCAS(&next[prev], seen, node);
        if (found == seen)
            break;
        seen = found;
    }
}

/* ================================================================ stage 6 */

// Each node v of the list has its own lock, the int locks[v]: 0 free, 1
// taken. The lock is stage 2's again, this time written with
// cuda::atomic_ref and memory orders (or with stage 2's fences).
struct NodeLock {
    __device__ static void lock(int *word)
    {
        // The CAS that takes the lock is an acquire: the reads and writes
        // that follow stay after it, and see what the last owner wrote
        // before its release. A failed CAS writes what it found into
        // expected: put 0 back.
        cuda::atomic_ref<int, cuda::thread_scope_device> lock(*word);
        int expected = 0;
        while (!lock.compare_exchange_weak(expected, 1, cuda::memory_order_acquire,
                                           cuda::memory_order_relaxed))
            expected = 0;
    }
    __device__ static void unlock(int *word)
    {
        // A release: every write made while holding the lock is visible
        // before the lock is seen free.
        cuda::atomic_ref<int, cuda::thread_scope_device>(*word).store(0,
                                                                     cuda::memory_order_release);
    }
};

__device__ void locked_insert(int *next, int *locks, int prev, int node)
{
    // Read prev's successor only while holding prev: then nobody can link
    // another node in between, or unlink the successor.
    NodeLock::lock(&locks[prev]);
    next[node] = next[prev];
    next[prev] = node;
    NodeLock::unlock(&locks[prev]);
}

__device__ void locked_remove(int *next, int *locks, int anchor, int node)
{
    // Hand over hand from the anchor: always hold the node whose link we
    // read, and take the next lock before letting go of the last one, so
    // that no node can be unlinked under us. Every thread takes its locks
    // in list order, prev before its successor: no cycle, no deadlock.
    int prev = anchor;
    NodeLock::lock(&locks[prev]);
    int cur = next[prev];
    while (cur != node) {
        NodeLock::lock(&locks[cur]);
        NodeLock::unlock(&locks[prev]);
        prev = cur;
        cur = next[cur];
    }
    // node's own lock too: whoever is removing node's successor holds it
    // while it rewrites next[node], which we are about to copy.
    NodeLock::lock(&locks[node]);
    next[prev] = next[node];
    NodeLock::unlock(&locks[node]);
    NodeLock::unlock(&locks[prev]);
}
