/*
 * Lab 02: the code given for every stage (the skeleton and the reference
 * both include it at their top): the names of the versions, the argument
 * checks and launches of every entry point, the lecture's racy counter and
 * wrong locks, the helpers the stages' kernels call (relaxed_load,
 * reduce_index, thread_fold, single_section, push_count, write_items), the
 * lists' set-up and stage 6's kernel. It comes before the kernels of
 * kernels.cu, which it launches, so it declares each of them, "written in
 * kernels.cu".
 */
#include <cuda/atomic>
#include <limits.h>

const char *const reduce_version_names[REDUCE_VERSIONS] = {"per element", "per block",
                                                           "per warp"};
const char *const lock_kind_names[LOCK_KINDS] = {"no lock", "test then set", "one CAS",
                                                 "CAS spin"};
const char *const push_version_names[PUSH_VERSIONS] = {"per item", "per thread", "per warp",
                                                       "prefix sum"};

static void check_launch_shape(const char *entry, int blocks, int block_size, bool whole_warps)
{
    if (blocks < 1 || block_size < 1 || block_size > 1024)
        wb_fail("%s: need blocks >= 1 and 1 <= block_size <= 1024, got %d blocks of %d", entry,
                blocks, block_size);
    if (whole_warps && block_size % 32 != 0)
        wb_fail("%s: block_size %d is not a multiple of 32 (the warp versions need whole "
                "warps)", entry, block_size);
}

static int blocks_for(long long items, int per_block)
{
    return (int)((items + per_block - 1) / per_block);
}

__global__ void fill_kernel(int *x, int n, int value)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = value;
}

static void fill_ints(int *x, int n, int value)
{
    fill_kernel<<<blocks_for(n, 256), 256>>>(x, n, value);
    CUDA_CHECK_LAUNCH();
}

/* ================================================================ stage 0 */

// The lecture's counter. ++ is a load, an add and a store; two threads that
// load the same old value both store old + 1.
__global__ void counter_racy_kernel(int *x, int slots)
{
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    ++x[g % slots];
}

// Written in kernels.cu.
__global__ void counter_atomic_kernel(int *x, int slots);

static void counter_launch(void (*kernel)(int *, int), int *x, int slots, int blocks,
                           int block_size)
{
    check_launch_shape("counter", blocks, block_size, false);
    if (slots < 1)
        wb_fail("counter: need slots >= 1, got %d", slots);
    CUDA_CHECK(cudaMemsetAsync(x, 0, sizeof(int) * (size_t)slots));
    kernel<<<blocks, block_size>>>(x, slots);
    CUDA_CHECK_LAUNCH();
}

void counter_racy(int *x, int slots, int blocks, int block_size)
{
    counter_launch(counter_racy_kernel, x, slots, blocks, block_size);
}

void counter_atomic(int *x, int slots, int blocks, int block_size)
{
    counter_launch(counter_atomic_kernel, x, slots, blocks, block_size);
}

/* Reads a word that other threads may be changing with atomics at this
 * moment: a relaxed atomic load. A plain load racing with an atomic is a
 * data race under the CUDA memory model (the compiler may assume that no
 * other thread writes the word); this costs the same, orders nothing and
 * may return an old value: the atomic that follows decides. */
__device__ __forceinline__ int relaxed_load(int *p)
{
    return cuda::atomic_ref<int, cuda::thread_scope_device>(*p).load(cuda::memory_order_relaxed);
}

/* ================================================================ stage 1 */

// The two operations differ only in their identity, their fold and their
// atomic, so each kernel is written once for both.
struct Sum {
    static constexpr int identity = 0;
    __device__ static int fold(int a, int b) { return a + b; }
    __device__ static void atomic(int *target, int v) { atomicAdd(target, v); }
};
struct Max {
    static constexpr int identity = INT_MIN;
    __device__ static int fold(int a, int b) { return max(a, b); }
    __device__ static void atomic(int *target, int v) { atomicMax(target, v); }
};

// Element k of this thread's REDUCE_ITEMS; consecutive threads read
// consecutive elements, so every load of a warp is one coalesced access.
// thread_fold's loop is unrolled, so all REDUCE_ITEMS loads are issued
// before the first add waits for its value.
__device__ long long reduce_index(int k)
{
    return ((long long)blockIdx.x * REDUCE_ITEMS + k) * blockDim.x + threadIdx.x;
}

template <class Op> __device__ int thread_fold(const int *in, int n)
{
    int v = Op::identity;
#pragma unroll
    for (int k = 0; k < REDUCE_ITEMS; k++) {
        long long i = reduce_index(k);
        if (i < n)
            v = Op::fold(v, in[i]);
    }
    return v;
}

// Written in kernels.cu.
template <class Op> __global__ void reduce_per_element(const int *in, int n, int *out, int slots);
template <class Op> __global__ void reduce_per_block(const int *in, int n, int *out, int slots);
template <class Op> __global__ void reduce_per_warp(const int *in, int n, int *out, int slots);

