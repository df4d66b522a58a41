/*
 * Lab 06 tests: every version against a CPU reference, on sizes that no
 * segment count divides (down to n = 1, where most segments are empty), for
 * many (streams, segments) pairs. Each case runs twice with new inputs and
 * the same device buffers, so a kernel that starts before its copy has
 * finished sees the previous run's data and fails. Then a short timing table.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(streams, .timeout = 60);

/* Two sets of inputs and their expected outputs, in host memory of one kind. */
typedef struct {
    int n;
    bool pinned;
    float a;
    int repeat;
    float *x, *y, *z;            /* what the versions see (host_alloc) */
    float *input[2][2];          /* [run][x or y] */
    double *expected[2];         /* [run] */
} problem;

/* r = 1: one fmaf, which rounds once on either side, so the GPU must match
 * exactly. r > 1: the float result drifts from the exact one by about one
 * rounding (2^-24 relative) per step, so the tolerance is r * 2^-24 (the
 * drift measured on random data is about 0.12 r * 2^-24). */
static double tolerance(int repeat) { return repeat == 1 ? 1e-12 : ldexp(repeat, -24); }

static problem make_problem(int n, bool pinned, int repeat, const char *name)
{
    problem p = {n, pinned, 0.0f, repeat, host_alloc((size_t)n, pinned),
                 host_alloc((size_t)n, pinned), host_alloc((size_t)n, pinned), {{0}}, {0}};
    wb_rng rng = wb_rng_for(name);
    p.a = wb_rng_float(&rng, -2.0f, 2.0f);
    for (int run = 0; run < 2; run++) {
        float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
        double *e = malloc(sizeof(double) * (size_t)n);
        cr_assert(x && y && e, "out of host memory for n = %d", n);
        wb_fill_floats(x, (size_t)n, -1.0f, 1.0f, &rng);
        wb_fill_floats(y, (size_t)n, -1.0f, 1.0f, &rng);
        for (int i = 0; i < n; i++) {
            if (repeat == 1) {
                e[i] = fmaf(p.a, x[i], y[i]);
            } else {
                double v = y[i];
                for (int k = 0; k < repeat; k++)
                    v += (double)p.a * x[i];
                e[i] = v;
            }
        }
        p.input[run][0] = x;
        p.input[run][1] = y;
        p.expected[run] = e;
    }
    return p;
}

static void free_problem(problem *p)
{
    host_free(p->x, p->pinned);
    host_free(p->y, p->pinned);
    host_free(p->z, p->pinned);
    for (int run = 0; run < 2; run++) {
        free(p->input[run][0]);
        free(p->input[run][1]);
        free(p->expected[run]);
    }
}

static void run_version(int version, const saxpy_config *cfg, saxpy_device *dev,
                        saxpy_host *host, saxpy_timeline *tl)
{
    switch (version) {
    case 1: saxpy_v1_sync(cfg, dev, host); break;
    case 2: saxpy_v2_pinned(cfg, dev, host); break;
    case 3: saxpy_v3_depth_first(cfg, dev, host); break;
    case 4: saxpy_v4_breadth_first(cfg, dev, host); break;
    default: saxpy_v5_timeline(cfg, dev, host, tl); break;
    }
}

/* The host output is poisoned with all-ones bytes; a NaN the kernel computed
 * from poisoned device memory has another bit pattern. Telling them apart
 * names the step that went wrong, with the segment of the first bad element. */
static bool host_poison(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits == 0xFFFFFFFFu;
}

static int segment_holding(int n, int segments, int i)
{
    int k = 0;
    while (k + 1 < segments && saxpy_segment_of(n, segments, k + 1).begin <= i)
        k++;
    return k;
}

static void assert_no_nan(const float *z, int n, int segments, const char *what)
{
    int unwritten = 0, first = -1, computed = -1;
    for (int i = 0; i < n; i++) {
        if (host_poison(z[i])) {
            first = first < 0 ? i : first;
            unwritten++;
        } else if (isnan(z[i]) && computed < 0) {
            computed = i;
        }
    }
    if (unwritten == n)
        cr_assert_fail("%s: no element of host->z was written: does the version copy dev->y "
                       "back into host->z, and wait for the copy before it returns? "
                       WB_SEED_HINT, what, wb_seed());
    cr_assert(unwritten == 0,
              "%s: %d of %d elements of host->z were never written, the first at index %d "
              "in segment %d: is every segment (the last, shorter group too) copied back? "
              WB_SEED_HINT, what, unwritten, n, first, segment_holding(n, segments, first),
              wb_seed());
    cr_assert(computed < 0,
              "%s: element %d (segment %d) came back NaN from the device, computed from "
              "device memory that was still poisoned: did its kernel run before its copy in "
              "had finished (another stream?) " WB_SEED_HINT, what, computed,
              segment_holding(n, segments, computed), wb_seed());
}

/* Runs one version twice on p (the second time with new inputs and without
 * clearing the device) and checks both results. */
