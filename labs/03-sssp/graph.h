/*
 * Lab 03 graph code (CPU side): the DIMACS .gr reader, CSR construction,
 * seeded generators, CPU Dijkstra (the oracle and the CPU baseline), and the
 * copy of a graph to the GPU. Tested on the CPU by graph_test.c.
 */
#ifndef LAB_SSSP_GRAPH_H
#define LAB_SSSP_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "lab.h"
#include "workbook.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A directed graph in CSR form on the host: the out-edges of node u are
 * adj[row_start[u] .. row_start[u+1]-1] with weights weight[...]. Nodes are
 * 0-based here (DIMACS files are 1-based). */
typedef struct {
    int n, m;
    int *row_start;   /* n + 1 entries */
    int *adj;         /* m entries: edge targets */
    int *weight;      /* m entries, each in [0, SSSP_MAX_WEIGHT] */
} graph;

/* Largest weight accepted, so that a path of up to 2^11 maximal edges, or
 * any path of a road network, still fits a 32-bit distance. */
#define SSSP_MAX_WEIGHT (1 << 20)

/* Builds CSR from m edges src[i] -> dst[i] of weight w[i] (0-based ids). */
graph graph_from_edges(int n, int m, const int *src, const int *dst, const int *w);
void graph_free(graph *g);

/* Reads a DIMACS shortest-path file, plain or gzip-compressed. On bad input
 * returns false and writes "FILE:LINE: problem" into error. */
bool graph_read_dimacs(const char *path, graph *g, char *error, size_t error_len);
/* Writes g as a DIMACS file (plain text); false with a message on failure. */
bool graph_write_dimacs(const char *path, const graph *g, const char *comment, char *error,
                        size_t error_len);

/* Source id check shared by the tests and the bench (0-based source). */
bool graph_check_source(const graph *g, int source, char *error, size_t error_len);

/* Generators. Weights are uniform in [1, max_weight].
 * Road-like: a width x height grid, both directions between neighbours, plus
 * long_edges random two-way "highways" whose weight is a quarter of the
 * average cost of the grid path they skip. */
graph graph_grid(int width, int height, int long_edges, int max_weight, wb_rng *rng);
/* A stand-in for a road network of n nodes and m arcs: on a grid of
 * ceil(sqrt(n)) columns, a random spanning tree of neighbour pairs (every
 * node reachable when m >= 2 (n - 1)), then more random neighbour pairs,
 * both ways each, until there are m arcs (a road network has degree 2.5 to
 * 3, a full grid 4). */
graph graph_road_like(int n, int m, int max_weight, wb_rng *rng);
/* m directed edges with uniform random ends. */
graph graph_uniform(int n, int m, int max_weight, wb_rng *rng);
/* R-MAT power-law graph on 2^scale nodes, probabilities 0.57/0.19/0.19/0.05. */
graph graph_rmat(int scale, int m, int max_weight, wb_rng *rng);

/* Binary-heap Dijkstra; unreachable nodes get SSSP_UNREACHABLE. */
void dijkstra(const graph *g, int source, int *dist);

/* A near-far bucket width for g: 128 x mean edge weight / mean out-degree
 * (graph.c says why), clamped to 1 .. SSSP_MAX_WEIGHT. */
int graph_suggest_delta(const graph *g);

/* The graph in device memory, and buffers for the entry points. */
sssp_graph graph_to_device(const graph *g);
void device_graph_free(sssp_graph *g);

#ifdef __cplusplus
}
#endif

#endif
