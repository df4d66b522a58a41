/*
 * Lab 06 benchmark: host<->device bandwidth, the five versions at 2^28
 * floats, the overlap they reach against the ideal pipeline, and the
 * implicit-synchronisation experiment, with version 4's events written as a
 * timeline (CSV; timeline.py draws it); then unified memory (stage 5): the
 * job on managed memory moved on demand, by prefetches or under hints,
 * against explicit copies. `streams-bench-reference --help` for the options
 * (common/bench.h).
 * Exits 1 when the best overlapped version misses the lab's targets.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "lab.h"
#include "workbook.h"

typedef struct {
    saxpy_config cfg;
    saxpy_device *dev;
    saxpy_host pinned, pageable;
    int version;                /* 0..4: the version run() runs */
    saxpy_segment seg;
    int step;                   /* 0 copy in, 1 kernel, 2 copy out, 3 both copies at once */
    saxpy_timeline *tl;
    /* what the check compares against: a sample of indices */
    int samples;
    int *sample;
    double *expected;
} bench;

static const char *const version_names[] = {"sync, pageable", "pinned, 1 stream", "depth first",
                                            "breadth first", "breadth + events"};

static void run(void *context)
{
    bench *b = context;
    saxpy_host *host = b->version == 0 ? &b->pageable : &b->pinned;
    switch (b->version) {
    case 0: saxpy_v0_sync(&b->cfg, b->dev, host); break;
    case 1: saxpy_v1_pinned(&b->cfg, b->dev, host); break;
    case 2: saxpy_v2_depth_first(&b->cfg, b->dev, host); break;
    case 3: saxpy_v3_breadth_first(&b->cfg, b->dev, host); break;
    default: saxpy_v4_timeline(&b->cfg, b->dev, host, b->tl); break;
    }
}

/* One step of one segment alone on the default stream, from pinned memory:
 * the stage times the ideal pipeline is built from. Step 3 is the link both
 * ways at once, as in the middle of a pipeline: this segment's copy in on
 * one stream and the next segment's copy out on another. Those are ordinary
 * streams (saxpy_device_new), so the timing events on the default stream
 * wait for both copies, and the copies for the start event. */
static void run_step(void *context)
{
    bench *b = context;
    size_t bytes = sizeof(float) * (size_t)b->seg.count;
    int i = b->seg.begin;
    if (b->step == 3) {
        int next = i + b->seg.count;
        CUDA_CHECK(cudaMemcpyAsync(b->dev->x + i, b->pinned.x + i, bytes,
                                   cudaMemcpyHostToDevice, b->dev->stream[0]));
        CUDA_CHECK(cudaMemcpyAsync(b->dev->y + i, b->pinned.y + i, bytes,
                                   cudaMemcpyHostToDevice, b->dev->stream[0]));
        CUDA_CHECK(cudaMemcpyAsync(b->pinned.z + next, b->dev->y + next, bytes,
                                   cudaMemcpyDeviceToHost, b->dev->stream[1]));
    } else if (b->step == 0) {
        CUDA_CHECK(cudaMemcpyAsync(b->dev->x + i, b->pinned.x + i, bytes,
                                   cudaMemcpyHostToDevice, 0));
        CUDA_CHECK(cudaMemcpyAsync(b->dev->y + i, b->pinned.y + i, bytes,
                                   cudaMemcpyHostToDevice, 0));
    } else if (b->step == 1) {
        saxpy_launch(&b->cfg, b->dev, b->seg, 0);
    } else {
        CUDA_CHECK(cudaMemcpyAsync(b->pinned.z + i, b->dev->y + i, bytes,
                                   cudaMemcpyDeviceToHost, 0));
    }
}

/* The fastest of reps runs: stage times feed a lower bound. One step per
 * timed run, as the pipeline runs it (not wb_calls_for_ms): steps back to
 * back would hide the launch and the wait that each step pays in the
 * pipeline. A segment's copy in at the default 32 segments is 64 MiB, some
 * 1.2 ms over PCIe 5. */
static double time_step(bench *b, saxpy_segment seg, int step, int reps)
{
    b->seg = seg;
    b->step = step;
    return wb_time_gpu(run_step, b, 3, reps).min_ms;
}

