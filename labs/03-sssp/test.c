/*
 * Lab 03 tests. Each stage's distances must equal CPU Dijkstra's exactly on
 *  - small hand-made graphs (single node, path, star, disconnected, zero-weight
 *    cycles, self-loops, parallel edges), the shipped road excerpt, and seeded
 *    grid, uniform, R-MAT and 0/1-weight graphs;
 *  - two adversarial layered graphs, where the work of a correct run is known
 *    exactly: a fan-in graph (hundreds of threads improving the same nodes in
 *    one round) and random trees with hubs, heavy and zero-weight edges and an
 *    unreachable part;
 * and each run's rounds and edges_relaxed must fit what a correct run does
 * (exactly, where the graph allows). Every buffer is guarded (dist, the graph,
 * the worklists), and a trap lies past the last node. Then the argument checks
 * of the given code, and a timing table. Which check catches which mistake:
 * handouts/03-sssp.md, "Classic mistakes".
 */
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "wb_test.h"

WB_GPU_SUITE(sssp, .timeout = 60);

/* A near-far bucket width above every distance of the graphs below: stage 3
 * then keeps every node on the near list and does exactly stage 2's work. */
#define ALL_NEAR (1 << 30)

/* ------------------------------------------------- what a correct run does */

typedef struct {
    int *dist;                  /* Dijkstra's distances */
    int max_dist;               /* the largest finite one */
    int hops;                   /* the most edges on a shortest path (the fewest-edge one) */
    long long reached_edges;    /* out-edges of the nodes the source reaches */
    /* Every edge between reached nodes goes from BFS level l to level l + 1
     * (self-loops aside): each reached node is then improved in one round
     * only, so a worklist run processes it exactly once. */
    bool layered;
    /* Layered, and each reached node's in-edges from reached nodes all come
     * from one node: near-far too processes each node once, whatever delta. */
    bool one_parent;
    /* The lightest out-edge of a reached node (self-loops aside); 0 when
     * none. Near-far with delta <= lightest is Dijkstra by buckets: no node
     * of a bucket can improve another of the same bucket, so each reached
     * node is settled before its phase and processed exactly once. */
    int lightest;
} expectation;

static expectation expect(const graph *g, int source)
{
    expectation e = {malloc(sizeof(int) * (size_t)g->n), 0, 0, 0, true, true, 0};
    int *level = malloc(sizeof(int) * (size_t)g->n), *hop = malloc(sizeof(int) * (size_t)g->n),
        *parent = malloc(sizeof(int) * (size_t)g->n), *queue = malloc(sizeof(int) * (size_t)g->n);
    cr_assert(e.dist && level && hop && parent && queue, "out of host memory");
    dijkstra(g, source, e.dist);
    /* Two breadth-first searches: over every edge (BFS levels), and over the
     * edges that lie on a shortest path (hops of the fewest-edge ones). */
    for (int pass = 0; pass < 2; pass++) {
        int *depth = pass == 0 ? level : hop, head = 0, tail = 0;
        for (int v = 0; v < g->n; v++)
            depth[v] = -1;
        depth[source] = 0;
        queue[tail++] = source;
        while (head < tail) {
            int u = queue[head++];
            for (int i = g->row_start[u]; i < g->row_start[u + 1]; i++) {
                int v = g->adj[i];
                bool tight = (long long)e.dist[u] + g->weight[i] == e.dist[v];
                if (depth[v] < 0 && (pass == 0 || tight)) {
                    depth[v] = depth[u] + 1;
                    queue[tail++] = v;
                }
            }
        }
    }
    for (int v = 0; v < g->n; v++)
        parent[v] = -1;
    for (int u = 0; u < g->n; u++) {
        if (e.dist[u] == SSSP_UNREACHABLE)
            continue;
        e.max_dist = e.dist[u] > e.max_dist ? e.dist[u] : e.max_dist;
        e.hops = hop[u] > e.hops ? hop[u] : e.hops;
        e.reached_edges += g->row_start[u + 1] - g->row_start[u];
        for (int i = g->row_start[u]; i < g->row_start[u + 1]; i++) {
            int v = g->adj[i];
            if (v == u)
                continue;
            if (e.lightest == 0 || g->weight[i] < e.lightest)
                e.lightest = g->weight[i];
            e.layered = e.layered && level[v] == level[u] + 1;
            e.one_parent = e.one_parent && (parent[v] < 0 || parent[v] == u);
            parent[v] = u;
        }
    }
    e.one_parent = e.one_parent && e.layered;
    free(level);
    free(hop);
    free(parent);
    free(queue);
    return e;
}

/* --------------------------------------------------- the GPU side, guarded */

/* Edges of the trap: a node n, one past the last, that correct code never
 * looks at. */
#define TRAP_EDGES 64

typedef struct {
    sssp_graph g;       /* g.row_start points one int into row_start_block */
    int *row_start_block;
    int *dist;
    sssp_work work;
} device_side;

static int *to_guarded(const int *host, size_t count)
{
    int *device = wb_guarded_malloc(sizeof(int) * count);
    if (count)
        CUDA_CHECK(cudaMemcpy(device, host, sizeof(int) * count, cudaMemcpyHostToDevice));
    return device;
}

/* g on the GPU, every array in guard zones (0xFF: -1 as ints), with a trap
 * past its end: row_start[n + 1] and TRAP_EDGES more edges give node n
 * zero-weight edges to nodes spread over the graph. A thread that takes n
 * for a node (a bound u <= n, a missing u < n) reads dist[n], which is
 * dist's guard zone (-1, not SSSP_UNREACHABLE), and lowers those nodes to
 * -1. Before the graph, row_start[-1] = 0 gives a node -1 no edges: an
 * unused list slot holds -1 (the guard fill), and a kernel that takes it
 * off the list (a bound i <= n) shows in queued's guard zone instead of
 * relaxing a weight -1 forever. The worklists and flags are guarded too
 * (sssp_work_new's twin, with guard zones): a list that outgrows its n
 * slots writes into a guard zone. sssp_work_new gives a list 2n slots,
 * for the sweep's rare second push of a node (given.cuh); here n are
 * kept, so that a push without de-duplication, which puts a node on a
 * list once per improvement, overflows them. */
