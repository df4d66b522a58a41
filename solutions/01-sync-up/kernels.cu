/*
 * Lab 01 reference: ordered turns with a barrier, with a spin, across blocks.
 */
#include <stdio.h>

#include "lab.h"
#include "workbook.h"

/* Given, the same on both sides: take_turn, the argument checks, grid_next
 * and the entry points that launch the kernels. */
#include "given.cuh"

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

/* Stage 2: the counter is grid_next (given.cuh), in global memory; the
 * host sets it to 0 before every launch. */
__global__ void ordered_stage2(int *record, int count)
{
    int thread = blockIdx.x * blockDim.x + threadIdx.x;
    volatile int *next = &grid_next;
    for (int n = thread; n < count; n += gridDim.x * blockDim.x) {
        while (*next != n)
            ;
        take_turn(record, thread, n);
        /* Device-wide: the fence makes the turn's output visible to every
         * SM before the counter moves. Only the owner writes the counter,
         * but the write is a device-scope atomic: the memory model promises
         * other SMs' spinning reads only atomic (or volatile) accesses; a
         * plain increment may work on a copy in this SM's L1 or a register
         * and publish it late. */
        __threadfence();
        atomicAdd(&grid_next, 1);
    }
}

int ordered_grid_max_blocks(int threads)
{
    check_arguments("ordered_grid_max_blocks", 0, 1, threads);
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ordered_stage2, threads, 0));
    return per_sm * wb_device_info().sm_count;
}
