/*
 * Lab 01: the code both sides share, given (the skeleton and the reference
 * both include it at their top). For stages 0-2: take_turn, the argument
 * checks, the grid's counter grid_next, and the entry points ordered_barrier,
 * ordered_spin and ordered_grid that check their arguments and launch the
 * kernels. For stage 3: the flag type device_flag, the chain's two steps
 * (step_down, step_up) and handshake_chain. For stage 4: block_maximum,
 * announce_maximum, the ticket counter max_tickets and grid_maximum. For
 * stage 5: block_sum, the total donation_total and work_donation. It comes
 * before the kernels, which call these helpers, so it declares the kernels
 * it launches; kernels.cu defines them, and ordered_grid_max_blocks
 * (lab.h), which ordered_grid asks.
 */
#include <cooperative_groups.h>
#include <cuda/atomic>
#include <limits.h>

namespace cg = cooperative_groups;

/* What a thread does when its turn comes. */
__device__ void take_turn(int *record, int thread, int n)
{
    if (record)
        record[n] = thread;
    else
        printf("%d: %d\n", thread, n);
}

static void check_shape(const char *who, int blocks, int threads)
{
    if (blocks < 1 || threads < 1 || threads > 1024)
        wb_fail("%s: need blocks >= 1 and 1 <= threads <= 1024 (got blocks = %d, threads = %d)",
                who, blocks, threads);
}

static void check_arguments(const char *who, int count, int blocks, int threads)
{
    if (count < 0)
        wb_fail("%s: need count >= 0 (got count = %d)", who, count);
    check_shape(who, blocks, threads);
}

/* A grid whose blocks wait for one another must be resident all at once: a
 * block that is not waits for a block to finish, while the resident ones
 * spin waiting for it, and the grid hangs. The occupancy limit (`most`)
 * says how many blocks can be; only a cooperative launch guarantees that
 * they are (another process on the GPU, MPS or a partition can take SMs):
 * it fails with cudaErrorCooperativeLaunchTooLarge rather than hang. */
static void refuse_unless_resident(const char *who, long long blocks, int threads, long long most)
{
    if (blocks > most)
        wb_fail("%s: %lld blocks of %d threads cannot all be resident at once (at most %lld "
                "on this GPU), and waiting blocks would hang the grid",
                who, blocks, threads, most);
}

static void launch_cooperative(const char *who, const void *kernel, int blocks, int threads,
                               void **arguments)
{
    cudaError_t status = cudaLaunchCooperativeKernel(kernel, blocks, threads, arguments, 0, 0);
    if (status == cudaErrorCooperativeLaunchTooLarge) {
        (void)cudaGetLastError();   // not sticky: clear it before failing
        wb_fail("%s: %d blocks of %d threads cannot all be resident at once (the cooperative "
                "launch refused them), and waiting blocks would hang the grid",
                who, blocks, threads);
    }
    CUDA_CHECK(status);
    CUDA_CHECK_LAUNCH();
}

/* The most threads the GPU holds at once: a grid larger than that is
 * refused before anything is allocated for it. */
static void refuse_more_than_the_gpu_holds(const char *who, int blocks, int threads)
{
    wb_device device = wb_device_info();
    long long most = (long long)device.sm_count * (device.max_threads_per_sm / threads);
    refuse_unless_resident(who, blocks, threads, most);
}

/* A device buffer of at least `count` ints, kept from one call to the next
 * and grown when a call needs more (cudaFree waits for the GPU first). */
typedef struct {
    int *ints;
    size_t count;
} scratch;

static int *scratch_ints(scratch *s, size_t count)
{
    if (s->count < count) {
        if (s->ints)
            CUDA_CHECK(cudaFree(s->ints));
        CUDA_CHECK(cudaMalloc((void **)&s->ints, count * sizeof(int)));
        s->count = count;
    }
    return s->ints;
}

static const int zero_int = 0;

/* ------------------------------------------------------- stages 0, 1, 2 */

/* Stage 2's counter lives in global memory, the only memory all blocks
 * share. The host sets it to 0 before every launch (ordered_grid, below; a
 * kernel cannot: there is no barrier across blocks to wait for the reset). */
__device__ int grid_next;

__global__ void ordered_stage0(int *record, int count);
__global__ void ordered_stage1(int *record, int count);
__global__ void ordered_stage2(int *record, int count);

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