static device_side device_side_new(const graph *g, int delta)
{
    int n = g->n, m = g->m;
    int *row_start = malloc(sizeof(int) * ((size_t)n + 3));
    int *adj = malloc(sizeof(int) * ((size_t)m + TRAP_EDGES));
    int *weight = malloc(sizeof(int) * ((size_t)m + TRAP_EDGES));
    cr_assert(row_start && adj && weight, "out of host memory");
    row_start[0] = 0;
    memcpy(row_start + 1, g->row_start, sizeof(int) * ((size_t)n + 1));
    row_start[n + 2] = m + TRAP_EDGES;
    memcpy(adj, g->adj, sizeof(int) * (size_t)m);
    memcpy(weight, g->weight, sizeof(int) * (size_t)m);
    for (int i = 0; i < TRAP_EDGES; i++) {
        adj[m + i] = (int)((long long)i * n / TRAP_EDGES);
        weight[m + i] = 0;
    }
    device_side d = {0};
    d.row_start_block = to_guarded(row_start, (size_t)n + 3);
    d.g = (sssp_graph){n, m, d.row_start_block + 1, to_guarded(adj, (size_t)m + TRAP_EDGES),
                       to_guarded(weight, (size_t)m + TRAP_EDGES)};
    free(row_start);
    free(adj);
    free(weight);
    d.dist = wb_guarded_malloc(sizeof(int) * (size_t)n);
    wb_poison_ints(d.dist, (size_t)n);
    size_t bytes = sizeof(int) * (size_t)n;
    d.work.n = n;
    d.work.delta = delta;
    d.work.block = SSSP_BLOCK;
    for (int i = 0; i < 2; i++) {
        d.work.frontier[i] = wb_guarded_malloc(bytes);
        d.work.far[i] = wb_guarded_malloc(bytes);
    }
    d.work.queued = wb_guarded_malloc(bytes);
    d.work.far_queued = wb_guarded_malloc(bytes);
    d.work.counts = wb_guarded_malloc(SSSP_COUNTS * sizeof(int));
    d.work.edges = wb_guarded_malloc(sizeof(unsigned long long));
    return d;
}

#define LIST_NOTE "(n slots: a longer list holds a node twice: push without the queued check?)"

static void check_guards(const device_side *d, const char *what)
{
    const struct {
        const void *buffer;
        const char *name;
    } buffers[] = {
        {d->dist, "dist"},
        {d->work.queued, "queued"},
        {d->work.far_queued, "far_queued"},
        {d->work.frontier[0], "worklist frontier[0] " LIST_NOTE},
        {d->work.frontier[1], "worklist frontier[1] " LIST_NOTE},
        {d->work.far[0], "far pile far[0] " LIST_NOTE},
        {d->work.far[1], "far pile far[1] " LIST_NOTE},
        {d->work.counts, "counts"},
        {d->work.edges, "the edge counter"},
    };
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++) {
        char label[512];
        snprintf(label, sizeof label, "%s: %s", what, buffers[i].name);
        wb_guarded_check(buffers[i].buffer, label);
    }
}

static void device_side_free(device_side *d)
{
    void *buffers[] = {d->row_start_block, (void *)d->g.adj, (void *)d->g.weight, d->dist,
                       d->work.frontier[0], d->work.frontier[1], d->work.far[0], d->work.far[1],
                       d->work.queued, d->work.far_queued, d->work.counts, d->work.edges};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        wb_guarded_free(buffers[i]);
}

/* ------------------------------------------------------------------ checks */

/* Whether only the source and its out-neighbours came back reached while
 * the source reaches more: what a run leaves that never processes the
 * nodes its first round lowered. */
static bool reached_one_hop_only(const int *got, const int *expected, const graph *g,
                                 int source)
{
    char *neighbour = calloc((size_t)g->n, 1);
    cr_assert(neighbour, "out of host memory");
    neighbour[source] = 1;
    for (int e = g->row_start[source]; e < g->row_start[source + 1]; e++)
        neighbour[g->adj[e]] = 1;
    /* some_hop: a run that reached no neighbour either (nothing ran) is
     * another mistake. */
    bool only = true, more = false, some_hop = false;
    for (int v = 0; v < g->n; v++) {
        only = only && (neighbour[v] || got[v] == SSSP_UNREACHABLE);
        more = more || (!neighbour[v] && expected[v] != SSSP_UNREACHABLE);
        some_hop = some_hop || (neighbour[v] && v != source && got[v] != SSSP_UNREACHABLE);
    }
    free(neighbour);
    return only && more && some_hop;
}

/* Distances against Dijkstra's, with the likely mistake named from the
 * pattern of the wrong ones. g and source: the graph run on, or NULL where
 * the caller checks a run of its own. */
static void check_distances(const int *got, const int *expected, int n, const graph *g,
                            int source, const char *what)
{
    char report[1024];
    if (wb_compare_ints(got, expected, (size_t)n, report, sizeof report) == 0)
        return;
    if (g && reached_one_hop_only(got, expected, g, source))
        cr_assert_fail("%s: %s\n  only the source and its out-neighbours were reached: the "
                       "nodes the first round lowered were never processed. Does relax push v, "
                       "the node it lowered (not u, the node being processed)? Or the round "
                       "did not set *changed (stages 0 and 1: the host stopped after it), or "
                       "(near-far) a node improved to alt >= threshold was pushed nowhere (it "
                       "goes on the far pile) " WB_SEED_HINT, what, report, wb_seed());
    int negative = 0, too_large = 0, too_small = 0;
    for (int v = 0; v < n; v++) {
        if (got[v] == expected[v] || got[v] == WB_POISON_INT)
            continue;
        if (got[v] < 0)
            negative++;
        else if (got[v] > expected[v])
            too_large++;
        else
            too_small++;
    }
    const char *hint =
        negative ? "\n  negative distances: node n, one past the last node, was relaxed (dist[n] "
                   "lies in the guard zone and reads -1): a bound u <= n instead of u < n, or no "
                   "bounds check; or an unreachable node was relaxed (its distance "
                   "SSSP_UNREACHABLE is INT_MAX, and INT_MAX + w wraps around to a negative "
                   "number: skip u when dist[u] == SSSP_UNREACHABLE)"
        : too_large ? "\n  distances too large: an improvement never arrived: two threads lowered "
                      "the same dist[v] and the larger value won (a plain dist[v] = alt instead "
                      "of atomicMin), a node lowered while it was taken off the list was not "
                      "pushed again (pop: clear queued first, then read dist), no thread "
                      "relaxed some node (an index without blockIdx.x * blockDim.x), a round "
                      "that improved a distance did not set *changed (stages 0 and 1: the host "
                      "stopped early), or a node improved to alt >= threshold was pushed nowhere "
                      "(near-far: it goes on the far pile)"
        : too_small ? "\n  distances too small: a node was relaxed through an edge that is not its "
                      "own (a loop bound e <= last), or with another node's distance"
                    : "";
    cr_assert_fail("%s: %s%s " WB_SEED_HINT, what, report, hint, wb_seed());
}