template <class Op>
static void reduce_launch(const int *in, int n, int *out, int slots, reduce_version version,
                          int block_size)
{
    fill_ints(out, slots, Op::identity);
    if (n == 0)
        return;
    int blocks = blocks_for(n, REDUCE_ITEMS * block_size);
    if (version == REDUCE_PER_ELEMENT)
        reduce_per_element<Op><<<blocks, block_size>>>(in, n, out, slots);
    else if (version == REDUCE_PER_BLOCK)
        reduce_per_block<Op><<<blocks, block_size>>>(in, n, out, slots);
    else
        reduce_per_warp<Op><<<blocks, block_size>>>(in, n, out, slots);
    CUDA_CHECK_LAUNCH();
}

void reduce_atomic(const int *in, int n, int *out, int slots, reduce_op op,
                   reduce_version version, int block_size)
{
    check_launch_shape("reduce_atomic", 1, block_size, true);
    if (n < 0 || slots < 1 || (unsigned)version >= REDUCE_VERSIONS ||
        (op != REDUCE_SUM && op != REDUCE_MAX))
        wb_fail("reduce_atomic: need n >= 0, slots >= 1, a known op and version; got n = %d, "
                "slots = %d, op %d, version %d", n, slots, (int)op, (int)version);
    if (op == REDUCE_SUM)
        reduce_launch<Sum>(in, n, out, slots, version, block_size);
    else
        reduce_launch<Max>(in, n, out, slots, version, block_size);
}

/* ================================================================ stage 2 */

// The lecture's wrong locks, kept to experiment with.
struct NoLock {
    __device__ static void lock(int *) {}
    __device__ static void unlock(int *) {}
};
// Every thread of a warp can see the word free before any of them sets it.
struct TestThenSet {
    __device__ static void lock(int *word)
    {
        while (*(volatile int *)word == 1)
            ;
        *(volatile int *)word = 1;
    }
    __device__ static void unlock(int *word) { *(volatile int *)word = 0; }
};
// The CAS is atomic, but the loser goes ahead anyway.
struct CasOnce {
    __device__ static void lock(int *word) { atomicCAS(word, 0, 1); }
    __device__ static void unlock(int *word) { atomicCAS(word, 1, 0); }
};

// Written in kernels.cu: the spin lock.
struct SpinLock;

// Given: the critical section, a read-modify-write of three fields. The
// fields are volatile so that each access goes to memory (L2), not to this
// SM's L1 cache, which other SMs' writes do not update.
template <class Lock>
__global__ void tally_kernel(const int *values, int n, tally *tallies, int *locks, int slots)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int slot = i % slots, v = values[i];
    volatile tally *t = tallies + slot;
    Lock::lock(&locks[slot]);
    t->count = t->count + 1;
    t->sum = t->sum + v;
    t->max = max(t->max, v);
    Lock::unlock(&locks[slot]);
}

__global__ void tally_clear_kernel(tally *tallies, int *locks, int slots)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < slots) {
        tallies[i] = tally{0, 0, INT_MIN};
        locks[i] = 0;
    }
}

void locked_tally(const int *values, int n, tally *tallies, int *locks, int slots,
                  lock_kind kind, int block_size)
{
    check_launch_shape("locked_tally", 1, block_size, false);
    if (n < 0 || slots < 1 || (unsigned)kind >= LOCK_KINDS)
        wb_fail("locked_tally: need n >= 0, slots >= 1 and a known lock; got n = %d, slots = "
                "%d, lock %d", n, slots, (int)kind);
    tally_clear_kernel<<<blocks_for(slots, 256), 256>>>(tallies, locks, slots);
    CUDA_CHECK_LAUNCH();
    if (n == 0)
        return;
    int blocks = blocks_for(n, block_size);
    // In the order of lock_kind.
    static void (*const kernels[LOCK_KINDS])(const int *, int, tally *, int *, int) = {
        tally_kernel<NoLock>, tally_kernel<TestThenSet>, tally_kernel<CasOnce>,
        tally_kernel<SpinLock>};
    kernels[kind]<<<blocks, block_size>>>(values, n, tallies, locks, slots);
    CUDA_CHECK_LAUNCH();
}

/* ================================================================ stage 3 */

// The section that must run once.
__device__ void single_section(int *hits, int *who, int s)
{
    atomicAdd(&hits[s], 1);
    who[s] = blockIdx.x * blockDim.x + threadIdx.x;
}

// Written in kernels.cu.
__global__ void single_per_grid_kernel(int *flag, int *hits, int *who);
__global__ void single_per_block_kernel(int *hits, int *who);

void single_per_grid(int *flag, int *hits, int *who, int blocks, int block_size)
{
    check_launch_shape("single_per_grid", blocks, block_size, false);
    CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int)));
    CUDA_CHECK(cudaMemsetAsync(hits, 0, sizeof(int)));
    single_per_grid_kernel<<<blocks, block_size>>>(flag, hits, who);
    CUDA_CHECK_LAUNCH();
}

void single_per_block(int *hits, int *who, int blocks, int block_size)
{
    check_launch_shape("single_per_block", blocks, block_size, false);
    CUDA_CHECK(cudaMemsetAsync(hits, 0, sizeof(int) * (size_t)blocks));
    single_per_block_kernel<<<blocks, block_size>>>(hits, who);
    CUDA_CHECK_LAUNCH();
}

