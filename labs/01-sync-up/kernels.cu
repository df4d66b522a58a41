/*
 * Lab 01: "Let's sync-up!" Threads take turns in a fixed order.
 *
 * Your task: the TODOs in the three kernels and in ordered_grid_max_blocks.
 * Number n belongs to thread n % (number of threads), and that thread may
 * take its turn (take_turn) only after number n - 1 has been taken. The
 * rest is given in given.cuh, included below: take_turn, the counter
 * grid_next and the entry points that launch your kernels. Read
 * handouts/01-sync-up.md first, and run the lecture's five versions with
 * `build/labs/01-sync-up/sync-up-experiments`. Check your work with
 *     meson test -C build --suite sync-up-student --print-errorlogs
 * and ask for a hint with `grading/workbook hint sync-up 0`.
 */
#include <stdio.h>

#include "lab.h"
#include "workbook.h"

/* Given, the same on both sides: take_turn, the argument checks, grid_next
 * and the entry points that launch the kernels. */
#include "given.cuh"

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

/* Stage 2: the counter is grid_next (given.cuh), in global memory; the
 * host sets it to 0 before every launch. */
__global__ void ordered_stage2(int *record, int count)
{
    // TODO 5: as stage 1, with the thread's index in the whole grid and a
    // stride of all the grid's threads. Make the turn visible to the whole
    // device before the counter moves, and move it with an atomic.
    (void)record;
    (void)count;
}

int ordered_grid_max_blocks(int threads)
{
    check_arguments("ordered_grid_max_blocks", 0, 1, threads);
    // TODO 6: ask the occupancy API how many blocks of ordered_stage2 with
    // `threads` threads fit on one SM at once.
    int per_sm = 0;
    return per_sm * wb_device_info().sm_count;
}
