/*
 * Lab 03: single-source shortest paths, in stages.
 *
 * Your task: fill in the numbered TODOs, one stage at a time. Read
 * handouts/03-sssp.md first. The host loops are given: they run rounds until
 * nothing changes. Check your work with
 *     meson test -C build --suite sssp-student --print-errorlogs
 * (or ./build/sssp-student --filter 'sssp/stage2_*' for one stage) and ask
 * for a hint with `grading/workbook hint sssp 1`.
 */
#include "lab.h"
#include "workbook.h"

#define BLOCK 256
/* Worklist rounds queued before the host looks at the frontier's length:
 * the look costs a synchronisation (~10 us), an empty round ~3 us. */
#define ROUNDS_PER_CHECK 16

/* ------------------------------------------------------------ given code */

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

/* ---------------------------------------------------------------- stage 1 */

/* One thread per node relaxes the node's out-edges with the lecture's
 * unguarded update: two threads improving the same node may overwrite each
 * other, and the next round repairs what was lost. */
__global__ void relax_all_stage1(sssp_graph g, int *dist, int *changed)
{
    int u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= g.n || dist[u] == SSSP_UNREACHABLE)
        return;
    // TODO 1: relax every out-edge u -> v (edges row_start[u] .. row_start[u+1]-1
    // of adj and weight): when going through u is shorter than dist[v], store
    // the shorter distance, with a plain write as in the lecture, and set
    // *changed so that the host runs another round.
}

void sssp_stage1(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    topology_driven(relax_all_stage1, g, source, dist, work, stats);
}

/* ---------------------------------------------------------------- stage 2 */

/* Stage 1 with the update made atomic: no improvement is lost. */
__global__ void relax_all_stage2(sssp_graph g, int *dist, int *changed)
{
    int u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= g.n || dist[u] == SSSP_UNREACHABLE)
        return;
    // TODO 2: stage 1's relaxation, with the update of dist[v] made atomic so
    // that no improvement is lost. Set *changed only when this thread really
    // lowered dist[v].
}

void sssp_stage2(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    topology_driven(relax_all_stage2, g, source, dist, work, stats);
}

/* ---------------------------------------------------------------- stage 3 */

/* Round r reads the list of length counts[r % 3] and appends to the one of
 * length counts[(r + 1) % 3]; it zeroes counts[(r + 2) % 3] for round r + 1,
 * so that rounds can be queued without the host. counts[3] counts the rounds
 * that had work. */
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

/* Takes node u off the worklist and returns its current distance. The flag
 * is cleared before the distance is read: an improvement that lands after
 * the read pushes u again instead of being missed. */
__device__ int pop(int u, int *queued, const int *dist)
{
    // TODO 3: take u off the worklist (clear its flag in queued), then read
    // and return its distance. Mind the order, and make sure the read sees
    // what other threads wrote during this round, not an old cached copy.
    return SSSP_UNREACHABLE;
}

/* Appends v to the list unless it is already waiting there. The caller has
 * just lowered dist[v]. */
__device__ void push(int v, int *list, int *count, int *queued)
{
    // TODO 4: mark v as queued and append it to the list (a slot taken with
    // an atomic on *count), but only when no other thread queued it already:
    // exactly one of several racing threads may win. The lowered dist[v]
    // must be ordered before the test of the flag, as in pop (a fence).
}

__global__ void relax_frontier_stage3(sssp_graph g, int *dist, round_lists l, int *queued,
                                      unsigned long long *edges)
{
    int n = begin_round(l);
    unsigned long long relaxed = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int u = l.in[i], du = pop(u, queued, dist);
        // TODO 5: relax u's out-edges as in stage 2; every v whose distance
        // this thread lowered goes on the next round's list l.out (with
        // l.out_count). Add the number of edges relaxed to `relaxed`.
        (void)u;
        (void)du;
    }
    add_edges(edges, relaxed);
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

/* ---------------------------------------------------------------- stage 4 */

/* Optional. Near-far: stage 3, but an improved node goes on the next list
 * only when its distance is below a threshold; the others wait in a far pile
 * until the near list runs dry, then the threshold moves up by work->delta
 * and the far nodes below it become the near list. The stage 4 tests fail
 * until you write it; they do not count towards stages 1-3. */
void sssp_stage4(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    // TODO 6 (optional): start as stage 3 does (start_worklist), then run
    // near rounds in batches like sssp_stage3, with a kernel that pushes
    // below-threshold improvements to the near list and the rest to
    // work->far[..] (deduplicated with work->far_queued), and a kernel that
    // splits the far pile when the near list is empty. Finish with finish().
    (void)g, (void)source, (void)dist, (void)work;
    stats->rounds = 0;
    stats->edges_relaxed = 0;
}
