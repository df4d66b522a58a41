/* Lab 03, single-source shortest paths: the entry points that the skeleton
 * (labs/) and the reference (solutions/) both define, and that test.c and
 * bench.c call. The host-side graph code is in graph.h. */
#ifndef LAB_SSSP_H
#define LAB_SSSP_H

#include <limits.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Distance of a node the source cannot reach. */
#define SSSP_UNREACHABLE INT_MAX

/* Threads per block of every launch, unless the benchmark's --block says
 * otherwise (sssp_work.block). */
#define SSSP_BLOCK 256

/* Near-far's grid: this many blocks per SM (at most as many as are resident
 * at once), unless the benchmark's --near-far-blocks says otherwise. Most of
 * its rounds have a few thousand nodes, a dozen blocks' worth, and every
 * other block still costs: it is launched, reads the round's state, meets a
 * barrier and adds its edges to one counter. On the H200's grid (2966
 * rounds): 1 per SM 25.1 ms, 2 per SM 24.3-24.5 ms, 4 per SM 27.3 ms, all
 * resident (6 per SM) 30.3-30.4 ms. R-MAT's 14 large rounds pay for it:
 * 17.5 ms at 2 per SM against 14.0 ms with all resident, still 150x CPU
 * Dijkstra against the bar's 100x. */
#define SSSP_NEAR_FAR_BLOCKS_PER_SM 2

/* Ints of sssp_work.counts (given.cuh says which is what). */
#define SSSP_COUNTS 16

/* A CSR graph in device memory (see graph.h for the layout). */
typedef struct {
    int n, m;
    const int *row_start, *adj, *weight;
} sssp_graph;

/* What a run did: rounds of the outer loop (kernel launches over a frontier
 * or over all nodes) and edges whose relaxation was tried. */
typedef struct {
    int rounds;
    long long edges_relaxed;
} sssp_stats;

/* Scratch space the entry points need (allocated once, reused between runs,
 * so that timings leave cudaMalloc out). */
typedef struct sssp_work {
    int n;
    int *frontier[2];        /* this round's and the next round's worklist (2n slots) */
    int *far[2];             /* stage 3: nodes left for a later bucket */
    int delta;               /* stage 3: bucket width (graph_suggest_delta) */
    int block;               /* threads per block of every launch (SSSP_BLOCK) */
    int near_far_blocks;     /* stage 3's grid: this many blocks (0: the default,
                                SSSP_NEAR_FAR_BLOCKS_PER_SM per SM) */
    int *queued;             /* per node: 1 while it waits in a worklist */
    int *far_queued;         /* per node: 1 while it waits in far */
    int *counts;             /* SSSP_COUNTS ints: worklist lengths, the "changed" flag,
                                stage 3's far pile lengths, threshold and phase */
    unsigned long long *edges;  /* edges relaxed, summed on the GPU */
} sssp_work;
sssp_work *sssp_work_new(int n);   /* defined in graph.c */
void sssp_work_free(sssp_work *work);

/* Each stage computes dist[v] = length of the shortest path source -> v for
 * every node (SSSP_UNREACHABLE when there is none) into the device array
 * dist of g.n ints, fills *stats, and returns when dist is complete.
 *   stage 0: topology-driven Bellman-Ford, the lecture's racy update
 *   stage 1: topology-driven, atomicMin
 *   stage 2: data-driven, a deduplicated frontier worklist
 *   stage 3: near-far: the worklist split by a distance threshold (optional) */
void sssp_stage0(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats);
void sssp_stage1(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats);
void sssp_stage2(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats);
void sssp_stage3(sssp_graph g, int source, int *dist, sssp_work *work, sssp_stats *stats);

/* For the tests (given): near-far's warp expansion alone. One warp calls
 * relax_edges_stage3 with lanes 0 and 1 each holding a hub of `edges` edges
 * (33 to 1024), the other lanes none, every edge improving a target of its
 * own; order (2 * edges ints, device memory) receives the targets (nodes 2
 * to 2 * edges + 1, hub 0's first) in the order they were pushed near, -1
 * where fewer were. Synchronous; fails through wb_fail when the warp does
 * not finish. */
void sssp_warp_hubs_probe(int edges, int *order);

/* For test.c and bench.c (stages.c): the stages by number, sssp_stages[0]
 * to [3], and one run of a stage as wb_time_gpu's work
 * (common/workbook.h), which fills the job's stats. */
typedef void (*sssp_stage_fn)(sssp_graph g, int source, int *dist, sssp_work *work,
                              sssp_stats *stats);
extern const sssp_stage_fn sssp_stages[4];
typedef struct {
    int stage, source;
    sssp_graph g;
    int *dist;
    sssp_work *work;
    sssp_stats stats;
} sssp_job;
void sssp_run(void *job);

#ifdef __cplusplus
}
#endif

#endif
