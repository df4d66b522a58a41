/*
 * Lab 03: the given code (the skeleton and the reference both include it
 * at their top): the block size, the start of every run, the warp sum of
 * the edges relaxed, the read of a distance that others may be lowering, the rotation of the worklists, and the host loops of
 * stages 0 to 2, which run rounds until nothing changes. It comes before
 * the kernels, which use its helpers, and launches them by the names and
 * parameters declared here.
 */

#include <cuda/atomic>
#include <stdlib.h>
#include <time.h>

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
    CUDA_CHECK(cudaMemsetAsync(work->counts, 0, SSSP_COUNTS * sizeof(int)));
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

/* The longest the host waits for one check's queue of rounds (at most
 * NEAR_FAR_ROUNDS_PER_CHECK kernels of milliseconds each) before it calls a
 * kernel endless; under compute-sanitizer (WB_TIMEOUT_SCALE=K) K times
 * longer. Without it a kernel that never ends hangs the host's copy until
 * the test's own timeout, whose message says nothing of what hung. */
#define SSSP_WAIT_S 20.0

/* What loops forever when a stage's kernel never ends. */
static const char *const endless_kernel[4] = {
    "a thread of relax_all_stage0 never leaves its loop over the node's edges (e runs from "
    "g.row_start[u] up to g.row_start[u + 1])",
    "a thread of relax_all_stage1 never leaves its loop over the node's edges (e runs from "
    "g.row_start[u] up to g.row_start[u + 1])",
    "relax_out_edges_stage2 never leaves its loop over the edges of u (e runs from "
    "g.row_start[u] up to g.row_start[u + 1])",
    "a warp never leaves relax_edges_stage3: after the warp has expanded a hub, the hub's own "
    "lane (the leader) must give up its share (first = last), else the next ballot finds the "
    "same hub again and the warp expands it forever; or a loop over edges never ends",
};

/* Waits, with a deadline, for every kernel queued so far (the rounds before
 * `round`) to finish; fails naming what never ended when they do not. */
static void wait_for_rounds(int stage, int round)
{
    const char *scale_text = getenv("WB_TIMEOUT_SCALE");
    double scale = scale_text && atof(scale_text) > 1.0 ? atof(scale_text) : 1.0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    cudaError_t status;
    while ((status = cudaStreamQuery(0)) == cudaErrorNotReady) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - start.tv_sec) + 1e-9 * (now.tv_nsec - start.tv_nsec);
        if (waited > SSSP_WAIT_S * scale)
            wb_fail("sssp stage %d: the kernels of the rounds up to %d have not finished after "
                    "%.0f s of waiting (a round takes milliseconds): %s",
                    stage, round - 1, waited, endless_kernel[stage]);
    }
    CUDA_CHECK(status);   // a fault inside a kernel shows here
}

/* Stages 0 to 2 are stuck past this many rounds: after round r every node
 * whose shortest path has at most r edges is settled, a path has at most
 * n - 1 edges, and the races that stage 0 repairs cost a round each; four
 * times n leaves room for them. Without it, a round that reports work it did
 * not do runs rounds until the test's own timeout. */
static void check_rounds_end(int stage, int rounds, int n)
{
    if (rounds > 4LL * n + 64)
        wb_fail("sssp stage %d: still not done after %d rounds, but a correct run settles every "
                "node within about n = %d rounds (a shortest path has at most n - 1 edges): "
                "every round reports work that lowered no distance: %s",
                stage, rounds, n,
                stage <= 1 ? "*changed must be set only when dist[v] was lowered (alt < dist[v], "
                             "not <=; in stage 1 only when atomicMin returned a larger value)"
                           : "a node must be pushed only when dist[v] was lowered (alt < "
                             "dist[v], not <=, and only when atomicMin returned a larger value)");
}

typedef void (*topology_kernel)(sssp_graph, int *, int *);

/* Stages 0 and 1: relax every edge of the graph, round after round, until
 * a round changes no distance. */
