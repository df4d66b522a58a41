/* Lab 03 graph code: see graph.h. */
#include "graph.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void *checked_malloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        wb_fail("out of host memory for %s (%zu bytes)", what, bytes);
    return p;
}

/* ------------------------------------------------------------------ CSR */

graph graph_from_edges(int n, int m, const int *src, const int *dst, const int *w)
{
    graph g = {n, m, checked_malloc(sizeof(int) * ((size_t)n + 1), "row_start"),
               checked_malloc(sizeof(int) * (size_t)m, "adj"),
               checked_malloc(sizeof(int) * (size_t)m, "weight")};
    /* Counting sort by source: count out-degrees, prefix-sum them into row
     * starts, then drop each edge into the next free slot of its row. */
    memset(g.row_start, 0, sizeof(int) * ((size_t)n + 1));
    for (int i = 0; i < m; i++)
        g.row_start[src[i] + 1]++;
    for (int u = 0; u < n; u++)
        g.row_start[u + 1] += g.row_start[u];
    int *next = checked_malloc(sizeof(int) * (size_t)n + 1, "row cursors");
    memcpy(next, g.row_start, sizeof(int) * (size_t)n);
    for (int i = 0; i < m; i++) {
        int slot = next[src[i]]++;
        g.adj[slot] = dst[i];
        g.weight[slot] = w[i];
    }
    free(next);
    return g;
}

void graph_free(graph *g)
{
    free(g->row_start);
    free(g->adj);
    free(g->weight);
    memset(g, 0, sizeof *g);
}

/* --------------------------------------------------------------- DIMACS */

typedef struct {
    const char *path;
    long line;
    char *error;
    size_t error_len;
} reader;

static bool problem(reader *r, const char *format, ...)
{
    int used = snprintf(r->error, r->error_len, "%s:%ld: ", r->path, r->line);
    va_list args;
    va_start(args, format);
    if (used >= 0 && (size_t)used < r->error_len)
        vsnprintf(r->error + used, r->error_len - (size_t)used, format, args);
    va_end(args);
    return false;
}

/* Parses the next whitespace-separated integer of *p; false when there is
 * none or it is not a plain decimal number. */
static bool next_number(char **p, long long *value)
{
    while (**p == ' ' || **p == '\t')
        (*p)++;
    char *end;
    errno = 0;
    long long v = strtoll(*p, &end, 10);
    if (end == *p || errno || (*end && !isspace((unsigned char)*end)))
        return false;
    *value = v;
    *p = end;
    return true;
}

static bool only_space_left(const char *p)
{
    while (*p && isspace((unsigned char)*p))
        p++;
    return *p == '\0';
}

