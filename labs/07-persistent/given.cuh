/*
 * Lab 07: everything around the TODOs, given (the skeleton and the reference
 * both include it at their top): the atomic types, the deadlines, mapped
 * memory, the stop flag, the CPU's half of the ping-pong, the task work and
 * its comparisons, and the host side of the persistent stages, which checks
 * its arguments, refuses launches that cannot all be resident, launches the
 * kernels and calls the student's hand-off functions. It comes before the
 * kernels it launches, so it declares them.
 */

// An int shared with the CPU: atomic accesses that order across the bus.
using system_int = cuda::atomic_ref<int, cuda::thread_scope_system>;
// An int shared among the GPU's blocks only: ordering stops at the GPU.
using device_int = cuda::atomic_ref<int, cuda::thread_scope_device>;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

// Spins until ready() holds; false when HANDOFF_TIMEOUT_S passes first.
template <class Ready> static bool spin_until(Ready ready)
{
    double deadline = now_us() + HANDOFF_TIMEOUT_S * 1e6;
    while (!ready())
        if (now_us() > deadline)
            return false;
    return true;
}

// Mapped pinned memory: host memory that kernels read and write over the
// bus, through the device pointer returned in *device.
template <class T> static T *alloc_mapped(size_t count, T **device)
{
    T *host;
    CUDA_CHECK(cudaHostAlloc((void **)&host, count * sizeof(T), cudaHostAllocMapped));
    CUDA_CHECK(cudaHostGetDevicePointer((void **)device, host, 0));
    return host;
}

// Ends a persistent kernel running on `stream`: raises its stop flag and
// waits, with a deadline, for it to exit. A kernel that ignores the flag
// cannot be killed, only reported (the process must then exit). Fails with
// `failure` afterwards when it is not NULL.
static void stop_persistent(cudaStream_t stream, int *stop, const char *failure)
{
    system_int(*stop).store(1, cuda::memory_order_release);
    if (!spin_until([&] { return cudaStreamQuery(stream) != cudaErrorNotReady; }))
        wb_fail("%s%sthe persistent kernel did not exit within %.0f s of being asked to stop: "
                "every wait loop in it must also watch the stop flag",
                failure ? failure : "", failure ? "; and " : "", HANDOFF_TIMEOUT_S);
    CUDA_CHECK(cudaStreamQuery(stream));   // a fault inside the kernel shows here
    CUDA_CHECK(cudaStreamDestroy(stream));
    if (failure)
        wb_fail("%s", failure);
}

static cudaStream_t persistent_stream(void)
{
    // With CUDA_LAUNCH_BLOCKING set, the launch itself would wait for a
    // kernel that waits for this host: refuse, rather than hang.
    const char *blocking = getenv("CUDA_LAUNCH_BLOCKING");
    if (blocking && strcmp(blocking, "0") != 0)
        wb_fail("CUDA_LAUNCH_BLOCKING=%s makes each launch wait for its kernel, and a persistent "
                "kernel waits for this host: unset it to run lab 07's persistent stages", blocking);
    // Non-blocking: work on the default stream (an allocation, a copy) must
    // not wait for a kernel that runs until it is told to stop.
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    // But the kernel must come after what the caller queued on the default
    // stream before this call: a cudaMemset of its counters or outputs
    // returns before it runs, and a non-blocking stream does not wait for
    // it by itself (a memset that ran late wiped a run's visit counts on
    // an H200 under load). The new stream waits for that work, once.
    cudaEvent_t queued;
    CUDA_CHECK(cudaEventCreateWithFlags(&queued, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(queued, 0));
    CUDA_CHECK(cudaStreamWaitEvent(stream, queued, 0));
    CUDA_CHECK(cudaEventDestroy(queued));
    return stream;
}

/* ------------------------------------------------------------ ping-pong */

// Who produced each number, written by the producer itself into mapped
// memory; one spare entry at [n] catches a number produced past the end.
struct pingpong_log {
    int *host, *device;
};

static pingpong_log log_open(int n)
{
    if (n < 1)
        wb_fail("ping-pong: n = %d, need at least one number", n);
    pingpong_log log;
    log.host = alloc_mapped<int>((size_t)n + 1, &log.device);
    for (int k = 0; k <= n; k++)
        log.host[k] = WB_POISON_INT;
    return log;
}

static void log_close(pingpong_log log, int n, int *producer)
{
    if (log.host[n] != WB_POISON_INT)
        wb_fail("ping-pong: a number past n - 1 = %d was produced", n - 1);
    memcpy(producer, log.host, sizeof(int) * (size_t)n);
    CUDA_CHECK(cudaFreeHost(log.host));
}

// The CPU's half of every ping-pong: produce the even numbers, hand each to
// the GPU with hand_off(k), which returns the GPU's answer, and check it.
template <class HandOff>
static void cpu_side(int n, pingpong_log log, double *round_trip_us, bool print, HandOff hand_off)
{
    for (int k = 0; k < n; k += 2) {
        log.host[k] = PRODUCER_CPU;
        if (print) {
            printf("%d\n", k);
            fflush(stdout);   // keep the CPU's lines in order with the GPU's
        }
        if (k + 1 == n)
            break;
        double start = now_us();
        int answer = hand_off(k);
        if (round_trip_us)
            round_trip_us[k / 2] = now_us() - start;
        if (answer != k + 1)
            wb_fail("ping-pong: the CPU handed over %d and the GPU answered %d instead of %d",
                    k, answer, k + 1);
    }
}

// Stage 2's shared state, in mapped pinned memory.
struct handoff {
    int counter;   // the last number produced: even from the CPU, odd from the GPU
    int stop;      // raised by the CPU when the kernel should exit
};

// Stage 2, in kernels.cu: the kernel, and the CPU's side of one hand-off.
__global__ void gpu_turns_persistent(handoff *shared, int *log, bool print);
static bool hand_off_persistent(handoff *shared, int number, int &answer);

void pingpong_persistent(int n, int *producer, double *round_trip_us, bool print)
{
    pingpong_log log = log_open(n);
    handoff *shared_device, *shared = alloc_mapped<handoff>(1, &shared_device);
    shared->counter = -1;   // odd: nothing for the GPU yet
    shared->stop = 0;
    cudaStream_t stream = persistent_stream();
    gpu_turns_persistent<<<1, 1, 0, stream>>>(shared_device, log.device, print);
    CUDA_CHECK_LAUNCH_NO_WAIT();   // it waits for this host
    cpu_side(n, log, round_trip_us, print, [&](int number) {
        int answer = number;
        if (!hand_off_persistent(shared, number, answer)) {
            char failure[160];
            snprintf(failure, sizeof failure,
                     "ping-pong: the persistent kernel did not answer %d within %.0f s", number,
                     HANDOFF_TIMEOUT_S);
            stop_persistent(stream, &shared->stop, failure);
        }
        return answer;
    });
    stop_persistent(stream, &shared->stop, NULL);
    CUDA_CHECK(cudaFreeHost(shared));
    log_close(log, n, producer);
}

__global__ void empty_kernel(void) {}

void empty_launch_sync_us(int reps, double *us)
{
    for (int i = 0; i < reps; i++) {
        double start = now_us();
        empty_kernel<<<1, 1>>>();
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaDeviceSynchronize());
        us[i] = now_us() - start;
    }
}

