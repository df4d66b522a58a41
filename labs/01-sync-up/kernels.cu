/*
 * Lab 01: "Let's sync-up!" Threads take turns in a fixed order.
 *
 * Your task: the TODOs, stage by stage.
 *   Stages 0-2: three kernels and ordered_grid_max_blocks. Number n belongs
 *     to thread n % (number of threads), and that thread may take its turn
 *     (take_turn) only after number n - 1 has been taken.
 *   Stage 3: the course's two threads and a flag, as three small functions
 *     (ask, wait for the request, answer), and a chain of them.
 *   Stage 4: the maximum, found and printed in one kernel by the block that
 *     finishes last.
 *   Stage 5: work donation: the average needs every block, then threads
 *     with too much work push the rest to a worklist.
 * The rest is given in given.cuh, included below: take_turn, the counters,
 * the steps and block reductions your kernels call, and the entry points
 * that launch your kernels (lab.h says what each must do). Read
 * handouts/01-sync-up.md first, and run the lecture's five versions with
 * `build/labs/01-sync-up/sync-up-experiments`. Check your work with
 *     meson test -C build --suite sync-up-student --print-errorlogs
 * and ask for a hint with `grading/workbook hint sync-up 0` (or 1 ... 5).
 */
#include <stdio.h>

#include "lab.h"
#include "workbook.h"

/* Given, the same on both sides: take_turn, the argument checks, the
 * counters, the helpers the kernels call and the entry points that launch
 * them. */
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

/* Stage 3: the course's hand-shake, as three functions on one flag in
 * global memory (0 at launch). The two threads may run on different SMs:
 * use a device_flag (given.cuh: cuda::atomic_ref with device scope) with
 * release and acquire orders, or volatile accesses with __threadfence(). */

/* T1's half: `flag = 1; while (flag) ;` */
__device__ void handshake_ask(int *flag)
{
    // TODO 7: raise the flag so that everything this thread wrote before is
    // visible to the other side first (a release), then wait until the other
    // side lowers it again, so that everything it wrote before is visible to
    // this thread afterwards (an acquire).
    (void)flag;
}

/* T2's half, before its S: `while (!flag) ;` */
__device__ void handshake_wait(int *flag)
{
    // TODO 8: wait until the flag is raised; what the asker wrote before
    // raising it must be visible afterwards.
    (void)flag;
}

/* T2's half, after its S: `flag = 0;` */
__device__ void handshake_answer(int *flag)
{
    // TODO 9: lower the flag, after everything this thread wrote before.
    (void)flag;
}

/* Stage 3: the chain. Hand-shake k (a.flags[k]) is between participant k,
 * who asks, and participant k + 1, who answers (lab.h). */
__global__ void handshake_stage3(chain_args a)
{
    // TODO 10: participant k of n (its index in the grid): wait for the
    // request of k - 1 (if there is one), step_down(a, k), ask k + 1 (if
    // there is one), step_up(a, k), answer k - 1 (if there is one).
    (void)a;
}

/* Stage 4: the maximum. Every block finds the maximum of its share
 * (block_maximum, given: every thread gets it), then one thread per block
 * hands it on; the block that finishes last combines them. */
__global__ void maximum_stage4(max_args a)
{
    // TODO 11: every thread calls block_maximum(a.in, a.n) (it has
    // barriers inside). Then thread 0 of every block: store the block's
    // maximum in a.partial[blockIdx.x], make it visible to the whole device,
    // then take a ticket from max_tickets with an atomic. atomicAdd returns
    // the count before the add: the block that draws gridDim.x - 1 is the
    // last one.

    // TODO 12: thread 0 of the last block only: make sure it sees every
    // block's store, read all gridDim.x partial results (fresh: through a
    // volatile pointer), combine them into the maximum, set max_tickets back
    // to 0 for the next launch, and announce_maximum(a, best).
    (void)a;
}

/* Stage 5: work donation, one cooperative kernel. */
__global__ void donate_stage5(donate_args a)
{
    // TODO 13: the sum of all the work: every thread calls
    // block_sum(a.work, a.n) (given; it has barriers inside), and one thread
    // of the block adds the block's sum to donation_total with an atomic.

    // TODO 14: nobody may read donation_total before every block has added
    // its share: a barrier for the whole grid (cg::this_grid().sync()).

    // TODO 15: keep = donation_total / a.n (integer division) + a.k. For
    // every element i of the thread (a grid-stride loop): an element whose
    // work is more than keep keeps keep and pushes (i, work - keep) at a
    // position of the list that no other thread gets (move the tail,
    // *a.length, with an atomic); the others keep their work. a.kept[i]
    // gets what element i keeps.
    (void)a;
}
