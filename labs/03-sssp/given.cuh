/*
 * Lab 03: the given code (the skeleton and the reference both include it
 * at their top): the block size, the start of every run, the warp sum of
 * the edges relaxed, the read of a distance that others may be lowering, the rotation of the worklists, and the host loops of
 * stages 0 to 2, which run rounds until nothing changes. It comes before
 * the kernels, which use its helpers, and launches them by the names and
 * parameters declared here.
 */

#include <cuda/atomic>

/* Worklist rounds queued before the host looks at the frontier's length:
 * the look costs a synchronisation (~10 us), an empty round ~3 us. */
#define ROUNDS_PER_CHECK 16

__global__ void init_dist(int *dist, int *queued, int n, int source)
{
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v < n) {
        dist[v] = v == source ? 0 : SSSP_UNREACHABLE;
        queued[v] = v == source;
    }
}

/* Adds each thread's count of relaxed edges to *total, one atomic per warp.
 * Every thread of the grid must call it (it shuffles across the warp). */
__device__ void add_edges(unsigned long long *total, unsigned long long mine)
{
    for (int offset = 16; offset > 0; offset /= 2)
        mine += __shfl_down_sync(0xffffffffu, mine, offset);
    if (threadIdx.x % 32 == 0 && mine)
        atomicAdd(total, mine);
}

/* Reads a distance that other threads may be lowering at this moment (with
 * atomicMin): a relaxed atomic load. A plain load that races with atomics
 * is a data race under the CUDA memory model (the compiler may assume no
 * other thread writes the word); the relaxed load costs the same and makes
 * no promise of freshness: a stale distance is never too small, so the
 * worst it does is let an atomicMin through that changes nothing. */
__device__ __forceinline__ int current_dist(int *dist, int v)
{
    return cuda::atomic_ref<int, cuda::thread_scope_device>(dist[v]).load(
        cuda::memory_order_relaxed);
}

static int blocks_for(int n, int block) { return (n + block - 1) / block; }

/* Worklist kernels loop over their list with a fixed grid, because the
 * list's length is known only on the GPU. */
static int worklist_blocks(int n, int block)
{
    int b = blocks_for(n, block);
    return b < 2048 ? b : 2048;
}

static void start(sssp_graph g, int source, int *dist, sssp_work *work)
{
    if (source < 0 || source >= g.n)
        wb_fail("sssp: source %d out of range 0..%d", source, g.n - 1);
    if (work->n < g.n)
        wb_fail("sssp: work space for %d nodes, graph has %d", work->n, g.n);
    init_dist<<<blocks_for(g.n, work->block), work->block>>>(dist, work->queued, g.n, source);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemsetAsync(work->counts, 0, 8 * sizeof(int)));
    CUDA_CHECK(cudaMemsetAsync(work->far_queued, 0, sizeof(int) * (size_t)g.n));
    CUDA_CHECK(cudaMemsetAsync(work->edges, 0, sizeof(unsigned long long)));
}

/* The first worklist holds the source alone. */
static void start_worklist(sssp_graph g, int source, int *dist, sssp_work *work)
{
    start(g, source, dist, work);
    int one = 1;
    CUDA_CHECK(cudaMemcpy(work->frontier[0], &source, sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(work->counts, &one, sizeof(int), cudaMemcpyHostToDevice));
}

typedef void (*topology_kernel)(sssp_graph, int *, int *);

/* Stages 0 and 1: relax every edge of the graph, round after round, until
 * a round changes no distance. */
static void topology_driven(topology_kernel kernel, sssp_graph g, int source, int *dist,
                            sssp_work *work, sssp_stats *stats)
{
    start(g, source, dist, work);
    int changed = 1;
    stats->rounds = 0;
    while (changed) {
        CUDA_CHECK(cudaMemsetAsync(work->counts, 0, sizeof(int)));
        kernel<<<blocks_for(g.n, work->block), work->block>>>(g, dist, work->counts);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaMemcpy(&changed, work->counts, sizeof(int), cudaMemcpyDeviceToHost));
        stats->rounds++;
    }
    stats->edges_relaxed = (long long)stats->rounds * g.m;
}

/* Stage 2's worklists. Round r reads the list of length counts[r % 3] and
 * appends to the one of length counts[(r + 1) % 3]; it zeroes
 * counts[(r + 2) % 3] for round r + 1, so that rounds can be queued without
 * the host. counts[3] counts the rounds that had work. */
typedef struct {
    const int *in;
    int *out;
    int *in_count, *out_count, *next_count, *busy_rounds;
} round_lists;

__device__ int begin_round(round_lists l)
{
    int n = *l.in_count;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *l.next_count = 0;
        if (n)
            (*l.busy_rounds)++;
    }
    return n;
}

static round_lists lists_for_round(sssp_work *work, int round)
{
    round_lists l = {work->frontier[round % 2], work->frontier[(round + 1) % 2],
                     &work->counts[round % 3], &work->counts[(round + 1) % 3],
                     &work->counts[(round + 2) % 3], &work->counts[3]};
    return l;
}

static int frontier_length(sssp_work *work, int round)
{
    int counts[3];
    CUDA_CHECK(cudaMemcpy(counts, work->counts, sizeof counts, cudaMemcpyDeviceToHost));
    return counts[round % 3];
}

static void finish(sssp_work *work, sssp_stats *stats)
{
    unsigned long long edges;
    CUDA_CHECK(cudaMemcpy(&stats->rounds, &work->counts[3], sizeof(int),
                          cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&edges, work->edges, sizeof edges, cudaMemcpyDeviceToHost));
    stats->edges_relaxed = (long long)edges;
}