#define DUPLICATE_CAUSES                                                                       \
    "more: a node was processed twice (a duplicate on a list: push without the queued check, " \
    "or with a plain read and write of queued; a loop stepping by blockDim.x instead of "      \
    "gridDim.x * blockDim.x; a list index i <= n); fewer: a lost count (*relaxed = instead " \
    "of +=, only the edges that improved counted, or one count per node instead of its "      \
    "out-edges) or a node never processed"

/* How many buckets [b * delta, (b + 1) * delta) the reached nodes'
 * distances fall into. */
static int occupied_buckets(const int *dist, int n, int delta)
{
    int buckets = 0, largest = 0;
    for (int v = 0; v < n; v++)
        if (dist[v] != SSSP_UNREACHABLE && dist[v] / delta + 1 > largest)
            largest = dist[v] / delta + 1;
    char *seen = calloc((size_t)largest + 1, 1);
    cr_assert(seen, "out of host memory");
    for (int v = 0; v < n; v++) {
        if (dist[v] != SSSP_UNREACHABLE && !seen[dist[v] / delta]) {
            seen[dist[v] / delta] = 1;
            buckets++;
        }
    }
    free(seen);
    return buckets;
}

/* rounds and edges_relaxed against what a correct run of the stage does on
 * this graph: exactly, where the graph fixes it, else bounds. */
static void check_stats(int stage, const graph *g, const expectation *e, int delta, int rounds,
                        long long edges, const char *what)
{
    cr_assert(rounds >= 1, "%s: stats.rounds = %d; every run has at least one round " WB_SEED_HINT,
              what, rounds, wb_seed());
    if (stage <= 1) {
        cr_assert(edges == (long long)rounds * g->m,
                  "%s: edges_relaxed = %lld, but each of the %d rounds relaxes all %d edges "
                  "(%lld) " WB_SEED_HINT,
                  what, edges, rounds, g->m, (long long)rounds * g->m, wb_seed());
    }
    /* After round r (stage 1) or worklist round r - 1 (stage 2), every node
     * whose shortest path has at most r edges is settled: one more round
     * finds nothing to do. Only lost or late improvements take longer. */
    if (stage == 1 || stage == 2) {
        cr_assert(rounds <= e->hops + 1,
                  "%s: %d rounds, but the shortest paths here have at most %d edges, so a correct "
                  "stage %d is done after %d rounds: improvements were lost and repaired by later "
                  "rounds. Is dist[v] lowered with atomicMin (not dist[v] = alt), and the node "
                  "counted as improved only when atomicMin returned a larger value? " WB_SEED_HINT,
                  what, rounds, e->hops, stage, e->hops + 1, wb_seed());
    }
    if (stage >= 2) {
        /* A count of one per node taken off a list (stage 2's *relaxed += 1)
         * comes out as the number of reached nodes where each is taken off
         * once: named before the general causes. */
        long long reached_nodes = 0;
        for (int v = 0; v < g->n; v++)
            reached_nodes += e->dist[v] != SSSP_UNREACHABLE;
        const char *per_node = edges == reached_nodes && edges != e->reached_edges ?
            "It equals the number of nodes the source reaches, as one count per node taken "
            "off the list leaves (*relaxed counts the node's out-edges, last - first). " : "";
        bool exact = e->layered && (stage == 2 || delta > e->max_dist || e->one_parent);
        cr_assert(!exact || edges == e->reached_edges,
                  "%s: edges_relaxed = %lld; here each node the source reaches is improved in one "
                  "round only, so a correct run takes each off a list once and relaxes exactly "
                  "their %lld out-edges. %s" DUPLICATE_CAUSES " " WB_SEED_HINT,
                  what, edges, e->reached_edges, per_node, wb_seed());
        bool by_buckets = stage == 3 && delta >= 1 && delta <= e->lightest;
        cr_assert(!by_buckets || edges == e->reached_edges,
                  "%s: edges_relaxed = %lld, but with delta = %d no wider than the lightest edge "
                  "(%d), near-far settles every node before its bucket's phase, so a correct "
                  "run takes each reached node off the near list once and relaxes exactly their "
                  "%lld out-edges. Does relax push a node near only when alt < threshold (the "
                  "rest far), and does the split move only d < the new threshold, dropping d < "
                  "the old one? " DUPLICATE_CAUSES " " WB_SEED_HINT,
                  what, edges, delta, e->lightest, e->reached_edges, wb_seed());
        cr_assert(edges >= e->reached_edges,
                  "%s: edges_relaxed = %lld, but the %lld out-edges of the nodes the source "
                  "reaches are each relaxed at least once: %sa count was lost (*relaxed = "
                  "instead of +=, only the edges that improved counted, or one count per node "
                  "instead of its out-edges) " WB_SEED_HINT,
                  what, edges, e->reached_edges, per_node, wb_seed());
        /* Near-far takes a node off the near list only in the phase of its
         * own bucket: pushed near, its distance was below the threshold
         * then, and distances only go down. So each bucket that holds a
         * reached node has a phase with at least one round of work. */
        int buckets = stage == 3 && delta > 0 ? occupied_buckets(e->dist, g->n, delta) : 0;
        cr_assert(rounds >= buckets,
                  "%s: %d rounds with work, but the distances of the reached nodes fall into %d "
                  "buckets of width delta = %d, and near-far works through each bucket in its own "
                  "phase, one round at least: does relax push to the far list when alt >= the "
                  "threshold, and does the split move a far node to near only when d < the new "
                  "threshold (dropping those below the old one)? " WB_SEED_HINT,
                  what, rounds, buckets, delta, wb_seed());
        /* With every node near, near-far's rounds are stage 2's: one per
         * BFS level. */
        bool exact_rounds = e->layered && (stage == 2 || delta > e->max_dist);
        cr_assert(!exact_rounds || rounds == e->hops + 1,
                  "%s: %d rounds with work, but here a correct run takes exactly %d, one per "
                  "level of the graph: are the rounds counted once each (begin_round), and is "
                  "every node on the list of the round after its improvement? " WB_SEED_HINT,
                  what, rounds, e->hops + 1, wb_seed());
    }
}

