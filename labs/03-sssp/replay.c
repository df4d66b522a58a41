/*
 * Lab 03: a CPU replay of the worklist stages' rounds, for the counts that a
 * GPU run's time is made of (handouts/03-sssp.md, "Near-far, made fast").
 * It runs the lists, pops and pushes of stage 2 and of near-far one round
 * after another, in list order, and prints per run: the rounds with work,
 * near-far's phases, the edges relaxed, the near lists' mean and largest
 * length, and the launches and host looks of the old host loop (16 rounds a
 * look, a look at every phase change) and of the given one (phases on the
 * GPU, 64 rounds a look). No GPU needed.
 *
 *   build/labs/03-sssp/sssp-replay GRAPH [--scale K] [worklist | rule | DELTA]...
 *
 * GRAPH: grid, rmat (the bench's generated graphs, same seeds, 2^K nodes),
 * road (the bench's stand-in of USA-road-d.NY) or a DIMACS file; source
 * node 1. worklist replays stage 2, rule near-far with graph_suggest_delta,
 * a number near-far with that delta. Every run's distances are checked
 * against Dijkstra's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

typedef struct {
    long long rounds, phases, empty_phases, edges, list_sum, list_max;
    long long old_launches, old_looks;
} replay;

static int *ints(int n)
{
    int *p = calloc((size_t)n + 1, sizeof(int));
    if (!p)
        wb_fail("out of host memory");
    return p;
}

/* Near-far as given.cuh runs it (delta <= 0: every node near, stage 2). */
static replay run(const graph *g, int source, long long delta, int *dist)
{
    int n = g->n;
    int *in = ints(n), *out = ints(n), *far = ints(n), *keep = ints(n);
    int *queued = ints(n), *far_queued = ints(n);
    for (int v = 0; v < n; v++)
        dist[v] = SSSP_UNREACHABLE;
    dist[source] = 0;
    in[0] = source;
    queued[source] = 1;
    int in_count = 1, far_count = 0;
    long long threshold = delta > 0 ? delta : SSSP_UNREACHABLE;
    replay r = {0};
    for (;;) {
        long long phase_rounds = 0;
        while (in_count) {   /* the near rounds of a phase */
            int out_count = 0;
            r.rounds++;
            phase_rounds++;
            r.list_sum += in_count;
            r.list_max = in_count > r.list_max ? in_count : r.list_max;
            for (int i = 0; i < in_count; i++) {
                int u = in[i];
                queued[u] = 0;
                int du = dist[u];
                for (int e = g->row_start[u]; e < g->row_start[u + 1]; e++) {
                    int v = g->adj[e];
                    long long alt = (long long)du + g->weight[e];
                    r.edges++;
                    if (alt >= dist[v])
                        continue;
                    dist[v] = (int)alt;
                    if (alt < threshold && !queued[v]) {
                        queued[v] = 1;
                        out[out_count++] = v;
                    } else if (alt >= threshold && !far_queued[v]) {
                        far_queued[v] = 1;
                        far[far_count++] = v;
                    }
                }
            }
            int *t = in;
            in = out;
            out = t;
            in_count = out_count;
        }
        /* The old host loop launched 16 rounds a look and ended a phase at
         * the first look that found the near list empty. */
        long long looks = phase_rounds ? (phase_rounds + 15) / 16 : 1;
        r.old_launches += 16 * looks;
        r.old_looks += looks;
        if (!far_count)
            break;
        long long next = threshold + delta;
        next = next < SSSP_UNREACHABLE ? next : SSSP_UNREACHABLE;
        int kept = 0;
        for (int i = 0; i < far_count; i++) {
            int v = far[i], d = dist[v];
            far_queued[v] = 0;
            if (d < threshold)
                continue;
            if (d < next && !queued[v]) {
                queued[v] = 1;
                in[in_count++] = v;
            } else if (d >= next && !far_queued[v]) {
                far_queued[v] = 1;
                keep[kept++] = v;
            }
        }
        int *t = far;
        far = keep;
        keep = t;
        far_count = kept;
        threshold = next;
        r.phases++;
        r.empty_phases += in_count == 0;
    }
    free(in);
    free(out);
    free(far);
    free(keep);
    free(queued);
    free(far_queued);
    return r;
}