bool graph_read_dimacs(const char *path, graph *g, char *error, size_t error_len)
{
    reader r = {path, 0, error, error_len};
    memset(g, 0, sizeof *g);
    gzFile file = gzopen(path, "rb");   /* reads plain files as they are */
    if (!file)
        return problem(&r, "cannot open: %s", strerror(errno ? errno : ENOENT));
    long long n = -1, m = 0, edges = 0;
    int *src = NULL, *dst = NULL, *w = NULL;
    bool ok = true;
    char line[1024];
    while (ok && gzgets(file, line, sizeof line)) {
        r.line++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !gzeof(file)) {
            ok = problem(&r, "line longer than %zu characters", sizeof line - 2);
            break;
        }
        char *p = line + 1;
        long long u, v, weight;
        switch (line[0]) {
        case 'c': case '\n': case '\r':
            break;
        case 'p':
            while (*p == ' ' || *p == '\t')
                p++;
            if (n >= 0)
                ok = problem(&r, "a second 'p' line");
            else if (strncmp(p, "sp", 2) || !isspace((unsigned char)p[2]))
                ok = problem(&r, "expected 'p sp NODES EDGES'");
            else if (p += 2, !next_number(&p, &n) || !next_number(&p, &m) || !only_space_left(p))
                ok = problem(&r, "expected 'p sp NODES EDGES' with two numbers");
            else if (n < 1 || n > INT_MAX - 1 || m < 0 || m > INT_MAX)
                ok = problem(&r, "node count %lld or edge count %lld out of range", n, m);
            else {
                src = checked_malloc(sizeof(int) * (size_t)m, "edge sources");
                dst = checked_malloc(sizeof(int) * (size_t)m, "edge targets");
                w = checked_malloc(sizeof(int) * (size_t)m, "edge weights");
            }
            break;
        case 'a':
            if (n < 0)
                ok = problem(&r, "edge before the 'p sp NODES EDGES' line");
            else if (!next_number(&p, &u) || !next_number(&p, &v))
                ok = problem(&r, "expected 'a FROM TO WEIGHT' with numeric node ids");
            else if (u < 1 || u > n || v < 1 || v > n)
                ok = problem(&r, "node id %lld out of range 1..%lld", u < 1 || u > n ? u : v, n);
            else if (!next_number(&p, &weight) || !only_space_left(p))
                ok = problem(&r, "weight is not a number");
            else if (weight < 0)
                ok = problem(&r, "negative weight %lld (shortest paths need weights >= 0)", weight);
            else if (weight > SSSP_MAX_WEIGHT)
                ok = problem(&r, "weight %lld larger than %d", weight, SSSP_MAX_WEIGHT);
            else if (edges == m)
                ok = problem(&r, "more edges than the %lld the 'p' line announced", m);
            else {
                src[edges] = (int)u - 1;
                dst[edges] = (int)v - 1;
                w[edges] = (int)weight;
                edges++;
            }
            break;
        default:
            ok = problem(&r, "unknown line type '%c' (expected c, p or a)", line[0]);
        }
    }
    int gz_status;
    const char *gz_message = gzerror(file, &gz_status);
    if (ok && gz_status != Z_OK && gz_status != Z_STREAM_END)
        ok = problem(&r, "read error (truncated gzip file?): %s", gz_message);
    else if (ok && r.line == 0)
        ok = problem(&r, "the file is empty");
    else if (ok && n < 0)
        ok = problem(&r, "no 'p sp NODES EDGES' line");
    else if (ok && edges != m)
        ok = problem(&r, "the 'p' line announced %lld edges, the file has %lld"
                         " (truncated file?)", m, edges);
    gzclose(file);
    if (ok)
        *g = graph_from_edges((int)n, (int)m, src, dst, w);
    free(src);
    free(dst);
    free(w);
    return ok;
}

bool graph_write_dimacs(const char *path, const graph *g, const char *comment, char *error,
                        size_t error_len)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(error, error_len, "%s: cannot write: %s", path, strerror(errno));
        return false;
    }
    fprintf(f, "c %s\np sp %d %d\n", comment, g->n, g->m);
    for (int u = 0; u < g->n; u++)
        for (int e = g->row_start[u]; e < g->row_start[u + 1]; e++)
            fprintf(f, "a %d %d %d\n", u + 1, g->adj[e] + 1, g->weight[e]);
    if (fclose(f)) {
        snprintf(error, error_len, "%s: write failed: %s", path, strerror(errno));
        return false;
    }
    return true;
}

bool graph_check_source(const graph *g, int source, char *error, size_t error_len)
{
    if (source >= 0 && source < g->n)
        return true;
    snprintf(error, error_len, "source node %d out of range 1..%d (DIMACS numbering)",
             source + 1, g->n);
    return false;
}

/* ----------------------------------------------------------- generators */

typedef struct {
    int n, m, capacity;
    int *src, *dst, *w;
} edge_list;

static edge_list edges_new(int n, int capacity)
{
    edge_list l = {n, 0, capacity, checked_malloc(sizeof(int) * (size_t)capacity, "sources"),
                   checked_malloc(sizeof(int) * (size_t)capacity, "targets"),
                   checked_malloc(sizeof(int) * (size_t)capacity, "weights")};
    return l;
}

