/*
 * Lab 01: "Let's sync-up!" Threads take turns in a fixed order.
 *
 * Your task: the TODOs in the three kernels and in ordered_grid_max_blocks.
 * Number n belongs to thread n % (number of threads), and that thread may
 * take its turn (take_turn) only after number n - 1 has been taken. Read
 * handouts/01-sync-up.md first, and run the lecture's five versions with
 * build/labs/01-sync-up/sync-up-experiments. Check your work with
 *     meson test -C build --suite sync-up-student --print-errorlogs
 * and ask for a hint with `grading/workbook hint sync-up 0`.
 */
#include <stdio.h>

#include "lab.h"
#include "workbook.h"

/* Given: what a thread does when its turn comes. */
__device__ void take_turn(int *record, int thread, int n)
{
    if (record)
        record[n] = thread;
    else
        printf("%d: %d\n", thread, n);
}

static void check_arguments(const char *who, int count, int blocks, int threads)
{
    if (count < 0 || blocks < 1 || threads < 1 || threads > 1024)
        wb_fail("%s: need count >= 0, blocks >= 1 and 1 <= threads <= 1024 "
                "(got count = %d, blocks = %d, threads = %d)",
                who, count, blocks, threads);
}

/* Stage 0: a shared counter and __syncthreads(). */
__global__ void ordered_stage0(int *record, int count)
{
    // TODO 1: a counter in shared memory, set to 0 (one thread is enough)
    // before any thread reads it.

    // TODO 2: loop until the counter reaches count. In each round every
    // thread reads the counter, and the thread that owns that number takes
    // its turn and moves the counter on. Place __syncthreads() so that no
    // thread reads the counter while it is being written, and so that all
    // threads leave the loop in the same round.
    (void)record;
    (void)count;
}

/* Stage 1: no block barrier inside the loop. */
__global__ void ordered_stage1(int *record, int count)
{
    // TODO 3: a counter in shared memory that every read really loads
    // (the compiler must not keep it in a register), set to 0 before use.

    // TODO 4: each thread goes through its own numbers (threadIdx.x,
    // threadIdx.x + blockDim.x, ...); for each it waits until the counter
    // equals it, takes its turn, makes the turn visible to the block, then
    // moves the counter on.
    (void)record;
    (void)count;
}

/* Stage 2: the counter lives in global memory. The host sets it to 0
 * before every launch (ordered_grid does that for you). */
__device__ int grid_next;

__global__ void ordered_stage2(int *record, int count)
{
    // TODO 5: as stage 1, with the thread's index in the whole grid and a
    // stride of all the grid's threads. Make the turn visible to the whole
    // device before the counter moves, and move it with an atomic.
    (void)record;
    (void)count;
}

void ordered_barrier(int *record, int count, int threads)
{
    check_arguments("ordered_barrier", count, 1, threads);
    ordered_stage0<<<1, threads>>>(record, count);
    CUDA_CHECK_LAUNCH();
}

void ordered_spin(int *record, int count, int threads)
{
    check_arguments("ordered_spin", count, 1, threads);
    ordered_stage1<<<1, threads>>>(record, count);
    CUDA_CHECK_LAUNCH();
}

int ordered_grid_max_blocks(int threads)
{
    check_arguments("ordered_grid_max_blocks", 0, 1, threads);
    // TODO 6: ask the occupancy API how many blocks of ordered_stage2 with
    // `threads` threads fit on one SM at once.
    int per_sm = 0;
    return per_sm * wb_device_info().sm_count;
}

void ordered_grid(int *record, int count, int blocks, int threads)
{
    check_arguments("ordered_grid", count, blocks, threads);
    /* A block that is not resident waits for a block to finish, while the
     * resident ones spin waiting for it: the grid would hang. */
    int most = ordered_grid_max_blocks(threads);
    if (blocks > most)
        wb_fail("ordered_grid: %d blocks of %d threads cannot all be resident at once "
                "(at most %d on this GPU), and waiting blocks would hang the grid",
                blocks, threads, most);
    static const int zero = 0;
    CUDA_CHECK(cudaMemcpyToSymbolAsync(grid_next, &zero, sizeof zero));
    /* Blocks wait for one another, so all of them must be resident at
     * once. The occupancy limit above says how many can be; only a
     * cooperative launch guarantees that they are (another process on the
     * GPU, MPS or a partition can take SMs): it fails with
     * cudaErrorCooperativeLaunchTooLarge rather than hang. */
    void *arguments[] = {&record, &count};
    CUDA_CHECK(cudaLaunchCooperativeKernel((const void *)ordered_stage2, blocks, threads,
                                           arguments, 0, 0));
    CUDA_CHECK_LAUNCH();
}
