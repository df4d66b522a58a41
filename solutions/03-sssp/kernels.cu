/*
 * Lab 03 reference: single-source shortest paths, four stages.
 * The host loops of stages 1 to 3 are given (given.cuh, shared with the
 * skeleton) and run rounds until nothing changes; the kernels are what the
 * stages are about.
 */
#include "lab.h"
#include "workbook.h"
#include "given.cuh"

/* ---------------------------------------------------------------- stage 1 */

/* One thread per node relaxes the node's out-edges with the lecture's
 * unguarded update: two threads improving the same node may overwrite each
 * other, and the next round repairs what was lost. */
__global__ void relax_all_stage1(sssp_graph g, int *dist, int *changed)
{
    int u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= g.n || dist[u] == SSSP_UNREACHABLE)
        return;
    int du = dist[u];
    for (int e = g.row_start[u]; e < g.row_start[u + 1]; e++) {
        int v = g.adj[e], alt = du + g.weight[e];
        if (alt < dist[v]) {
            dist[v] = alt;
            *changed = 1;
        }
    }
}

/* ---------------------------------------------------------------- stage 2 */

/* Stage 1 with the update made atomic: no improvement is lost. */
__global__ void relax_all_stage2(sssp_graph g, int *dist, int *changed)
{
    int u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= g.n || dist[u] == SSSP_UNREACHABLE)
        return;
    int du = dist[u];
    for (int e = g.row_start[u]; e < g.row_start[u + 1]; e++) {
        int v = g.adj[e], alt = du + g.weight[e];
        /* The plain read only filters: a stale value is never too small. */
        if (alt < dist[v] && alt < atomicMin(&dist[v], alt))
            *changed = 1;
    }
}

/* ---------------------------------------------------------------- stage 3 */

/* Takes node u off the worklist and returns its current distance. The flag
 * is cleared before the distance is read: an improvement that lands after
 * the read pushes u again instead of being missed. */
__device__ int pop(int u, int *queued, const int *dist)
{
    queued[u] = 0;
    __threadfence();
    return *(volatile const int *)&dist[u];
}

/* Appends v to the list unless it is already waiting there. The caller has
 * just lowered dist[v]; the fence orders that before the test of the flag,
 * as pop's fence orders its clear before its read. With a fence on both
 * sides the memory model rules out the one bad outcome: pop reads the old
 * distance while this push still sees the old flag and skips v. (The
 * exchange waits for the minimum's result on today's GPUs, but only the
 * fences make it a guarantee.) */
__device__ void push(int v, int *list, int *count, int *queued)
{
    __threadfence();
    if (atomicExch(&queued[v], 1) == 0)
        list[atomicAdd(count, 1)] = v;
}

/* Relaxes the out-edges of u, which the given kernel relax_frontier_stage3
 * has just taken off this round's list with pop (du is its distance). */
__device__ void relax_out_edges_stage3(sssp_graph g, int *dist, int u, int du, round_lists l,
                                       int *queued, unsigned long long *relaxed)
{
    int first = g.row_start[u], last = g.row_start[u + 1];
    for (int e = first; e < last; e++) {
        int v = g.adj[e], alt = du + g.weight[e];
        if (alt < dist[v] && alt < atomicMin(&dist[v], alt))
            push(v, l.out, l.out_count, queued);
    }
    *relaxed += last - first;
}

/* ---------------------------------------------------------------- stage 4 */

/* Near-far: stage 3, but an improved node goes on the next list only when
 * its distance is below the current threshold; the others wait in the far
 * pile until the near list runs dry and the threshold moves up by delta.
 * Nodes are then mostly settled once, in distance order, like Dijkstra's
 * buckets. */
typedef struct {
    round_lists near;
    int *queued, threshold;
    int *far, *far_count, *far_queued;
} near_far;

__device__ void relax_edge_stage4(sssp_graph g, int *dist, int e, int du, near_far nf)
{
    int v = g.adj[e], alt = du + g.weight[e];
    if (alt < dist[v] && alt < atomicMin(&dist[v], alt)) {
        if (alt < nf.threshold)
            push(v, nf.near.out, nf.near.out_count, nf.queued);
        else
            push(v, nf.far, nf.far_count, nf.far_queued);
    }
}

/* Load balance: a warp's lanes loop over their nodes' edges together, so a
 * power-law hub with a million edges would keep 31 lanes (and the round)
 * waiting. Nodes with more than 32 edges are expanded by the whole warp,
 * one after the other; the rest by their own lane. */
__global__ void relax_near_stage4(sssp_graph g, int *dist, near_far nf,
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
        unsigned hubs;
        while ((hubs = __ballot_sync(0xffffffffu, last - first > 32))) {
            int leader = __ffs(hubs) - 1;
            int hub_first = __shfl_sync(0xffffffffu, first, leader);
            int hub_last = __shfl_sync(0xffffffffu, last, leader);
            int hub_du = __shfl_sync(0xffffffffu, du, leader);
            for (int e = hub_first + lane; e < hub_last; e += 32)
                relax_edge_stage4(g, dist, e, hub_du, nf);
            if (lane == leader)
                first = last;
        }
        for (int e = first; e < last; e++)
            relax_edge_stage4(g, dist, e, du, nf);
    }
    add_edges(edges, relaxed);
}

/* Moves the far nodes below the new threshold to the near list and keeps
 * the rest; nodes already settled below the old threshold are dropped. */
__global__ void split_far_stage4(const int *dist, const int *far, const int *far_count,
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

void sssp_stage4(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats)
{
    start_worklist(g, source, dist, work);
    long long threshold = work->delta;
    int round = 0, pile = 0;   /* far[pile] is filled, counted in counts[4 + pile] */
    int *far_counts = &work->counts[4];
    for (;;) {
        for (int i = 0; i < ROUNDS_PER_CHECK; i++, round++) {
            near_far nf = {lists_for_round(work, round), work->queued, (int)threshold,
                           work->far[pile], &far_counts[pile], work->far_queued};
            relax_near_stage4<<<worklist_blocks(g.n), BLOCK>>>(g, dist, nf, work->edges);
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
        split_far_stage4<<<worklist_blocks(g.n), BLOCK>>>(
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