void ordered_grid(int *record, int count, int blocks, int threads)
{
    check_arguments("ordered_grid", count, blocks, threads);
    refuse_unless_resident("ordered_grid", blocks, threads, ordered_grid_max_blocks(threads));
    CUDA_CHECK(cudaMemcpyToSymbolAsync(grid_next, &zero_int, sizeof zero_int));
    void *arguments[] = {&record, &count};
    launch_cooperative("ordered_grid", (const void *)ordered_stage2, blocks, threads, arguments);
}

/* ------------------------------------------------------------ stage 3 */

/* A flag shared by two threads that may run on different SMs: atomic
 * accesses whose ordering reaches every thread of the device. */
using device_flag = cuda::atomic_ref<int, cuda::thread_scope_device>;

/* What the participants of the chain share. There are n = blocks x threads
 * of them; participant k is the thread blockIdx.x * blockDim.x + threadIdx.x. */
struct chain_args {
    const int *input;   /* n ints */
    int *down, *up;     /* n ints each, written by the steps */
    int *order;         /* 2n ints: the ticket of every step */
    int *flags;         /* flags[k]: the hand-shake of k and k + 1; 0 at launch */
};

/* The steps' tickets; the host sets it to 0 before every launch. */
__device__ int chain_ticket;

/* Participant k's step on the way down the chain: it reads what k - 1
 * wrote on its way down. */
__device__ void step_down(chain_args a, int k)
{
    a.down[k] = (k > 0 ? a.down[k - 1] : 0) + a.input[k];
    a.order[k] = atomicAdd(&chain_ticket, 1);
}

/* Participant k's step on the way back up (its S): it reads what k + 1
 * wrote on its way up. */
__device__ void step_up(chain_args a, int k)
{
    int n = gridDim.x * blockDim.x;
    a.up[k] = (k + 1 < n ? a.up[k + 1] : 0) + a.input[k];
    a.order[n + k] = atomicAdd(&chain_ticket, 1);
}

__global__ void handshake_stage3(chain_args a);

void handshake_chain(const int *input, int *down, int *up, int *order, int blocks, int threads)
{
    check_shape("handshake_chain", blocks, threads);
    if (!input || !down || !up || !order)
        wb_fail("handshake_chain: input, down, up and order must be device buffers (one is "
                "NULL)");
    /* Every participant waits for its neighbours: the whole chain must be
     * resident at once (the cooperative launch makes sure). */
    refuse_more_than_the_gpu_holds("handshake_chain", blocks, threads);
    static scratch flags;
    size_t n = (size_t)blocks * threads;
    chain_args a = {input, down, up, order, scratch_ints(&flags, n)};
    CUDA_CHECK(cudaMemsetAsync(a.flags, 0, n * sizeof(int)));
    CUDA_CHECK(cudaMemcpyToSymbolAsync(chain_ticket, &zero_int, sizeof zero_int));
    void *arguments[] = {&a};
    launch_cooperative("handshake_chain", (const void *)handshake_stage3, blocks, threads,
                       arguments);
}

/* ------------------------------------------------------------ stage 4 */

/* A fold of a block's share of in[0..n-1] (the elements i = blockIdx.x *
 * blockDim.x + threadIdx.x + j * gridDim.x * blockDim.x), returned to every
 * thread of the block; Op::identity() for a block with no element. Every
 * thread of the block must call it (it has barriers). */
template <class Op> __device__ typename Op::value block_fold(const int *in, int n)
{
    typedef typename Op::value value;
    __shared__ value each[1024];
    value v = Op::identity();
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        v = Op::fold(v, in[i]);
    each[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        if (threadIdx.x % (2 * s) == 0 && threadIdx.x + s < blockDim.x)
            each[threadIdx.x] = Op::fold(each[threadIdx.x], each[threadIdx.x + s]);
        __syncthreads();
    }
    v = each[0];
    __syncthreads();   // each[] may be used again after the return
    return v;
}

struct max_op {
    typedef int value;
    __device__ static int identity() { return INT_MIN; }
    __device__ static int fold(int a, int b) { return a > b ? a : b; }
};

/* The largest element of the block's share (INT_MIN when it has none). */
__device__ int block_maximum(const int *in, int n) { return block_fold<max_op>(in, n); }