/* After a worklist run every node pushed has been taken off again. */
static void check_flags_cleared(const int *device_flags, int n, const char *name, const char *what)
{
    char label[512];
    int *flags = malloc(sizeof(int) * (size_t)n);
    cr_assert(flags, "out of host memory");
    snprintf(label, sizeof label, "%s: %s after the run", what, name);
    wb_fetch(flags, device_flags, sizeof(int) * (size_t)n, label);
    int set = 0, first = -1;
    for (int v = 0; v < n; v++) {
        if (flags[v] != 0 && set++ == 0)
            first = v;
    }
    free(flags);
    cr_assert(set == 0,
              "%s: %s[v] is still set for %d node(s) after the run (first: node %d), but every "
              "node pushed was taken off a list again: does pop clear queued[u] (and the far "
              "split far_queued[v])? " WB_SEED_HINT,
              what, name, set, first, wb_seed());
}

/* Runs one stage on g from source: guard zones, distances, stats. delta:
 * stage 3's bucket width. */
static void check_stage(int stage, const graph *g, int source, const char *name, int delta)
{
    char what[200];
    snprintf(what, sizeof what, "stage %d on %s (%d nodes, %d edges, source %d)", stage, name,
             g->n, g->m, source);
    expectation e = expect(g, source);
    device_side d = device_side_new(g, delta);
    sssp_stats stats = {0};
    sssp_stages[stage](d.g, source, d.dist, &d.work, &stats);
    CUDA_CHECK(cudaDeviceSynchronize());

    /* Guard zones first: an index out of range is the cause of whatever
     * else goes wrong. */
    check_guards(&d, what);
    int *got = malloc(sizeof(int) * (size_t)g->n);
    cr_assert(got, "out of host memory");
    wb_fetch(got, d.dist, sizeof(int) * (size_t)g->n, what);
    check_distances(got, e.dist, g->n, g, source, what);
    char label[300];
    snprintf(label, sizeof label, "%s: rounds", what);
    int rounds = wb_observe_int(label, stats.rounds);
    snprintf(label, sizeof label, "%s: edges_relaxed", what);
    long long edges = wb_observe_i64(label, stats.edges_relaxed);
    check_stats(stage, g, &e, delta, rounds, edges, what);
    if (stage >= 2) {
        check_flags_cleared(d.work.queued, g->n, "queued", what);
        check_flags_cleared(d.work.far_queued, g->n, "far_queued", what);
    }
    device_side_free(&d);
    free(e.dist);
    free(got);
}

static void check_suggested(int stage, const graph *g, int source, const char *name)
{
    check_stage(stage, g, source, name, graph_suggest_delta(g));
}

/* ------------------------------------------------------------------ graphs */

/* An edge list that grows; graph_from_edges keeps each node's edges in the
 * order they were added. */
typedef struct {
    int count, capacity;
    int *src, *dst, *w;
} edge_list;

static void add_edge(edge_list *l, int u, int v, int w)
{
    if (l->count == l->capacity) {
        l->capacity = l->capacity ? 2 * l->capacity : 1024;
        l->src = realloc(l->src, sizeof(int) * (size_t)l->capacity);
        l->dst = realloc(l->dst, sizeof(int) * (size_t)l->capacity);
        l->w = realloc(l->w, sizeof(int) * (size_t)l->capacity);
        cr_assert(l->src && l->dst && l->w, "out of host memory");
    }
    l->src[l->count] = u, l->dst[l->count] = v, l->w[l->count] = w;
    l->count++;
}

static graph from_edge_list(int n, edge_list *l)
{
    graph g = graph_from_edges(n, l->count, l->src, l->dst, l->w);
    free(l->src);
    free(l->dst);
    free(l->w);
    return g;
}

static graph from_list(int n, int m, const int (*edges)[3])
{
    edge_list l = {0};
    for (int i = 0; i < m; i++)
        add_edge(&l, edges[i][0], edges[i][1], edges[i][2]);
    return from_edge_list(n, &l);
}

/* Fan-in, in layers: the source 0 -> FAN_X nodes (the last 20 unreachable)
 * -> every one of FAN_T targets -> FAN_Y nodes (two in-edges each) -> FAN_Z
 * nodes (four in-edges each, no out-edges), plus FAN_U unreachable nodes
 * with edges into the layers. In one round up to FAN_X threads lower each
 * target, each a different amount in a random order: a lost update
 * (dist[v] = alt) is all but certain, and without de-duplication each
 * target lands on the next list several times. Weights: 0 to 2000, some 0,
 * some SSSP_MAX_WEIGHT; 1902 nodes, no multiple of a block. */
enum { FAN_X = 300, FAN_T = 64, FAN_Y = 1000, FAN_Z = 500, FAN_U = 37 };

static graph fan_in_graph(wb_rng *rng)
{
    const int x0 = 1, t0 = x0 + FAN_X, y0 = t0 + FAN_T, z0 = y0 + FAN_Y, u0 = z0 + FAN_Z;
    const int n = u0 + FAN_U;
    edge_list l = {0};
    for (int i = 0; i < FAN_X - 20; i++)
        add_edge(&l, 0, x0 + i, i % 5 == 0 ? 0 : wb_rng_int(rng, 1, 100));
    for (int i = 0; i < FAN_X; i++)
        for (int j = 0; j < FAN_T; j++)
            add_edge(&l, x0 + i, t0 + j, (i + j) % 17 == 0 ? SSSP_MAX_WEIGHT : wb_rng_int(rng, 0, 2000));
    for (int q = 0; q < FAN_Y; q++) {
        add_edge(&l, t0 + q % FAN_T, y0 + q, wb_rng_int(rng, 0, 50));
        add_edge(&l, t0 + (q * 7 + 3) % FAN_T, y0 + q, wb_rng_int(rng, 0, 50));
        add_edge(&l, y0 + q, z0 + q % FAN_Z, wb_rng_int(rng, 1, 1000));
        add_edge(&l, y0 + q, z0 + (q * 3 + 1) % FAN_Z, 0);
    }
    for (int r = 0; r < FAN_U; r++) {
        add_edge(&l, u0 + r, t0 + r % FAN_T, 0);
        add_edge(&l, u0 + r, z0 + r, 0);
    }
    return from_edge_list(n, &l);
}

/* A random tree in TREE_NODES nodes, root 0: nodes 1-4 are hubs under the
 * root with about 50 children each (more than a warp), the rest hang under
 * one of the 16 nodes before them (depth about 300). Weights are multiples
 * of 10 up to 150, one in 16 zero, one in 32 heavy (3000 more); with
 * TREE_DELTA 30 many distances equal a near-far threshold exactly. Some
 * nodes have a self-loop or a second edge from their parent; TREE_LOST
 * more nodes, unreachable, have edges into the tree. */