typedef struct {
    double in, kernel, out;
    double both;   /* a copy in and a copy out at once; NAN for one segment */
} stage_times;

/* Copy in, kernel and copy out of one segment of n / segments elements, each
 * alone. On the H100, stage times taken right after host-side work (the
 * checks) once came out up to 1.8 times too long, giving an "ideal" slower
 * than the real pipeline; so the GPU first gets a whole-array kernel to work
 * on, and each stage is the fastest of at least 15 runs. */
static stage_times measure_stages(bench *b, int segments, int reps)
{
    saxpy_launch(&b->cfg, b->dev, saxpy_segment_of(b->pinned.n, 1, 0), 0);
    int runs = reps > 15 ? reps : 15;
    saxpy_segment seg = saxpy_segment_of(b->pinned.n, segments, 0);
    stage_times t = {time_step(b, seg, 0, runs), time_step(b, seg, 1, runs),
                     time_step(b, seg, 2, runs), NAN};
    /* Segment 1 is no shorter than segment 0 (saxpy_segment_of), so copying
     * out segment 0's count from segment 1's start stays inside the array. */
    if (segments > 1)
        t.both = time_step(b, seg, 3, runs);
    return t;
}

/* A three-stage pipeline over m segments: the first segment goes through
 * all three stages, then one segment leaves per slot. In a slot the kernel
 * runs while the link carries one segment in and another out at once, so a
 * slot lasts the longer of the kernel and both copies together: on a host
 * that cannot feed both directions at full speed, both copies together take
 * longer than the copy in alone. */
static double ideal_ms(stage_times t, int m)
{
    double slot = fmax(t.in, fmax(t.kernel, t.out));
    if (m > 1)
        slot = fmax(slot, t.both);
    return t.in + t.kernel + t.out + (m - 1) * slot;
}

/* "in/kernel/out, both" for the tables, in ms ("-" where not measured). */
static const char *stages_text(stage_times t, char *text, size_t size)
{
    int used = snprintf(text, size, "%.2f/%.2f/%.2f, ", t.in, t.kernel, t.out);
    if (isnan(t.both))
        snprintf(text + used, size - (size_t)used, "-");
    else
        snprintf(text + used, size - (size_t)used, "%.2f", t.both);
    return text;
}

/* Elements to check: a stride through the array and both sides of every
 * possible segment boundary. Expected values are computed once. */
static void prepare_check(bench *b)
{
    int n = b->pinned.n, stride = n / 4096 > 1 ? n / 4096 : 1, count = 0;
    free(b->sample);   // the unified-memory table prepares again for its repeat
    free(b->expected);
    b->sample = malloc(sizeof(int) * (size_t)(n / stride + 2 * SAXPY_MAX_SEGMENTS + 2));
    for (int i = 0; i < n; i += stride)
        b->sample[count++] = i;
    for (int k = 1; k <= SAXPY_MAX_SEGMENTS; k++) {
        int edge = saxpy_segment_of(n, SAXPY_MAX_SEGMENTS, k - 1).begin;
        b->sample[count++] = edge;
        b->sample[count++] = edge > 0 ? edge - 1 : n - 1;
    }
    b->samples = count;
    b->expected = malloc(sizeof(double) * (size_t)count);
    if (!b->sample || !b->expected)
        wb_fail("out of host memory");
    for (int j = 0; j < count; j++) {
        int i = b->sample[j];
        double v = b->pinned.y[i];
        for (int k = 0; k < b->cfg.repeat; k++)
            v += (double)b->cfg.a * b->pinned.x[i];
        b->expected[j] = v;
    }
}

/* Fails, naming `what`, unless result holds the expected values at the
 * sample's indices. */
static void check_result(const bench *b, const float *result, const char *what)
{
    float *got = malloc(sizeof(float) * (size_t)b->samples);
    if (!got)
        wb_fail("out of host memory");
    for (int j = 0; j < b->samples; j++)
        got[j] = result[b->sample[j]];
    double error = wb_rel_error(got, b->expected, (size_t)b->samples),
           allowed = ldexp(b->cfg.repeat, -24);
    if (!(error < allowed))
        wb_fail("%s computes wrong results (relative error %g on a sample, allowed %g): run "
                "the tests first", what, error, allowed);
    free(got);
}