static void check_twice(int version, problem *p, saxpy_device *dev, int streams, int segments)
{
    saxpy_config cfg = {p->a, p->repeat, streams, segments, 256, false};
    saxpy_host host = {p->n, p->x, p->y, p->z};
    saxpy_timeline *tl = version == 5 ? saxpy_timeline_new(segments) : NULL;
    size_t bytes = sizeof(float) * (size_t)p->n;
    for (int run = 0; run < 2; run++) {
        memcpy(p->x, p->input[run][0], bytes);
        memcpy(p->y, p->input[run][1], bytes);
        memset(p->z, 0xFF, bytes);   /* NaN: elements never copied back show */
        if (run == 0) {
            wb_poison_floats(dev->x, (size_t)p->n);
            wb_poison_floats(dev->y, (size_t)p->n);
        }
        run_version(version, &cfg, dev, &host, tl);
        char what[200];
        snprintf(what, sizeof what,
                 "version %d (n = %d, %s memory, streams = %d, segments = %d, repeat = %d), %s",
                 version, p->n, p->pinned ? "pinned" : "pageable", streams, segments,
                 p->repeat, run ? "second run, new inputs (old ones still on the device)"
                                : "first run");
        assert_no_nan(p->z, p->n, segments, what);
        wb_assert_rel_error_below(p->z, p->expected[run], (size_t)p->n, tolerance(p->repeat),
                                  what);
    }
    saxpy_timeline_free(tl);
}

static void check_one(int version, int n, bool pinned, int repeat, int streams, int segments)
{
    char name[96];
    snprintf(name, sizeof name, "streams v%d n=%d r=%d", version, n, repeat);
    problem p = make_problem(n, pinned, repeat, name);
    saxpy_device *dev = saxpy_device_new(n, streams);
    check_twice(version, &p, dev, streams, segments);
    saxpy_device_free(dev);
    free_problem(&p);
}

/* ------------------------------------------------------------- stage 1 */

static const int sizes[] = {1, 31, 1000, 100003, (1 << 22) + 3};
#define SIZES ((int)(sizeof sizes / sizeof sizes[0]))

Test(streams, stage1_sizes, .description = "version 1 on odd sizes, exact")
{
    for (int i = 0; i < SIZES; i++)
        check_one(1, sizes[i], false, 1, 1, 1);
}

Test(streams, stage1_repeat, .description = "version 1 with repeat > 1, within r * 2^-24")
{
    check_one(1, 100003, false, 2, 1, 1);
    check_one(1, 100003, false, 1000, 1, 1);
}

/* ------------------------------------------------------------- stage 2 */

static enum cudaMemoryType memory_type(const void *p)
{
    struct cudaPointerAttributes attributes;
    CUDA_CHECK(cudaPointerGetAttributes(&attributes, p));
    return attributes.type;
}

Test(streams, stage2_host_alloc, .description = "host_alloc pins memory only when asked")
{
    float *pinned = host_alloc(1000, true), *pageable = host_alloc(1000, false);
    cr_assert(pinned && pageable, "host_alloc returned NULL");
    cr_expect(memory_type(pinned) == cudaMemoryTypeHost,
              "host_alloc(1000, pinned = true) returned memory that CUDA does not know as "
              "page-locked: allocate it with cudaMallocHost (or cudaHostAlloc)");
    cr_expect(memory_type(pageable) != cudaMemoryTypeHost,
              "host_alloc(1000, pinned = false) should return ordinary (pageable) memory");
    host_free(pinned, true);
    host_free(pageable, false);
}

Test(streams, stage2_sizes, .description = "version 2 on odd sizes, exact, and with repeat > 1")
{
    for (int i = 0; i < SIZES; i++)
        check_one(2, sizes[i], true, 1, 1, 1);
    check_one(2, 100003, true, 37, 1, 1);
}

/* ---------------------------------------------------- stages 3, 4 and 5 */

/* Every pair of these stream and segment counts, on three sizes: n = 1 and
 * n = 63 leave segments empty, 100003 divides by none of them. */
static void check_combinations(int version)
{
    static const int n_values[] = {1, 63, 100003};
    static const int stream_counts[] = {1, 2, 3, 4, 7, 16};
    static const int segment_counts[] = {1, 2, 3, 5, 16, 17, 64};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "streams combinations n=%d", n_values[i]);
        problem p = make_problem(n_values[i], true, 1, name);
        saxpy_device *dev = saxpy_device_new(n_values[i], SAXPY_MAX_STREAMS);
        for (int s = 0; s < (int)(sizeof stream_counts / sizeof *stream_counts); s++)
            for (int g = 0; g < (int)(sizeof segment_counts / sizeof *segment_counts); g++)
                check_twice(version, &p, dev, stream_counts[s], segment_counts[g]);
        saxpy_device_free(dev);
        free_problem(&p);
    }
}

/* Large segments (16 MB each) give a kernel that does not wait for its copy
 * plenty of time to read old data; repeat > 1 checks the tolerance path. */
static void check_large_and_repeat(int version)
{
    check_one(version, (1 << 24) + 5, true, 1, 4, 7);
    check_one(version, 100003, true, 37, 3, 10);
}

Test(streams, stage3_combinations, .description = "version 3 for many (streams, segments)")
{
    check_combinations(3);
}

