/*
 * Lab 03 tests: each stage's distances must equal CPU Dijkstra's exactly on
 * small hand-made graphs (single node, path, star, disconnected, zero-weight
 * cycles, self-loops, parallel edges), the shipped road excerpt, and seeded
 * grid, uniform and R-MAT graphs; then a short timing table.
 */
#include <stdlib.h>

#include "graph.h"
#include "wb_test.h"

WB_GPU_SUITE(sssp, .timeout = 60);

typedef void (*sssp_fn)(sssp_graph, int, int *, sssp_work *, sssp_stats *);
static const sssp_fn stages[] = {NULL, sssp_stage1, sssp_stage2, sssp_stage3, sssp_stage4};

/* Runs one stage on g from source and compares with Dijkstra. */
static void check_stage(int stage, const graph *g, int source, const char *name)
{
    char what[160];
    snprintf(what, sizeof what, "stage %d on %s (%d nodes, %d edges, source %d)", stage, name,
             g->n, g->m, source);
    int *expected = malloc(sizeof(int) * (size_t)g->n), *got = malloc(sizeof(int) * (size_t)g->n);
    cr_assert(expected && got, "out of host memory");
    dijkstra(g, source, expected);
    sssp_graph d = graph_to_device(g);
    sssp_work *work = sssp_work_new(g->n);
    work->delta = graph_suggest_delta(g);
    int *dist;
    CUDA_CHECK(cudaMalloc((void **)&dist, sizeof(int) * (size_t)g->n));
    wb_poison_ints(dist, (size_t)g->n);
    sssp_stats stats = {0};
    stages[stage](d, source, dist, work, &stats);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(got, dist, sizeof(int) * (size_t)g->n, cudaMemcpyDeviceToHost));
    wb_assert_ints_equal(got, expected, (size_t)g->n, what);
    cr_assert(stats.rounds > 0 && stats.edges_relaxed >= 0, "%s: stats not filled", what);
    CUDA_CHECK(cudaFree(dist));
    sssp_work_free(work);
    device_graph_free(&d);
    free(expected);
    free(got);
}

static graph from_list(int n, int m, const int (*edges)[3])
{
    int *src = calloc((size_t)m + 1, sizeof(int)), *dst = calloc((size_t)m + 1, sizeof(int)),
        *w = calloc((size_t)m + 1, sizeof(int));
    for (int i = 0; i < m; i++)
        src[i] = edges[i][0], dst[i] = edges[i][1], w[i] = edges[i][2];
    graph g = graph_from_edges(n, m, src, dst, w);
    free(src);
    free(dst);
    free(w);
    return g;
}

static void check_small_graphs(int stage)
{
    graph single = from_list(1, 0, NULL);
    check_stage(stage, &single, 0, "a single node");
    graph_free(&single);

    int path_edges[63][3];
    for (int i = 0; i < 63; i++)
        path_edges[i][0] = i, path_edges[i][1] = i + 1, path_edges[i][2] = 1 + i % 5;
    graph path = from_list(64, 63, path_edges);
    check_stage(stage, &path, 0, "a path");
    check_stage(stage, &path, 40, "a path, source in the middle");
    graph_free(&path);

    int star_edges[2000][3];
    for (int i = 0; i < 1000; i++) {
        int leaf = 1 + i;
        star_edges[2 * i][0] = 0, star_edges[2 * i][1] = leaf, star_edges[2 * i][2] = 1 + i % 7;
        star_edges[2 * i + 1][0] = leaf, star_edges[2 * i + 1][1] = 0, star_edges[2 * i + 1][2] = 1;
    }
    graph star = from_list(1001, 2000, star_edges);
    check_stage(stage, &star, 0, "a star, from the hub");
    check_stage(stage, &star, 17, "a star, from a leaf");
    graph_free(&star);

    /* Two triangles with no edge between them, parallel edges, a self-loop. */
    static const int parts[][3] = {{0, 1, 4}, {1, 2, 4}, {0, 2, 9}, {0, 2, 7}, {2, 0, 1},
                                   {3, 4, 1}, {4, 5, 1}, {5, 3, 1}, {4, 4, 0}};
    graph disconnected = from_list(6, 9, parts);
    check_stage(stage, &disconnected, 0, "two disconnected triangles");
    graph_free(&disconnected);

    graph specials;
    char error[512];
    cr_assert(graph_read_dimacs(SSSP_DATA "/specials.gr", &specials, error, sizeof error), "%s",
              error);
    check_stage(stage, &specials, 0, "zero-weight cycle, self-loop, parallel edges");
    graph_free(&specials);
}

