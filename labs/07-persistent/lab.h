/* Lab 07, persistent kernels and CPU-GPU hand-offs: the entry points that the
 * skeleton (labs/) and the reference (solutions/) both define, and that
 * test.c and bench.c call.
 *
 *   stage 0  ping-pong (a): copy the counter over and relaunch for every number
 *   stage 1  ping-pong (b): mapped pinned counter, relaunch + synchronise
 *   stage 2  ping-pong (c): one persistent kernel, hand-offs through a flag
 *   stage 3  worker pool: co-resident blocks pull tasks from an atomic counter
 *   stage 4  host-fed persistent kernel: a ring buffer in mapped pinned memory
 *
 * Nothing here waits forever: every host wait has a deadline of
 * HANDOFF_TIMEOUT_S and fails through wb_fail with the reason. */
#ifndef LAB_PERSISTENT_H
#define LAB_PERSISTENT_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Who produced a number of the ping-pong: the CPU the even ones, the GPU the
 * odd ones. */
enum { PRODUCER_CPU = 1, PRODUCER_GPU = 2 };

/* Longest a host wait may take before it gives up (seconds). */
#define HANDOFF_TIMEOUT_S 2.0

/* ---------------------------------------------------- part 1: ping-pong */

/* Produce the numbers 0 .. n-1, the CPU the even ones and the GPU the odd
 * ones, each side in turn. producer[k] (n ints, host memory) receives who
 * produced k. round_trip_us (n / 2 doubles, or NULL) receives the time of
 * each hand-off: from the CPU passing its number to the CPU holding the
 * GPU's answer. With print, the CPU prints "k" and the GPU "\tk", one a line.
 * All three are synchronous and fail through wb_fail when a side misbehaves. */
void pingpong_copy(int n, int *producer, double *round_trip_us, bool print);        /* stage 0 */
void pingpong_mapped(int n, int *producer, double *round_trip_us, bool print);      /* stage 1 */
void pingpong_persistent(int n, int *producer, double *round_trip_us, bool print);  /* stage 2 */

/* The three ways by stage, for the tables of test.c and bench.c
 * (pingpong_ways.c). */
typedef void (*pingpong_fn)(int n, int *producer, double *round_trip_us, bool print);
typedef struct {
    const char *stage, *name;
    pingpong_fn run;
} pingpong_way;
enum { PINGPONG_WAYS = 3 };
extern const pingpong_way pingpong_ways[PINGPONG_WAYS];

/* The yardstick: `reps` launches of an empty kernel, each followed by
 * cudaDeviceSynchronize; us[i] receives the time of each (microseconds). */
void empty_launch_sync_us(int reps, double *us);

/* ----------------------------------------------- parts 2 and 3: tasks */

/* Task t is elements [t * task_size, (t + 1) * task_size) of in: one block
 * writes out[i] = task_result(in[i]) for each of them and adds 1 to
 * visits[t], so a task done twice or never shows. in, out and visits are
 * device memory; visits must be zero before a run. */
#ifdef __CUDACC__
#define TASK_HOST_DEVICE __host__ __device__
#else
#define TASK_HOST_DEVICE
#endif
#define TASK_ROUNDS 8
static inline TASK_HOST_DEVICE unsigned task_result(unsigned x)
{
    for (int r = 0; r < TASK_ROUNDS; r++)
        x = (x ^ (x >> 15)) * 0x2c1b3c6dU + (unsigned)r;
    return x;
}

/* The most blocks of block_size threads that can be resident at once for
 * the stage 3 (part = 2) or stage 4 (part = 3) kernel: blocks per SM from
 * the occupancy API times the number of SMs. */
int coresident_blocks(int part, int block_size);

/* Stage 3: one launch of `blocks` blocks (0: coresident_blocks(2, ...)) that
 * pull tasks from a counter until none are left. Asynchronous. Returns 0, or
 * -1 after explaining on stderr when blocks is more than can be resident. */
int tasks_worker_pool(const unsigned *in, unsigned *out, int *visits, int tasks, int task_size,
                      int blocks, int block_size);
/* Stage 3 started part-way (given, for the tests): tasks_worker_pool with
 * the counter set to first_task (0 .. tasks) instead of 0 before the
 * launch, as if the tasks before it were done already. A pool that only
 * claims from the counter does tasks first_task .. tasks - 1 and no other.
 * Asynchronous. Returns 0, or -1 after explaining on stderr. */
int tasks_worker_pool_from(int first_task, const unsigned *in, unsigned *out, int *visits,
                           int tasks, int task_size, int blocks, int block_size);
/* After the last tasks_worker_pool (given): how many claims its blocks made
 * on the task counter, which a pool that claims its tasks one at a time
 * leaves at tasks + blocks (each block's last claim finds none left), and
 * into *blocks how many blocks it launched. Waits for the pool to finish. */
int tasks_pool_claims(int *blocks);
/* The comparisons (given): one launch per task, and one launch of one block
 * per task. Asynchronous. */
void tasks_launch_per_task(const unsigned *in, unsigned *out, int *visits, int tasks,
                           int task_size, int block_size);
void tasks_one_launch(const unsigned *in, unsigned *out, int *visits, int tasks, int task_size,
                      int block_size);

/* Stage 4: a persistent kernel of `blocks` blocks (0: coresident_blocks(3,
 * ...)) runs while the host enqueues the tasks, in the order tasks-1 .. 0,
 * into a ring of `in_flight` slots in mapped pinned memory, waits for them
 * to complete, then tells the kernel to exit. latency_us (tasks doubles, or
 * NULL) receives enqueue-to-completion times in enqueue order. Synchronous.
 * Returns 0, or -1 after explaining on stderr when blocks is more than can
 * be resident or in_flight is outside 1 .. FEED_MAX_IN_FLIGHT. */
#define FEED_MAX_IN_FLIGHT 4096
int tasks_host_fed(const unsigned *in, unsigned *out, int *visits, int tasks, int task_size,
                   int blocks, int block_size, int in_flight, double *latency_us);

#ifdef __cplusplus
}
#endif

#endif
