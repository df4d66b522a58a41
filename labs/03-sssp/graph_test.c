/*
 * Lab 03 graph code tests (CPU only, run by CI): every bad input is rejected
 * with its file, line and problem; CSR building; Dijkstra on graphs whose
 * answers are known by hand. SSSP_DATA is the data folder (set by meson.build).
 */
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "wb_test.h"

TestSuite(sssp_graph, .timeout = 60);

static void expect_rejected(const char *file, const char *where, const char *problem)
{
    graph g;
    char error[512] = "";
    bool ok = graph_read_dimacs(file, &g, error, sizeof error);
    cr_assert(!ok, "%s was accepted", file);
    cr_assert(strstr(error, where), "%s: message \"%s\" does not name \"%s\"", file, error, where);
    cr_assert(strstr(error, problem), "%s: message \"%s\" does not say \"%s\"", file, error,
              problem);
}

/* A test that SSSP_DATA/file is rejected with a message that names the file
 * followed by `at` (":LINE:", ":" or nothing) and says `problem`. */
#define REJECTS(test_name, file, at, problem)                                     \
    Test(sssp_graph, rejects_##test_name)                                         \
    {                                                                             \
        expect_rejected(SSSP_DATA "/" file, SSSP_DATA "/" file at, problem);      \
    }

REJECTS(empty_file, "empty.gr", ":0:", "empty")
REJECTS(missing_file, "no-such-file.gr", "", "cannot open")
REJECTS(missing_p_line, "no-p-line.gr", ":2:", "before the 'p sp")
REJECTS(edge_count_mismatch, "edge-count.gr", ":4:", "announced 3 edges, the file has 2")
REJECTS(node_id_zero, "node-zero.gr", ":3:", "node id 0 out of range 1..3")
REJECTS(node_id_above_n, "node-too-big.gr", ":3:", "node id 4 out of range")
REJECTS(negative_weight, "negative-weight.gr", ":3:", "negative weight -5")
REJECTS(non_numeric_weight, "bad-weight.gr", ":3:", "weight is not a number")
REJECTS(truncated_file, "truncated.gr", ":4:", "expected 'a FROM TO WEIGHT'")
REJECTS(truncated_gzip, "truncated.gr.gz", ":", "truncated")

Test(sssp_graph, rejects_source_out_of_range)
{
    int src[] = {0}, dst[] = {1}, w[] = {1};
    graph g = graph_from_edges(2, 1, src, dst, w);
    char error[256];
    cr_assert(graph_check_source(&g, 1, error, sizeof error));
    cr_assert(!graph_check_source(&g, 2, error, sizeof error));
    cr_assert(strstr(error, "source node 3 out of range 1..2"), "message: %s", error);
    cr_assert(!graph_check_source(&g, -1, error, sizeof error));
    graph_free(&g);
}

Test(sssp_graph, csr_groups_edges_by_source)
{
    /* Edges given out of order, a parallel pair and a self-loop. */
    int src[] = {2, 0, 2, 1, 0, 2}, dst[] = {0, 1, 0, 1, 2, 1}, w[] = {5, 1, 6, 2, 3, 4};
    graph g = graph_from_edges(4, 6, src, dst, w);
    int rows[] = {0, 2, 3, 6, 6};
    for (int u = 0; u <= 4; u++)
        cr_assert_eq(g.row_start[u], rows[u], "row_start[%d] = %d, expected %d", u,
                     g.row_start[u], rows[u]);
    /* Within a row the edges keep their input order. */
    int adj[] = {1, 2, 1, 0, 0, 1}, weight[] = {1, 3, 2, 5, 6, 4};
    for (int e = 0; e < 6; e++)
        cr_assert(g.adj[e] == adj[e] && g.weight[e] == weight[e],
                  "edge %d: %d (w %d), expected %d (w %d)", e, g.adj[e], g.weight[e], adj[e],
                  weight[e]);
    graph_free(&g);
}

Test(sssp_graph, reads_specials_and_dijkstra_knows_them)
{
    graph g;
    char error[512];
    cr_assert(graph_read_dimacs(SSSP_DATA "/specials.gr", &g, error, sizeof error), "%s", error);
    cr_assert(g.n == 5 && g.m == 7, "n %d m %d", g.n, g.m);
    int dist[5], expected[] = {0, 0, 0, 2, SSSP_UNREACHABLE};
    dijkstra(&g, 0, dist);
    for (int v = 0; v < 5; v++)
        cr_assert_eq(dist[v], expected[v], "dist[%d] = %d, expected %d", v, dist[v], expected[v]);
    graph_free(&g);
}

Test(sssp_graph, gzip_and_plain_road_excerpt_agree)
{
    graph a, b;
    char error[512];
    cr_assert(graph_read_dimacs(SSSP_DATA "/road-16x16.gr", &a, error, sizeof error), "%s", error);
    cr_assert(graph_read_dimacs(SSSP_DATA "/road-16x16.gr.gz", &b, error, sizeof error), "%s", error);
    cr_assert(a.n == b.n && a.m == b.m && a.n == 256);
    cr_assert(!memcmp(a.row_start, b.row_start, sizeof(int) * (size_t)(a.n + 1)));
    cr_assert(!memcmp(a.adj, b.adj, sizeof(int) * (size_t)a.m));
    cr_assert(!memcmp(a.weight, b.weight, sizeof(int) * (size_t)a.m));
    graph_free(&a);
    graph_free(&b);
}

Test(sssp_graph, dijkstra_on_a_path_and_written_file_round_trip)
{
    /* Path 0 -> 1 -> ... -> 9 with weight i + 1: dist[v] = v (v + 1) / 2. */
    int src[9], dst[9], w[9];
    for (int i = 0; i < 9; i++)
        src[i] = i, dst[i] = i + 1, w[i] = i + 1;
    graph g = graph_from_edges(10, 9, src, dst, w), back;
    int dist[10];
    dijkstra(&g, 0, dist);
    for (int v = 0; v < 10; v++)
        cr_assert_eq(dist[v], v * (v + 1) / 2, "dist[%d] = %d", v, dist[v]);
    char path[] = "/tmp/sssp-path-XXXXXX", error[512];
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert(graph_write_dimacs(path, &g, "path", error, sizeof error), "%s", error);
    cr_assert(graph_read_dimacs(path, &back, error, sizeof error), "%s", error);
    remove(path);
    cr_assert(back.n == 10 && back.m == 9 && !memcmp(back.adj, g.adj, sizeof(int) * 9));
    graph_free(&g);
    graph_free(&back);
}

Test(sssp_graph, generators_have_the_promised_shape)
{
    wb_rng rng = wb_rng_for("sssp generators");
    graph grid = graph_grid(8, 5, 3, 10, &rng);
    cr_assert(grid.n == 40 && grid.m == 2 * (7 * 5 + 8 * 4) + 6, "grid m %d", grid.m);
    graph uniform = graph_uniform(100, 1000, 10, &rng);
    cr_assert(uniform.n == 100 && uniform.m == 1000);
    graph rmat = graph_rmat(10, 8000, 10, &rng);
    cr_assert(rmat.n == 1024 && rmat.m == 8000);
    /* R-MAT is skewed: node 0 has far more than the average 8 out-edges. */
    cr_assert(rmat.row_start[1] - rmat.row_start[0] > 80, "node 0 degree %d",
              rmat.row_start[1] - rmat.row_start[0]);
    for (int e = 0; e < uniform.m; e++)
        cr_assert(uniform.weight[e] >= 1 && uniform.weight[e] <= 10);
    graph_free(&grid);
    graph_free(&uniform);
    graph_free(&rmat);
}

Test(sssp_graph, suggested_delta_follows_the_rule)
{
    /* 128 x mean weight / mean out-degree: 4 nodes, 8 edges of mean weight
     * 25 (degree 2) give 1600; the same weights on 2 nodes (degree 4), 800. */
    int src[8] = {0, 0, 1, 1, 2, 2, 3, 3}, dst[8] = {1, 2, 2, 3, 3, 0, 0, 1},
        w[8] = {10, 40, 20, 30, 25, 25, 5, 45};
    graph sparse = graph_from_edges(4, 8, src, dst, w);
    cr_assert_eq(graph_suggest_delta(&sparse), 1600, "delta %d", graph_suggest_delta(&sparse));
    for (int i = 0; i < 8; i++)
        src[i] %= 2, dst[i] %= 2;
    graph dense = graph_from_edges(2, 8, src, dst, w);
    cr_assert_eq(graph_suggest_delta(&dense), 800, "delta %d", graph_suggest_delta(&dense));
    /* No edges: 1. Huge weights: clamped to SSSP_MAX_WEIGHT. */
    graph empty = graph_from_edges(3, 0, src, dst, w);
    cr_assert_eq(graph_suggest_delta(&empty), 1);
    for (int i = 0; i < 8; i++)
        w[i] = SSSP_MAX_WEIGHT;
    graph heavy = graph_from_edges(4, 8, src, dst, w);
    cr_assert_eq(graph_suggest_delta(&heavy), SSSP_MAX_WEIGHT);
    graph_free(&sparse);
    graph_free(&dense);
    graph_free(&empty);
    graph_free(&heavy);
}

Test(sssp_graph, road_like_stand_in_has_the_asked_size)
{
    wb_rng rng = wb_rng_for("sssp road-like");
    graph g = graph_road_like(1000, 2 * 1500 + 1, 50, &rng);   /* 32 columns */
    cr_assert(g.n == 1000 && g.m == 3001, "n %d m %d", g.n, g.m);
    int two_way = 0;
    for (int u = 0; u < g.n; u++)
        for (int e = g.row_start[u]; e < g.row_start[u + 1]; e++) {
            int v = g.adj[e], d = v > u ? v - u : u - v;
            cr_assert((d == 1 && u / 32 == v / 32) || d == 32, "edge %d -> %d: not neighbours",
                      u, v);
            cr_assert(g.weight[e] >= 1 && g.weight[e] <= 50);
            for (int f = g.row_start[v]; f < g.row_start[v + 1]; f++)
                two_way += g.adj[f] == u;
        }
    cr_assert(two_way == 3000, "%d arcs have their reverse, expected 3000", two_way);
    int dist[1000];   /* 1500 pairs >= 999: a spanning tree, every node reachable */
    dijkstra(&g, 0, dist);
    for (int v = 0; v < g.n; v++)
        cr_assert(dist[v] != SSSP_UNREACHABLE, "node %d unreachable from 0", v);
    graph_free(&g);
}