/* ================================================================ stage 4 */

// A thread's share of the work and where its items go. Threads past the end
// push nothing but still take part in warp and block steps.
struct push_args {
    const int *counts;
    int threads;
    int *items, *sizes;
    int lists, capacity;
};

__device__ int push_count(const push_args &a, int t) { return t < a.threads ? a.counts[t] : 0; }

// Items k = 0 .. count - 1 of thread t, from position first of its list on.
__device__ void write_items(const push_args &a, int list, int t, int first, int count)
{
    int *list_items = a.items + (long long)list * a.capacity;
    for (int k = 0; k < count; k++)
        list_items[first + k] = worklist_item(t, k);
}

// Written in kernels.cu.
__global__ void push_per_item(push_args a);
__global__ void push_per_thread(push_args a);
__global__ void push_per_warp(push_args a);
__global__ void push_prefix_sum(push_args a);

void worklist_push(const int *counts, int threads, int *items, int *sizes, int lists,
                   int capacity, push_version version, int block_size)
{
    check_launch_shape("worklist_push", 1, block_size, true);
    if (threads < 0 || threads > INT_MAX / WORKLIST_MAX_PUSH || lists < 1 || capacity < 0 ||
        (unsigned)version >= PUSH_VERSIONS)
        wb_fail("worklist_push: need 0 <= threads <= %d, lists >= 1, capacity >= 0 and a known "
                "version; got threads = %d, lists = %d, capacity = %d, version %d",
                INT_MAX / WORKLIST_MAX_PUSH, threads, lists, capacity, (int)version);
    CUDA_CHECK(cudaMemsetAsync(sizes, 0, sizeof(int) * (size_t)lists));
    if (threads == 0)
        return;
    push_args a = {counts, threads, items, sizes, lists, capacity};
    int blocks = blocks_for(threads, block_size);
    switch (version) {
    case PUSH_PER_ITEM: push_per_item<<<blocks, block_size>>>(a); break;
    case PUSH_PER_THREAD: push_per_thread<<<blocks, block_size>>>(a); break;
    case PUSH_PER_WARP: push_per_warp<<<blocks, block_size>>>(a); break;
    default:
        push_prefix_sum<<<blocks, block_size, sizeof(int) * (block_size + 1)>>>(a);
        break;
    }
    CUDA_CHECK_LAUNCH();
}

/* ================================================================ stage 5 */

// Anchors 0 -> 1 -> ... -> anchors - 1 -> end.
__global__ void list_init_kernel(int *next, int anchors)
{
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v < anchors)
        next[v] = v + 1 < anchors ? v + 1 : -1;
}

// Written in kernels.cu.
__global__ void list_insert_kernel(int *next, int anchors, int inserts);

void list_insert(int *next, int anchors, int inserts, int block_size)
{
    check_launch_shape("list_insert", 1, block_size, false);
    if (anchors < 1 || inserts < 0 || inserts > INT_MAX - anchors)
        wb_fail("list_insert: need anchors >= 1 and 0 <= inserts <= INT_MAX - anchors; got "
                "anchors = %d, inserts = %d", anchors, inserts);
    list_init_kernel<<<blocks_for(anchors, 256), 256>>>(next, anchors);
    CUDA_CHECK_LAUNCH();
    if (inserts == 0)
        return;
    list_insert_kernel<<<blocks_for(inserts, block_size), block_size>>>(next, anchors, inserts);
    CUDA_CHECK_LAUNCH();
}

/* ================================================================ stage 6 */

// Written in kernels.cu: the lock of one node, and the two operations.
struct NodeLock;
__device__ void locked_insert(int *next, int *locks, int prev, int node);
__device__ void locked_remove(int *next, int *locks, int anchor, int node);

// Every thread inserts its own node behind its anchor; those not told to
// keep it take it out again, while the others insert behind the same anchor
// and walk through the same nodes towards their own.
__global__ void locked_list_kernel(int *next, int *locks, const int *keep, int anchors,
                                   int threads)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads)
        return;
    int anchor = t % anchors, node = anchors + t;
    locked_insert(next, locks, anchor, node);
    if (!keep[t])
        locked_remove(next, locks, anchor, node);
}

void locked_list(int *next, int *locks, const int *keep, int anchors, int threads,
                 int block_size)
{
    check_launch_shape("locked_list", 1, block_size, false);
    if (anchors < 1 || threads < 0 || threads > INT_MAX - anchors)
        wb_fail("locked_list: need anchors >= 1 and 0 <= threads <= INT_MAX - anchors; got "
                "anchors = %d, threads = %d", anchors, threads);
    list_init_kernel<<<blocks_for(anchors, 256), 256>>>(next, anchors);
    CUDA_CHECK_LAUNCH();
    fill_ints(locks, anchors + threads, 0);
    if (threads == 0)
        return;
    locked_list_kernel<<<blocks_for(threads, block_size), block_size>>>(next, locks, keep,
                                                                        anchors, threads);
    CUDA_CHECK_LAUNCH();
}