/* Validate before timing: a fast wrong version is not a result. */
static void check_version(bench *b)
{
    saxpy_host *host = b->version == 0 ? &b->pageable : &b->pinned;
    memset(host->z, 0xFF, sizeof(float) * (size_t)host->n);
    run(b);
    char what[128];
    snprintf(what, sizeof what, "version %d (streams = %d, segments = %d)", b->version,
             b->cfg.streams, b->cfg.segments);
    check_result(b, host->z, what);
}

static double time_version(bench *b, int version, int streams, int segments, int reps)
{
    b->version = version;
    b->cfg.streams = version <= 1 ? 1 : streams;   // version 1 uses stream 0 only
    b->cfg.segments = version <= 1 ? 1 : segments;
    saxpy_timeline_free(b->tl);
    b->tl = version == 4 ? saxpy_timeline_new(b->cfg.segments) : NULL;
    check_version(b);
    /* One call per timed run: at the default 2^28 floats a call moves
     * 3 GiB across the host link, some 60 ms or more. */
    return wb_time_gpu(run, b, 2, reps).median_ms;
}

/* Appends version 4's last run to the timeline CSV. */
static void write_timeline(FILE *csv, const char *experiment, const bench *b)
{
    double ms[SAXPY_MAX_SEGMENTS][MARKS];
    int k, m;
    cudaError_t status = saxpy_timeline_read(b->tl, ms, &k, &m);
    if (status != cudaSuccess)
        wb_fail("version 4 did not record event %d of segment %d (%s)", m, k,
                cudaGetErrorName(status));
    static const char *const kinds[] = {"copy in", "kernel", "copy out"};
    for (k = 0; k < b->tl->segments; k++)
        for (int step = 0; step < 3; step++)
            fprintf(csv, "%s,%d,%d,%s,%.4f,%.4f\n", experiment, k, k % b->cfg.streams,
                    kinds[step], ms[k][step], ms[k][step + 1]);
}

/* Kernel time over the whole array at a given repeat. */
static double time_kernel(bench *b, int repeat, int reps)
{
    int saved = b->cfg.repeat;
    b->cfg.repeat = repeat;
    double ms = time_step(b, saxpy_segment_of(b->pinned.n, 1, 0), 1, reps);
    b->cfg.repeat = saved;
    return ms;
}

/* The repeat at which the kernel takes as long as the copy in, the slowest
 * copy: there overlap gains the most. Kernel time grows linearly with repeat
 * once the arithmetic, not memory, is the limit (from a few hundred on): fit
 * a line through two points, then correct once at the value found. */
static int calibrate_repeat(bench *b, double copy_in_ms, int reps)
{
    const int lo = 512, hi = 2048;
    double t_lo = time_kernel(b, lo, reps), t_hi = time_kernel(b, hi, reps);
    double per_repeat = (t_hi - t_lo) / (hi - lo);
    double r = hi + (copy_in_ms - t_hi) / per_repeat;
    r = r < lo ? lo : r;
    r *= copy_in_ms / time_kernel(b, (int)r, reps);
    int rounded = (int)lround(r / 8.0) * 8;
    return rounded > 0 ? rounded : 1;
}

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    enum cudaMemcpyKind kind;
} copy_job;

static void run_copy(void *context)
{
    copy_job *c = context;
    CUDA_CHECK(cudaMemcpy(c->dst, c->src, c->bytes, c->kind));
}

static double copy_gbps(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                        int reps)
{
    copy_job c = {dst, src, bytes, kind};
    return wb_gbps((double)bytes, wb_time_gpu(run_copy, &c, 1, reps).median_ms);
}

/* ------------------------------------------------------------ the tables */

