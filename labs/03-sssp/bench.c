/*
 * Lab 03 benchmark: every stage on each graph, with rounds, edges relaxed,
 * MTEPS (graph edges / time) and the speedup over CPU Dijkstra timed in the
 * same run. `sssp-bench-reference --help` for the options. By default it
 * runs the lab's two targets and exits 1 when one is missed:
 *   - road-like grid, 2048 x 2048 nodes: best stage >= 10x CPU Dijkstra;
 *   - R-MAT, 2^22 nodes / 2^26 edges:    best stage >= 30x CPU Dijkstra.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph.h"
#include "workbook.h"

typedef void (*sssp_fn)(sssp_graph, int, int *, sssp_work *, sssp_stats *);
static const sssp_fn stages[] = {NULL, sssp_stage1, sssp_stage2, sssp_stage3, sssp_stage4};

static int reps = 3, only_stage = 0;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sssp-bench-{reference,student} [options]\n"
            "  --graph FILE      a DIMACS .gr or .gr.gz file instead of the generated graphs\n"
            "  --source S        source node, 1-based as in DIMACS (default 1)\n"
            "  --gen KIND        grid, rmat, uniform or all (default: grid and rmat)\n"
            "  --scale K         2^K nodes for generated graphs (default 22)\n"
            "  --degree D        edges per node for rmat/uniform (default 16)\n"
            "  --long-edges L    highways added to the grid (default 2^(K-12))\n"
            "  --max-weight W    weights uniform in 1..W (default 1000)\n"
            "  --stage N         time only stage N (1-4)\n"
            "  --reps R          timed repetitions, median reported (default 3)\n"
            "  --write FILE      write the generated graph as DIMACS and exit\n"
            "  --help            this text\n"
            "Exit status: 0 targets met, 1 a target missed or bad input, 77 no GPU.\n");
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

typedef struct {
    int stage, source;
    sssp_graph g;
    int *dist;
    sssp_work *work;
    sssp_stats stats;
} job;

static void run(void *context)
{
    job *j = context;
    stages[j->stage](j->g, j->source, j->dist, j->work, &j->stats);
}

/* Times every stage on g; returns the best speedup over CPU Dijkstra, or -1
 * when a stage's distances are wrong. */