static void edges_add(edge_list *l, int u, int v, int w)
{
    l->src[l->m] = u;
    l->dst[l->m] = v;
    l->w[l->m] = w;
    l->m++;
}

static graph edges_to_graph(edge_list *l)
{
    graph g = graph_from_edges(l->n, l->m, l->src, l->dst, l->w);
    free(l->src);
    free(l->dst);
    free(l->w);
    return g;
}

static void check_size(long long n, long long m, const char *what)
{
    if (n < 1 || n > (1 << 30) || m < 0 || m > INT_MAX)
        wb_fail("%s: %lld nodes / %lld edges out of range", what, n, m);
}

graph graph_grid(int width, int height, int long_edges, int max_weight, wb_rng *rng)
{
    long long n = (long long)width * height;
    long long m = 2LL * ((long long)(width - 1) * height + (long long)width * (height - 1)) +
                  2LL * long_edges;
    check_size(width < 1 || height < 1 ? 0 : n, m, "grid graph");
    edge_list l = edges_new((int)n, (int)m);
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            int u = y * width + x;
            if (x + 1 < width) {
                edges_add(&l, u, u + 1, wb_rng_int(rng, 1, max_weight));
                edges_add(&l, u + 1, u, wb_rng_int(rng, 1, max_weight));
            }
            if (y + 1 < height) {
                edges_add(&l, u, u + width, wb_rng_int(rng, 1, max_weight));
                edges_add(&l, u + width, u, wb_rng_int(rng, 1, max_weight));
            }
        }
    for (int i = 0; i < long_edges; i++) {
        int u = wb_rng_int(rng, 0, (int)n - 1), v = wb_rng_int(rng, 0, (int)n - 1);
        long long hops = llabs((long long)(u % width) - v % width) +
                         llabs((long long)(u / width) - v / width);
        /* A highway: a quarter of the average cost (max_weight + 1) / 2 per hop. */
        long long w = hops * (max_weight + 1) / 8 + 1;
        w = w > SSSP_MAX_WEIGHT ? SSSP_MAX_WEIGHT : w;
        edges_add(&l, u, v, (int)w);
        edges_add(&l, v, u, (int)w);
    }
    return edges_to_graph(&l);
}

/* Union-find root of x, halving the path on the way. */
static int find_root(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

graph graph_road_like(int n, int m, int max_weight, wb_rng *rng)
{
    check_size(n, m, "road-like graph");
    /* The candidate roads: every pair of grid neighbours, row-major with
     * ceil(sqrt(n)) nodes per row (the last row may be short). */
    int width = 1;
    while ((long long)width * width < n)
        width++;
    int pairs = 0;
    int *pair = checked_malloc(sizeof(int) * 2 * (size_t)n, "road candidates");
    int *parent = checked_malloc(sizeof(int) * (size_t)n, "road components");
    char *kept = calloc((size_t)2 * n, 1);
    if (!kept)
        wb_fail("out of host memory for road candidates");
    for (int u = 0; u < n; u++) {
        parent[u] = u;
        if ((u + 1) % width && u + 1 < n)
            pair[pairs++] = 2 * u;       /* u -- u + 1 */
        if (u + width < n)
            pair[pairs++] = 2 * u + 1;   /* u -- u + width */
    }
    int wanted = m / 2 + m % 2;
    if (wanted > pairs)
        wb_fail("road-like graph: %d edges need %d neighbour pairs, a grid of %d nodes has %d",
                m, wanted, n, pairs);
    for (int k = pairs - 1; k > 0; k--) {   /* Fisher-Yates shuffle */
        int j = (int)(wb_rng_u64(rng) % (uint64_t)(k + 1)), t = pair[k];
        pair[k] = pair[j];
        pair[j] = t;
    }
    /* First the pairs that join two components (a random spanning tree, so
     * that every node is reachable when m allows it), then the others, both
     * in the shuffled order, until there are m arcs; an odd m keeps one
     * way of the last pair. */
    edge_list l = edges_new(n, m);
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < pairs && l.m < m; k++) {
            int u = pair[k] / 2, v = pair[k] % 2 ? u + width : u + 1;
            int ru = find_root(parent, u), rv = find_root(parent, v);
            if (kept[k] || (pass == 0 && ru == rv))
                continue;
            kept[k] = 1;
            parent[ru] = rv;
            edges_add(&l, u, v, wb_rng_int(rng, 1, max_weight));
            if (l.m < m)
                edges_add(&l, v, u, wb_rng_int(rng, 1, max_weight));
        }
    free(pair);
    free(parent);
    free(kept);
    return edges_to_graph(&l);
}