/* Inputs: random, the same in pageable and pinned memory, and on the device. */
static void setup(bench *b, int n, int streams, int segments, int block)
{
    memset(b, 0, sizeof *b);
    wb_rng rng = wb_rng_for("streams bench");
    b->cfg = (saxpy_config){wb_rng_float(&rng, -2.0f, 2.0f), 1, streams, segments, block, false};
    b->pinned = (saxpy_host){n, host_alloc((size_t)n, true), host_alloc((size_t)n, true),
                             host_alloc((size_t)n, true)};
    b->pageable = (saxpy_host){n, host_alloc((size_t)n, false), host_alloc((size_t)n, false),
                               host_alloc((size_t)n, false)};
    size_t bytes = sizeof(float) * (size_t)n;
    wb_fill_floats((float *)b->pinned.x, (size_t)n, -1.0f, 1.0f, &rng);
    wb_fill_floats((float *)b->pinned.y, (size_t)n, -1.0f, 1.0f, &rng);
    memcpy((float *)b->pageable.x, b->pinned.x, bytes);
    memcpy((float *)b->pageable.y, b->pinned.y, bytes);
    memset(b->pageable.z, 0, bytes);   /* touch every page once, as the pinned one is */
    b->dev = saxpy_device_new(n, SAXPY_MAX_STREAMS);
    CUDA_CHECK(cudaMemcpy(b->dev->x, b->pinned.x, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b->dev->y, b->pinned.y, bytes, cudaMemcpyHostToDevice));
}

static void teardown(bench *b)
{
    saxpy_timeline_free(b->tl);
    saxpy_device_free(b->dev);
    free(b->sample);
    free(b->expected);
    for (int pinned = 0; pinned < 2; pinned++) {
        saxpy_host *h = pinned ? &b->pinned : &b->pageable;
        host_free((float *)h->x, pinned);
        host_free((float *)h->y, pinned);
        host_free(h->z, pinned);
    }
}

/* The pinned link's bandwidth each way, GB/s: the unified-memory yardstick. */
typedef struct {
    double h2d, d2h;
} link_gbps;