int main(int argc, char **argv)
{
    int scale = 22, first = 2;
    if (argc < 2 || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: sssp-replay GRAPH [--scale K] [worklist | rule | DELTA]...\n"
                        "GRAPH: grid, rmat, road or a DIMACS file (see the top of replay.c)\n");
        return argc < 2 ? 2 : 0;
    }
    if (argc > 3 && !strcmp(argv[2], "--scale")) {
        scale = atoi(argv[3]);
        first = 4;
        if (scale < 2 || scale > 26) {
            fprintf(stderr, "--scale %s: expected 2 to 26\n", argv[3]);
            return 2;
        }
    }
    const char *kind = argv[1];
    int n = 1 << scale, side = 1 << (scale / 2), long_edges = scale > 12 ? 1 << (scale - 12) : 1;
    wb_rng rng = wb_rng_for("sssp bench"), road_rng = wb_rng_for("sssp road stand-in");
    graph g;
    char error[512];
    if (!strcmp(kind, "grid")) {
        g = graph_grid(side, n / side, long_edges, 1000, &rng);
    } else if (!strcmp(kind, "rmat")) {   /* after the grid, as in the bench's default run */
        graph grid = graph_grid(side, n / side, long_edges, 1000, &rng);
        graph_free(&grid);
        g = graph_rmat(scale, 16 * n, 1000, &rng);
    } else if (!strcmp(kind, "road")) {
        g = graph_road_like(264346, 733846, 1000, &road_rng);
    } else if (!graph_read_dimacs(kind, &g, error, sizeof error)) {
        fprintf(stderr, "%s\n", error);
        return 1;
    }
    int *expected = ints(g.n), *dist = ints(g.n);
    dijkstra(&g, 0, expected);
    long long reached = 0, reached_edges = 0, farthest = 0;
    double weights = 0.0;
    for (int e = 0; e < g.m; e++)
        weights += g.weight[e];
    for (int v = 0; v < g.n; v++) {
        if (expected[v] == SSSP_UNREACHABLE)
            continue;
        reached++;
        reached_edges += g.row_start[v + 1] - g.row_start[v];
        farthest = expected[v] > farthest ? expected[v] : farthest;
    }
    printf("%s: %d nodes, %d edges, mean weight %.1f, mean degree %.2f; from node 1: %lld "
           "nodes reached (%lld out-edges), farthest at %lld; the rule's delta %d\n",
           kind, g.n, g.m, g.m ? weights / g.m : 0.0, (double)g.m / g.n, reached, reached_edges,
           farthest, graph_suggest_delta(&g));
    int status = 0;
    for (int a = first; a < argc; a++) {
        bool worklist = !strcmp(argv[a], "worklist");
        long long delta = worklist ? 0 : !strcmp(argv[a], "rule") ? graph_suggest_delta(&g)
                                                                  : atoll(argv[a]);
        if (!worklist && delta < 1) {
            fprintf(stderr, "%s: expected worklist, rule or a delta >= 1\n", argv[a]);
            return 2;
        }
        replay r = run(&g, 0, delta, dist);
        bool right = !memcmp(dist, expected, sizeof(int) * (size_t)g.n);
        status |= !right;
        char name[64];
        snprintf(name, sizeof name, worklist ? "stage 2" : "near-far, delta %lld", delta);
        printf("%s: %lld phases (%lld empty), %lld rounds with work, %lld edges relaxed "
               "(%.2f per reached edge), near list %.0f on average (largest %lld); old host "
               "loop %lld launches, %lld looks; given loop %lld rounds (+ up to 63), %lld "
               "looks; distances %s\n",
               name, r.phases, r.empty_phases, r.rounds, r.edges,
               reached_edges ? (double)r.edges / reached_edges : 0.0,
               r.rounds ? (double)r.list_sum / r.rounds : 0.0, r.list_max, r.old_launches,
               r.old_looks, r.rounds + r.phases, (r.rounds + r.phases + 63) / 64,
               right ? "right" : "WRONG");
    }
    free(expected);
    free(dist);
    graph_free(&g);
    return status;
}
