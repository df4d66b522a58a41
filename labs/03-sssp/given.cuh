/*
 * Lab 03: the given code (the skeleton and the reference both include it
 * at their top): the block size, the start of every run, the warp sum of
 * the edges relaxed, the rotation of the worklists, and the host loops of
 * stages 1 to 3, which run rounds until nothing changes. It comes before
 * the kernels, which use its helpers, and launches them by the names and
 * parameters declared here.
 */

#define BLOCK 256
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

static int blocks_for(int n) { return (n + BLOCK - 1) / BLOCK; }

/* Worklist kernels loop over their list with a fixed grid, because the
 * list's length is known only on the GPU. */
static int worklist_blocks(int n)
{
    int b = blocks_for(n);
    return b < 2048 ? b : 2048;
}

static void start(sssp_graph g, int source, int *dist, sssp_work *work)
{
    if (source < 0 || source >= g.n)
        wb_fail("sssp: source %d out of range 0..%d", source, g.n - 1);
    if (work->n < g.n)
        wb_fail("sssp: work space for %d nodes, graph has %d", work->n, g.n);
    init_dist<<<blocks_for(g.n), BLOCK>>>(dist, work->queued, g.n, source);
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

/* Stages 1 and 2: relax every edge of the graph, round after round, until
 * a round changes no distance. */
static void topology_driven(topology_kernel kernel, sssp_graph g, int source, int *dist,
                            sssp_work *work, sssp_stats *stats)
{
    start(g, source, dist, work);
    int changed = 1;
    stats->rounds = 0;
    while (changed) {
        CUDA_CHECK(cudaMemsetAsync(work->counts, 0, sizeof(int)));
        kernel<<<blocks_for(g.n), BLOCK>>>(g, dist, work->counts);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaMemcpy(&changed, work->counts, sizeof(int), cudaMemcpyDeviceToHost));
        stats->rounds++;
    }
    stats->edges_relaxed = (long long)stats->rounds * g.m;
}

/* Stage 3's worklists. Round r reads the list of length counts[r % 3] and
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

/* What kernels.cu writes: the kernels of stages 1 and 2, which the host
 * loops below launch, and the parts of stage 3's kernel. */
__global__ void relax_all_stage1(sssp_graph g, int *dist, int *changed);
__global__ void relax_all_stage2(sssp_graph g, int *dist, int *changed);
__device__ int pop(int u, int *queued, const int *dist);
__device__ void relax_out_edges_stage3(sssp_graph g, int *dist, int u, int du, round_lists l,
                                       int *queued, unsigned long long *relaxed);

/* Stage 3's round: every node of this round's list is taken off it and
 * its out-edges relaxed; the grid is fixed (worklist_blocks), so each
 * thread loops over the list. */
__global__ void relax_frontier_stage3(sssp_graph g, int *dist, round_lists l, int *queued,
                                      unsigned long long *edges)
{
    int n = begin_round(l);
    unsigned long long relaxed = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int u = l.in[i], du = pop(u, queued, dist);
        relax_out_edges_stage3(g, dist, u, du, l, queued, &relaxed);
    }
    add_edges(edges, relaxed);
}

void sssp_stage1(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    topology_driven(relax_all_stage1, g, source, dist, work, stats);
}

void sssp_stage2(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    topology_driven(relax_all_stage2, g, source, dist, work, stats);
}

void sssp_stage3(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    start_worklist(g, source, dist, work);
    int round = 0;
    do {
        for (int i = 0; i < ROUNDS_PER_CHECK; i++, round++) {
            relax_frontier_stage3<<<worklist_blocks(g.n), BLOCK>>>(
                g, dist, lists_for_round(work, round), work->queued, work->edges);
            CUDA_CHECK_LAUNCH();
        }
    } while (frontier_length(work, round) > 0);
    finish(work, stats);
}
