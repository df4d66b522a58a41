/*
 * Lab 03: single-source shortest paths, in stages.
 *
 * Your task: fill in the numbered TODOs, one stage at a time. Read
 * handouts/03-sssp.md first. The host loops are given in given.cuh
 * (included at the top): they run rounds until nothing changes and launch
 * your kernels, so keep their names and parameters. Check your work with
 *     meson test -C build --suite sssp-student --print-errorlogs
 * (or `./build/sssp-student --filter 'sssp/stage1_*'` for one stage) and ask
 * for a hint with `grading/workbook hint sssp 0`.
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
    // TODO 1: relax every out-edge u -> v (edges row_start[u] .. row_start[u+1]-1
    // of adj and weight): when going through u is shorter than dist[v], store
    // the shorter distance, with a plain write as in the lecture, and set
    // *changed so that the host runs another round.
}

/* ---------------------------------------------------------------- stage 1 */

/* Stage 0 with the update made atomic: no improvement is lost. */
__global__ void relax_all_stage1(sssp_graph g, int *dist, int *changed)
{
    int u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= g.n || current_dist(dist, u) == SSSP_UNREACHABLE)
        return;
    // TODO 2: stage 0's relaxation, with the update of dist[v] made atomic so
    // that no improvement is lost. Set *changed only when this thread really
    // lowered dist[v]. Read distances that other threads may be lowering
    // (du, and dist[v] before the atomic) with current_dist (given.cuh).
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
    // TODO 3: take u off the worklist: clear its flag in queued with an
    // exchange that acquires (cuda::atomic_ref, given.cuh's current_dist
    // shows one), then read and return its distance. Mind the order, and
    // make sure the read sees what other threads wrote during this round,
    // not an old cached copy.
    return SSSP_UNREACHABLE;
}

/* Appends v to the list unless it is already waiting there. The caller has
 * just lowered dist[v]; the exchange releases, so that a pop whose acquiring
 * exchange reads this 1 sees the lowered distance (pop says why that is
 * enough). Release and acquire cost less than a fence on each side: a
 * __threadfence() is an SC fence that also empties the SM's L1 cache. */
__device__ void push(int v, int *list, int *count, int *queued)
{
    // TODO 4: mark v as queued with an exchange that releases, and append
    // it to the list (a slot taken with an atomic on *count), but only when
    // no other thread queued it already: exactly one of several racing
    // threads may win.
}

/* Relaxes the out-edges of u, which the given kernel relax_frontier_stage2
 * has just taken off this round's list with pop (du is its distance). */
__device__ void relax_out_edges_stage2(sssp_graph g, int *dist, int u, int du, round_lists l,
                                       int *queued, unsigned long long *relaxed)
{
    // TODO 5: relax u's out-edges as in stage 1; every v whose distance
    // this thread lowered goes on the next round's list l.out (with
    // l.out_count). Add the number of edges relaxed to *relaxed.
}

/* ---------------------------------------------------------------- stage 3 */

/* Near-far (optional): stage 2, but an improved node goes on the next list
 * only when its distance is below the current threshold; the others wait in
 * the far pile until the near list runs dry and the threshold moves up by
 * delta (given.cuh: the near rounds, the split of the far pile, the host
 * loop). The stage 3 tests fail until you write both functions; they do not
 * count towards stages 0-2. */
__device__ void relax_edge_stage3(sssp_graph g, int *dist, int e, int du, near_far nf)
{
    // TODO 6 (optional): relax edge e of a node at distance du as in stage
    // 2; push an improved node to the near list (nf.near.out, nf.queued)
    // when its new distance is below nf.threshold, else to the far pile
    // (nf.far, nf.far_count, nf.far_queued).
    (void)g, (void)dist, (void)e, (void)du, (void)nf;   // (delete this line once you use them)
}

/* All 32 lanes call this together (relax_near_round, given), each with its
 * node's distance du and its share first .. last - 1 of the node's edges
 * (the whole row, or a part when the given code gives a node several
 * lanes); a lane without edges has first == last. */
__device__ void relax_edges_stage3(sssp_graph g, int *dist, near_far nf, int du, int first,
                                   int last)
{
    // TODO 7 (optional): relax edges first .. last - 1 with
    // relax_edge_stage3. A hub (more than 32 edges) would keep the other 31
    // lanes waiting: expand hubs with the whole warp, one after the other
    // (__ballot_sync finds them, __shfl_sync hands out a hub's range and
    // distance), and the other nodes each by its own lane.
    (void)g, (void)dist, (void)nf, (void)du, (void)first, (void)last;   // (delete this line once you use them)
}