/* What kernels.cu writes: the kernels of stages 0 and 1, which the host
 * loops below launch, and the parts of stage 2's kernel. */
__global__ void relax_all_stage0(sssp_graph g, int *dist, int *changed);
__global__ void relax_all_stage1(sssp_graph g, int *dist, int *changed);
__device__ int pop(int u, int *queued, const int *dist);
__device__ void relax_out_edges_stage2(sssp_graph g, int *dist, int u, int du, round_lists l,
                                       int *queued, unsigned long long *relaxed);

/* Stage 2's round: every node of this round's list is taken off it and
 * its out-edges relaxed; the grid is fixed (worklist_blocks), so each
 * thread loops over the list. */
__global__ void relax_frontier_stage2(sssp_graph g, int *dist, round_lists l, int *queued,
                                      unsigned long long *edges)
{
    int n = begin_round(l);
    unsigned long long relaxed = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int u = l.in[i], du = pop(u, queued, dist);
        relax_out_edges_stage2(g, dist, u, du, l, queued, &relaxed);
    }
    add_edges(edges, relaxed);
}

void sssp_stage0(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    topology_driven(relax_all_stage0, g, source, dist, work, stats);
}

void sssp_stage1(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    topology_driven(relax_all_stage1, g, source, dist, work, stats);
}

void sssp_stage2(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    start_worklist(g, source, dist, work);
    int round = 0;
    do {
        for (int i = 0; i < ROUNDS_PER_CHECK; i++, round++) {
            relax_frontier_stage2<<<worklist_blocks(g.n, work->block), work->block>>>(
                g, dist, lists_for_round(work, round), work->queued, work->edges);
            CUDA_CHECK_LAUNCH();
        }
    } while (frontier_length(work, round) > 0);
    finish(work, stats);
}

/* ---------------------------------------------------------------- stage 3 */

/* Near-far: the lists of a near round, the threshold, and the far pile
 * (deduplicated by far_queued). */
typedef struct {
    round_lists near;
    int *queued, threshold;
    int *far, *far_count, *far_queued;
} near_far;

// Written in kernels.cu: push (stage 2, the far split uses it too), one
// edge relaxed and pushed near or far, a warp's nodes' edges.
__device__ void push(int v, int *list, int *count, int *queued);
__device__ void relax_edge_stage3(sssp_graph g, int *dist, int e, int du, near_far nf);
__device__ void relax_edges_stage3(sssp_graph g, int *dist, near_far nf, int du, int first,
                                   int last);

/* A near round: each warp takes 32 nodes off the near list at once and
 * expands their edges together (relax_edges_stage3, in kernels.cu), so the
 * loop runs by whole warps: its base is the warp's first thread. */
__global__ void relax_near_stage3(sssp_graph g, int *dist, near_far nf,
                                  unsigned long long *edges)
{
    int n = begin_round(nf.near);
    unsigned long long relaxed = 0;
    int lane = threadIdx.x % 32;
    for (int base = blockIdx.x * blockDim.x + threadIdx.x - lane; base < n;
         base += gridDim.x * blockDim.x) {
        int i = base + lane, du = 0, first = 0, last = 0;
        if (i < n) {
            int u = nf.near.in[i];
            du = pop(u, nf.queued, dist);
            first = g.row_start[u];
            last = g.row_start[u + 1];
            relaxed += last - first;
        }
        relax_edges_stage3(g, dist, nf, du, first, last);
    }
    add_edges(edges, relaxed);
}

/* Moves the far nodes below the new threshold to the near list and keeps
 * the rest; nodes already settled below the old threshold are dropped. */
__global__ void split_far_stage3(const int *dist, const int *far, const int *far_count,
                                 int *far_queued, int *keep, int *keep_count, int *near,
                                 int *near_count, int *queued, int old_threshold,
                                 int threshold)
{
    int n = *far_count;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int v = far[i];
        far_queued[v] = 0;
        int d = dist[v];
        if (d < old_threshold)
            continue;
        if (d < threshold)
            push(v, near, near_count, queued);
        else
            push(v, keep, keep_count, far_queued);
    }
}

void sssp_stage3(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    start_worklist(g, source, dist, work);
    long long threshold = work->delta;
    int round = 0, pile = 0;   /* far[pile] is filled, counted in counts[4 + pile] */
    int *far_counts = &work->counts[4];
    for (;;) {
        for (int i = 0; i < ROUNDS_PER_CHECK; i++, round++) {
            near_far nf = {lists_for_round(work, round), work->queued, (int)threshold,
                           work->far[pile], &far_counts[pile], work->far_queued};
            relax_near_stage3<<<worklist_blocks(g.n, work->block), work->block>>>(
                g, dist, nf, work->edges);
            CUDA_CHECK_LAUNCH();
        }
        int counts[6];
        CUDA_CHECK(cudaMemcpy(counts, work->counts, sizeof counts, cudaMemcpyDeviceToHost));
        if (counts[round % 3] > 0)
            continue;
        if (counts[4 + pile] == 0)
            break;
        long long next = threshold + work->delta;
        next = next < SSSP_UNREACHABLE ? next : SSSP_UNREACHABLE;
        round_lists l = lists_for_round(work, round);
        split_far_stage3<<<worklist_blocks(g.n, work->block), work->block>>>(
            dist, work->far[pile], &far_counts[pile], work->far_queued, work->far[1 - pile],
            &far_counts[1 - pile], (int *)l.in, l.in_count, work->queued, (int)threshold,
            (int)next);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaMemsetAsync(&far_counts[pile], 0, sizeof(int)));
        pile = 1 - pile;
        threshold = next;
    }
    finish(work, stats);
}