enum { TREE_NODES = 3000, TREE_LOST = 77, TREE_DELTA = 30 };

static graph tree_graph(wb_rng *rng)
{
    edge_list l = {0};
    for (int v = 1; v < TREE_NODES; v++) {
        int parent = v <= 4 ? 0 : v < 200 ? 1 + v % 4 : v - wb_rng_int(rng, 1, 16);
        int r = wb_rng_int(rng, 0, 31);
        int w = r < 2 ? 0 : 10 * wb_rng_int(rng, 0, 15) + (r == 31 ? 3000 : 0);
        add_edge(&l, parent, v, w);
        if (v % 13 == 0)
            add_edge(&l, parent, v, w + 10);
        if (v % 10 == 0)
            add_edge(&l, v, v, v % 20 == 0 ? 0 : 70);
    }
    for (int v = TREE_NODES; v < TREE_NODES + TREE_LOST; v++) {
        add_edge(&l, v, v + 1 < TREE_NODES + TREE_LOST ? v + 1 : TREE_NODES, 5);
        add_edge(&l, v, wb_rng_int(rng, 0, TREE_NODES - 1), 0);
    }
    return from_edge_list(TREE_NODES + TREE_LOST, &l);
}

/* Wider than the grid of a worklist kernel (2048 blocks of 256 threads):
 * the source -> WIDE_MIDS nodes -> WIDE_FAN leaves each -> one sink, so
 * that a thread takes two leaves off one list. No node has more than
 * WIDE_FAN edges: one thread per node stays fast. */
enum { WIDE_MIDS = 1024, WIDE_FAN = 600 };

static graph wide_graph(wb_rng *rng)
{
    const int leaf0 = 1 + WIDE_MIDS, sink = leaf0 + WIDE_MIDS * WIDE_FAN;
    edge_list l = {0};
    for (int i = 0; i < WIDE_MIDS; i++) {
        add_edge(&l, 0, 1 + i, wb_rng_int(rng, 0, 1000));
        for (int j = 0; j < WIDE_FAN; j++)
            add_edge(&l, 1 + i, leaf0 + i * WIDE_FAN + j, wb_rng_int(rng, 0, 1000));
    }
    for (int v = leaf0; v < sink; v++)
        add_edge(&l, v, sink, wb_rng_int(rng, 0, 1000));
    return from_edge_list(sink + 1, &l);
}

/* A star whose leaves all wait on the far pile at once: more of them than a
 * worklist kernel's grid has threads, so that the far split's grid-stride
 * loop takes a second far node in each thread. */
enum { STAR_LEAVES = 2048 * 256 + 70001 };

static graph wide_star(wb_rng *rng)
{
    edge_list l = {0};
    for (int leaf = 1; leaf <= STAR_LEAVES; leaf++)
        add_edge(&l, 0, leaf, wb_rng_int(rng, 1, 1000));
    return from_edge_list(STAR_LEAVES + 1, &l);
}

/* Hubs among many small nodes, for near-far's load balance: the source ->
 * HUB_LEVEL nodes, of which HUB_WARPS have HUB_WARP_EDGES leaves each (more
 * than a warp's 32, fewer than the 1024 that a block expands: given.cuh,
 * BLOCK_HUB_EDGES) and one has HUB_BLOCK_EDGES (a block's). The level is
 * longer than half a worklist grid's threads (37,001 nodes: 145 blocks of
 * 256), so every lane holds a node of its own (lanes_per_node gives 1) and a
 * warp expands hubs whose distances differ from its other lanes'. The
 * source's 20,000 edges, alone on its list, are shared by 32 lanes: 625
 * each, a warp's hub per lane. Layered, one parent per node: exact rounds
 * and edges at any delta. */
enum { HUB_LEVEL = 20000, HUB_WARPS = 20, HUB_WARP_EDGES = 600, HUB_BLOCK_EDGES = 5000 };

static graph hub_graph(wb_rng *rng)
{
    edge_list l = {0};
    int leaf = 1 + HUB_LEVEL;
    for (int i = 0; i < HUB_LEVEL; i++)
        add_edge(&l, 0, 1 + i, wb_rng_int(rng, 1, 1000));
    for (int h = 0; h <= HUB_WARPS; h++) {
        int hub = 1 + h * (HUB_LEVEL / (HUB_WARPS + 1)) + wb_rng_int(rng, 0, 99);
        int edges = h == HUB_WARPS ? HUB_BLOCK_EDGES : HUB_WARP_EDGES;
        for (int j = 0; j < edges; j++)
            add_edge(&l, hub, leaf++, wb_rng_int(rng, 0, 1000));
    }
    return from_edge_list(leaf, &l);
}

/* ------------------------------------------------------------------- tests */

static void check_small_graphs(int stage)
{
    graph single = from_list(1, 0, NULL);
    check_suggested(stage, &single, 0, "a single node");
    graph_free(&single);

    int path_edges[63][3];
    for (int i = 0; i < 63; i++)
        path_edges[i][0] = i, path_edges[i][1] = i + 1, path_edges[i][2] = 1 + i % 5;
    graph path = from_list(64, 63, path_edges);
    check_suggested(stage, &path, 0, "a path");
    check_suggested(stage, &path, 40, "a path, source in the middle");
    graph_free(&path);

    int star_edges[2000][3];
    for (int i = 0; i < 1000; i++) {
        int leaf = 1 + i;
        star_edges[2 * i][0] = 0, star_edges[2 * i][1] = leaf, star_edges[2 * i][2] = 1 + i % 7;
        star_edges[2 * i + 1][0] = leaf, star_edges[2 * i + 1][1] = 0, star_edges[2 * i + 1][2] = 1;
    }
    graph star = from_list(1001, 2000, star_edges);
    check_suggested(stage, &star, 0, "a star, from the hub");
    check_suggested(stage, &star, 17, "a star, from a leaf");
    graph_free(&star);

    /* Two triangles with no edge between them, parallel edges, a self-loop. */
    static const int parts[][3] = {{0, 1, 4}, {1, 2, 4}, {0, 2, 9}, {0, 2, 7}, {2, 0, 1},
                                   {3, 4, 1}, {4, 5, 1}, {5, 3, 1}, {4, 4, 0}};
    graph disconnected = from_list(6, 9, parts);
    check_suggested(stage, &disconnected, 0, "two disconnected triangles");
    graph_free(&disconnected);

    graph specials;
    char error[512];
    cr_assert(graph_read_dimacs(SSSP_DATA "/specials.gr", &specials, error, sizeof error), "%s",
              error);
    check_suggested(stage, &specials, 0, "zero-weight cycle, self-loop, parallel edges");
    graph_free(&specials);
}

