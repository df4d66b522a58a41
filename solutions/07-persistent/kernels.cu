/*
 * Lab 07, reference: persistent kernels and CPU-GPU hand-offs.
 *
 * Stages 0-2 pass a counter back and forth, the CPU producing the even
 * numbers and the GPU the odd ones: (1) a copy and a launch per GPU turn,
 * (2) the counter in mapped pinned memory, still a launch per turn, (3) one
 * kernel for all turns, the two sides taking turns through the counter.
 * Stage 3 keeps as many blocks resident as fit and lets them pull tasks from
 * an atomic counter; stage 4 keeps them resident while the host feeds tasks
 * through a ring buffer in mapped pinned memory.
 *
 * The memory model: a kernel's end (and the synchronise that waits for it)
 * orders everything, so stages 0, 1 and 3 need no fences. In stages 2 and 4
 * the two sides run at the same time, so every flag that hands data over is
 * written with a release store and read with an acquire load, at system
 * scope, because the other side is the CPU.
 */
#include <cuda/atomic>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab.h"
#include "workbook.h"

// Given, the same for every stage and both sides: hand-offs, deadlines, the
// task work, the launches and their checks.
#include "given.cuh"

/* ------------------------------------------------------------ ping-pong */

// Stages 0 and 1: one GPU turn. *counter holds the CPU's number; the GPU
// produces the next one and leaves it in *counter.
__global__ void gpu_turn(int *counter, int *log, bool print)
{
    int number = *counter + 1;
    log[number] = PRODUCER_GPU;
    if (print)
        printf("\t%d\n", number);
    *counter = number;
}

void pingpong_copy(int n, int *producer, double *round_trip_us, bool print)
{
    pingpong_log log = log_open(n);
    int *counter;
    CUDA_CHECK(cudaMalloc((void **)&counter, sizeof(int)));
    cpu_side(n, log, round_trip_us, print, [&](int number) {
        CUDA_CHECK(cudaMemcpy(counter, &number, sizeof number, cudaMemcpyHostToDevice));
        gpu_turn<<<1, 1>>>(counter, log.device, print);
        CUDA_CHECK_LAUNCH();
        // A blocking copy waits for the kernel, so it reads the GPU's answer.
        CUDA_CHECK(cudaMemcpy(&number, counter, sizeof number, cudaMemcpyDeviceToHost));
        return number;
    });
    CUDA_CHECK(cudaFree(counter));
    log_close(log, n, producer);
}

void pingpong_mapped(int n, int *producer, double *round_trip_us, bool print)
{
    pingpong_log log = log_open(n);
    int *counter, *counter_device;
    CUDA_CHECK(cudaHostAlloc((void **)&counter, sizeof(int), cudaHostAllocMapped));
    CUDA_CHECK(cudaHostGetDevicePointer((void **)&counter_device, counter, 0));
    cpu_side(n, log, round_trip_us, print, [&](int number) {
        *counter = number;
        gpu_turn<<<1, 1>>>(counter_device, log.device, print);
        CUDA_CHECK_LAUNCH();
        // The kernel's end makes its writes visible; synchronising waits for it.
        CUDA_CHECK(cudaDeviceSynchronize());
        return *counter;
    });
    CUDA_CHECK(cudaFreeHost(counter));
    log_close(log, n, producer);
}

// Stage 2: every GPU turn in one kernel. It waits for an even counter (the
// CPU's number), produces the next one, and exits when asked to stop.
//
// The number is the whole message: nothing else has to arrive with it (the
// log is read after the kernel has exited, and a kernel's end orders
// everything). So relaxed atomics suffice. They still matter: a plain load
// could be hoisted out of the loop, and system scope makes every load and
// store go over the bus instead of stopping in a cache. A release store
// would wait for this thread's earlier writes to reach the CPU, a fence
// that costs a good part of the round trip.
__global__ void gpu_turns_persistent(handoff *shared, int *log, bool print)
{
    system_int counter(shared->counter), stop(shared->stop);
    for (;;) {
        int number;
        for (int polls = 1; (number = counter.load(cuda::memory_order_relaxed)) % 2 != 0; polls++)
            if (polls % 32 == 0 && stop.load(cuda::memory_order_relaxed))
                return;   // now and then only: every load is a trip over the bus
        counter.store(number + 1, cuda::memory_order_relaxed);
        log[number + 1] = PRODUCER_GPU;
        if (print)
            printf("\t%d\n", number + 1);
    }
}

