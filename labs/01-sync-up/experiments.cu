/*
 * The experiments of lab 01, given (not student work).
 *
 * The lecture's five versions of "Let's sync-up!": three threads print
 * 0 .. 9, thread t the numbers n with n % 3 == t. They are generalised only
 * in the block size (n % blockDim.x) and in the count (10 in the lecture);
 * the bugs are kept on purpose. Some are faulty: predict what each prints
 * before running sync-up-experiments.
 *
 * The message-passing litmus test across SMs (sync-up-experiments
 * --litmus), after the five versions.
 */
#include <cuda/atomic>
#include <stdio.h>

#include "experiments.h"
#include "workbook.h"

/* Version 1: no synchronisation at all. */
__global__ void version1(int count)
{
    for (int ii = 0; ii < count; ++ii)
        if (ii % blockDim.x == threadIdx.x)
            printf("%d: %d\n", threadIdx.x, ii);
}

/* Version 2: a shared counter and a barrier in the loop. */
__global__ void version2(int count)
{
    __shared__ int n;
    n = 0;
    __syncthreads();
    while (n < count) {
        if (n % blockDim.x == threadIdx.x) {
            printf("%d: %d\n", threadIdx.x, n);
            ++n;
        }
        __syncthreads();
    }
}

/* Version 3: a volatile counter in global memory, no barrier in the loop. */
__device__ volatile int global_n;

__global__ void version3(int count)
{
    global_n = 0;
    __syncthreads();
    while (global_n < count) {
        if (global_n % blockDim.x == threadIdx.x) {
            printf("%d: %d\n", threadIdx.x, global_n);
            ++global_n;
        }
    }
}

/* Version 4: the same with a volatile counter in shared memory. */
__global__ void version4(int count)
{
    volatile __shared__ int n;
    n = 0;
    __syncthreads();
    while (n < count) {
        if (n % blockDim.x == threadIdx.x) {
            printf("%d: %d\n", threadIdx.x, n);
            ++n;
        }
    }
}

/* Version 5: every thread takes a ticket with atomicInc. */
__global__ void version5(int count)
{
    __shared__ unsigned int n;
    n = 0;
    __syncthreads();
    while (n < (unsigned)count) {
        unsigned oldn = atomicInc(&n, 100);
        if (oldn % blockDim.x == threadIdx.x)
            printf("%d: %d\n", threadIdx.x, oldn);
    }
}

extern "C" void sync_up_experiment(int version, int count, int threads)
{
    void (*kernels[])(int) = {version1, version2, version3, version4, version5};
    kernels[version - 1]<<<1, threads>>>(count);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
}

/* ------------------------------------------------------------------------
 * Message passing across SMs. Block 0 writes, block 1 reads, one thread
 * each; each block asks for more shared memory than half an SM has, so no
 * SM holds both, and the cooperative launch makes sure both run at once.
 * Round k uses words of its own, 0 at launch:
 *   reader: [reads data[k] once: read_first]  ready[k] = 1
 *           waits for flag[k]  reads data[k]  records what it found
 *   writer: waits for ready[k]  data[k] = 1  flag[k] = 1
 * The writer starts a round only when the reader is waiting for it, so the
 * flag arrives as soon after the data as it can. Finding 0 in data[k] after
 * seeing flag[k] = 1 is reading stale data. Each data word has a 128-byte
 * line of its own: a line that the reader cached in an earlier round holds
 * no later round's data.
 */
enum { LINE_INTS = 32 };

using device_int = cuda::atomic_ref<int, cuda::thread_scope_device>;

struct litmus_words {
    int *data;                  /* rounds x LINE_INTS: round k's word is data[k * LINE_INTS] */
    int *flag, *ready;          /* rounds each */
    int *seen;                  /* rounds: 0 not finished, 1 stale, 2 fresh (| 4: the early
                                   read already found the data) */
    int *abandon;               /* set by the side that gives up waiting: both stop */
    int *sm;                    /* the writer's SM and the reader's */
    int rounds;
    unsigned long long timeout_ns;
};

__device__ static unsigned long long now_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ static int sm_id(void)
{
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return (int)id;
}

/* Spins until *word is not 0 (volatile loads, or acquire loads); false when
 * the other side gave up or the time ran out first, which then ends both
 * sides: no wait of the experiment can hang. */