/* ---------------------------------------------------------------- tasks */

// One task, done by the whole block.
__device__ void run_task(const unsigned *in, unsigned *out, int *visits, int task, int task_size)
{
    size_t first = (size_t)task * (size_t)task_size;
    for (int i = threadIdx.x; i < task_size; i += blockDim.x)
        out[first + i] = task_result(in[first + i]);
    if (threadIdx.x == 0)
        atomicAdd(&visits[task], 1);
}

// The comparisons: block b does task first + b.
__global__ void task_per_block(const unsigned *in, unsigned *out, int *visits, int first,
                               int task_size)
{
    run_task(in, out, visits, first + blockIdx.x, task_size);
}

void tasks_launch_per_task(const unsigned *in, unsigned *out, int *visits, int tasks,
                           int task_size, int block_size)
{
    for (int t = 0; t < tasks; t++) {
        task_per_block<<<1, block_size>>>(in, out, visits, t, task_size);
        CUDA_CHECK_LAUNCH();
    }
}

void tasks_one_launch(const unsigned *in, unsigned *out, int *visits, int tasks, int task_size,
                      int block_size)
{
    if (tasks == 0)
        return;
    task_per_block<<<tasks, block_size>>>(in, out, visits, 0, task_size);
    CUDA_CHECK_LAUNCH();
}

__device__ int next_task;    // stage 3's queue: the first task nobody has claimed
__device__ int next_claim;   // stage 4's: the first enqueued task nobody has claimed
__device__ int seen_head;    // stage 4: the host's head as the GPU last read it; -1: stop

// Stage 4's ring, in mapped pinned memory. The k-th task enqueued goes into
// slot k % in_flight; the host writes task[] and head, the GPU done[]. Each
// part has cache lines of its own, so that polling one does not slow the
// writes to another.
struct feed_ring {
    int head;   // tasks enqueued so far
    int stop;   // raised by the host once every task is complete
    alignas(128) int task[FEED_MAX_IN_FLIGHT];
    alignas(128) int done[FEED_MAX_IN_FLIGHT];   // k + 1 once the k-th task is complete
};

// Stages 3 and 4, in kernels.cu: the kernels, and the host's side of the ring.
__global__ void worker_pool(const unsigned *in, unsigned *out, int *visits, int tasks,
                            int task_size);
__global__ void host_fed(feed_ring *ring, int in_flight, const unsigned *in, unsigned *out,
                         int *visits, int task_size);
static void enqueue_task(feed_ring *ring, int in_flight, int tasks, int enqueued);
static bool oldest_done(feed_ring *ring, int in_flight, int completed);