graph graph_uniform(int n, int m, int max_weight, wb_rng *rng)
{
    check_size(n, m, "uniform graph");
    edge_list l = edges_new(n, m);
    for (int i = 0; i < m; i++)
        edges_add(&l, wb_rng_int(rng, 0, n - 1), wb_rng_int(rng, 0, n - 1),
                  wb_rng_int(rng, 1, max_weight));
    return edges_to_graph(&l);
}

graph graph_rmat(int scale, int m, int max_weight, wb_rng *rng)
{
    check_size(scale < 0 || scale > 30 ? 0 : 1LL << scale, m, "R-MAT graph");
    edge_list l = edges_new(1 << scale, m);
    for (int i = 0; i < m; i++) {
        int u = 0, v = 0;
        uint64_t bits = 0;
        /* Each level picks a quadrant: 16 random bits per level, 4 per draw. */
        for (int level = 0; level < scale; level++) {
            if (level % 4 == 0)
                bits = wb_rng_u64(rng);
            unsigned r = (unsigned)(bits & 0xffff);
            bits >>= 16;
            int down = r >= 0.76 * 65536, right = (r >= 0.57 * 65536 && r < 0.76 * 65536) ||
                                                  r >= 0.95 * 65536;
            u = 2 * u + down;
            v = 2 * v + right;
        }
        edges_add(&l, u, v, wb_rng_int(rng, 1, max_weight));
    }
    return edges_to_graph(&l);
}

/* ------------------------------------------------------------- Dijkstra */

typedef struct {
    int dist, node;
} heap_item;

/* A binary min-heap with lazy deletion: a node may be pushed several times,
 * and an entry older than the node's current distance is skipped. */
void dijkstra(const graph *g, int source, int *dist)
{
    heap_item *heap = checked_malloc(sizeof(heap_item) * ((size_t)g->m + 1), "Dijkstra heap");
    for (int v = 0; v < g->n; v++)
        dist[v] = SSSP_UNREACHABLE;
    size_t size = 0;
    dist[source] = 0;
    heap[size++] = (heap_item){0, source};
    while (size) {
        heap_item top = heap[0], last = heap[--size];
        size_t i = 0;   /* sift the last item down from the root */
        for (size_t c; (c = 2 * i + 1) < size; i = c) {
            if (c + 1 < size && heap[c + 1].dist < heap[c].dist)
                c++;
            if (heap[c].dist >= last.dist)
                break;
            heap[i] = heap[c];
        }
        heap[i] = last;
        if (top.dist > dist[top.node])
            continue;
        int u = top.node;
        for (int e = g->row_start[u]; e < g->row_start[u + 1]; e++) {
            int v = g->adj[e], alt = top.dist + g->weight[e];
            if (alt >= dist[v])
                continue;
            dist[v] = alt;
            size_t j = size++;   /* sift up */
            for (; j > 0 && heap[(j - 1) / 2].dist > alt; j = (j - 1) / 2)
                heap[j] = heap[(j - 1) / 2];
            heap[j] = (heap_item){alt, v};
        }
    }
    free(heap);
}