Test(streams, stage3_large_and_repeat) { check_large_and_repeat(3); }

Test(streams, stage4_combinations, .description = "version 4 for many (streams, segments)")
{
    check_combinations(4);
}

Test(streams, stage4_large_and_repeat) { check_large_and_repeat(4); }

Test(streams, stage5_combinations, .description = "version 5 for many (streams, segments)")
{
    check_combinations(5);
}

Test(streams, stage5_large_and_repeat) { check_large_and_repeat(5); }

static const char *const mark_names[MARKS] = {"before its copy in", "after its copy in",
                                              "after its kernel", "after its copy out"};

Test(streams, stage5_events, .description = "every event recorded, in stream order")
{
    const int n = (1 << 22) + 1, streams = 4, segments = 16;
    problem p = make_problem(n, true, 1, "streams events");
    saxpy_device *dev = saxpy_device_new(n, streams);
    saxpy_config cfg = {p.a, 1, streams, segments, 256, false};
    saxpy_host host = {n, p.x, p.y, p.z};
    saxpy_timeline *tl = saxpy_timeline_new(segments);
    memcpy(p.x, p.input[0][0], sizeof(float) * (size_t)n);
    memcpy(p.y, p.input[0][1], sizeof(float) * (size_t)n);
    saxpy_v5_timeline(&cfg, dev, &host, tl);

    double ms[SAXPY_MAX_SEGMENTS][MARKS];
    int k = 0, m = 0;
    cudaError_t status = saxpy_timeline_read(tl, ms, &k, &m);
    cr_assert(status == cudaSuccess,
              "the event of segment %d %s cannot be read (%s): was it recorded with "
              "cudaEventRecord on the segment's stream?", k, mark_names[m],
              cudaGetErrorName(status));
    /* Events on one stream complete in order; 1 us of slack for their
     * resolution. */
    const double slack = 1e-3;
    for (k = 0; k < segments; k++) {
        for (m = 0; m < MARKS; m++)
            cr_assert(ms[k][m] >= -slack && (m == 0 || ms[k][m] >= ms[k][m - 1] - slack),
                      "segment %d: the event %s completed at %.3f ms, before the event "
                      "%s (%.3f ms): are the marks in the right places?", k, mark_names[m],
                      ms[k][m], m ? mark_names[m - 1] : "recorded at the start",
                      m ? ms[k][m - 1] : 0.0);
        if (k >= streams)
            cr_assert(ms[k][MARK_COPY_IN_START] >= ms[k - streams][MARK_COPY_OUT_DONE] - slack,
                      "segment %d started its copy in at %.3f ms, before segment %d on the "
                      "same stream finished (%.3f ms): is segment k on stream k %% S?", k,
                      ms[k][MARK_COPY_IN_START], k - streams,
                      ms[k - streams][MARK_COPY_OUT_DONE]);
    }
    saxpy_timeline_free(tl);
    saxpy_device_free(dev);
    free_problem(&p);
}

/* --------------------------------------------------------------- timing */

typedef struct {
    int version;
    saxpy_config cfg;
    saxpy_device *dev;
    saxpy_host host;
    saxpy_timeline *tl;
} timed_call;

static void run_timed(void *context)
{
    timed_call *c = context;
    run_version(c->version, &c->cfg, c->dev, &c->host, c->tl);
}

Test(streams, timing_versions, .description = "the five versions at 2^24 floats",
     .timeout = 120)
{
    const int n = 1 << 24, streams = 4, segments = 16, repeat = 16;
    size_t bytes = sizeof(float) * (size_t)n;
    problem p = make_problem(n, true, repeat, "streams timing");
    memcpy(p.x, p.input[0][0], bytes);
    memcpy(p.y, p.input[0][1], bytes);
    /* Version 1 reads the same inputs from pageable memory. */
    saxpy_host pageable = {n, p.input[0][0], p.input[0][1], host_alloc((size_t)n, false)};
    saxpy_device *dev = saxpy_device_new(n, streams);
    wb_table *table = wb_table_new(
        "streams", "streams: n = 2^24 floats, repeat = 16, 4 streams, 16 segments (median of 5)",
        "version|host memory|time (ms)|speedup over v1");
    double v1_ms = 0.0;
    for (int version = 1; version <= 5; version++) {
        timed_call c = {version, {p.a, repeat, streams, segments, 256, false}, dev,
                        version == 1 ? pageable : (saxpy_host){n, p.x, p.y, p.z},
                        version == 5 ? saxpy_timeline_new(segments) : NULL};
        memset(c.host.z, 0xFF, bytes);
        wb_timing t = wb_time_gpu(run_timed, &c, 1, 5);
        wb_assert_rel_error_below(c.host.z, p.expected[0], (size_t)n, tolerance(repeat),
                                  "the timed version");
        v1_ms = version == 1 ? t.median_ms : v1_ms;
        wb_table_row(table, "%d|%s|%.2f|%.2f", version, version == 1 ? "pageable" : "pinned",
                     t.median_ms, v1_ms / t.median_ms);
        saxpy_timeline_free(c.tl);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    saxpy_device_free(dev);
    host_free(pageable.z, false);
    free_problem(&p);
}
