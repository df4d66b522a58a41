/* Lab 04, parallel reduction: the entry points that the skeleton (labs/) and
 * the reference (solutions/) both define, and that test.c and bench.c call. */
#ifndef LAB_REDUCTION_H
#define LAB_REDUCTION_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stages 0 ... REDUCE_STAGES - 1, as in handouts/04-reduction.md. */
#define REDUCE_STAGES 8

/* Block sizes every stage supports: the powers of two from 32 to 1024. */
#define REDUCE_MIN_BLOCK 32
#define REDUCE_MAX_BLOCK 1024

/* The lecture's name for a stage ("interleaved, divergent", ...). */
const char *reduce_stage_name(int stage);

/* Ints of device scratch memory reduce_sum needs for n inputs (any stage,
 * any block size). */
size_t reduce_scratch_ints(int n);

/* Blocks of block_size threads in the grid of stage 6 or 7: as many as the
 * GPU holds at once (the occupancy API), each thread looping over the rest. */
unsigned reduce_resident_blocks(int stage, int block_size);

/* *d_out = d_in[0] + ... + d_in[n - 1] (0 when n == 0), with int wrap-around,
 * using stage `stage`'s kernel in blocks of block_size threads. d_in, d_out
 * and d_scratch (reduce_scratch_ints(n) ints) are device memory. Stages 0-6
 * write one partial sum per block and launch the same kernel again on the
 * partial sums until one block is left; stage 7 needs a single launch.
 * Asynchronous: returns after the launches, which it has checked. A stage
 * outside 0-7 or an unsupported block size is reported through wb_fail. */
void reduce_sum(int stage, const int *d_in, int n, int block_size, int *d_scratch,
                int *d_out);

/* reduce_sum on `stream` instead of the default stream: the benchmark
 * captures it into a CUDA graph (wb_time_gpu_graph). */
void reduce_sum_async(int stage, const int *d_in, int n, int block_size, int *d_scratch,
                      int *d_out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