static void check_road_excerpt(int stage)
{
    graph road;
    char error[512];
    cr_assert(graph_read_dimacs(SSSP_DATA "/road-16x16.gr.gz", &road, error, sizeof error), "%s",
              error);
    check_suggested(stage, &road, 0, "the road excerpt road-16x16.gr.gz");
    check_suggested(stage, &road, 200, "the road excerpt road-16x16.gr.gz");
    graph_free(&road);
}

static void check_generated(int stage)
{
    wb_rng rng = wb_rng_for("sssp generated graphs");
    graph grid = graph_grid(300, 200, 20, 1000, &rng);
    check_suggested(stage, &grid, wb_rng_int(&rng, 0, grid.n - 1), "a 300 x 200 road-like grid");
    graph_free(&grid);
    graph uniform = graph_uniform(50000, 400000, 100, &rng);
    check_suggested(stage, &uniform, 0, "a uniform random graph");
    graph_free(&uniform);
    graph rmat = graph_rmat(16, 1 << 20, 100, &rng);
    check_suggested(stage, &rmat, 0, "an R-MAT graph");
    graph_free(&rmat);
    /* Weights 0 and 1 only: many ties and zero-weight cycles. */
    graph ties = graph_uniform(20000, 100000, 1, &rng);
    for (int e = 0; e < ties.m; e++)
        ties.weight[e] = (e * 7) % 3 == 0 ? 0 : 1;
    check_suggested(stage, &ties, 5, "a uniform graph with weights 0 and 1");
    graph_free(&ties);
    if (stage == 3) {
        /* Buckets as wide as the lightest edge: exact counts (check_stats),
         * on a graph with many paths to each node. */
        graph narrow = graph_grid(64, 48, 8, 60, &rng);
        expectation e = expect(&narrow, 0);
        check_stage(stage, &narrow, 0, "a 64 x 48 grid, delta = its lightest edge", e.lightest);
        free(e.dist);
        graph_free(&narrow);
    }
}

/* Three runs: a race that a run escapes shows in another. Stage 3 runs
 * with every node near (exact counts), then with a small delta (the far
 * pile under fan-in). Then the wide graph. */
static void check_fan_in(int stage)
{
    wb_rng rng = wb_rng_for("sssp fan-in graph");
    graph g = fan_in_graph(&rng);
    for (int run = 0; run < 3; run++)
        check_stage(stage, &g, 0, "the fan-in graph", ALL_NEAR);
    if (stage == 3)
        check_stage(stage, &g, 0, "the fan-in graph, delta 10", 10);
    graph_free(&g);
    graph wide = wide_graph(&rng);
    check_stage(stage, &wide, 0, "a graph wider than a worklist grid", ALL_NEAR);
    graph_free(&wide);
    if (stage == 3) {
        graph star = wide_star(&rng);
        check_stage(stage, &star, 0, "a star whose far pile is wider than a worklist grid", 10);
        graph_free(&star);
    }
}

static void check_trees(int stage)
{
    wb_rng rng = wb_rng_for("sssp trees");
    for (int i = 0; i < 2; i++) {
        graph g = tree_graph(&rng);
        check_stage(stage, &g, 0, "a random tree", TREE_DELTA);
        check_stage(stage, &g, 3, "a random tree, from a hub", TREE_DELTA);
        graph_free(&g);
    }
}

/* Near-far with a stale far entry: s -> v costs 100, so v waits on the far
 * list; then s -> u -> v costs 2, so v is pushed near and processed in the
 * first phase. When the far list is split, v (distance 2, below the old
 * threshold) must be dropped, not processed again. Each reached node is
 * then processed once: 4 rounds with work, 4 edges relaxed. */
static void check_stale_far_entry(void)
{
    static const int edges[][3] = {{0, 1, 100}, {0, 2, 1}, {2, 1, 1}, {1, 3, 1}};
    graph host = from_list(4, 4, edges);
    device_side d = device_side_new(&host, 10);
    sssp_stats stats = {0};
    const char *what = "stage 3 on s -> v (100), s -> u -> v (1 + 1), v -> x (1), delta 10";
    sssp_stage3(d.g, 0, d.dist, &d.work, &stats);
    CUDA_CHECK(cudaDeviceSynchronize());
    int got[4], expected[4] = {0, 2, 1, 3};
    wb_fetch(got, d.dist, sizeof got, what);
    check_distances(got, expected, 4, NULL, 0, what);
    char label[300];
    snprintf(label, sizeof label, "%s: edges_relaxed", what);
    long long relaxed = wb_observe_i64(label, stats.edges_relaxed);
    snprintf(label, sizeof label, "%s: rounds", what);
    int rounds = wb_observe_int(label, stats.rounds);
    /* Everything pushed near (stage 2's order) relaxes v's edge twice in
     * the first phase, at 100 and at 2, in 3 or 4 rounds; a stale entry
     * taken near again relaxes it in a fifth round. */
    const char *all_near = relaxed == 5 && rounds < 5 ?
        "v was processed at 100 too, in the first phase: every improvement went to the near "
        "list. Relax pushes near only when alt, the new distance, is below the threshold (du "
        "always is), the rest to the far pile. Or " : "";
    cr_assert(relaxed == 4 && rounds == 4,
              "%s: %lld edges relaxed in %d rounds with work, expected 4 in 4: %sv sits on the "
              "far list with distance 100 and is settled at 2 through u in the first phase; when "
              "the far list is split, v is below the old threshold and must be dropped (d < "
              "old_threshold: continue), not taken to the near list again " WB_SEED_HINT,
              what, relaxed, rounds, all_near, wb_seed());
    device_side_free(&d);
    graph_free(&host);
}

Test(sssp, stage3_drops_settled_far_nodes) { check_stale_far_entry(); }

/* A hundred phases in a row with nothing near: s -> a (1) -> b (1000) ->
 * c (5), and s -> c (2000), with delta 10. After a, the GPU moves the
 * threshold 99 times past an empty bucket before b is near (the far piles'
 * lengths rotate through their three slots 33 times); c waits far at 2000,
 * is lowered to 1006 below the threshold of 1010 and processed near, and its
 * stale far entry is dropped. 4 rounds with work, 4 edges relaxed. */