// A persistent kernel gets at most as many blocks as can be resident at once:
// a block that is not resident starts only when another exits, and blocks that
// wait for work (or for each other) never exit. 0 asks for exactly that many.
static bool fits_coresident(int part, int *blocks, int block_size)
{
    int most = coresident_blocks(part, block_size);
    if (*blocks == 0)
        *blocks = most;
    if (*blocks >= 1 && *blocks <= most)
        return true;
    fprintf(stderr,
            "refused: %d blocks of %d threads for the stage %d kernel, but at most %d can be "
            "resident at once (occupancy x SMs); persistent blocks leave only at the end, so a "
            "block past that would start only then, with nothing left to do\n",
            *blocks, block_size, part + 1, most);
    return false;
}

// The blocks of the last worker pool launched, for tasks_pool_claims.
static int pool_blocks_launched;

int tasks_worker_pool(const unsigned *in, unsigned *out, int *visits, int tasks, int task_size,
                      int blocks, int block_size)
{
    return tasks_worker_pool_from(0, in, out, visits, tasks, task_size, blocks, block_size);
}

// The host sets the counter before the launch, and the blocks only claim
// from it: a reset inside the kernel would come after other blocks' claims
// whenever the block that makes it starts late.
int tasks_worker_pool_from(int first_task, const unsigned *in, unsigned *out, int *visits,
                           int tasks, int task_size, int blocks, int block_size)
{
    if (first_task < 0 || first_task > tasks) {
        fprintf(stderr, "refused: the pool's counter cannot start at task %d of 0 .. %d\n",
                first_task, tasks);
        return -1;
    }
    if (!fits_coresident(2, &blocks, block_size))
        return -1;
    pool_blocks_launched = blocks;
    // From pageable memory, staged at once: the call does not wait.
    CUDA_CHECK(cudaMemcpyToSymbolAsync(next_task, &first_task, sizeof first_task, 0,
                                       cudaMemcpyHostToDevice));
    worker_pool<<<blocks, block_size>>>(in, out, visits, tasks, task_size);
    CUDA_CHECK_LAUNCH();
    return 0;
}

int tasks_pool_claims(int *blocks)
{
    int claims;
    CUDA_CHECK(cudaMemcpyFromSymbol(&claims, next_task, sizeof claims));
    *blocks = pool_blocks_launched;
    return claims;
}

int tasks_host_fed(const unsigned *in, unsigned *out, int *visits, int tasks, int task_size,
                   int blocks, int block_size, int in_flight, double *latency_us)
{
    if (in_flight < 1 || in_flight > FEED_MAX_IN_FLIGHT) {
        fprintf(stderr, "refused: %d tasks in flight; the ring holds 1 to %d\n", in_flight,
                FEED_MAX_IN_FLIGHT);
        return -1;
    }
    if (!fits_coresident(3, &blocks, block_size))
        return -1;
    double *enqueued_at = (double *)malloc(sizeof(double) * (size_t)(tasks > 0 ? tasks : 1));
    if (!enqueued_at)
        wb_fail("out of host memory for %d tasks", tasks);
    feed_ring *ring_device, *ring = alloc_mapped<feed_ring>(1, &ring_device);
    memset(ring, 0, sizeof *ring);
    cudaStream_t stream = persistent_stream();
    int *claims, *seen;
    CUDA_CHECK(cudaGetSymbolAddress((void **)&claims, next_claim));
    CUDA_CHECK(cudaGetSymbolAddress((void **)&seen, seen_head));
    CUDA_CHECK(cudaMemsetAsync(claims, 0, sizeof(int), stream));
    CUDA_CHECK(cudaMemsetAsync(seen, 0, sizeof(int), stream));
    host_fed<<<blocks, block_size, 0, stream>>>(ring_device, in_flight, in, out, visits, task_size);
    CUDA_CHECK_LAUNCH_NO_WAIT();   // it waits for this host

    int enqueued = 0, completed = 0;   // completions are seen in enqueue order
    double last_progress = now_us();
    while (completed < tasks) {
        bool progress = false;
        if (enqueued < tasks && enqueued - completed < in_flight) {
            enqueued_at[enqueued] = now_us();
            enqueue_task(ring, in_flight, tasks, enqueued);
            enqueued++;
            progress = true;
        }
        if (completed < enqueued && oldest_done(ring, in_flight, completed)) {
            if (latency_us)
                latency_us[completed] = now_us() - enqueued_at[completed];
            completed++;
            progress = true;
        }
        if (progress) {
            last_progress = now_us();
        } else if (now_us() - last_progress > HANDOFF_TIMEOUT_S * 1e6) {
            char failure[200];
            snprintf(failure, sizeof failure,
                     "host-fed kernel: no task completed for %.0f s (%d of %d enqueued, %d "
                     "complete)",
                     HANDOFF_TIMEOUT_S, enqueued, tasks, completed);
            stop_persistent(stream, &ring->stop, failure);
        }
    }
    stop_persistent(stream, &ring->stop, NULL);
    CUDA_CHECK(cudaFreeHost(ring));
    free(enqueued_at);
    return 0;
}