static void topology_driven(int stage, topology_kernel kernel, sssp_graph g, int source,
                            int *dist, sssp_work *work, sssp_stats *stats)
{
    start(g, source, dist, work);
    int changed = 1;
    stats->rounds = 0;
    while (changed) {
        CUDA_CHECK(cudaMemsetAsync(work->counts, 0, sizeof(int)));
        kernel<<<blocks_for(g.n, work->block), work->block>>>(g, dist, work->counts);
        CUDA_CHECK_LAUNCH();
        wait_for_rounds(stage, stats->rounds + 1);
        CUDA_CHECK(cudaMemcpy(&changed, work->counts, sizeof(int), cudaMemcpyDeviceToHost));
        stats->rounds++;
        check_rounds_end(stage, stats->rounds, g.n);
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
    wait_for_rounds(2, round);
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

/* A list longer than one node in SWEEP_FRACTION is walked in node order
 * instead: the round reads every node's flag (coalesced) and pops the
 * flagged ones. They are the list's nodes (a node is appended when its flag
 * is set), but the list has them in the order they were pushed, scattered
 * over the graph, so every node's reads (its row, its edges, its
 * neighbours' distances) miss the cache lines of the nodes beside it in
 * the list. In node order, the waiting nodes of a wavefront are neighbours
 * in memory and share them. On the 2^22 grid (lists of 290,000 nodes on
 * average) stage 2 took 198 ms with the list alone and 112 ms with the
 * sweep on the H100 (handouts/03-sssp.md, "Why stage 2 lost to stage 1 on
 * the grid"). */
#ifndef SWEEP_FRACTION
#define SWEEP_FRACTION 16
#endif

/* Whether u waits on a list: a relaxed atomic load, as current_dist; only
 * pop's exchange decides. */
__device__ __forceinline__ bool waiting(int *queued, int u)
{
    return cuda::atomic_ref<int, cuda::thread_scope_device>(queued[u]).load(
        cuda::memory_order_relaxed);
}

/* Stage 2's round: every node of this round's list is taken off it and
 * its out-edges relaxed; the grid is fixed (worklist_blocks), so each
 * thread loops over the list, or over all the nodes in a sweep. A node
 * pushed during a sweep may be popped in the same sweep and then once
 * more from the next list: pop then finds its flag clear and relaxes its
 * edges again, which changes no distance (edges_relaxed counts those
 * edges twice, as the handout says). It may also be pushed again after
 * that pop, and so be on the next list twice: a node is appended once per
 * time its flag goes from 0 to 1, at most once before its pop and once
 * after, so a sweep round appends at most 2n nodes, and a list round (at
 * most n / SWEEP_FRACTION nodes to pop) at most n + n / SWEEP_FRACTION.
 * sssp_work_new gives each list 2n slots. */
__global__ void relax_frontier_stage2(sssp_graph g, int *dist, round_lists l, int *queued,
                                      unsigned long long *edges)
{
    int n = begin_round(l);
    unsigned long long relaxed = 0;
    int first = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
    if (n > g.n / SWEEP_FRACTION) {
        for (int u = first; u < g.n; u += stride)
            if (waiting(queued, u)) {
                int du = pop(u, queued, dist);
                relax_out_edges_stage2(g, dist, u, du, l, queued, &relaxed);
            }
    } else {
        for (int i = first; i < n; i += stride) {
            int u = l.in[i], du = pop(u, queued, dist);
            relax_out_edges_stage2(g, dist, u, du, l, queued, &relaxed);
        }
    }
    add_edges(edges, relaxed);
}

void sssp_stage0(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    topology_driven(0, relax_all_stage0, g, source, dist, work, stats);
}

void sssp_stage1(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    topology_driven(1, relax_all_stage1, g, source, dist, work, stats);
}

void sssp_stage2(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    start_worklist(g, source, dist, work);
    for (int round = 0;;) {
        for (int i = 0; i < ROUNDS_PER_CHECK; i++, round++) {
            relax_frontier_stage2<<<worklist_blocks(g.n, work->block), work->block>>>(
                g, dist, lists_for_round(work, round), work->queued, work->edges);
            CUDA_CHECK_LAUNCH();
        }
        if (frontier_length(work, round) == 0)
            break;
        check_rounds_end(2, round, g.n);
    }
    finish(work, stats);
}

/* ---------------------------------------------------------------- stage 3 */

/* Near-far's rounds are many and small on a road network (thousands of
 * rounds of a few thousand nodes each), so three things cost more than the
 * work there: a host round trip at every change of threshold, a thread's
 * serial loop over its node's edges while most of the GPU idles, and, on a
 * power-law graph, one warp expanding a hub of 100,000 edges alone. The
 * given code below removes the three (handouts/03-sssp.md, "Near-far, made
 * fast"): the GPU changes the threshold itself, a small list gives each node
 * several lanes, and a block expands its huge nodes together. */

/* Rounds queued before the host looks whether near-far is done: the GPU
 * changes phases itself, so only the end needs the host (a look costs a
 * synchronisation, an empty round ~3 us). */
#define NEAR_FAR_ROUNDS_PER_CHECK 64

/* A lane's share of edges above this is expanded by the whole block (a warp
 * would need more than 32 steps for it). */
#define BLOCK_HUB_EDGES 1024

/* Near-far's state on the GPU, in work->counts: the far piles' lengths
 * rotate through three slots like the lists' (FAR_COUNTS), and the
 * threshold and phase that round r reads are in slot r % 2 (PHASE_STATE):
 * round r writes slot (r + 1) % 2 for round r + 1, so that no block reads a
 * word that another block of the same round writes. */
#define FAR_COUNTS 4     /* counts[4..6]: far pile lengths, phase p uses p % 3 */
#define PHASE_STATE 8    /* counts[8..11]: {threshold, phase} for even and odd rounds */

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

/* Lanes per node this round: a power of two up to 32, as many as the grid
 * has threads for. On a road network the near list holds a few thousand
 * nodes of about 4 edges: with one lane per node the GPU idles while each
 * lane walks its 4 edges one after another (loads, an atomicMin, an
 * exchange, an atomicAdd each: microseconds); with several lanes the edges
 * are relaxed at once. A list longer than half the grid's threads keeps a lane per node. */
__device__ int lanes_per_node(int n)
{
    int threads = gridDim.x * blockDim.x, lanes = 1;
    while (lanes < 32 && 2LL * lanes * n <= threads)
        lanes *= 2;
    return lanes;
}

/* A near round: lanes_per_node lanes share each node of the near list; the
 * node's first lane takes it off the list (pop) and hands its distance to
 * the others, and each lane takes a contiguous share of the node's edges.
 * A share of more than BLOCK_HUB_EDGES waits in shared memory for the end
 * of the round, when the whole block expands it: R-MAT's largest node has
 * about 160,000 out-edges, 5,000 steps of one warp, 625 of a block of 256.
 * The warp expands the shares of 33 to BLOCK_HUB_EDGES edges, and each lane
 * the rest (relax_edges_stage3, in kernels.cu). */
#define BLOCK_HUBS_KEPT 128   /* shares a block keeps; more stay with their warp */

__device__ void relax_near_round(sssp_graph g, int *dist, near_far nf, int n,
                                 unsigned long long *relaxed)
{
    __shared__ int kept, hub_first[BLOCK_HUBS_KEPT], hub_last[BLOCK_HUBS_KEPT],
        hub_du[BLOCK_HUBS_KEPT];
    if (threadIdx.x == 0)
        kept = 0;
    __syncthreads();
    int lanes = lanes_per_node(n), lane = threadIdx.x % 32, share = lane % lanes;
    int per_block = blockDim.x / lanes, per_pass = gridDim.x * per_block;
    /* The loop runs by whole warps (its bound is the same for every lane of
     * a warp), because relax_edges_stage3 shuffles across the warp. */
    for (int base = blockIdx.x * per_block; base < n; base += per_pass) {
        int i = base + threadIdx.x / lanes, du = 0, first = 0, last = 0;
        if (i < n) {
            int u = nf.near.in[i];
            first = g.row_start[u];   /* before pop: the loads overlap its fence */
            last = g.row_start[u + 1];
            if (share == 0)
                du = pop(u, nf.queued, dist);
        }
        du = __shfl_sync(0xffffffffu, du, lane - share);
        long long edges = last - first;
        int mine = first + (int)(edges * share / lanes);
        last = first + (int)(edges * (share + 1) / lanes);
        first = mine;
        *relaxed += last - first;
        if (last - first > BLOCK_HUB_EDGES) {
            int slot = atomicAdd(&kept, 1);
            if (slot < BLOCK_HUBS_KEPT) {
                hub_first[slot] = first;
                hub_last[slot] = last;
                hub_du[slot] = du;
                first = last;
            }
        }
        relax_edges_stage3(g, dist, nf, du, first, last);
    }
    __syncthreads();   /* every share is kept before the block reads them */
    int hubs = kept < BLOCK_HUBS_KEPT ? kept : BLOCK_HUBS_KEPT;
    for (int h = 0; h < hubs; h++)
        for (int e = hub_first[h] + threadIdx.x; e < hub_last[h]; e += blockDim.x)
            relax_edge_stage3(g, dist, e, hub_du[h], nf);
}

/* A phase change, on the GPU: the near list is empty, so the threshold
 * moves up by delta; the far nodes below the new threshold go to the next
 * round's list (nf.near.out), the rest to the other pile; nodes already
 * settled below the old threshold are dropped. */
__device__ void split_far(const int *dist, near_far nf, const int *far, int n, int *keep,
                          int *keep_count, int old_threshold)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int v = far[i];
        nf.far_queued[v] = 0;
        int d = dist[v];
        if (d < old_threshold)
            continue;
        if (d < nf.threshold)
            push(v, nf.near.out, nf.near.out_count, nf.queued);
        else
            push(v, keep, keep_count, nf.far_queued);
    }
}

