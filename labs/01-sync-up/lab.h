/* Lab 01, "Let's sync-up!": threads take turns in a fixed order.
 *
 * Every entry point hands the numbers 0 .. count-1 out in order: number n
 * belongs to thread n % (number of threads), and that thread takes its turn
 * only after number n - 1 has been taken. Taking a turn means one of two
 * things, chosen by `record`:
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

#ifdef __cplusplus
}
#endif

#endif