/* 1. Host <-> device bandwidth over up to 256 MiB; returns the pinned figures. */
static link_gbps bandwidth_table(bench *b, int reps)
{
    size_t bytes = sizeof(float) * (size_t)b->pinned.n;
    size_t copy_bytes = bytes < ((size_t)256 << 20) ? bytes : (size_t)256 << 20;
    char title[512];
    snprintf(title, sizeof title, "host <-> device bandwidth, %zu MiB per copy, %s, median of %d",
             copy_bytes >> 20, wb_device_info().name, reps);
    wb_table *table = wb_table_new("streams-bandwidth", title, "direction|host memory|GB/s");
    link_gbps link = {0.0, 0.0};
    for (int pinned = 0; pinned < 2; pinned++) {
        saxpy_host *h = pinned ? &b->pinned : &b->pageable;
        link.h2d = copy_gbps(b->dev->x, h->x, copy_bytes, cudaMemcpyHostToDevice, reps);
        link.d2h = copy_gbps(h->z, b->dev->y, copy_bytes, cudaMemcpyDeviceToHost, reps);
        const char *kind = pinned ? "pinned" : "pageable";
        wb_table_row(table, "host to device|%s|%.1f", kind, link.h2d);
        wb_table_row(table, "device to host|%s|%.1f", kind, link.d2h);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    return link;   // the pinned pair: the loop's last
}

/* 2. The intensity: the given repeat, or the one at which the kernel takes
 * as long as the copy in of the whole array. */
static void choose_repeat(bench *b, int repeat, int reps)
{
    stage_times whole = measure_stages(b, 1, reps);
    b->cfg.repeat = repeat ? repeat : calibrate_repeat(b, whole.in, reps);
    printf("\nrepeat = %d%s: whole-array copy in %.2f ms (%.1f GB/s), kernel %.2f ms, copy "
           "out %.2f ms\n", b->cfg.repeat, repeat ? " (given)" : " (measured: kernel = copy in)",
           whole.in, wb_gbps(2.0 * sizeof(float) * (double)b->pinned.n, whole.in),
           time_kernel(b, b->cfg.repeat, reps), whole.out);
    prepare_check(b);
}

/* The fastest overlapped run so far (versions 2 to 4), for the target. */
typedef struct {
    double ms, efficiency;
    int version, streams, segments;
} best_run;

static void consider(best_run *best, double ms, double ideal, int version, int streams,
                     int segments)
{
    if (ms < best->ms)
        *best = (best_run){ms, ideal / ms, version, streams, segments};
}

/* 3. The versions (all of them when only is WB_ALL_STAGES); returns version
 * 1's time (NaN when it did not run). */
static double versions_table(bench *b, int only, int streams, int segments, int reps,
                             best_run *best)
{
    char title[512];
    snprintf(title, sizeof title,
             "streams: n = %d floats, repeat = %d, median of %d; ideal = the three-stage "
             "pipeline from the measured stage times of one segment (both = a copy in and a "
             "copy out at once); efficiency = ideal / time",
             b->pinned.n, b->cfg.repeat, reps);
    wb_table *table = wb_table_new("streams-versions", title,
                                   "version|what|streams|segments|time per call (ms)|vs v0|vs v1|"
                                   "stages in/kernel/out, both (ms)|ideal (ms)|efficiency");
    double v0 = NAN, v1 = NAN;
    int first = only == WB_ALL_STAGES ? 0 : only, last = only == WB_ALL_STAGES ? 4 : only;
    for (int v = first; v <= last; v++) {
        double ms = time_version(b, v, streams, segments, reps);
        v0 = v == 0 ? ms : v0;
        v1 = v == 1 ? ms : v1;
        if (v == 0) {
            wb_table_row(table, "0|%s|1|1|%.1f|1.00|-|-|-|-", version_names[0], ms);
            continue;
        }
        stage_times st = measure_stages(b, b->cfg.segments, reps);
        double ideal = ideal_ms(st, b->cfg.segments);
        char stages[96];
        wb_table_row(table, "%d|%s|%d|%d|%.1f|%.2f|%.2f|%s|%.1f|%.2f", v, version_names[v],
                     b->cfg.streams, b->cfg.segments, ms, v0 / ms, v1 / ms,
                     stages_text(st, stages, sizeof stages), ideal, ideal / ms);
        if (v >= 2)
            consider(best, ms, ideal, v, b->cfg.streams, b->cfg.segments);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    return v1;
}

/* 4. Sweeps: segments at the given stream count, streams at the given
 * segment count, for versions 2 and 3. */
static void sweep_table(bench *b, int streams, int segments, int reps, best_run *best)
{
    char title[512];
    snprintf(title, sizeof title, "versions 2 and 3 over streams and segments (ms; "
             "efficiency in brackets), n = %d, repeat = %d", b->pinned.n, b->cfg.repeat);
    wb_table *table = wb_table_new("streams-sweep", title, "streams|segments|stages "
                                   "in/kernel/out, both (ms)|ideal (ms)|v2 depth first|"
                                   "v3 breadth first");
    static const int segment_counts[] = {4, 8, 16, 32, 64}, stream_counts[] = {2, 3, 8, 16};
    for (int i = 0; i < 5 + 4; i++) {
        int s = i < 5 ? streams : stream_counts[i - 5], m = i < 5 ? segment_counts[i] : segments;
        stage_times st = measure_stages(b, m, reps);
        double ideal = ideal_ms(st, m), ms[2];
        for (int v = 2; v <= 3; v++) {
            ms[v - 2] = time_version(b, v, s, m, reps);
            consider(best, ms[v - 2], ideal, v, s, m);
        }
        char stages[96];
        wb_table_row(table, "%d|%d|%s|%.1f|%.1f (%.2f)|%.1f (%.2f)", s, m,
                     stages_text(st, stages, sizeof stages), ideal, ms[0], ideal / ms[0], ms[1],
                     ideal / ms[1]);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
}

/* 5. The experiment: version 4 with a default-stream call after each kernel. */
static void implicit_sync_table(bench *b, int streams, int segments, double v1, int reps)
{
    b->cfg.default_stream_call = true;
    double serialised = time_version(b, 4, streams, segments, reps);
    b->cfg.default_stream_call = false;
    double ideal = ideal_ms(measure_stages(b, segments, reps), segments);
    char title[512];
    snprintf(title, sizeof title, "implicit synchronisation: version 4, %d streams, %d "
             "segments, with and without a cudaMemset on the default stream after each kernel",
             streams, segments);
    wb_table *table = wb_table_new("streams-implicit-sync", title,
                                   "case|time per call (ms)|vs v1|ideal (ms)|efficiency");
    double overlapped = time_version(b, 4, streams, segments, reps);
    wb_table_row(table, "overlapped|%.1f|%.2f|%.1f|%.2f", overlapped, v1 / overlapped, ideal,
                 ideal / overlapped);
    wb_table_row(table, "default-stream call|%.1f|%.2f|%.1f|%.2f", serialised,
                 v1 / serialised, ideal, ideal / serialised);
    wb_table_print(table, stdout);
    wb_table_free(table);
}

/* 6. Unified memory: the job from "the host has just written x and y" to
 * "the host can read the result", five ways. */
enum { UM_ON_DEMAND, UM_PREFETCH, UM_HINTS, UM_PAGEABLE, UM_PINNED, UM_VARIANTS };

static const char *const um_names[UM_VARIANTS] = {
    "managed, on demand (page faults)", "managed + prefetch (version 5)",
    "managed + hints (prefers host, GPU accessed-by)", "explicit copies, pageable (version 0)",
    "explicit copies, pinned (version 1)"};

typedef struct {
    bench *b;
    saxpy_device *managed;   /* x and y from cudaMallocManaged */
    int variant;
    float checksum;          /* what the host read of the result (kept, so that it is read) */
} um_job;

/* The host reads one float of every 4 KiB page of the result: after this,
 * every page of it is in host memory, however it got there. */
static float read_every_page(const float *result, int n)
{
    float sum = 0.0f;
    for (int i = 0; i < n; i += 4096 / (int)sizeof(float))
        sum += result[i];
    return sum;
}

static const float *um_result(const um_job *job)
{
    switch (job->variant) {
    case UM_PAGEABLE: return job->b->pageable.z;
    case UM_PINNED: return job->b->pinned.z;
    default: return job->managed->y;
    }
}

/* Untimed, before each run: the host writes the inputs of the managed
 * variants again (y was updated in place), which brings every page of x
 * and y back to host memory, wherever the last run left it. The explicit
 * variants read host arrays that never move. */
static void um_prepare(um_job *job)
{
    size_t bytes = sizeof(float) * (size_t)job->managed->n;
    if (job->variant <= UM_HINTS) {
        memcpy(job->managed->x, job->b->pinned.x, bytes);
        memcpy(job->managed->y, job->b->pinned.y, bytes);
    }
}

/* Timed: the job, then the host's read of the result. */
static void um_run(um_job *job)
{
    bench *b = job->b;
    saxpy_device *m = job->managed;
    switch (job->variant) {
    case UM_PREFETCH: saxpy_v5_managed(&b->cfg, m); break;
    case UM_PAGEABLE: saxpy_v0_sync(&b->cfg, b->dev, &b->pageable); break;
    case UM_PINNED: saxpy_v1_pinned(&b->cfg, b->dev, &b->pinned); break;
    default:   // on demand and under hints: the kernel alone touches the pages
        saxpy_launch(&b->cfg, m, saxpy_segment_of(m->n, 1, 0), m->stream[0]);
        CUDA_CHECK(cudaStreamSynchronize(m->stream[0]));
    }
    job->checksum += read_every_page(um_result(job), m->n);
}

/* The hints variant's advice on x and y: keep the pages in host memory, and
 * map them for the GPU, which then reads and writes them across the link
 * without a fault or a migration. set = false takes the advice back. */
static void um_advise(saxpy_device *m, bool set)
{
    int device;
    CUDA_CHECK(cudaGetDevice(&device));
    struct cudaMemLocation host = {cudaMemLocationTypeHost, 0};
    struct cudaMemLocation gpu = {cudaMemLocationTypeDevice, device};
    size_t bytes = sizeof(float) * (size_t)m->n;
    float *arrays[2] = {m->x, m->y};
    for (int k = 0; k < 2; k++) {
        CUDA_CHECK(cudaMemAdvise(arrays[k], bytes, set ? cudaMemAdviseSetPreferredLocation
                                                       : cudaMemAdviseUnsetPreferredLocation,
                                 host));
        CUDA_CHECK(cudaMemAdvise(arrays[k], bytes,
                                 set ? cudaMemAdviseSetAccessedBy : cudaMemAdviseUnsetAccessedBy,
                                 gpu));
    }
}

/* One warm-up run, checked, then reps timed runs, each prepared untimed;
 * returns the median time in ms. The events bracket host work (the waits,
 * the host's read), so a time is the wall time the host saw. (Page faults
 * are not counted here: the GPU's need a profiler, nsys, and the operating
 * system's count for the process, getrusage, showed none even where the
 * host reads pages that the kernel left on the GPU.) */
static double time_um_variant(um_job *job, int reps)
{
    cudaEvent_t start, stop;
    double *ms = malloc(sizeof(double) * (size_t)reps);
    if (!ms)
        wb_fail("out of host memory");
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int r = -1; r < reps; r++) {
        um_prepare(job);
        CUDA_CHECK(cudaEventRecord(start, 0));
        um_run(job);
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        if (r < 0) {
            check_result(job->b, um_result(job), um_names[job->variant]);
            continue;
        }
        float t = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
        ms[r] = t;
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    double median = wb_median(ms, reps);
    free(ms);
    return median;
}

/* The table: every variant (or only `only`), at `repeat` FMAs per element,
 * against the pinned link measured in this run. Every variant moves 12
 * bytes per element across the link (x and y in, the result out). The last
 * column is the time those bytes take as pinned copies, in and then out, one
 * direction at a time (version 1 without its kernel), over the variant's
 * time: above 1, the variant beat such copies, by using both directions of
 * the link at once or with copies faster than the bandwidth table's. */
static void managed_table(bench *b, int repeat, int only, link_gbps link, int reps)
{
    int device, concurrent = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device));
    if (!concurrent) {
        printf("\nunified memory: not timed: this system does not let the host and the GPU use "
               "managed memory at the same time (concurrentManagedAccess = 0)\n");
        return;
    }
    saxpy_config saved = b->cfg;
    b->cfg.repeat = repeat;
    b->cfg.streams = b->cfg.segments = 1;
    prepare_check(b);
    int n = b->pinned.n;
    um_job job = {b, saxpy_managed_new(n, 1), 0, 0.0f};
    double in = 8.0 * n, out = 4.0 * n, serial_ms = in / (link.h2d * 1e6) + out / (link.d2h * 1e6);
    char title[512];
    snprintf(title, sizeof title,
             "unified memory: n = %d floats, repeat = %d, median of %d; from the inputs in host "
             "memory to the result read on the host; serial copies: %.1f ms (the 12 bytes per "
             "element at the pinned rates above, %.1f GB/s in, then %.1f out)", n, repeat, reps,
             serial_ms, link.h2d, link.d2h);
    wb_table *table = wb_table_new("streams-managed", title,
                                   "variant|time per call (ms)|GB/s across the link|"
                                   "vs serial copies");
    for (int v = 0; v < UM_VARIANTS; v++) {
        if (only != WB_ALL_STAGES && v != only)
            continue;
        job.variant = v;
        if (v == UM_HINTS)
            um_advise(job.managed, true);
        double ms = time_um_variant(&job, reps);
        if (v == UM_HINTS)
            um_advise(job.managed, false);
        wb_table_row(table, "%s|%.1f|%.1f|%.2f", um_names[v], ms, wb_gbps(in + out, ms),
                     serial_ms / ms);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    saxpy_device_free(job.managed);
    b->cfg = saved;
    prepare_check(b);
}

/* Version 4's events: its last overlapped run now, the default-stream
 * experiment once more at the end (timeline_end). */
static FILE *timeline_begin(const char *path, const bench *b)
{
    FILE *csv = fopen(path, "w");
    if (!csv)
        wb_fail("cannot write the timeline to %s", path);
    fprintf(csv, "experiment,segment,stream,kind,start_ms,end_ms\n");
    write_timeline(csv, "overlap", b);
    return csv;
}

static void timeline_end(FILE *csv, const char *path, bench *b)
{
    b->cfg.default_stream_call = true;
    run(b);
    write_timeline(csv, "default-stream call", b);
    fclose(csv);
    printf("timeline written to %s (draw it: python3 labs/06-streams/timeline.py %s)\n", path,
           path);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    int n = 1 << 28, repeat = 0, streams = 4, segments = 32, reps = 5, block = 256;
    int only = WB_ALL_STAGES, variant = WB_ALL_STAGES;
    double target_efficiency = 0.9, target_speedup = 1.8;
    const char *timeline = NULL;
    const wb_option options[] = {
        {"stage", "V", WB_INT, &only, 0, 5,
         "time version V only; 5: the unified-memory table only (default: every version, "
         "the sweeps, the unified-memory table and the targets)"},
        {"n", "N", WB_INT, &n, 1, INT_MAX, "floats"},
        {"block", "B", WB_INT, &block, 1, 1024, "threads per block of the kernel"},
        {"reps", "K", WB_INT, &reps, 1, 1e6, "timed runs after a warm-up, median reported"},
        WB_REFUSED_OPTION("target",
         "this lab has two targets: --target-efficiency F and --target-speedup X"),
        {"repeat", "R", WB_INT, &repeat, 0, INT_MAX,
         "FMAs per element (default 0: measured, so that the kernel takes as long as the copy "
         "in; 1 in the unified-memory table)"},
        {"variant", "U", WB_INT, &variant, 0, UM_VARIANTS - 1,
         "the unified-memory table's variant U only (0 on demand, 1 prefetch, 2 hints, 3 and 4 "
         "explicit copies: pageable, pinned), for a profiler (default: all)"},
        {"streams", "S", WB_INT, &streams, 1, SAXPY_MAX_STREAMS, "streams"},
        {"segments", "M", WB_INT, &segments, 1, SAXPY_MAX_SEGMENTS, "segments"},
        {"timeline", "FILE", WB_TEXT, &timeline, 0, 0,
         "version 4's events as CSV (default $WB_RESULTS_DIR/streams-timeline.csv when set); "
         "draw them with labs/06-streams/timeline.py"},
        {"target-efficiency", "F", WB_REAL, &target_efficiency, 0, 10,
         "fails unless the best overlapped version reaches overlap efficiency F (default 0.9)"},
        {"target-speedup", "X", WB_REAL, &target_speedup, 0, 1e6,
         "... and is X times faster than version 1 (default 1.8)"},
        {0}};
    wb_bench_options(argc, argv,
                     "Times the five versions, then sweeps streams and segments for versions 2\n"
                     "and 3, runs the implicit-synchronisation experiment, and times the job on\n"
                     "managed memory (stage 5) against explicit copies.",
                     options);
    wb_bench_need_gpu();
    char default_timeline[4096];
    const char *results = getenv("WB_RESULTS_DIR");
    if (!timeline && results && *results) {
        snprintf(default_timeline, sizeof default_timeline, "%s/streams-timeline.csv", results);
        timeline = default_timeline;
    }

    wb_bench_launch("kernel in blocks of %d threads; %d streams x %d segments (the sweep: 2 "
                    "to 16 streams, 4 to 64 segments)|%s; the lecture's streams and segments, "
                    "and the sweep shows where they stop paying on this GPU", block, streams,
                    segments,
                    block == 256 ? "8 warps a block, the usual start" : "--block");
    wb_bench_working_set("x and y on the device", 2.0 * sizeof(float) * (double)n);
    bench b;
    setup(&b, n, streams, segments, block);
    link_gbps link = bandwidth_table(&b, reps);
    if (only == 5) {
        managed_table(&b, repeat ? repeat : 1, variant, link, reps);
        teardown(&b);
        return 0;
    }
    choose_repeat(&b, repeat, reps);
    best_run best = {INFINITY, 0.0, 0, 0, 0};
    double v1 = versions_table(&b, only, streams, segments, reps, &best);
    if (only != WB_ALL_STAGES)
        return 0;
    FILE *csv = timeline ? timeline_begin(timeline, &b) : NULL;
    sweep_table(&b, streams, segments, reps, &best);
    implicit_sync_table(&b, streams, segments, v1, reps);
    if (csv)
        timeline_end(csv, timeline, &b);
    managed_table(&b, repeat ? repeat : 1, variant, link, reps);

    bool met = wb_bench_target(best.efficiency >= target_efficiency &&
                                   v1 / best.ms >= target_speedup,
                               "best overlapped version (v%d, %d streams, %d segments, %.1f ms): "
                               "efficiency %.3f (target %.2f), %.2fx version 1 (target %.2fx)",
                               best.version, best.streams, best.segments, best.ms, best.efficiency,
                               target_efficiency, v1 / best.ms, target_speedup);
    teardown(&b);
    return met ? 0 : 1;
}