Test(sssp, stage3_empty_phases)
{
    static const int edges[][3] = {{0, 1, 1}, {1, 2, 1000}, {2, 3, 5}, {0, 3, 2000}};
    graph host = from_list(4, 4, edges);
    device_side d = device_side_new(&host, 10);
    sssp_stats stats = {0};
    const char *what = "stage 3 on s -> a (1) -> b (1000) -> c (5), s -> c (2000), delta 10";
    sssp_stage3(d.g, 0, d.dist, &d.work, &stats);
    CUDA_CHECK(cudaDeviceSynchronize());
    check_guards(&d, what);
    int got[4], expected[4] = {0, 1, 1001, 1006};
    wb_fetch(got, d.dist, sizeof got, what);
    check_distances(got, expected, 4, NULL, 0, what);
    char label[300];
    snprintf(label, sizeof label, "%s: edges_relaxed", what);
    long long relaxed = wb_observe_i64(label, stats.edges_relaxed);
    snprintf(label, sizeof label, "%s: rounds", what);
    int rounds = wb_observe_int(label, stats.rounds);
    cr_assert(relaxed == 4 && rounds == 4,
              "%s: %lld edges relaxed in %d rounds with work, expected 4 in 4: each node is "
              "near once (b after 99 empty buckets, c at 1006 in b's bucket), and c's stale far "
              "entry (2000) is dropped at the next split " WB_SEED_HINT,
              what, relaxed, rounds, wb_seed());
    check_flags_cleared(d.work.queued, 4, "queued", what);
    check_flags_cleared(d.work.far_queued, 4, "far_queued", what);
    device_side_free(&d);
    graph_free(&host);
}

/* Hubs next to small nodes: a hub's leaves get the hub's distance plus
 * their weight only when the warp (or block) that expands it uses the hub's
 * distance, not each lane's own (__shfl_sync from the hub's lane). */
Test(sssp, stage3_hubs)
{
    wb_rng rng = wb_rng_for("sssp hubs");
    graph g = hub_graph(&rng);
    check_stage(3, &g, 0, "hubs among 20000 small nodes", ALL_NEAR);
    check_stage(3, &g, 0, "hubs among 20000 small nodes, delta 300", 300);
    graph_free(&g);
}

/* Near-far's warp expansion, observed (given.cuh, sssp_warp_hubs_probe):
 * two lanes of one warp hold a hub of HUB_PROBE_EDGES edges each. Expanded by
 * the whole warp, one hub after the other, all of the first hub's edges are
 * relaxed before any of the second's; walked by each lane alone, as stage 2
 * does, the two lanes step through their hubs side by side and the pushes
 * alternate. The distances are right either way; only the time would show
 * it (a hub of thousands of edges keeps its warp, and the round, waiting). */
enum { HUB_PROBE_EDGES = 160 };

Test(sssp, stage3_warp_expands_hubs)
{
    int *d_order = wb_guarded_malloc(sizeof(int) * 2 * HUB_PROBE_EDGES);
    int order[2 * HUB_PROBE_EDGES], pushes[2 * HUB_PROBE_EDGES] = {0};
    sssp_warp_hubs_probe(HUB_PROBE_EDGES, d_order);
    wb_fetch(order, d_order, sizeof order, "warp hubs probe: the targets in push order");
    wb_guarded_check(d_order, "warp hubs probe: the targets in push order");
    wb_guarded_free(d_order);
    for (int k = 0; k < 2 * HUB_PROBE_EDGES; k++) {
        int edge = order[k] - 2;
        bool target = edge >= 0 && edge < 2 * HUB_PROBE_EDGES;
        int earlier = target ? pushes[edge]++ : 0;
        cr_assert(target && earlier == 0,
                  "relax_edges_stage3 with two lanes holding a hub of %d edges each (the other "
                  "lanes none), every edge improving a target of its own: push %d is node %d, "
                  "but each of the targets 2 .. %d is pushed near exactly once: %s",
                  HUB_PROBE_EDGES, k, order[k], 2 * HUB_PROBE_EDGES + 1,
                  order[k] == -1 ? "fewer were pushed (is every edge of each hub relaxed, from "
                                   "the hub's first to its last, shuffled from its lane, lane l "
                                   "taking first + l, first + l + 32, ...?)"
                  : target       ? "a target pushed twice"
                                 : "a node that no edge leads to");
    }
    int first_hub = (order[0] - 2) / HUB_PROBE_EDGES, first_hubs_edges = 0;
    for (int k = 0; k < HUB_PROBE_EDGES; k++)
        first_hubs_edges += (order[k] - 2) / HUB_PROBE_EDGES == first_hub;
    cr_assert(first_hubs_edges == HUB_PROBE_EDGES,
              "relax_edges_stage3 with two lanes holding a hub of %d edges each: of the first %d "
              "edges relaxed only %d are one hub's, so the two lanes walked their hubs side by "
              "side, each alone, as in stage 2 (on a power-law graph one lane's hub keeps its "
              "warp, and the round, waiting). Expand each share of more than 32 edges with the "
              "whole warp, one hub after the other: __ballot_sync(0xffffffffu, last - first > 32) "
              "for the lanes with a hub, the lowest one's first, last and du to every lane with "
              "__shfl_sync, then edges first + lane, first + lane + 32, ...",
              HUB_PROBE_EDGES, HUB_PROBE_EDGES, first_hubs_edges);
}

