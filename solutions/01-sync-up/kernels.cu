/*
 * Lab 01 reference: ordered turns with a barrier, with a spin, across blocks.
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

/* Stage 2: the counter lives in global memory, the only memory all blocks
 * share. The host sets it to 0 before every launch (a kernel cannot: there
 * is no barrier across blocks to wait for the reset). */
__device__ int grid_next;

__global__ void ordered_stage2(int *record, int count)
{
    int thread = blockIdx.x * blockDim.x + threadIdx.x;
    volatile int *next = &grid_next;
    for (int n = thread; n < count; n += gridDim.x * blockDim.x) {
        while (*next != n)
            ;
        take_turn(record, thread, n);
        /* Device-wide: the turn's output is visible to every SM before the
         * counter moves. Only the owner writes; atomicAdd is performed in
         * L2, which every SM's volatile reads reach (a plain increment may
         * read a stale copy from this SM's L1 or a register). */
        __threadfence();
        atomicAdd(&grid_next, 1);
    }
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
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ordered_stage2, threads, 0));
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