static double bench_graph(const graph *g, int source, const char *name)
{
    int *expected = malloc(sizeof(int) * (size_t)g->n), *got = malloc(sizeof(int) * (size_t)g->n);
    if (!expected || !got)
        wb_fail("out of host memory");
    double t0 = now_ms();
    dijkstra(g, source, expected);
    double cpu_ms = now_ms() - t0;

    job j = {0, source, graph_to_device(g), NULL, sssp_work_new(g->n), {0, 0}};
    j.work->delta = graph_suggest_delta(g);
    CUDA_CHECK(cudaMalloc((void **)&j.dist, sizeof(int) * (size_t)g->n));
    char title[256];
    snprintf(title, sizeof title, "%s: %d nodes, %d edges, source %d (median of %d)", name, g->n,
             g->m, source + 1, reps);
    wb_table *table = wb_table_new("sssp", title,
                                   "graph|stage|time (ms)|rounds|edges relaxed|MTEPS|"
                                   "CPU Dijkstra (ms)|speedup");
    wb_table_row(table, "%s|Dijkstra|%.1f|-|%d|%.0f|%.1f|1.0", name, cpu_ms, g->m,
                 g->m / (cpu_ms * 1e3), cpu_ms);
    double best = 0.0;
    for (int stage = 1; stage <= 4; stage++) {
        if (only_stage && stage != only_stage)
            continue;
        /* Validate before timing: a wrong answer is not a result. */
        j.stage = stage;
        wb_poison_ints(j.dist, (size_t)g->n);
        run(&j);
        CUDA_CHECK(cudaMemcpy(got, j.dist, sizeof(int) * (size_t)g->n, cudaMemcpyDeviceToHost));
        char report[512];
        if (wb_compare_ints(got, expected, (size_t)g->n, report, sizeof report)) {
            fprintf(stderr, "%s, stage %d: wrong distances: %s\n", name, stage, report);
            best = -1.0;
            continue;
        }
        wb_timing t = wb_time_gpu(run, &j, 1, reps);
        double speedup = cpu_ms / t.median_ms;
        if (best >= 0.0 && speedup > best)
            best = speedup;
        wb_table_row(table, "%s|%d|%.2f|%d|%lld|%.0f|%.1f|%.1f", name, stage, t.median_ms,
                     j.stats.rounds, j.stats.edges_relaxed, g->m / (t.median_ms * 1e3), cpu_ms,
                     speedup);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    CUDA_CHECK(cudaFree(j.dist));
    sssp_work_free(j.work);
    device_graph_free(&j.g);
    free(expected);
    free(got);
    return best;
}

static int parse_int(const char *option, const char *text, int lo, int hi)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end || v < lo || v > hi) {
        fprintf(stderr, "--%s: expected an integer in %d..%d, got \"%s\"\n", option, lo, hi,
                text);
        exit(1);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    static struct option options[] = {
        {"graph", required_argument, 0, 'g'}, {"source", required_argument, 0, 's'},
        {"gen", required_argument, 0, 'k'},   {"scale", required_argument, 0, 'n'},
        {"degree", required_argument, 0, 'd'}, {"long-edges", required_argument, 0, 'l'},
        {"max-weight", required_argument, 0, 'w'}, {"stage", required_argument, 0, 't'},
        {"reps", required_argument, 0, 'r'},  {"write", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    const char *file = NULL, *gen = "default", *write = NULL;
    int source = 1, scale = 22, degree = 16, long_edges = -1, max_weight = 1000, opt;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (opt) {
        case 'g': file = optarg; break;
        case 's': source = parse_int("source", optarg, 1, INT_MAX); break;
        case 'k': gen = optarg; break;
        case 'n': scale = parse_int("scale", optarg, 1, 26); break;
        case 'd': degree = parse_int("degree", optarg, 1, 64); break;
        case 'l': long_edges = parse_int("long-edges", optarg, 0, 1 << 24); break;
        case 'w': max_weight = parse_int("max-weight", optarg, 1, SSSP_MAX_WEIGHT); break;
        case 't': only_stage = parse_int("stage", optarg, 1, 4); break;
        case 'r': reps = parse_int("reps", optarg, 1, 1000); break;
        case 'o': write = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return 1;
    }
    bool all = !strcmp(gen, "all"), fallback = !strcmp(gen, "default");
    bool want_grid = all || fallback || !strcmp(gen, "grid"),
         want_rmat = all || fallback || !strcmp(gen, "rmat"),
         want_uniform = all || !strcmp(gen, "uniform");
    if (!want_grid && !want_rmat && !want_uniform) {
        fprintf(stderr, "--gen: expected grid, rmat, uniform or all, got \"%s\"\n", gen);
        return 1;
    }
    if ((long long)degree << scale > INT_MAX) {
        fprintf(stderr, "--degree %d: more than 2^31 edges at scale %d\n", degree, scale);
        return 1;
    }
    int side = 1 << (scale / 2), n = 1 << scale;
    if (long_edges < 0)
        long_edges = scale > 12 ? 1 << (scale - 12) : 1;
    wb_rng rng = wb_rng_for("sssp bench");
    char error[512];

    if (write) {   /* no GPU needed: makes test data and inputs for other tools */
        if (all) {
            fprintf(stderr, "--write: choose one of --gen grid, rmat or uniform\n");
            return 1;
        }
        graph g = want_rmat && !fallback ? graph_rmat(scale, degree * n, max_weight, &rng)
                  : want_uniform         ? graph_uniform(n, degree * n, max_weight, &rng)
                                         : graph_grid(side, n / side, long_edges, max_weight, &rng);
        bool ok = graph_write_dimacs(write, &g, "generated by sssp-bench --write", error,
                                     sizeof error);
        graph_free(&g);
        if (!ok)
            fprintf(stderr, "%s\n", error);
        return ok ? 0 : 1;
    }
    graph from_file;
    if (file && !graph_read_dimacs(file, &from_file, error, sizeof error)) {
        fprintf(stderr, "%s\n", error);
        return 1;
    }
    if (file && !graph_check_source(&from_file, source - 1, error, sizeof error)) {
        fprintf(stderr, "%s: %s\n", file, error);
        return 1;
    }
    char reason[256];
    if (!wb_gpu_usable(reason, sizeof reason)) {
        printf("skipped: %s\n", reason);
        return 77;
    }
    wb_device dev = wb_device_info();
    printf("%s, %d SMs\n", dev.name, dev.sm_count);

    if (file) {
        double best = bench_graph(&from_file, source - 1, file);
        graph_free(&from_file);
        return best < 0.0 ? 1 : 0;
    }
    if (source > n) {
        fprintf(stderr, "--source %d: the generated graphs have %d nodes\n", source, n);
        return 1;
    }
    int status = 0;
    if (want_grid) {
        graph g = graph_grid(side, n / side, long_edges, max_weight, &rng);
        double best = bench_graph(&g, source - 1, "grid");
        graph_free(&g);
        bool target = scale >= 22;
        printf("grid: best speedup over CPU Dijkstra %.1fx%s\n", best,
               target ? (best >= 10.0 ? " (target 10x: met)" : " (target 10x: MISSED)") : "");
        status |= best < 0.0 || (target && best < 10.0);
    }
    if (want_rmat) {
        graph g = graph_rmat(scale, degree * n, max_weight, &rng);
        double best = bench_graph(&g, source - 1, "rmat");
        graph_free(&g);
        bool target = scale >= 22 && degree >= 16;
        printf("rmat: best speedup over CPU Dijkstra %.1fx%s\n", best,
               target ? (best >= 30.0 ? " (target 30x: met)" : " (target 30x: MISSED)") : "");
        status |= best < 0.0 || (target && best < 30.0);
    }
    if (want_uniform) {
        graph g = graph_uniform(n, degree * n, max_weight, &rng);
        double best = bench_graph(&g, source - 1, "uniform");
        graph_free(&g);
        status |= best < 0.0;
    }
    return status;
}