template <bool acquire> __device__ static bool wait_for(int *word, const litmus_words &w)
{
    volatile int *abandon = w.abandon;
    unsigned long long start = now_ns();
    for (unsigned spins = 1;; spins++) {
        if (acquire ? device_int(*word).load(cuda::memory_order_acquire) != 0
                    : *(volatile int *)word != 0)
            return true;
        if (spins % 256 == 0 && (*abandon || now_ns() - start > w.timeout_ns)) {
            *abandon = 1;
            return false;
        }
    }
}

template <int variant> __device__ static void litmus_writer(const litmus_words &w)
{
    for (int k = 0; k < w.rounds; k++) {
        if (!wait_for<false>(&w.ready[k], w))
            return;
        w.data[k * LINE_INTS] = 1;   // the message: a plain store
        if (variant == LITMUS_RELEASE_ACQUIRE) {
            device_int(w.flag[k]).store(1, cuda::memory_order_release);
        } else {
            if (variant != LITMUS_PLAIN)
                __threadfence();
            *(volatile int *)&w.flag[k] = 1;
        }
    }
}

template <int variant, bool read_first> __device__ static void litmus_reader(const litmus_words &w)
{
    for (int k = 0; k < w.rounds; k++) {
        /* A plain load now may leave the line in this SM's L1 cache (and
         * the old value is what a later load may be given). */
        int early = read_first ? w.data[k * LINE_INTS] : 0;
        *(volatile int *)&w.ready[k] = 1;
        if (!wait_for<variant == LITMUS_RELEASE_ACQUIRE>(&w.flag[k], w))
            return;
        if (variant == LITMUS_BOTH_FENCES)
            __threadfence();
        int late = w.data[k * LINE_INTS];   // a plain load
        /* The early value is kept too (bit 2), or the compiler would drop
         * the early load as useless. */
        w.seen[k] = (late != 0 ? 2 : 1) | (early != 0 ? 4 : 0);
    }
}

template <int variant, bool read_first> __global__ static void litmus(litmus_words w)
{
    if (threadIdx.x != 0)
        return;
    w.sm[blockIdx.x] = sm_id();
    if (blockIdx.x == 0)
        litmus_writer<variant>(w);
    else
        litmus_reader<variant, read_first>(w);
}

extern "C" litmus_counts sync_up_litmus(int variant, int read_first, int rounds, double timeout_s)
{
    static const void *kernels[LITMUS_VARIANTS][2] = {
        {(const void *)litmus<LITMUS_PLAIN, false>, (const void *)litmus<LITMUS_PLAIN, true>},
        {(const void *)litmus<LITMUS_WRITER_FENCE, false>,
         (const void *)litmus<LITMUS_WRITER_FENCE, true>},
        {(const void *)litmus<LITMUS_BOTH_FENCES, false>,
         (const void *)litmus<LITMUS_BOTH_FENCES, true>},
        {(const void *)litmus<LITMUS_RELEASE_ACQUIRE, false>,
         (const void *)litmus<LITMUS_RELEASE_ACQUIRE, true>}};
    const void *kernel = kernels[variant - 1][read_first ? 1 : 0];
    /* The most shared memory a block may have: two such blocks never fit on
     * one SM. */
    int shared = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));

    size_t words = (size_t)rounds * (LINE_INTS + 3) + 3, bytes = words * sizeof(int);
    int *all;
    CUDA_CHECK(cudaMalloc((void **)&all, bytes));
    CUDA_CHECK(cudaMemset(all, 0, bytes));
    litmus_words w;
    w.data = all;
    w.flag = w.data + (size_t)rounds * LINE_INTS;
    w.ready = w.flag + rounds;
    w.seen = w.ready + rounds;
    w.abandon = w.seen + rounds;
    w.sm = w.abandon + 1;
    w.rounds = rounds;
    w.timeout_ns = (unsigned long long)(timeout_s * 1e9);
    void *arguments[] = {&w};
    CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, 2, 1, arguments, (size_t)shared, 0));
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());

    int *seen = (int *)malloc(sizeof(int) * (size_t)rounds), sm[2];
    if (!seen)
        wb_fail("out of host memory for %d rounds", rounds);
    CUDA_CHECK(cudaMemcpy(seen, w.seen, sizeof(int) * (size_t)rounds, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(sm, w.sm, sizeof sm, cudaMemcpyDeviceToHost));
    litmus_counts counts = {0, 0, 0, sm[0], sm[1]};
    for (int k = 0; k < rounds; k++) {
        if ((seen[k] & 3) == 2)
            counts.fresh++;
        else if ((seen[k] & 3) == 1)
            counts.stale++;
        else
            counts.gave_up++;
    }
    free(seen);
    CUDA_CHECK(cudaFree(all));
    return counts;
}