/* One round of near-far, on the GPU alone: a near round while the near list
 * has nodes, else a phase change while the far pile has nodes, else
 * nothing (done). Every block reads the same state (slot round % 2, written
 * by the previous kernel); block 0 writes the next round's. */
__global__ void near_far_round_stage3(sssp_graph g, int *dist, round_lists l, int *queued,
                                      int *far0, int *far1, int *far_queued, int *counts,
                                      int delta, int round, unsigned long long *edges)
{
    int n = begin_round(l);
    const int *state = &counts[PHASE_STATE + 2 * (round % 2)];
    int threshold = state[0], phase = state[1];
    int *far_count = &counts[FAR_COUNTS + phase % 3];
    near_far nf = {l, queued, threshold, phase % 2 ? far1 : far0, far_count, far_queued};
    int next_threshold = threshold, next_phase = phase;
    unsigned long long relaxed = 0;
    if (n > 0) {
        relax_near_round(g, dist, nf, n, &relaxed);
    } else if (*far_count > 0) {
        long long next = (long long)threshold + delta;
        nf.threshold = next_threshold = next < SSSP_UNREACHABLE ? (int)next : SSSP_UNREACHABLE;
        next_phase = phase + 1;
        /* The next phase appends to slot (phase + 1) % 3, zeroed by the last
         * phase change; this one zeroes (phase + 2) % 3 for the one after. */
        split_far(dist, nf, nf.far, *far_count, phase % 2 ? far0 : far1,
                  &counts[FAR_COUNTS + next_phase % 3], threshold);
        if (blockIdx.x == 0 && threadIdx.x == 0)
            counts[FAR_COUNTS + (phase + 2) % 3] = 0;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int *next_state = &counts[PHASE_STATE + 2 * ((round + 1) % 2)];
        next_state[0] = next_threshold;
        next_state[1] = next_phase;
    }
    add_edges(edges, relaxed);
}