static void check_road_excerpt(int stage)
{
    graph road;
    char error[512];
    cr_assert(graph_read_dimacs(SSSP_DATA "/road-16x16.gr.gz", &road, error, sizeof error), "%s",
              error);
    check_stage(stage, &road, 0, "the road excerpt road-16x16.gr.gz");
    check_stage(stage, &road, 200, "the road excerpt road-16x16.gr.gz");
    graph_free(&road);
}

static void check_generated(int stage)
{
    wb_rng rng = wb_rng_for("sssp generated graphs");
    graph grid = graph_grid(300, 200, 20, 1000, &rng);
    check_stage(stage, &grid, wb_rng_int(&rng, 0, grid.n - 1), "a 300 x 200 road-like grid");
    graph_free(&grid);
    graph uniform = graph_uniform(50000, 400000, 100, &rng);
    check_stage(stage, &uniform, 0, "a uniform random graph");
    graph_free(&uniform);
    graph rmat = graph_rmat(16, 1 << 20, 100, &rng);
    check_stage(stage, &rmat, 0, "an R-MAT graph");
    graph_free(&rmat);
    /* Weights 0 and 1 only: many ties and zero-weight cycles. */
    graph ties = graph_uniform(20000, 100000, 1, &rng);
    for (int e = 0; e < ties.m; e++)
        ties.weight[e] = (e * 7) % 3 == 0 ? 0 : 1;
    check_stage(stage, &ties, 5, "a uniform graph with weights 0 and 1");
    graph_free(&ties);
}

#define STAGE_TESTS(N)                                                                \
    Test(sssp, stage##N##_small_graphs) { check_small_graphs(N); }                   \
    Test(sssp, stage##N##_road_excerpt) { check_road_excerpt(N); }                   \
    Test(sssp, stage##N##_generated_graphs, .timeout = 120) { check_generated(N); }

STAGE_TESTS(1)
STAGE_TESTS(2)
STAGE_TESTS(3)
STAGE_TESTS(4)

Test(sssp, timing_grid, .description = "every stage on a 512 x 512 grid", .timeout = 120)
{
    wb_rng rng = wb_rng_for("sssp timing");
    graph g = graph_grid(512, 512, 64, 1000, &rng);
    sssp_graph d = graph_to_device(&g);
    sssp_work *work = sssp_work_new(g.n);
    work->delta = graph_suggest_delta(&g);
    int *dist;
    CUDA_CHECK(cudaMalloc((void **)&dist, sizeof(int) * (size_t)g.n));
    wb_table *table = wb_table_new("sssp-test", "512 x 512 road-like grid, source 0",
                                   "stage|time (ms)|rounds|edges relaxed|MTEPS");
    for (int stage = 1; stage <= 4; stage++) {
        sssp_stats stats;
        cudaEvent_t a, b;
        float ms;
        CUDA_CHECK(cudaEventCreate(&a));
        CUDA_CHECK(cudaEventCreate(&b));
        CUDA_CHECK(cudaEventRecord(a, 0));
        stages[stage](d, 0, dist, work, &stats);
        CUDA_CHECK(cudaEventRecord(b, 0));
        CUDA_CHECK(cudaEventSynchronize(b));
        CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        wb_table_row(table, "%d|%.2f|%d|%lld|%.0f", stage, ms, stats.rounds, stats.edges_relaxed,
                     g.m / (ms * 1e3));
        CUDA_CHECK(cudaEventDestroy(a));
        CUDA_CHECK(cudaEventDestroy(b));
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    CUDA_CHECK(cudaFree(dist));
    sssp_work_free(work);
    device_graph_free(&d);
    graph_free(&g);
}