#define STAGE_TESTS(N)                                                                \
    Test(sssp, stage##N##_small_graphs) { check_small_graphs(N); }                   \
    Test(sssp, stage##N##_road_excerpt) { check_road_excerpt(N); }                   \
    Test(sssp, stage##N##_generated_graphs, .timeout = 120) { check_generated(N); }  \
    Test(sssp, stage##N##_fan_in) { check_fan_in(N); }                               \
    Test(sssp, stage##N##_trees) { check_trees(N); }

STAGE_TESTS(0)
STAGE_TESTS(1)
STAGE_TESTS(2)
STAGE_TESTS(3)

/* The given start() refuses bad arguments through wb_fail. */
static void expect_error(int stage, sssp_graph g, int source, int *dist, sssp_work *work,
                         const char *case_name, const char *about)
{
    char label[200];
    sssp_stats stats;
    snprintf(label, sizeof label, "stage %d, %s", stage, case_name);
    wb_expect_error(label, about, sssp_stages[stage](g, source, dist, work, &stats));
}

/* What no run on one GPU shows reliably: pop's or push's exchange without
 * its acquire or release (or pop's a plain store), the distance read
 * without volatile, an atomicMin made a plain store where the test's
 * graphs happen not to race (handouts/03-sssp.md, "Classic
 * mistakes"). These tests read kernels.cu (wb_test.h, "source rules") and
 * need no GPU. */
WB_SOURCE_SUITE(sssp_source);

#define ONLY_ATOMIC_MIN "two threads can improve dist[v] at once: only atomicMin keeps the smaller"
#define POP_ORDER                                                                           \
    "clear the flag with an exchange that acquires, then read the distance fresh "        \
    "(volatile or an atomic load): with a plain store or a relaxed exchange an "          \
    "improvement can land between them and be missed by both sides; with the read "      \
    "first (pop's order turned round), an improvement landing between the read and the " \
    "clear finds the flag still set, does not push u, and is lost"
#define PUSH_ORDER                                                                         \
    "set the flag with an exchange that releases (it orders the lowered dist[v] before " \
    "the flag, for pop's acquire), so that v is queued once, and an atomicAdd for its slot"

WB_SOURCE_RULES_TEST(sssp_source, stage1_atomics,
    {"relax_all_stage1", .fresh_accesses = 1, .why = ONLY_ATOMIC_MIN})
WB_SOURCE_RULES_TEST(sssp_source, stage2_memory_order,
    {"pop", .orderings = 1, .fresh_accesses = 2, .fence_before = "dist", .why = POP_ORDER},
    {"push", .orderings = 1, .fresh_accesses = 2, .why = PUSH_ORDER},
    {"relax_out_edges_stage2", .fresh_accesses = 1, .why = ONLY_ATOMIC_MIN})
WB_SOURCE_RULES_TEST(sssp_source, stage3_atomics,
    {"relax_edge_stage3", .fresh_accesses = 1, .why = ONLY_ATOMIC_MIN})

Test(sssp, given_refuses_bad_arguments, .description = "the given start() refuses bad input")
{
    static const int edges[][3] = {{0, 1, 1}, {1, 2, 1}};
    graph host = from_list(3, 2, edges);
    device_side d = device_side_new(&host, 1);
    for (int stage = 0; stage <= 2; stage++) {
        expect_error(stage, d.g, -1, d.dist, &d.work, "source -1 (source must be >= 0)",
                     "out of range");
        expect_error(stage, d.g, 3, d.dist, &d.work, "source n (source must be <= n - 1)",
                     "out of range");
        d.work.n = 2;
        expect_error(stage, d.g, 0, d.dist, &d.work,
                     "work space for n - 1 nodes (work->n must be >= n)", "work space");
        d.work.n = 3;
    }
    /* On the bounds, accepted (an error fails the test): source 0 and n - 1,
     * with work space for exactly n nodes. */
    sssp_stats stats;
    sssp_stage0(d.g, 0, d.dist, &d.work, &stats);
    sssp_stage0(d.g, 2, d.dist, &d.work, &stats);
    CUDA_CHECK(cudaDeviceSynchronize());
    device_side_free(&d);
    graph_free(&host);
}

/* ------------------------------------------------------------------ timing */

/* The graded stage's every timed run must leave the right distances
 * (wb_time_gpu_checked): a stage that did its work only in the untimed
 * warm-up run shows here as wrong distances, not as a fast time (an SSSP
 * time has no floor that would refuse it). */
typedef struct {
    sssp_job job;
    const int *expected;
    int *got;
} checked_run;

static void run_checked(void *context) { sssp_run(&((checked_run *)context)->job); }

static void poison_distances(void *context, int repetition, uint64_t seed)
{
    checked_run *c = context;
    (void)repetition, (void)seed;   /* the same graph and source every time */
    wb_poison_ints(c->job.dist, (size_t)c->job.g.n);
    c->job.stats = (sssp_stats){-1, -1};
}

static void check_timed_distances(void *context, int repetition)
{
    checked_run *c = context;
    char what[64];
    snprintf(what, sizeof what, "stage %d, timed run %d: dist", c->job.stage, repetition + 1);
    wb_fetch(c->got, c->job.dist, sizeof(int) * (size_t)c->job.g.n, what);
    wb_assert_ints_equal(c->got, c->expected, (size_t)c->job.g.n, what);
}

Test(sssp, timing_grid, .description = "every stage on a 512 x 512 grid", .timeout = 120)
{
    wb_rng rng = wb_rng_for("sssp timing");
    graph g = graph_grid(512, 512, 64, 1000, &rng);
    sssp_graph d = graph_to_device(&g);
    sssp_work *work = sssp_work_new(g.n);
    work->delta = graph_suggest_delta(&g);
    int *dist;
    CUDA_CHECK(cudaMalloc((void **)&dist, sizeof(int) * (size_t)g.n));
    wb_table *table = wb_table_new("sssp-test", "512 x 512 road-like grid, source 0 (median of 3)",
                                   "stage|time (ms)|rounds|edges relaxed|MTEPS");
    /* Stage 2, the last stage every student writes, goes first: its time is
     * the one the grade uses. No floor under it (0 bytes, 0 flops): the
     * bytes an SSSP run must move depend on its rounds, and the 8 MB graph
     * stays in the L2 cache between repetitions, so a DRAM floor could
     * refuse an honest time. */
    const int order[] = {2, 0, 1, 3};
    int *expected = malloc(sizeof(int) * (size_t)g.n), *got = malloc(sizeof(int) * (size_t)g.n);
    cr_assert(expected && got, "out of host memory");
    dijkstra(&g, 0, expected);
    for (int i = 0; i < 4; i++) {
        checked_run run = {{order[i], 0, d, dist, work, {0, 0}}, expected, got};
        sssp_job *job = &run.job;
        char label[64];
        snprintf(label, sizeof label, "stage %d", order[i]);
        wb_timing t = order[i] == 2
            ? wb_time_gpu_checked(run_checked, &run, 1, 3,
                                  (wb_rep_checks){poison_distances, check_timed_distances})
            : wb_time_gpu(sssp_run, job, 1, 3);
        t = wb_observe_timing(label, t, 0.0, 0.0);
        snprintf(label, sizeof label, "stage %d: rounds", order[i]);
        int rounds = wb_observe_int(label, job->stats.rounds);
        snprintf(label, sizeof label, "stage %d: edges_relaxed", order[i]);
        long long edges = wb_observe_i64(label, job->stats.edges_relaxed);
        wb_table_row(table, "%d|%.2f|%d|%lld|%.0f", order[i], t.median_ms, rounds, edges,
                     g.m / (t.median_ms * 1e3));
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    free(expected);
    free(got);
    CUDA_CHECK(cudaFree(dist));
    sssp_work_free(work);
    device_graph_free(&d);
    graph_free(&g);
}
