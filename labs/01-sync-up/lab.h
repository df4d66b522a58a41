/* Lab 01, "Let's sync-up!": threads take turns in a fixed order (stages
 * 0-2), hand-shake along a chain (stage 3), hand a result to the last block
 * (stage 4) and share out work across the grid (stage 5).
 *
 * Stages 0-2: every entry point hands the numbers 0 .. count-1 out in
 * order: number n belongs to thread n % (number of threads), and that
 * thread takes its turn only after number n - 1 has been taken. Taking a
 * turn means one of two things, chosen by `record`:
 *   record == NULL  print the line "<thread>: <n>\n" with device printf
 *   record != NULL  write record[n] = <thread> (device memory, count ints)
 * where <thread> is the thread's index in the grid (threadIdx.x for one
 * block). Recording is what the timing uses: printing is slow and not the
 * point. Every entry point checks its arguments (wb_fail on bad ones),
 * launches, checks the launch and returns without waiting. */
#ifndef LAB_SYNC_UP_H
#define LAB_SYNC_UP_H

#ifdef __cplusplus
extern "C" {
#endif

/* Stage 0: one block of `threads` threads (1..1024), a counter in shared
 * memory and __syncthreads(). */
void ordered_barrier(int *record, int count, int threads);

/* Stage 1: the same, with no block barrier inside the loop: threads wait for
 * their turn by spinning on the counter. */
void ordered_spin(int *record, int count, int threads);

/* Stage 2: `blocks` blocks of `threads` threads in grid order, with a
 * counter in global memory. Refuses (wb_fail) more blocks than can be
 * resident on the GPU at once. */
void ordered_grid(int *record, int count, int blocks, int threads);

/* The most blocks of `threads` threads that ordered_grid can run at once:
 * blocks per SM (occupancy API) times the number of SMs. */
int ordered_grid_max_blocks(int threads);

/* Every entry point below checks its arguments (wb_fail, naming the one
 * refused), launches and returns without waiting; the buffers are device
 * memory. */

/* Stage 3: a chain of hand-shakes among the n = blocks x threads threads of
 * one grid (participant k is the thread blockIdx.x * blockDim.x +
 * threadIdx.x), launched cooperatively: refused (wb_fail) when they cannot
 * all be resident at once. Participant k, in this order:
 *   waits for the request of k - 1           (k > 0)
 *   steps down:  down[k] = down[k - 1] + input[k]   (input[0] for k = 0)
 *   asks k + 1 and waits for its answer      (k < n - 1)
 *   steps up:    up[k] = up[k + 1] + input[k]       (input[n-1] for k = n-1)
 *   answers k - 1                            (k > 0)
 * Each step takes the next ticket of one counter: order[k] is the ticket of
 * k's step down, order[n + k] that of its step up, so that a right run
 * gives order[k] = k and order[n + k] = 2n - 1 - k. input, down and up
 * hold n ints, order 2n. */
void handshake_chain(const int *input, int *down, int *up, int *order, int blocks, int threads);

/* Stage 4: the largest of in[0 .. n-1] (n >= 1), found by blocks x threads
 * threads in one kernel: every block stores the maximum of its share, the
 * block that finishes last combines them and writes *result, and when
 * print is not 0 its thread 0 also prints "maximum: <value>\n" with device
 * printf. Any number of blocks from 1 to GRID_MAXIMUM_MAX_BLOCKS: no block
 * waits for another. */
#define GRID_MAXIMUM_MAX_BLOCKS (1 << 20)
/* What the blocks' partial results hold when the kernel starts (every byte
 * 0x7F), and the int after the last of them: a partial result read before
 * its store was visible, or read past the last block's, shows as this. */
#define GRID_MAXIMUM_STALE 0x7F7F7F7F
void grid_maximum(const int *in, int n, int *result, int blocks, int threads, int print);
/* The ticket counter max_tickets as the launches so far left it (waits for
 * them): 0 when each launch's last block reset it. For the tests. */
unsigned grid_maximum_tickets(void);

/* Stage 5: work donation. Element i of work[0 .. n-1] (n >= 1, every
 * work[i] in 0 .. DONATION_MAX_K) is the work of one thread. With
 * average = floor(sum of all work / n) (integer division) and
 * keep = average + k (0 <= k <= DONATION_MAX_K): an element whose work is
 * more than keep keeps `keep` and pushes the pair (i, work[i] - keep) to
 * the worklist; the others keep their work. kept[i] (n ints) gets what
 * element i keeps; list (room for 2n ints) the pairs in any order, as
 * list[2p] = i and list[2p + 1] = amount; *length the number of pairs.
 * blocks x threads threads in one cooperative kernel (refused when they
 * cannot all be resident at once), each element handled by one thread
 * (a grid-stride loop). */
#define DONATION_MAX_K 1000000000
void work_donation(const int *work, int n, int k, int *kept, int *list, int *length, int blocks,
                   int threads);

#ifdef __cplusplus
}
#endif

#endif
