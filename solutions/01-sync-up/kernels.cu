/*
 * Lab 01 reference: ordered turns with a barrier, with a spin, across blocks
 * (stages 0-2); a chain of hand-shakes (stage 3); the maximum found and
 * printed by the last block (stage 4); work donation (stage 5).
 */
#include <stdio.h>

#include "lab.h"
#include "workbook.h"

/* Given, the same on both sides: take_turn, the argument checks, the
 * counters, the helpers the kernels call and the entry points that launch
 * them. */
#include "given.cuh"

/* Stage 0. Every thread reads the counter, and the owner of that number
 * moves it on. Two barriers per turn: the first keeps the owner's write
 * from racing with the others' reads, the second makes the write visible
 * to everyone before the next read. All threads read the same value, so
 * they all leave the loop together and no barrier is left half-reached. */
__global__ void ordered_stage0(int *record, int count)
{
    __shared__ int next;
    if (threadIdx.x == 0)
        next = 0;
    __syncthreads();
    for (;;) {
        int n = next;
        __syncthreads();
        if (n >= count)
            break;
        if (n % blockDim.x == threadIdx.x) {
            take_turn(record, threadIdx.x, n);
            next = n + 1;
        }
        __syncthreads();
    }
}

/* Stage 1. Each thread walks its own numbers and spins until the counter
 * reaches each one. volatile makes every test of the loop a fresh load from
 * shared memory (otherwise the compiler may keep the value in a register
 * and spin forever); the fence orders this turn's output before the counter
 * moves. Spinning inside a warp relies on independent thread scheduling
 * (Volta and newer): the thread that owns the turn keeps running while its
 * neighbours spin. */
__global__ void ordered_stage1(int *record, int count)
{
    __shared__ volatile int next;
    if (threadIdx.x == 0)
        next = 0;
    __syncthreads();
    for (int n = threadIdx.x; n < count; n += blockDim.x) {
        while (next != n)
            ;
        take_turn(record, threadIdx.x, n);
        __threadfence_block();
        next = n + 1;
    }
}

/* Stage 2: the counter is grid_next (given.cuh), in global memory; the
 * host sets it to 0 before every launch. */
__global__ void ordered_stage2(int *record, int count)
{
    int thread = blockIdx.x * blockDim.x + threadIdx.x;
    volatile int *next = &grid_next;
    for (int n = thread; n < count; n += gridDim.x * blockDim.x) {
        while (*next != n)
            ;
        take_turn(record, thread, n);
        /* Device-wide: the fence makes the turn's output visible to every
         * SM before the counter moves. Only the owner writes the counter,
         * but the write is a device-scope atomic: the memory model promises
         * other SMs' spinning reads only atomic (or volatile) accesses; a
         * plain increment may work on a copy in this SM's L1 or a register
         * and publish it late. */
        __threadfence();
        atomicAdd(&grid_next, 1);
    }
}

int ordered_grid_max_blocks(int threads)
{
    check_arguments("ordered_grid_max_blocks", 0, 1, threads);
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ordered_stage2, threads, 0));
    return per_sm * wb_device_info().sm_count;
}

/* Stage 3. Each flag is shared by two threads that may run on different
 * SMs: device scope. Every write of the flag is a release (what the writer
 * did before is visible to whoever sees the new value) and every read that
 * decides to go on is an acquire (what the other side did before is visible
 * after it). The modern form of the volatile-and-__threadfence() idiom:
 *     __threadfence(); *(volatile int *)flag = 1;   a release store
 *     while (*(volatile int *)flag) ; __threadfence();   acquire loads */
__device__ void handshake_ask(int *flag)
{
    device_flag f(*flag);
    f.store(1, cuda::memory_order_release);
    while (f.load(cuda::memory_order_acquire) != 0)
        ;
}

__device__ void handshake_wait(int *flag)
{
    device_flag f(*flag);
    while (f.load(cuda::memory_order_acquire) == 0)
        ;
}

__device__ void handshake_answer(int *flag)
{
    device_flag f(*flag);
    f.store(0, cuda::memory_order_release);
}

/* Stage 3. Participant k is T2 of hand-shake k - 1 and, in the middle of
 * that, T1 of hand-shake k: the request travels down the chain, the steps
 * up come back in reverse (everything k + 1 does is k's "S2"). */
__global__ void handshake_stage3(chain_args a)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x, n = gridDim.x * blockDim.x;
    if (k > 0)
        handshake_wait(&a.flags[k - 1]);     // k - 1 has stepped down and asks
    step_down(a, k);
    if (k + 1 < n)
        handshake_ask(&a.flags[k]);          // the rest of the chain, then back to us
    step_up(a, k);
    if (k > 0)
        handshake_answer(&a.flags[k - 1]);   // k - 1 may step up now
}

/* Stage 4. No block waits for another: each stores its result and leaves,
 * and only the block that finishes last does more, at a moment when every
 * other block's result is stored. The ticket is what tells it so, and the
 * fences are what make "stored" mean "visible": without the first one the
 * store may reach other SMs after the ticket does. */
__global__ void maximum_stage4(max_args a)
{
    int m = block_maximum(a.in, a.n);
    if (threadIdx.x != 0)
        return;
    a.partial[blockIdx.x] = m;
    __threadfence();   // the partial result is visible before the ticket is
    if (atomicAdd(&max_tickets, 1) != gridDim.x - 1)
        return;
    __threadfence();   // and the last block reads none of them before its ticket
    const volatile int *partial = a.partial;
    int best = INT_MIN;
    for (unsigned b = 0; b < gridDim.x; b++)
        best = max(best, partial[b]);
    max_tickets = 0;   // nobody else touches it again in this launch
    announce_maximum(a, best);
}

/* Stage 5. The average needs every block's work, and there is no barrier
 * across blocks in an ordinary launch: the grid's barrier
 * (cg::this_grid().sync()) exists only in a cooperative launch, whose
 * blocks are all resident, and it orders memory for the whole device as
 * __syncthreads() does for a block. */
__global__ void donate_stage5(donate_args a)
{
    unsigned long long share = block_sum(a.work, a.n);
    if (threadIdx.x == 0)
        atomicAdd(&donation_total, share);
    cg::this_grid().sync();
    int keep = (int)(donation_total / (unsigned long long)a.n) + a.k;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride) {
        int w = a.work[i];
        if (w > keep) {
            // atomicAdd returns the old tail: a slot nobody else gets.
            int at = atomicAdd(a.length, 1);
            a.list[2 * at] = (int)i;
            a.list[2 * at + 1] = w - keep;
        }
        a.kept[i] = min(w, keep);
    }
}