/* Near-far's grid: SSSP_NEAR_FAR_BLOCKS_PER_SM blocks per SM (lab.h says
 * why), or work->near_far_blocks when set, never more than fit on the GPU at
 * once: a block that can start only when another has finished costs a wave
 * of its own, work or not. */
static int near_far_blocks(int n, const sssp_work *work)
{
    int device, sms, per_sm;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, near_far_round_stage3,
                                                             work->block, 0));
    int wanted = work->near_far_blocks > 0 ? work->near_far_blocks
                                           : sms * SSSP_NEAR_FAR_BLOCKS_PER_SM;
    int fit = sms * (per_sm > 0 ? per_sm : 1), blocks = worklist_blocks(n, work->block);
    if (wanted < blocks)
        blocks = wanted;
    return blocks < fit ? blocks : fit;
}

/* For the tests (lab.h, sssp_warp_hubs_probe): one warp calls
 * relax_edges_stage3 as relax_near_round does, lanes 0 and 1 with the whole
 * row of hub 0 and hub 1, the other lanes with no edges. */
__global__ void warp_hubs_probe(sssp_graph g, int *dist, near_far nf)
{
    int lane = threadIdx.x % 32;
    int first = lane < 2 ? g.row_start[lane] : 0, last = lane < 2 ? g.row_start[lane + 1] : 0;
    relax_edges_stage3(g, dist, nf, 0, first, last);
}

