/*
 * Lab 03: single-source shortest paths, in stages.
 *
 * Your task: fill in the numbered TODOs, one stage at a time. Read
 * handouts/03-sssp.md first. The host loops are given in given.cuh
 * (included at the top): they run rounds until nothing changes and launch
 * your kernels, so keep their names and parameters. Check your work with
 *     meson test -C build --suite sssp-student --print-errorlogs
 * (or ./build/sssp-student --filter 'sssp/stage2_*' for one stage) and ask
 * for a hint with `grading/workbook hint sssp 1`.
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
    // TODO 1: relax every out-edge u -> v (edges row_start[u] .. row_start[u+1]-1
    // of adj and weight): when going through u is shorter than dist[v], store
    // the shorter distance, with a plain write as in the lecture, and set
    // *changed so that the host runs another round.
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

/* ---------------------------------------------------------------- stage 3 */

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

/* Relaxes the out-edges of u, which the given kernel relax_frontier_stage3
 * has just taken off this round's list with pop (du is its distance). */
__device__ void relax_out_edges_stage3(sssp_graph g, int *dist, int u, int du, round_lists l,
                                       int *queued, unsigned long long *relaxed)
{
    // TODO 5: relax u's out-edges as in stage 2; every v whose distance
    // this thread lowered goes on the next round's list l.out (with
    // l.out_count). Add the number of edges relaxed to *relaxed.
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
    // near rounds in batches like sssp_stage3 (both in given.cuh), with a
    // kernel that pushes below-threshold improvements to the near list and
    // the rest to work->far[..] (deduplicated with work->far_queued), and a
    // kernel that splits the far pile when the near list is empty. Finish
    // with finish().
    (void)g, (void)source, (void)dist, (void)work;
    stats->rounds = 0;
    stats->edges_relaxed = 0;
}
