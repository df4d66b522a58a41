/*
 * Lab 03 reference: single-source shortest paths, four stages.
 * The host loops of stages 0 to 2 are given (given.cuh, shared with the
 * skeleton) and run rounds until nothing changes; the kernels are what the
 * stages are about.
 */
#include "lab.h"
#include "workbook.h"
#include "given.cuh"

/* ---------------------------------------------------------------- stage 0 */

/* One thread per node relaxes the node's out-edges with the lecture's
 * unguarded update: two threads improving the same node may overwrite each
 * other, and the next round repairs what was lost. */
__global__ void relax_all_stage0(sssp_graph g, int *dist, int *changed)
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

/* ---------------------------------------------------------------- stage 1 */

/* Stage 0 with the update made atomic: no improvement is lost. */
__global__ void relax_all_stage1(sssp_graph g, int *dist, int *changed)
{
    int u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= g.n || current_dist(dist, u) == SSSP_UNREACHABLE)
        return;
    int du = current_dist(dist, u);
    for (int e = g.row_start[u]; e < g.row_start[u + 1]; e++) {
        int v = g.adj[e], alt = du + g.weight[e];
        /* The first read only filters out most atomics (given.cuh says why
         * it is a relaxed atomic load); atomicMin decides. */
        if (alt < current_dist(dist, v) && alt < atomicMin(&dist[v], alt))
            *changed = 1;
    }
}

/* ---------------------------------------------------------------- stage 2 */

/* Takes node u off the worklist and returns its current distance. The flag
 * is cleared before the distance is read: an improvement that lands after
 * the read pushes u again instead of being missed. The clear is an
 * exchange that acquires, not a store: a push's exchange of the same flag
 * either comes after it (and finds the flag clear, or set by another push
 * since: u is pushed again) or before it, and then this exchange reads that
 * push's 1 (or a later exchange's) and synchronises with its release, so
 * the read below sees the lowered distance. A store reads nothing and
 * synchronises with nothing. */
__device__ int pop(int u, int *queued, const int *dist)
{
    cuda::atomic_ref<int, cuda::thread_scope_device>(queued[u]).exchange(
        0, cuda::memory_order_acquire);
    return *(volatile const int *)&dist[u];
}

/* Appends v to the list unless it is already waiting there. The caller has
 * just lowered dist[v]; the exchange releases, so that a pop whose acquiring
 * exchange reads this 1 sees the lowered distance (pop says why that is
 * enough). Release and acquire cost less than a fence on each side: a
 * __threadfence() is an SC fence that also empties the SM's L1 cache. */
__device__ void push(int v, int *list, int *count, int *queued)
{
    if (cuda::atomic_ref<int, cuda::thread_scope_device>(queued[v]).exchange(
            1, cuda::memory_order_release) == 0)
        list[atomicAdd(count, 1)] = v;
}

/* Relaxes the out-edges of u, which the given kernel relax_frontier_stage2
 * has just taken off this round's list with pop (du is its distance). */
__device__ void relax_out_edges_stage2(sssp_graph g, int *dist, int u, int du, round_lists l,
                                       int *queued, unsigned long long *relaxed)
{
    int first = g.row_start[u], last = g.row_start[u + 1];
    for (int e = first; e < last; e++) {
        int v = g.adj[e], alt = du + g.weight[e];
        if (alt < current_dist(dist, v) && alt < atomicMin(&dist[v], alt))
            push(v, l.out, l.out_count, queued);
    }
    *relaxed += last - first;
}

/* ---------------------------------------------------------------- stage 3 */

/* Near-far (optional): stage 2, but an improved node goes on the next list
 * only when its distance is below the current threshold; the others wait in
 * the far pile until the near list runs dry and the threshold moves up by
 * delta (given.cuh: the near rounds, the split of the far pile, the host
 * loop). Nodes are then mostly settled once, in distance order, like
 * Dijkstra's buckets. */
__device__ void relax_edge_stage3(sssp_graph g, int *dist, int e, int du, near_far nf)
{
    int v = g.adj[e], alt = du + g.weight[e];
    if (alt < current_dist(dist, v) && alt < atomicMin(&dist[v], alt)) {
        if (alt < nf.threshold)
            push(v, nf.near.out, nf.near.out_count, nf.queued);
        else
            push(v, nf.far, nf.far_count, nf.far_queued);
    }
}

/* Load balance: a warp's lanes loop over their edges together, so a
 * power-law hub with thousands of edges would keep 31 lanes (and the round)
 * waiting. Shares of more than 32 edges are expanded by the whole warp, one
 * after the other; the rest by their own lane (the given code has already
 * given the block the shares above 1024). All 32 lanes call this together
 * (relax_near_round, given), each with its node's distance du and its share
 * first .. last - 1 of the node's edges (the whole row, or a part when the
 * given code gives a node several lanes); a lane without edges has
 * first == last. */
__device__ void relax_edges_stage3(sssp_graph g, int *dist, near_far nf, int du, int first,
                                   int last)
{
    int lane = threadIdx.x % 32;
    unsigned hubs;
    while ((hubs = __ballot_sync(0xffffffffu, last - first > 32))) {
        int leader = __ffs(hubs) - 1;
        int hub_first = __shfl_sync(0xffffffffu, first, leader);
        int hub_last = __shfl_sync(0xffffffffu, last, leader);
        int hub_du = __shfl_sync(0xffffffffu, du, leader);
        for (int e = hub_first + lane; e < hub_last; e += 32)
            relax_edge_stage3(g, dist, e, hub_du, nf);
        if (lane == leader)
            first = last;
    }
    for (int e = first; e < last; e++)
        relax_edge_stage3(g, dist, e, du, nf);
}
