/*
 * Lab 07: persistent kernels and CPU-GPU hand-offs.
 *
 * Your task: the numbered TODOs, stage by stage (TODO 1-2 are stage 0,
 * 3-4 stage 1, 5-6 stage 2, 7-8 stage 3, 9-11 stage 4). Everything else is
 * given in given.cuh, included below: the CPU's half of the ping-pong, the
 * deadlines, the stop flag, the task work and the refusal of launches that
 * cannot all be resident. Read handouts/07-persistent.md first. Check your
 * work with
 *     meson test -C build --suite persistent-student --print-errorlogs
 * and ask for a hint with `grading/workbook hint persistent 0`.
 *
 * The memory model in one line: a kernel's end orders everything, so stages
 * 0, 1 and 3 need no fences; in stages 2 and 4 both sides run at once, and
 * `volatile` is not enough there.
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
    // TODO 1: produce the number after the CPU's, record it in log (as
    // PRODUCER_GPU, at the index of the number), print it as "\t%d\n" when
    // print is set, and leave it in *counter for the CPU.
}

void pingpong_copy(int n, int *producer, double *round_trip_us, bool print)
{
    pingpong_log log = log_open(n);
    int *counter;
    CUDA_CHECK(cudaMalloc((void **)&counter, sizeof(int)));
    cpu_side(n, log, round_trip_us, print, [&](int number) {
        // TODO 2: give `number` to the GPU through the device counter, run
        // one GPU turn (one thread; the log's device pointer is log.device),
        // and return what the GPU left in the counter.
        return number;
    });
    CUDA_CHECK(cudaFree(counter));
    log_close(log, n, producer);
}

void pingpong_mapped(int n, int *producer, double *round_trip_us, bool print)
{
    pingpong_log log = log_open(n);
    int *counter = NULL;
    // TODO 3: allocate the counter in pinned host memory that the GPU can
    // map, and find the pointer the GPU must use for it.
    cpu_side(n, log, round_trip_us, print, [&](int number) {
        // TODO 4: the same hand-off as TODO 2, with no copies: the CPU and
        // the GPU both use the mapped counter. Return the GPU's answer.
        return number;
    });
    CUDA_CHECK(cudaFreeHost(counter));
    log_close(log, n, producer);
}

// Stage 2: every GPU turn in one kernel. It waits for an even counter (the
// CPU's number), produces the next one, and exits when asked to stop.
__global__ void gpu_turns_persistent(handoff *shared, int *log, bool print)
{
    // TODO 5: loop: wait until the counter holds a CPU number (even), then
    // produce the next number as in TODO 1. Leave the kernel when the stop
    // flag is raised while waiting. Access both through system_int, with
    // the weakest memory order that is correct here: what must arrive
    // together with the number? (The CPU reads the log only after the
    // kernel has exited.) Every load is a trip over the bus: keep the stop
    // flag's off the fast path.
}

// Stage 2, the CPU's side of one hand-off (pingpong_persistent calls it):
// gives `number` to the kernel and leaves the kernel's answer in `answer`;
// false when the kernel has not answered by the deadline.
static bool hand_off_persistent(handoff *shared, int number, int &answer)
{
    // TODO 6: hand `number` to the kernel through shared->counter, then
    // wait (with spin_until, which gives up at the deadline) until the
    // kernel has replaced it with its answer. Use system_int on the host
    // too, with the memory orders that pair with the kernel's.
    (void)shared, (void)number, (void)answer;   // (delete this line once you use them)
    return spin_until([&] { return false; });
}

/* ---------------------------------------------------------------- tasks */

// Stage 3: each block claims a task, does it, and claims the next until none
// are left, so a block's launch cost is paid once for many tasks.
__global__ void worker_pool(const unsigned *in, unsigned *out, int *visits, int tasks,
                            int task_size)
{
    // TODO 7: until the tasks run out, claim the next task from next_task
    // (the host sets it before the launch: only claim from it; one claim per
    // block, shared with the whole block) and do it with run_task. Make sure
    // no thread still reads the claim when the next one is made, and that
    // the whole block leaves together.
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
    // TODO 9: as in TODO 7, claim the k-th enqueued task from next_claim,
    // but it may not be enqueued yet: wait until seen_head is above k, read
    // the task number from slot k % in_flight, do it, and then set the
    // slot's done entry to k + 1. Leave when seen_head is -1. The block
    // whose claim equals seen_head is the one that reads ring->head (and
    // ring->stop) and updates seen_head. Choose each access's memory order:
    // the host writes a slot before moving head, and refills it once it
    // sees done.
}

int coresident_blocks(int part, int block_size)
{
    // TODO 8: how many blocks of block_size threads of the kernel (part 2:
    // worker_pool, part 3: host_fed; no dynamic shared memory) fit on one
    // SM at once, times the SMs of the current device.
    (void)part, (void)block_size;   // (delete this line once you use them)
    return 0;
}

// Stage 4, the host's side of the ring (tasks_host_fed calls these). Enqueues
// task number tasks - 1 - enqueued as the enqueued-th task (from 0).
static void enqueue_task(feed_ring *ring, int in_flight, int tasks, int enqueued)
{
    // TODO 10: put task number tasks - 1 - enqueued into its slot and
    // move ring->head on, so that the kernel that sees the new head
    // also sees the task.
    (void)ring, (void)in_flight, (void)tasks, (void)enqueued;   // (delete this line once you use them)
}

// Whether the GPU has marked the completed-th task enqueued (from 0) done.
static bool oldest_done(feed_ring *ring, int in_flight, int completed)
{
    // TODO 11: is the oldest task not yet seen complete (number
    // `completed` in enqueue order) done? Its slot is refilled next.
    (void)ring, (void)in_flight, (void)completed;   // (delete this line once you use them)
    return false;
}