// Stage 2, the CPU's side of one hand-off (pingpong_persistent calls it):
// gives `number` to the kernel and leaves the kernel's answer in `answer`;
// false when the kernel has not answered by the deadline.
static bool hand_off_persistent(handoff *shared, int number, int &answer)
{
    system_int counter(shared->counter);
    counter.store(number, cuda::memory_order_relaxed);
    return spin_until([&] { return (answer = counter.load(cuda::memory_order_relaxed)) != number; });
}

/* ---------------------------------------------------------------- tasks */

// Stage 3: each block claims a task, does it, and claims the next until none
// are left, so a block's launch cost is paid once for many tasks.
__global__ void worker_pool(const unsigned *in, unsigned *out, int *visits, int tasks,
                            int task_size)
{
    __shared__ int task;
    for (;;) {
        if (threadIdx.x == 0)
            task = atomicAdd(&next_task, 1);
        __syncthreads();
        if (task >= tasks)
            return;   // the whole block leaves together: task is shared
        run_task(in, out, visits, task, task_size);
        __syncthreads();   // everyone has read task before thread 0 claims again
    }
}

// Stage 4: like the pool, but the tasks arrive while the kernel runs, so a
// block waits for its claim to be enqueued, and leaves only when asked.
// Blocks that poll the same host memory all at once queue up on the bus
// (each waits for everyone's reads), so one block reads the host's head, the
// one whose claim is next, and passes what it saw on through seen_head in
// device memory, where everyone else waits.
__global__ void host_fed(feed_ring *ring, int in_flight, const unsigned *in, unsigned *out,
                         int *visits, int task_size)
{
    __shared__ int task;
    int claimed = 0;   // thread 0's
    for (;;) {
        if (threadIdx.x == 0) {
            system_int head(ring->head), stop(ring->stop);
            device_int seen(seen_head);
            claimed = atomicAdd(&next_claim, 1);
            task = -1;
            for (;;) {
                // Acquire, here and below: the task the host wrote before
                // moving head is visible to whoever sees the new head,
                // directly or passed on by the block that read it.
                int known = seen.load(cuda::memory_order_acquire);
                if (known < 0)
                    break;
                if (known > claimed) {
                    task = ring->task[claimed % in_flight];
                    break;
                }
                if (known < claimed) {
                    __nanosleep(100);   // not next: leave the memory system alone
                } else if (int enqueued = head.load(cuda::memory_order_acquire); enqueued > known) {
                    seen.store(enqueued, cuda::memory_order_release);
                } else if (stop.load(cuda::memory_order_relaxed)) {
                    seen.store(-1, cuda::memory_order_relaxed);
                }
            }
        }
        __syncthreads();
        if (task < 0)
            return;
        run_task(in, out, visits, task, task_size);
        __syncthreads();   // the whole task is done, and everyone has read task
        // Release: our read of the slot happens before the host refills it.
        if (threadIdx.x == 0)
            system_int(ring->done[claimed % in_flight])
                .store(claimed + 1, cuda::memory_order_release);
    }
}

int coresident_blocks(int part, int block_size)
{
    int device, sms, per_sm;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const void *kernel = part == 2 ? (const void *)worker_pool : (const void *)host_fed;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block_size, 0));
    return per_sm * sms;
}

// Stage 4, the host's side of the ring (tasks_host_fed calls these). Enqueues
// task number tasks - 1 - enqueued as the enqueued-th task (from 0).
static void enqueue_task(feed_ring *ring, int in_flight, int tasks, int enqueued)
{
    system_int head(ring->head);
    ring->task[enqueued % in_flight] = tasks - 1 - enqueued;
    // Release: the task written above is visible before the new head.
    head.store(enqueued + 1, cuda::memory_order_release);
}

// Whether the GPU has marked the completed-th task enqueued (from 0) done.
static bool oldest_done(feed_ring *ring, int in_flight, int completed)
{
    // Acquire: the GPU's read of this slot is over before we refill it.
    return system_int(ring->done[completed % in_flight]).load(cuda::memory_order_acquire) ==
           completed + 1;
}