struct max_args {
    const int *in;
    int n;
    int *partial;   /* one int per block (and one more past them), GRID_MAXIMUM_STALE at launch */
    int *result;
    int print;
};

/* Every byte of GRID_MAXIMUM_STALE (lab.h), what partial[] holds when the
 * kernel starts, one int past the last block's too: a block that reads a
 * partial result before its store is visible, or one past the end, reads
 * that, and takes it for the maximum. */
#define MAX_STALE_BYTE 0x7F

/* The blocks' tickets. 0 when the program starts; the host never resets
 * it: the block that draws the last ticket of a launch must. */
__device__ unsigned int max_tickets;

/* The grid's maximum, found by the last block: written to the result, and
 * printed as the course asks, from inside the kernel, when asked to. */
__device__ void announce_maximum(max_args a, int best)
{
    *a.result = best;
    if (a.print)
        printf("maximum: %d\n", best);
}

__global__ void maximum_stage4(max_args a);

void grid_maximum(const int *in, int n, int *result, int blocks, int threads, int print)
{
    check_shape("grid_maximum", blocks, threads);
    if (n < 1)
        wb_fail("grid_maximum: need n >= 1: the maximum of no numbers is not defined (got "
                "n = %d)", n);
    if (blocks > GRID_MAXIMUM_MAX_BLOCKS)
        wb_fail("grid_maximum: need blocks <= %d (one partial result each; got blocks = %d)",
                GRID_MAXIMUM_MAX_BLOCKS, blocks);
    if (!in || !result)
        wb_fail("grid_maximum: in and result must be device buffers (one is NULL)");
    static scratch partial;
    max_args a = {in, n, scratch_ints(&partial, (size_t)blocks + 1), result, print};
    CUDA_CHECK(cudaMemsetAsync(a.partial, MAX_STALE_BYTE, ((size_t)blocks + 1) * sizeof(int)));
    /* No block waits for another: any number of blocks may run, resident
     * at once or not. */
    maximum_stage4<<<blocks, threads>>>(a);
    CUDA_CHECK_LAUNCH();
}

unsigned grid_maximum_tickets(void)
{
    unsigned tickets;
    CUDA_CHECK(cudaMemcpyFromSymbol(&tickets, max_tickets, sizeof tickets));
    return tickets;
}

/* ------------------------------------------------------------ stage 5 */

struct sum_op {
    typedef unsigned long long value;
    __device__ static value identity() { return 0; }
    __device__ static value fold(value a, value b) { return a + b; }
};

/* The sum of the block's share (0 when it has none); work is never
 * negative. */
__device__ unsigned long long block_sum(const int *work, int n)
{
    return block_fold<sum_op>(work, n);
}

struct donate_args {
    const int *work;
    int n, k;
    int *kept;     /* n ints */
    int *list;     /* 2n ints: pairs (element, amount donated) */
    int *length;   /* pairs in list: the worklist's tail, 0 at launch */
};

/* The sum of all the work; the host sets it to 0 before every launch. */
__device__ unsigned long long donation_total;

__global__ void donate_stage5(donate_args a);

void work_donation(const int *work, int n, int k, int *kept, int *list, int *length, int blocks,
                   int threads)
{
    check_shape("work_donation", blocks, threads);
    if (n < 1 || k < 0 || k > DONATION_MAX_K)
        wb_fail("work_donation: need n >= 1 and 0 <= k <= %d (got n = %d, k = %d)",
                DONATION_MAX_K, n, k);
    if (!work || !kept || !list || !length)
        wb_fail("work_donation: work, kept, list and length must be device buffers (one is "
                "NULL)");
    /* The grid waits for itself at its barrier: all blocks resident. */
    refuse_more_than_the_gpu_holds("work_donation", blocks, threads);
    static const unsigned long long zero = 0;
    CUDA_CHECK(cudaMemcpyToSymbolAsync(donation_total, &zero, sizeof zero));
    CUDA_CHECK(cudaMemsetAsync(length, 0, sizeof(int)));
    donate_args a = {work, n, k, kept, list, length};
    void *arguments[] = {&a};
    launch_cooperative("work_donation", (const void *)donate_stage5, blocks, threads,
                       arguments);
}