void sssp_warp_hubs_probe(int edges, int *order)
{
    if (edges <= 32 || edges > BLOCK_HUB_EDGES || !order)
        wb_fail("sssp_warp_hubs_probe: need 33 to %d edges per hub and an output array, got %d "
                "edges", BLOCK_HUB_EDGES, edges);
    /* Nodes 0 and 1 are the hubs, at distance 0; edge e (weight 1) leads to
     * node 2 + e, unreached: every edge improves its own target, which goes
     * near (the threshold is infinite). One allocation holds every array. */
    int m = 2 * edges, n = m + 2;
    enum { ROW_START, ADJ, WEIGHT, DIST, QUEUED, FAR_QUEUED, NEAR_OUT, FAR, COUNTS, PARTS };
    size_t size[PARTS] = {(size_t)n + 1, (size_t)m, (size_t)m, (size_t)n, (size_t)n, (size_t)n,
                          (size_t)n, (size_t)n, 8};
    size_t at[PARTS + 1] = {0};
    for (int p = 0; p < PARTS; p++)
        at[p + 1] = at[p] + size[p];
    int *host = (int *)calloc(at[PARTS], sizeof(int)), *device;
    if (!host)
        wb_fail("sssp_warp_hubs_probe: out of host memory");
    for (int v = 0; v <= n; v++)
        host[at[ROW_START] + v] = v == 0 ? 0 : v == 1 ? edges : m;
    for (int e = 0; e < m; e++) {
        host[at[ADJ] + e] = 2 + e;
        host[at[WEIGHT] + e] = 1;
    }
    for (int v = 0; v < n; v++) {
        host[at[DIST] + v] = v < 2 ? 0 : SSSP_UNREACHABLE;
        host[at[NEAR_OUT] + v] = host[at[FAR] + v] = -1;   // slots never pushed to
    }
    CUDA_CHECK(cudaMalloc((void **)&device, sizeof(int) * at[PARTS]));
    CUDA_CHECK(cudaMemcpy(device, host, sizeof(int) * at[PARTS], cudaMemcpyHostToDevice));
    free(host);
    int *counts = device + at[COUNTS];
    sssp_graph g = {n, m, device + at[ROW_START], device + at[ADJ], device + at[WEIGHT]};
    round_lists near = {device + at[NEAR_OUT], device + at[NEAR_OUT], &counts[0], &counts[1],
                        &counts[2], &counts[3]};
    near_far nf = {near, device + at[QUEUED], SSSP_UNREACHABLE, device + at[FAR], &counts[4],
                   device + at[FAR_QUEUED]};
    warp_hubs_probe<<<1, 32>>>(g, device + at[DIST], nf);
    CUDA_CHECK_LAUNCH();
    wait_for_rounds(3, 1);
    CUDA_CHECK(cudaMemcpy(order, device + at[NEAR_OUT], sizeof(int) * (size_t)m,
                          cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaFree(device));
}

void sssp_stage3(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    start_worklist(g, source, dist, work);
    int blocks = near_far_blocks(g.n, work);
    int state[2] = {work->delta, 0};   /* round 0: threshold delta, phase 0 */
    CUDA_CHECK(cudaMemcpy(&work->counts[PHASE_STATE], state, sizeof state,
                          cudaMemcpyHostToDevice));
    int round = 0;
    for (;;) {
        for (int i = 0; i < NEAR_FAR_ROUNDS_PER_CHECK; i++, round++) {
            near_far_round_stage3<<<blocks, work->block>>>(
                g, dist, lists_for_round(work, round), work->queued, work->far[0],
                work->far[1], work->far_queued, work->counts, work->delta, round, work->edges);
            CUDA_CHECK_LAUNCH();
        }
        /* Done when the next round has neither near nodes nor far ones. */
        int counts[SSSP_COUNTS];
        wait_for_rounds(3, round);
        CUDA_CHECK(cudaMemcpy(counts, work->counts, sizeof counts, cudaMemcpyDeviceToHost));
        int phase = counts[PHASE_STATE + 2 * (round % 2) + 1];
        if (counts[round % 3] == 0 && counts[FAR_COUNTS + phase % 3] == 0)
            break;
    }
    finish(work, stats);
}