int graph_suggest_delta(const graph *g)
{
    /* delta = DELTA_SCALE x mean edge weight / mean out-degree, the same rule
     * for every graph. A shortest path crosses about DELTA_SCALE / degree
     * edges of average weight within one bucket: a sparse graph (a road
     * network, degree 2.5 to 4) gets wide buckets, because its near lists are
     * thin and its rounds cost their latency, not their work, so fewer
     * phases and rounds win even at more relaxations; a dense one (R-MAT,
     * degree 16) gets narrow buckets, because its rounds are full and every
     * extra relaxation costs. DELTA_SCALE = 128 was chosen once, by a CPU
     * replay of near-far's rounds on the bench's two graphs
     * (handouts/03-sssp.md, "Near-far, made fast"): on the 2^22 grid 34
     * phases and 2,940 rounds (51 million relaxations) against the 135
     * and 3,525 (24 million) of 8 mean weights, the rule before. */
    enum { DELTA_SCALE = 128 };
    if (g->m == 0 || g->n == 0)
        return 1;
    double sum = 0.0;
    for (int e = 0; e < g->m; e++)
        sum += g->weight[e];
    double delta = DELTA_SCALE * (sum / g->m) / ((double)g->m / g->n);
    return delta < 1.0 ? 1 : delta > SSSP_MAX_WEIGHT ? SSSP_MAX_WEIGHT : (int)delta;
}

/* ------------------------------------------------------------ GPU copies */

static int *to_device(const int *host, size_t n)
{
    int *p;
    CUDA_CHECK(cudaMalloc((void **)&p, sizeof(int) * (n ? n : 1)));
    CUDA_CHECK(cudaMemcpy(p, host, sizeof(int) * n, cudaMemcpyHostToDevice));
    return p;
}

sssp_graph graph_to_device(const graph *g)
{
    sssp_graph d = {g->n, g->m, to_device(g->row_start, (size_t)g->n + 1),
                    to_device(g->adj, (size_t)g->m), to_device(g->weight, (size_t)g->m)};
    return d;
}

void device_graph_free(sssp_graph *g)
{
    CUDA_CHECK(cudaFree((void *)g->row_start));
    CUDA_CHECK(cudaFree((void *)g->adj));
    CUDA_CHECK(cudaFree((void *)g->weight));
}

sssp_work *sssp_work_new(int n)
{
    sssp_work *w = checked_malloc(sizeof *w, "sssp_work");
    size_t bytes = sizeof(int) * (size_t)n;
    w->n = n;
    /* 2n slots: in a sweep round a node can be appended twice (given.cuh,
     * SWEEP_FRACTION), so a worklist can outgrow n, never 2n. */
    CUDA_CHECK(cudaMalloc((void **)&w->frontier[0], 2 * bytes));
    CUDA_CHECK(cudaMalloc((void **)&w->frontier[1], 2 * bytes));
    CUDA_CHECK(cudaMalloc((void **)&w->far[0], bytes));
    CUDA_CHECK(cudaMalloc((void **)&w->far[1], bytes));
    w->delta = 1;
    w->block = SSSP_BLOCK;
    w->near_far_blocks = 0;
    CUDA_CHECK(cudaMalloc((void **)&w->queued, bytes));
    CUDA_CHECK(cudaMalloc((void **)&w->far_queued, bytes));
    CUDA_CHECK(cudaMalloc((void **)&w->counts, SSSP_COUNTS * sizeof(int)));
    CUDA_CHECK(cudaMalloc((void **)&w->edges, sizeof(unsigned long long)));
    return w;
}

void sssp_work_free(sssp_work *w)
{
    CUDA_CHECK(cudaFree(w->frontier[0]));
    CUDA_CHECK(cudaFree(w->frontier[1]));
    CUDA_CHECK(cudaFree(w->far[0]));
    CUDA_CHECK(cudaFree(w->far[1]));
    CUDA_CHECK(cudaFree(w->queued));
    CUDA_CHECK(cudaFree(w->far_queued));
    CUDA_CHECK(cudaFree(w->counts));
    CUDA_CHECK(cudaFree(w->edges));
    free(w);
}
