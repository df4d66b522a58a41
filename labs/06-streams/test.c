/*
 * Lab 06 tests. Four kinds of check, in this order:
 *
 *   correctness  every version against a CPU reference, on sizes that no
 *                segment count divides (down to n = 1, where most segments
 *                are empty), for many (streams, segments) pairs. Each case
 *                runs twice with new inputs on the same device buffers, so a
 *                kernel that does not wait for its copy sees old data. Every
 *                array has guard zones (host and device): a copy or a kernel
 *                past either end of a segment shows.
 *   structure    one stream held back while a version runs (hold_stream):
 *                the segments of the other streams must still finish. That
 *                fails, whatever the timing, for the classic mistakes that
 *                serialise the streams: work on the default stream (a
 *                kernel without a stream, cudaMemcpy instead of
 *                cudaMemcpyAsync), a synchronisation after each segment, a
 *                segment on another stream than k % S.
 *   the timeline version 4's events: in stream order, each stream idle at
 *                the start (its first mark does not wait for another
 *                stream's copy), and the copy in of segment k + 1 done while
 *                the kernel of segment k still runs, with one hardware queue
 *                (CUDA_DEVICE_MAX_CONNECTIONS=1), where issuing the work
 *                depth first would serialise it.
 *
 *   managed      version 5 (stage 5) on managed memory: the result as the
 *                host reads it the moment the version returns (a version
 *                that does not wait hands back old values, and the test
 *                tells that from a wrong result by waiting itself), where
 *                CUDA recorded the last prefetch of each array (x to the
 *                GPU, y back to the host, every page of both), and a launch
 *                that CUDA refuses, which must be reported.
 *
 * Then one timing table, graded on version 3.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(streams, .timeout = 60);

/* ---------------------------------------------------------- problems */

/* Floats of guard zone before and after each host array, all-ones bytes. */
#define HOST_GUARD 1024

/* Two sets of inputs and their expected outputs, in host memory of one kind. */
typedef struct {
    int n;
    bool pinned;
    float a;
    int repeat;
    float *block[3];             /* host_alloc'd: guard, n floats, guard */
    float *x, *y, *z;            /* what the versions see: inside block[] */
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
    problem p = {n, pinned, 0.0f, repeat, {NULL}, NULL, NULL, NULL, {{NULL}}, {NULL}};
    for (int b = 0; b < 3; b++) {
        p.block[b] = host_alloc((size_t)n + 2 * HOST_GUARD, pinned);
        memset(p.block[b], 0xFF, sizeof(float) * ((size_t)n + 2 * HOST_GUARD));
    }
    p.x = p.block[0] + HOST_GUARD;
    p.y = p.block[1] + HOST_GUARD;
    p.z = p.block[2] + HOST_GUARD;
    wb_rng rng = wb_rng_for(name);
    p.a = wb_rng_float(&rng, -2.0f, 2.0f);
    for (int run = 0; run < 2; run++) {
        float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
        double *e = malloc(sizeof(double) * (size_t)n);
        cr_assert(x && y && e, "out of host memory for n = %d", n);
        wb_fill_floats(x, (size_t)n, -1.0f, 1.0f, &rng);
        wb_fill_floats(y, (size_t)n, -1.0f, 1.0f, &rng);
        for (int i = 0; i < n; i++)
            e[i] = repeat == 1 ? fmaf(p.a, x[i], y[i]) : y[i] + (double)repeat * p.a * x[i];
        p.input[run][0] = x;
        p.input[run][1] = y;
        p.expected[run] = e;
    }
    return p;
}

static void free_problem(problem *p)
{
    for (int b = 0; b < 3; b++)
        host_free(p->block[b], p->pinned);
    for (int run = 0; run < 2; run++) {
        free(p->input[run][0]);
        free(p->input[run][1]);
        free(p->expected[run]);
    }
}

/* Puts the inputs of `run` where the versions read them and poisons z. */
static void load_run(problem *p, int run)
{
    size_t bytes = sizeof(float) * (size_t)p->n;
    memcpy(p->x, p->input[run][0], bytes);
    memcpy(p->y, p->input[run][1], bytes);
    memset(p->z, 0xFF, bytes);   /* NaN: elements never copied back show */
}

/* saxpy_device_new's buffers x and y replaced by guarded ones (poisoned
 * with NaN, in guard zones that wb_guarded_check reads back). */
static saxpy_device *guarded_device(int n, int streams)
{
    saxpy_device *dev = saxpy_device_new(n, streams);
    CUDA_CHECK(cudaFree(dev->x));
    CUDA_CHECK(cudaFree(dev->y));
    dev->x = wb_guarded_malloc(sizeof(float) * (size_t)n);
    dev->y = wb_guarded_malloc(sizeof(float) * (size_t)n);
    return dev;
}

static void free_guarded_device(saxpy_device *dev)
{
    wb_guarded_free(dev->x);
    wb_guarded_free(dev->y);
    dev->x = dev->y = NULL;   /* cudaFree(NULL) does nothing */
    saxpy_device_free(dev);
}

static void run_version(int version, const saxpy_config *cfg, saxpy_device *dev,
                        saxpy_host *host, saxpy_timeline *tl)
{
    switch (version) {
    case 0: saxpy_v0_sync(cfg, dev, host); break;
    case 1: saxpy_v1_pinned(cfg, dev, host); break;
    case 2: saxpy_v2_depth_first(cfg, dev, host); break;
    case 3: saxpy_v3_breadth_first(cfg, dev, host); break;
    default: saxpy_v4_timeline(cfg, dev, host, tl); break;
    }
}

/* ------------------------------------------------------------- checks */

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
        cr_assert_fail("%s: no element of host->z was written back: does the version copy "
                       "dev->y back into host->z, and wait for the copy before it returns? "
                       WB_SEED_HINT, what, wb_seed());
    cr_assert(unwritten == 0,
              "%s: %d of %d elements of host->z were never written back, the first at index %d "
              "in segment %d: is every segment (the last, shorter group too) copied back, "
              "and does the version wait for the copies before it returns? " WB_SEED_HINT,
              what, unwritten, n, first, segment_holding(n, segments, first), wb_seed());
    cr_assert(computed < 0,
              "%s: element %d (segment %d) came back NaN from the device, computed from "
              "device memory that was still poisoned: did its kernel run before its copy in "
              "had finished (another stream?), or read past its segment? " WB_SEED_HINT, what,
              computed, segment_holding(n, segments, computed), wb_seed());
}

/* The guard zones of host->z, observed: a copy out past either end of a
 * segment writes into them. */
static void check_host_guards(const problem *p, const char *what)
{
    char label[300];
    snprintf(label, sizeof label, "%s: host->z guard zones", what);
    static float zone[2][HOST_GUARD];
    memcpy(zone[0], p->z - HOST_GUARD, sizeof zone[0]);
    memcpy(zone[1], p->z + p->n, sizeof zone[1]);
    wb_observe(label, zone, sizeof zone);
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < HOST_GUARD; i++)
            cr_assert(host_poison(zone[side][i]),
                      "%s: host->z[%d] was written, %s the %d elements of the array: a copy "
                      "out with the wrong offset or size, or a segment loop that goes one too "
                      "far " WB_SEED_HINT, what, side ? p->n + i : i - HOST_GUARD,
                      side ? "past the end of" : "before the start of", p->n, wb_seed());
}

/* An element of host->z that came back as its own y input, where a * x
 * moves it by more than the rounding of `repeat` steps could take back: the
 * kernel's result never reached it. Its segment's kernel ran before the
 * copy in (on another stream, which does not wait for it), or the copy out
 * before the kernel, or no kernel ran on it. */
static void assert_kernel_result_copied(const problem *p, int run, int segments,
                                        const char *what)
{
    for (int i = 0; i < p->n; i++) {
        double e = p->expected[run][i], y = p->y[i];
        bool y_differs = fabs(e - y) > 2 * tolerance(p->repeat) * (fabs(e) + fabs(y));
        cr_assert(!(y_differs && memcmp(&p->z[i], &p->y[i], sizeof(float)) == 0),
                  "%s: host->z[%d] (segment %d) came back as y's input, %g, not a * x + y = %g: "
                  "the kernel's result never reached it. Its kernel ran before its copy in, or "
                  "its copy out before its kernel (a kernel on another stream than its "
                  "segment's copies: segment k's three steps all go on stream k %% S), or no "
                  "kernel ran on its segment " WB_SEED_HINT,
                  what, i, segment_holding(p->n, segments, i), p->z[i], e, wb_seed());
    }
}

/* Whether every element of z is within float rounding of what `form`
 * gives for its x and y: wrong results are compared with what the classic
 * mistakes compute. */
typedef double (*result_form)(double a, int repeat, double x, double y);

static double x_alone(double a, int repeat, double x, double y)
{
    (void)a, (void)repeat, (void)y;
    return x;
}

static double y_from_x(double a, int repeat, double x, double y)
{
    (void)y;
    return x + repeat * a * x;
}

static double x_and_y_swapped(double a, int repeat, double x, double y)
{
    return x + repeat * a * y;
}

static bool every_element_is(const problem *p, result_form form)
{
    double allowed = fmax(1e-5, 4.0 * tolerance(p->repeat));
    for (int i = 0; i < p->n; i++) {
        double alt = form(p->a, p->repeat, p->x[i], p->y[i]);
        if (!(fabs(p->z[i] - alt) <= allowed * (1.0 + fabs(alt))))
            return false;
    }
    return true;
}

/* The most times the kernel's a * x was added to an element, when every
 * element is y plus a whole number (at least 1) of them; 0 otherwise. */
static int kernel_runs_per_element(const problem *p)
{
    int most = 0;
    for (int i = 0; i < p->n; i++) {
        double step = p->repeat * (double)p->a * p->x[i];
        if (fabs(step) < 1e-3)
            continue;   /* too small to count */
        double runs = (p->z[i] - p->y[i]) / step;
        if (!(runs > 0.5 && fabs(runs - nearbyint(runs)) < 1e-3))
            return 0;
        most = (int)fmax(most, nearbyint(runs));
    }
    return most;
}

/* A sentence naming the classic mistake that wrong (finite) results match,
 * or NULL. Called only once the result has failed. */
static const char *wrong_result_pattern(const problem *p)
{
    if (every_element_is(p, x_alone))
        return "host->z came back as x's input: the copy out read dev->x. The kernel updates "
               "dev->y in place (y = a * x + y): the result is in dev->y, copy that back";
    if (every_element_is(p, y_from_x))
        return "host->z is a * x + x: dev->y was copied in from host->x (a copy in pasted from "
               "x's and half edited): copy host->y into dev->y";
    if (every_element_is(p, x_and_y_swapped))
        return "host->z is a * y + x: x and y were swapped in the copies in (host->x goes to "
               "dev->x, host->y to dev->y)";
    if (kernel_runs_per_element(p) > 1)
        return "some elements had a * x added more than once (host->z = y + m a x, m a whole "
               "number up to 2 or more): the kernel ran more than once on them, launched "
               "twice, or each segment's kernel run on more than its segment (saxpy_launch "
               "with seg, not the whole array)";
    return NULL;
}

/* Everything one run of a version left behind: host->z exact or within the
 * tolerance, no guard zone touched. */
static void check_run(const problem *p, saxpy_device *dev, int run, int segments,
                      const char *what)
{
    wb_observe(what, p->z, sizeof(float) * (size_t)p->n);
    assert_no_nan(p->z, p->n, segments, what);
    assert_kernel_result_copied(p, run, segments, what);
    double tol = tolerance(p->repeat);
    const char *pattern = NULL;
    if (!(wb_rel_error(p->z, p->expected[run], (size_t)p->n) < tol))
        pattern = wrong_result_pattern(p);
    char named[600];
    snprintf(named, sizeof named, "%s%s%s", what, pattern ? "; " : "", pattern ? pattern : "");
    wb_assert_rel_error_below(p->z, p->expected[run], (size_t)p->n, tol, named);
    check_host_guards(p, what);
    wb_guarded_check(dev->x, what);
    wb_guarded_check(dev->y, what);
}

static void describe(char *what, size_t len, int version, const problem *p, int streams,
                     int segments, const char *tail)
{
    snprintf(what, len,
             "version %d (n = %d, %s memory, streams = %d, segments = %d, repeat = %d), %s",
             version, p->n, p->pinned ? "pinned" : "pageable", streams, segments, p->repeat,
             tail);
}

/* Runs one version twice on p (the second time with new inputs and without
 * clearing the device) and checks both results. */
static void check_twice(int version, problem *p, saxpy_device *dev, int streams, int segments)
{
    saxpy_config cfg = {p->a, p->repeat, streams, segments, 256, false};
    saxpy_host host = {p->n, p->x, p->y, p->z};
    saxpy_timeline *tl = version == 4 ? saxpy_timeline_new(segments) : NULL;
    for (int run = 0; run < 2; run++) {
        load_run(p, run);
        run_version(version, &cfg, dev, &host, tl);
        char what[256];
        describe(what, sizeof what, version, p, streams, segments,
                 run ? "second run, new inputs (old ones still on the device)" : "first run");
        check_run(p, dev, run, segments, what);
    }
    saxpy_timeline_free(tl);
}

static void check_one(int version, int n, bool pinned, int repeat, int streams, int segments)
{
    char name[96];
    snprintf(name, sizeof name, "streams v%d n=%d r=%d", version, n, repeat);
    problem p = make_problem(n, pinned, repeat, name);
    saxpy_device *dev = guarded_device(n, streams);
    check_twice(version, &p, dev, streams, segments);
    free_guarded_device(dev);
    free_problem(&p);
}

/* ------------------------------------------------- holding a stream back */

/* Each stream its own hardware queue (the default number of queues, 8, set
 * in case the environment says otherwise; CUDA reads it at its first call):
 * two streams that shared one would wait for each other's head. */
WB_GPU_SUITE_WITH_ENV(streams_own_queues, "CUDA_DEVICE_MAX_CONNECTIONS", "8", .timeout = 60);

/* How long a held stream waits for the others before giving up. */
#define HOLD_DEADLINE_S 2.0

/* A host function at the head of one stream: that stream can do nothing
 * until it returns, and it returns once every segment of the other streams
 * is back in host->z (or at the deadline). Streams from cudaStreamCreate do
 * not wait for each other, so a version whose streams are independent
 * finishes the other segments while this one is held. Anything that waits
 * for the held stream before they are done never lets it go: work on the
 * default stream (which waits for every ordinary stream), a synchronisation
 * of the device or of that stream, a segment of another stream put on it. */
typedef struct {
    const problem *p;
    int streams, segments;
    int held;       /* the held stream's index, or -1: wait for every segment */
    int released;   /* 1: the other segments arrived, 0: the deadline passed */
} hold;

static bool others_arrived(const hold *h)
{
    const uint32_t *z = (const uint32_t *)h->p->z;
    for (int k = 0; k < h->segments; k++) {
        if (k % h->streams == h->held)
            continue;
        saxpy_segment seg = saxpy_segment_of(h->p->n, h->segments, k);
        for (int i = seg.begin; i < seg.begin + seg.count; i++)
            if (__atomic_load_n(&z[i], __ATOMIC_RELAXED) == 0xFFFFFFFFu)
                return false;   /* the copy engine writes z behind our back */
    }
    return true;
}

static void CUDART_CB hold_stream(void *arg)
{
    hold *h = arg;
    double deadline = 1e-3 * wb_host_ms() + HOLD_DEADLINE_S;
    struct timespec pause = {0, 20000};
    while (!others_arrived(h)) {
        if (1e-3 * wb_host_ms() > deadline) {
            h->released = 0;
            return;
        }
        nanosleep(&pause, NULL);
    }
    h->released = 1;
}

/* In the checking build (meson -Dchecking=true), saxpy_launch synchronises
 * the whole device after every launch, so no stream is independent of
 * another there. Found out once: one element copied, computed and copied
 * back on dev->stream[0] while a stream of the test is held. */
static void skip_if_launches_synchronise(void)
{
    /* compute-sanitizer (it sets this variable in the process it watches)
     * may serialise the streams' work: initcheck does. */
    if (getenv("NV_SANITIZER_INJECTION_PORT_BASE"))
        cr_skip_test("under compute-sanitizer, which may run the streams' work one after "
                     "another: independence cannot be seen here");
    problem p = make_problem(1, true, 1, "streams probe");
    saxpy_device *dev = saxpy_device_new(1, 1);
    saxpy_config cfg = {p.a, 1, 1, 1, 256, false};
    saxpy_segment all = {0, 1};
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreate(&stream));
    hold h = {&p, 1, 1, -1, 0};
    /* One launch first, outside the hold: the kernel's module is loaded on
     * first use (lazy loading), which must not happen while a stream is
     * held, or the probe would blame the build for the loader's wait. On
     * the problem's inputs, so that it reads nothing uninitialised. */
    CUDA_CHECK(cudaMemcpy(dev->x, p.x, sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dev->y, p.y, sizeof(float), cudaMemcpyHostToDevice));
    saxpy_launch(&cfg, dev, all, dev->stream[0]);
    CUDA_CHECK(cudaDeviceSynchronize());
    load_run(&p, 0);
    CUDA_CHECK(cudaLaunchHostFunc(stream, hold_stream, &h));
    CUDA_CHECK(cudaMemcpyAsync(dev->x, p.x, sizeof(float), cudaMemcpyHostToDevice, dev->stream[0]));
    CUDA_CHECK(cudaMemcpyAsync(dev->y, p.y, sizeof(float), cudaMemcpyHostToDevice, dev->stream[0]));
    saxpy_launch(&cfg, dev, all, dev->stream[0]);
    CUDA_CHECK(cudaMemcpyAsync(p.z, dev->y, sizeof(float), cudaMemcpyDeviceToHost, dev->stream[0]));
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaStreamDestroy(stream));
    saxpy_device_free(dev);
    free_problem(&p);
    if (!h.released)
        cr_skip_test("every launch synchronises the device in this build (-Dchecking=true): "
                     "streams cannot be independent here; run the normal build");
}

/* Runs `version` with stream `held` of dev held back (or, with held = -1, a
 * stream of the test's own), checks the result, and that the other streams
 * did not wait for it. */
static void check_with_stream_held(int version, problem *p, saxpy_device *dev, int streams,
                                   int segments, int held)
{
    saxpy_config cfg = {p->a, p->repeat, streams, segments, 256, false};
    saxpy_host host = {p->n, p->x, p->y, p->z};
    cudaStream_t stream = held >= 0 ? dev->stream[held] : NULL;
    if (held < 0)
        CUDA_CHECK(cudaStreamCreate(&stream));
    hold h = {p, streams, segments, held, 0};
    load_run(p, 0);
    CUDA_CHECK(cudaLaunchHostFunc(stream, hold_stream, &h));
    run_version(version, &cfg, dev, &host, NULL);
    CUDA_CHECK(cudaStreamSynchronize(stream));   /* hold_stream has returned */
    char what[256], label[300];
    if (held >= 0) {
        char tail[64];
        snprintf(tail, sizeof tail, "stream %d held back", held);
        describe(what, sizeof what, version, p, streams, segments, tail);
    } else {
        describe(what, sizeof what, version, p, streams, segments,
                 "another stream of the program busy");
    }
    snprintf(label, sizeof label, "%s: the other streams finished", what);
    int released = wb_observe_int(label, h.released);
    if (held >= 0)
        cr_assert(released,
                  "%s: the segments on the other streams did not finish within %.0f s: they "
                  "waited for stream %d. The streams must not wait for each other: segment k "
                  "goes on stream k %% S only, nothing goes on the default stream (no kernel "
                  "without a stream, no cudaMemcpy: cudaMemcpyAsync on the segment's stream), "
                  "and nothing synchronises after each segment; wait once, at the end "
                  WB_SEED_HINT, what, HOLD_DEADLINE_S, held, wb_seed());
    else
        cr_assert(released,
                  "%s: version %d waited for another stream of the program before its own "
                  "result was back: something in it runs on the default stream, which waits "
                  "for every stream (a kernel launched without a stream, cudaMemcpy instead "
                  "of cudaMemcpyAsync on dev->stream[0]) " WB_SEED_HINT,
                  what, version, wb_seed());
    check_run(p, dev, 0, segments, what);
    if (held < 0)
        CUDA_CHECK(cudaStreamDestroy(stream));
}

/* Versions 2 and 3 with each of their streams held back in turn: 3 streams
 * and 7 segments, so that each stream has segments and the last group is
 * short. (Version 4 shares version 3's code but records its origin event on
 * the default stream, which would wait for the held stream; its own tests
 * read the events instead.) */
static void check_streams_independent(int version)
{
    const int n = 300007, streams = 3, segments = 7;
    skip_if_launches_synchronise();
    problem p = make_problem(n, true, 1, "streams held back");
    saxpy_device *dev = guarded_device(n, streams);
    for (int held = 0; held < streams; held++)
        check_with_stream_held(version, &p, dev, streams, segments, held);
    free_guarded_device(dev);
    free_problem(&p);
}

/* ------------------------------------------------------------- stage 0 */

static const int sizes[] = {1, 31, 1000, 100003, (1 << 22) + 3};
#define SIZES ((int)(sizeof sizes / sizeof sizes[0]))

Test(streams, stage0_sizes, .description = "version 0 on odd sizes, exact")
{
    for (int i = 0; i < SIZES; i++)
        check_one(0, sizes[i], false, 1, 1, 1);
}

Test(streams, stage0_repeat, .description = "version 0 with repeat > 1, within r * 2^-24")
{
    check_one(0, 100003, false, 2, 1, 1);
    check_one(0, 100003, false, 1000, 1, 1);
}

/* ------------------------------------------------------------- stage 1 */

static int memory_type(const char *what, const void *p)
{
    struct cudaPointerAttributes attributes;
    CUDA_CHECK(cudaPointerGetAttributes(&attributes, p));
    return wb_observe_int(what, (int)attributes.type);
}

Test(streams, stage1_host_alloc, .description = "host_alloc pins memory only when asked")
{
    float *pinned = host_alloc(1000, true), *pageable = host_alloc(1000, false);
    cr_assert(wb_observe_int("host_alloc returned two pointers", pinned && pageable),
              "host_alloc returned NULL");
    int pinned_type = memory_type("pinned", pinned);
    cr_expect(pinned_type == cudaMemoryTypeHost,
              "host_alloc(1000, pinned = true) returned memory that CUDA does not know as "
              "page-locked (%s): allocate it with cudaMallocHost (or cudaHostAlloc)",
              pinned_type == cudaMemoryTypeManaged
                  ? "managed memory instead of pinned: cudaMallocManaged's pages move between "
                    "host and GPU, copies from them are not the pinned kind"
              : pinned_type == cudaMemoryTypeDevice ? "device memory instead of pinned host memory"
                                                    : "pageable instead of pinned");
    cr_expect(memory_type("pageable", pageable) != cudaMemoryTypeHost,
              "host_alloc(1000, pinned = false) should return ordinary (pageable) memory");
    host_free(pinned, true);
    host_free(pageable, false);
}

Test(streams, stage1_sizes, .description = "version 1 on odd sizes, exact, and with repeat > 1")
{
    for (int i = 0; i < SIZES; i++)
        check_one(1, sizes[i], true, 1, 1, 1);
    check_one(1, 100003, true, 37, 1, 1);
}

Test(streams_own_queues, stage1_own_stream,
     .description = "version 1 uses only dev->stream[0]: another busy stream does not stop it")
{
    const int n = (1 << 20) + 3;
    skip_if_launches_synchronise();
    problem p = make_problem(n, true, 1, "streams v1 own stream");
    saxpy_device *dev = guarded_device(n, 1);
    check_with_stream_held(1, &p, dev, 1, 1, -1);
    free_guarded_device(dev);
    free_problem(&p);
}

/* ---------------------------------------------------- stages 2, 3 and 4 */

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
        saxpy_device *dev = guarded_device(n_values[i], SAXPY_MAX_STREAMS);
        for (int s = 0; s < (int)(sizeof stream_counts / sizeof *stream_counts); s++)
            for (int g = 0; g < (int)(sizeof segment_counts / sizeof *segment_counts); g++)
                check_twice(version, &p, dev, stream_counts[s], segment_counts[g]);
        free_guarded_device(dev);
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

/* Versions 2, 3 and 4 each on the combinations and on large segments with
 * repeat > 1; versions 2 and 3 with a stream held back below. */
#define VERSION_TESTS(N)                                                                   \
    Test(streams, stage##N##_combinations,                                                 \
         .description = "version " #N " for many (streams, segments)")                     \
    {                                                                                      \
        check_combinations(N);                                                             \
    }                                                                                      \
    Test(streams, stage##N##_large_and_repeat) { check_large_and_repeat(N); }

VERSION_TESTS(2)
VERSION_TESTS(3)
VERSION_TESTS(4)

Test(streams_own_queues, stage2_streams_independent,
     .description = "version 2 finishes the other streams' segments while one is held back")
{
    check_streams_independent(2);
}

Test(streams_own_queues, stage3_streams_independent,
     .description = "version 3 finishes the other streams' segments while one is held back")
{
    check_streams_independent(3);
}

/* --------------------------------------------------------- the timeline */

static const char *const mark_names[MARKS] = {"before its copy in", "after its copy in",
                                              "after its kernel", "after its copy out"};

/* Runs version 4 once on 2^24 floats (with 8 segments, 16 MB to copy in per
 * segment: a few hundred microseconds, far longer than issuing the work),
 * checks the result, and returns the observed times of its events. */
static void run_timeline(int streams, int segments, int repeat, const char *name,
                         double (*ms)[MARKS])
{
    const int n = 1 << 24;
    problem p = make_problem(n, true, repeat, name);
    saxpy_device *dev = guarded_device(n, streams);
    saxpy_config cfg = {p.a, repeat, streams, segments, 256, false};
    saxpy_host host = {n, p.x, p.y, p.z};
    saxpy_timeline *tl = saxpy_timeline_new(segments);
    load_run(&p, 0);
    saxpy_v4_timeline(&cfg, dev, &host, tl);
    char what[256], label[300];
    describe(what, sizeof what, 4, &p, streams, segments, "timeline");
    check_run(&p, dev, 0, segments, what);

    int k = 0, m = 0;
    cudaError_t status = saxpy_timeline_read(tl, ms, &k, &m);
    snprintf(label, sizeof label, "%s: events readable", what);
    status = (cudaError_t)wb_observe_int(label, (int)status);
    snprintf(label, sizeof label, "%s: the first unreadable event", what);
    int bad[2] = {k, m};
    wb_observe(label, bad, sizeof bad);
    cr_assert(status == cudaSuccess,
              "%s: the event of segment %d %s cannot be read (%s): was it recorded with "
              "cudaEventRecord on the segment's stream? " WB_SEED_HINT, what, bad[0],
              mark_names[bad[1]], cudaGetErrorName(status), wb_seed());
    snprintf(label, sizeof label, "%s: event times", what);
    wb_observe(label, ms, sizeof(double) * MARKS * (size_t)segments);
    saxpy_timeline_free(tl);
    free_guarded_device(dev);
    free_problem(&p);
}

Test(streams, stage4_events,
     .description = "every event recorded on its segment's stream, in stream order")
{
    const int streams = 4, segments = 8;
    double ms[SAXPY_MAX_SEGMENTS][MARKS];
    run_timeline(streams, segments, 1, "streams events", ms);
    /* Events on one stream complete in order; 1 us of slack for their
     * resolution. */
    const double slack = 1e-3;
    for (int k = 0; k < segments; k++) {
        for (int m = 0; m < MARKS; m++)
            cr_assert(ms[k][m] >= -slack && (m == 0 || ms[k][m] >= ms[k][m - 1] - slack),
                      "segment %d: the event %s completed at %.3f ms, before the event "
                      "%s (%.3f ms): are the marks in the right places? " WB_SEED_HINT, k,
                      mark_names[m], ms[k][m], m ? mark_names[m - 1] : "recorded at the start",
                      m ? ms[k][m - 1] : 0.0, wb_seed());
        if (k >= streams)
            cr_assert(ms[k][MARK_COPY_IN_START] >= ms[k - streams][MARK_COPY_OUT_DONE] - slack,
                      "segment %d started its copy in at %.3f ms, before segment %d on the "
                      "same stream finished (%.3f ms): is segment k on stream k %% S? "
                      WB_SEED_HINT, k, ms[k][MARK_COPY_IN_START], k - streams,
                      ms[k - streams][MARK_COPY_OUT_DONE], wb_seed());
    }
    /* At the start every stream is idle, so the first mark of segments 1 to
     * S - 1 completes as soon as it is issued, long before segment 0's 16 MB
     * copy in is done. A mark that waits for it was recorded on another
     * stream (the default stream waits for all of them), or its stream was
     * busy with segment 0's work. */
    for (int k = 1; k < streams; k++)
        cr_assert(ms[k][MARK_COPY_IN_START] < ms[0][MARK_COPY_IN_DONE],
                  "segment %d's mark before its copy in completed at %.3f ms, after segment "
                  "0's copy in was done (%.3f ms), although its stream had nothing to do "
                  "before: record each mark on the segment's own stream (not stream 0), and "
                  "give segment k stream k %% S " WB_SEED_HINT, k, ms[k][MARK_COPY_IN_START],
                  ms[0][MARK_COPY_IN_DONE], wb_seed());
}

/* repeat 16384: a segment's kernel runs about ten times longer than the
 * copy out of its 8 MB, so the time between the marks around the kernel is
 * far longer than the time from there to the mark after the copy out. A
 * mark "after the kernel" recorded before the launch completes once the
 * copy in is done, and the kernel's time shows up as the copy out's. (With
 * every stream on a hardware queue of its own, as here: with one queue for
 * all, each mark holds up the launches issued after it.) */
Test(streams, stage4_kernel_marks,
     .description = "the mark after each kernel completes when its kernel does")
{
    const int streams = 4, segments = 8;
    double ms[SAXPY_MAX_SEGMENTS][MARKS];
    run_timeline(streams, segments, 16384, "streams kernel marks", ms);
    for (int k = 0; k < segments; k++) {
        double kernel = ms[k][MARK_KERNEL_DONE] - ms[k][MARK_COPY_IN_DONE];
        double copy_out = ms[k][MARK_COPY_OUT_DONE] - ms[k][MARK_KERNEL_DONE];
        cr_assert(kernel >= 0.5 * copy_out,
                  "segment %d: %.3f ms between the marks after its copy in and after its "
                  "kernel, but %.3f ms from there to the mark after its copy out, although "
                  "its kernel (repeat 16384) runs several times longer than that copy: the "
                  "mark after the kernel was recorded before saxpy_launch. Record it right "
                  "after the launch, on the segment's stream " WB_SEED_HINT,
                  k, kernel, copy_out, wb_seed());
    }
}

/* Given code (saxpy_v4_timeline's check): version 4 needs a timeline with
 * exactly one entry per segment; one entry fewer, one more, or none at all
 * is refused with a message that says so. */
Test(streams, given_refuses_bad_arguments,
     .description = "version 4 refuses a timeline that does not have one entry per segment")
{
    const int n = 4, segments = 2;
    saxpy_device *dev = saxpy_device_new(n, 1);
    float *x = calloc(n, sizeof(float)), *y = calloc(n, sizeof(float));
    float *z = calloc(n, sizeof(float));
    cr_assert(x && y && z, "out of host memory");
    saxpy_config cfg = {1.0f, 1, 1, segments, 32, false};
    saxpy_host host = {n, x, y, z};
    saxpy_timeline *fewer = saxpy_timeline_new(segments - 1);
    saxpy_timeline *more = saxpy_timeline_new(segments + 1);
    saxpy_timeline *same = saxpy_timeline_new(segments);
    wb_expect_error("saxpy_v4_timeline(tl = NULL): a timeline is needed", "one entry per segment",
                    saxpy_v4_timeline(&cfg, dev, &host, NULL));
    wb_expect_error("saxpy_v4_timeline(tl of segments - 1 entries): tl->segments must equal "
                    "cfg->segments", "one entry per segment",
                    saxpy_v4_timeline(&cfg, dev, &host, fewer));
    wb_expect_error("saxpy_v4_timeline(tl of segments + 1 entries): tl->segments must equal "
                    "cfg->segments", "one entry per segment",
                    saxpy_v4_timeline(&cfg, dev, &host, more));
    /* One entry per segment: accepted (an error fails the test; stage 4's
     * tests check what it computes). */
    saxpy_v4_timeline(&cfg, dev, &host, same);
    CUDA_CHECK(cudaDeviceSynchronize());
    saxpy_timeline_free(fewer);
    saxpy_timeline_free(more);
    saxpy_timeline_free(same);
    saxpy_device_free(dev);
    free(x);
    free(y);
    free(z);
}

/* One hardware queue for all streams, as on the GPUs the lecture was
 * written for. Work then starts in the order it was issued, and an
 * operation that must wait for its own stream holds up everything issued
 * after it. */
WB_GPU_SUITE_WITH_ENV(streams_one_queue, "CUDA_DEVICE_MAX_CONNECTIONS", "1", .timeout = 60);

Test(streams_one_queue, stage4_overlap,
     .description = "with one hardware queue, the copy in of segment k + 1 overlaps kernel k")
{
    /* repeat 16384: a segment's kernel runs several times longer than its
     * copy in (about 5x on an H100), so breadth first, the copies in of a
     * group are issued before its kernels and the copy of segment k + 1 is
     * done while kernel k still runs. Depth first, with one queue, the copy
     * of segment k + 1 is issued behind kernel k and its copy out, and
     * waits for both. */
    const int streams = 4, segments = 8;
    double ms[SAXPY_MAX_SEGMENTS][MARKS];
    run_timeline(streams, segments, 16384, "streams overlap", ms);
    for (int k = 0; k + 1 < streams; k++)
        cr_assert(ms[k + 1][MARK_COPY_IN_DONE] < ms[k][MARK_KERNEL_DONE],
                  "with one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1), the copy in of "
                  "segment %d was done at %.3f ms, after the kernel of segment %d (%.3f ms): "
                  "no overlap. Version 4 must issue breadth first: all copies in of a group, "
                  "then its kernels, then its copies out (depth first, each copy waits for "
                  "the kernel issued before it), each on the segment's stream, with no "
                  "synchronisation in between " WB_SEED_HINT, k + 1,
                  ms[k + 1][MARK_COPY_IN_DONE], k, ms[k][MARK_KERNEL_DONE], wb_seed());
}

/* ------------------------------------------------------------- stage 5 */

/* Prefetching managed memory to a GPU needs a system where the host and the
 * device may use it at the same time (concurrentManagedAccess): Linux on
 * Pascal or newer. Elsewhere (Windows, WSL) the stage cannot run. */
static void skip_without_concurrent_managed_access(void)
{
    int device = 0, concurrent = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device));
    if (!concurrent)
        cr_skip_test("this system does not let the host and the GPU use managed memory at the "
                     "same time (concurrentManagedAccess = 0, as on Windows and WSL): managed "
                     "memory cannot be prefetched to the GPU here");
}

/* Copies y into out starting from its end. The kernel writes the last
 * elements last, so a host that reads without waiting sees them old. */
static void read_backwards(float *out, const float *y, int n)
{
    for (int i = n - 1; i >= 0; i--)
        out[i] = y[i];
}

/* Puts run `run`'s inputs into the managed x and y (the host writes them:
 * their pages move to host memory) and runs version 5. */
static void run_managed(const problem *p, saxpy_device *dev, int run, int block_size)
{
    size_t bytes = sizeof(float) * (size_t)p->n;
    memcpy(dev->x, p->input[run][0], bytes);
    memcpy(dev->y, p->input[run][1], bytes);
    saxpy_config cfg = {p->a, p->repeat, 1, 1, block_size, false};
    saxpy_v5_managed(&cfg, dev);
}

/* The result as the host read it the moment version 5 returned, and again
 * after the test's own cudaDeviceSynchronize: right only the second time
 * means that the version returned before its work was done. */
static void check_managed_result(const problem *p, saxpy_device *dev, int run, const char *what)
{
    size_t bytes = sizeof(float) * (size_t)p->n;
    float *at_return = malloc(bytes), *after_sync = malloc(bytes);
    cr_assert(at_return && after_sync, "out of host memory for n = %d", p->n);
    read_backwards(at_return, dev->y, p->n);
    CUDA_CHECK(cudaDeviceSynchronize());
    memcpy(after_sync, dev->y, bytes);
    char label[300];
    snprintf(label, sizeof label, "%s: dev->y when version 5 returned", what);
    wb_observe(label, at_return, bytes);
    snprintf(label, sizeof label, "%s: dev->y after the test's cudaDeviceSynchronize", what);
    wb_observe(label, after_sync, bytes);
    double tol = tolerance(p->repeat);
    cr_assert(wb_rel_error(at_return, p->expected[run], (size_t)p->n) < tol ||
                  !(wb_rel_error(after_sync, p->expected[run], (size_t)p->n) < tol),
              "%s: dev->y was wrong when version 5 returned, and right once the test had "
              "waited for the GPU: the host read the result while the kernel (or the prefetch "
              "back) was still running. Wait for the stream (cudaStreamSynchronize) after the "
              "last prefetch, before returning; a wait before the launch does not cover the "
              "kernel " WB_SEED_HINT, what, wb_seed());
    wb_assert_rel_error_below(at_return, p->expected[run], (size_t)p->n, tol, what);
    free(at_return);
    free(after_sync);
}

/* Version 5 twice on n elements, the second time with new inputs in the
 * same managed arrays (make_problem gives the inputs and the expected
 * results; its host arrays go unused here). */
static void check_managed(int n, int repeat, int block_size)
{
    char name[96], what[256];
    snprintf(name, sizeof name, "streams v5 n=%d r=%d", n, repeat);
    problem p = make_problem(n, false, repeat, name);
    saxpy_device *dev = saxpy_managed_new(n, 1);
    for (int run = 0; run < 2; run++) {
        run_managed(&p, dev, run, block_size);
        snprintf(what, sizeof what, "version 5 (n = %d, managed memory, repeat = %d, block = %d), "
                 "%s", n, repeat, block_size, run ? "second run, new inputs" : "first run");
        check_managed_result(&p, dev, run, what);
    }
    saxpy_device_free(dev);
    free_problem(&p);
}

Test(streams, stage5_sizes, .description = "version 5 on odd sizes, exact, and with repeat > 1")
{
    skip_without_concurrent_managed_access();
    for (int i = 0; i < SIZES; i++)
        check_managed(sizes[i], 1, 256);
    check_managed(100003, 37, 128);
}

Test(streams, stage5_waits, .description = "version 5 returns only when the host may read y")
{
    /* repeat 2^16: the kernel runs for milliseconds, and its last elements
     * are written last, while the host reads them first: a version that
     * returns before the kernel is done hands back old values. */
    skip_without_concurrent_managed_access();
    check_managed(1 << 22, 1 << 16, 256);
}

static bool host_location(int type)
{
    return type == cudaMemLocationTypeHost || type == cudaMemLocationTypeHostNuma ||
           type == cudaMemLocationTypeHostNumaCurrent;
}

static bool device_location(int type) { return type == cudaMemLocationTypeDevice; }

/* Where the last prefetch of every page of [p, p + bytes) went (a
 * cudaMemLocationType), as CUDA recorded it; cudaMemLocationTypeInvalid
 * when some page was never prefetched, or pages went to different places. */
static int last_prefetch(const void *p, size_t bytes, const char *what)
{
    enum cudaMemLocationType type = cudaMemLocationTypeInvalid;
    CUDA_CHECK(cudaMemRangeGetAttribute(&type, sizeof type,
                                        cudaMemRangeAttributeLastPrefetchLocationType, p, bytes));
    return wb_observe_int(what, (int)type);
}

/* The last prefetch of the whole array, and of its first 4 KiB page only
 * (n is far larger), name the mistake: a range prefetched only in part was
 * given a count of floats where bytes were wanted. */
static void check_prefetched(const char *array, const float *data, int n, bool to_gpu)
{
    char label[200];
    snprintf(label, sizeof label, "last prefetch of all of %s", array);
    int all = last_prefetch(data, sizeof(float) * (size_t)n, label);
    snprintf(label, sizeof label, "last prefetch of %s's first page", array);
    int first = last_prefetch(data, 4096, label);
    bool (*right)(int) = to_gpu ? device_location : host_location;
    bool (*wrong)(int) = to_gpu ? host_location : device_location;
    const char *where = to_gpu ? "to the GPU before the kernel"
                               : "back to the host after the kernel";
    cr_assert(right(all) || !right(first),
              "only the start of %s was prefetched %s: cudaMemPrefetchAsync counts bytes, "
              "n * sizeof(float), not n elements " WB_SEED_HINT, array, where, wb_seed());
    cr_assert(right(all) || !wrong(first),
              "%s went to the wrong place last: it must be prefetched %s (%s) " WB_SEED_HINT,
              array, where, to_gpu ? "{cudaMemLocationTypeDevice, the device}"
                                   : "{cudaMemLocationTypeHost, 0}", wb_seed());
    cr_assert(right(all), "%s was never prefetched %s: without it the %s faults its pages over "
              "one by one " WB_SEED_HINT, array, where, to_gpu ? "kernel" : "host", wb_seed());
}

/* The prefetches and launches version 5 issued, in order, from the call
 * log (wb_test.h): "x>gpu", "y>host", ... for a prefetch of a whole array
 * ("x(part)>gpu" for part of it, "other>gpu" for any other range), "kernel"
 * for a launch, each followed by its stream ("@stream0" for dev->stream[0],
 * "@default" for the default stream, "@other"), separated by spaces. */
static void describe_calls(const saxpy_device *dev, char *text, size_t capacity)
{
    size_t count, more, used = 0, whole = sizeof(float) * (size_t)dev->n;
    const wb_runtime_call *call = wb_call_log(&count, &more);
    text[0] = '\0';
    for (size_t k = 0; k < count && used < capacity; k++) {
        cudaStream_t s = call[k].stream;
        const char *stream = s == dev->stream[0] ? "stream0"
                             : s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread
                                 ? "default"
                                 : "other";
        const char *array = call[k].ptr == dev->x ? "x" : call[k].ptr == dev->y ? "y" : "other";
        const char *part = call[k].bytes < whole && strcmp(array, "other") != 0 ? "(part)" : "";
        const char *where = call[k].location_type == cudaMemLocationTypeDevice ? "gpu" : "host";
        if (call[k].kind == WB_CALL_LAUNCH)
            used += snprintf(text + used, capacity - used, "%skernel@%s", k ? " " : "", stream);
        else
            used += snprintf(text + used, capacity - used, "%s%s%s>%s@%s", k ? " " : "", array,
                             part, where, stream);
    }
}

/* Whether `call` ("y>gpu") stands in text before its first "kernel"
 * (before = true), or after its last one. */
static bool issued(const char *text, const char *call, bool before)
{
    const char *first_kernel = strstr(text, "kernel"), *last_kernel = first_kernel;
    for (const char *k = first_kernel; k; k = strstr(k + 1, "kernel"))
        last_kernel = k;
    if (!first_kernel)
        return false;
    if (!before)
        return strstr(last_kernel, call) != NULL;
    for (const char *c = strstr(text, call); c; c = strstr(c + 1, call))
        if (c < first_kernel)
            return true;
    return false;
}

/* Each prefetch where the lesson puts it: x and y to the GPU before the
 * kernel, y back to the host after it. The results and the last prefetch
 * of each array (check_prefetched) cannot show it: y never prefetched to the
 * GPU, or prefetched back before the kernel, leaves the kernel to fault its
 * pages over one at a time, right results, only slower. */
static void check_prefetch_order(const saxpy_device *dev)
{
    char calls[WB_CALL_LOG_SIZE * 16];
    describe_calls(dev, calls, sizeof calls);
    wb_observe_str("version 5's prefetches and launches, in order", calls, sizeof calls);
    cr_assert(strstr(calls, "kernel"), "version 5 issued no kernel launch that the test saw "
              "(its calls: %s) " WB_SEED_HINT, calls, wb_seed());
    cr_assert(!strstr(calls, "@default") && !strstr(calls, "@other"),
              "version 5 issued a prefetch or its kernel on another stream than dev->stream[0] "
              "(its calls, in order: %s): issue all of them on dev->stream[0] (lab.h), whose "
              "order is what makes the kernel wait for its prefetches and the prefetch back "
              "wait for the kernel; the legacy default stream waits for every stream of the "
              "program, another stream for none of them " WB_SEED_HINT, calls, wb_seed());
    static const struct {
        const char *call;
        bool before;
        const char *why;
    } wanted[] = {
        {"x>gpu", true, "the kernel reads all of x: without it, it faults x's pages over one at "
                        "a time"},
        {"y>gpu", true, "the kernel reads and writes all of y: without it, it faults y's pages "
                        "over one at a time (the result stays right, only the time shows it)"},
        {"y>host", false, "issued before the kernel, the prefetch back moves y's pages to the "
                          "host while the kernel still needs them: the kernel faults them back, "
                          "and the host faults them over again"},
    };
    for (size_t k = 0; k < sizeof wanted / sizeof wanted[0]; k++) {
        bool anywhere = strstr(calls, wanted[k].call) != NULL;
        cr_assert(issued(calls, wanted[k].call, wanted[k].before),
                  "version 5: the prefetch %s %s the kernel was %s; %s (its calls, in order: "
                  "%s) " WB_SEED_HINT, wanted[k].call,
                  wanted[k].before ? "before" : "after",
                  anywhere ? (wanted[k].before ? "issued only after the kernel"
                                               : "issued before the kernel, not after")
                           : "never issued",
                  wanted[k].why, calls, wb_seed());
    }
}

Test(streams, stage5_prefetch,
     .description = "version 5 prefetches x and y to the GPU, and y back, whole arrays")
{
    /* 16 MB per array: a count of floats instead of bytes leaves three
     * quarters of each array's pages unprefetched. */
    const int n = (1 << 22) + 3;
    skip_without_concurrent_managed_access();
    problem p = make_problem(n, false, 1, "streams v5 prefetch");
    saxpy_device *dev = saxpy_managed_new(n, 1);
    wb_call_log_clear();
    run_managed(&p, dev, 0, 256);
    check_managed_result(&p, dev, 0, "version 5 (n = 2^22 + 3, managed memory), prefetches");
    /* What CUDA recorded of the prefetches: x's last one went to the GPU
     * (nothing brings it back), y's last one to the host; then the order
     * they were issued in, around the kernel. */
    check_prefetched("dev->x", dev->x, n, true);
    check_prefetched("dev->y", dev->y, n, false);
    check_prefetch_order(dev);
    saxpy_device_free(dev);
    free_problem(&p);
}

Test(streams, stage5_launch_checked,
     .description = "version 5 reports a launch that CUDA refuses")
{
    /* The given check leaves the block size to CUDA: 1025 threads is one
     * more than a block may have, so the launch fails at once, and only a
     * check right after it (CUDA_CHECK_LAUNCH, whose cudaGetLastError
     * reports it) sees that error. Which error CUDA names differs between
     * drivers (cudaErrorInvalidConfiguration, or cudaErrorInvalidValue as
     * on the H100's driver 580), so the test asks only who reported it. */
    const int n = 1000;
    skip_without_concurrent_managed_access();
    saxpy_device *dev = saxpy_managed_new(n, 1);
    memset(dev->x, 0, sizeof(float) * n);
    memset(dev->y, 0, sizeof(float) * n);
    saxpy_config cfg = {1.0f, 1, 1, 1, 1025, false};
    wb_expect_error("saxpy_v5_managed with 1025 threads per block, which CUDA refuses to launch "
                    "(is the launch followed by CUDA_CHECK_LAUNCH()?)",
                    "cudaGetLastError() failed", saxpy_v5_managed(&cfg, dev));
    saxpy_device_free(dev);
}

/* Given code (saxpy_check_managed, which version 5 calls first): device
 * state from cudaMalloc is refused with a message that says why. */
Test(streams, given_refuses_unmanaged,
     .description = "version 5 refuses x and y that are not managed memory")
{
    skip_without_concurrent_managed_access();
    saxpy_device *dev = saxpy_device_new(4, 1);
    saxpy_config cfg = {1.0f, 1, 1, 1, 32, false};
    wb_expect_error("saxpy_v5_managed on device state from saxpy_device_new (cudaMalloc)",
                    "must be managed memory", saxpy_v5_managed(&cfg, dev));
    saxpy_device_free(dev);
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

/* The graded time: version 3, 2^24 floats, r = 16, 4 streams, 16 segments.
 * Each timed run makes TIMED_CALLS calls, each on host arrays and device
 * buffers of its own: before the run (fresh_calls) each call gets a, x and
 * y drawn fresh from the run's seed and a poisoned z, and after it
 * (check_calls) a sample of each z is checked against the CPU's value,
 * recomputed from the inputs' hash. A version that kept a result from an
 * earlier call, or skipped a call, shows as a wrong or unwritten z. */
#define TIMED_N (1 << 24)
#define TIMED_REPEAT 16
#define TIMED_RUNS 5
/* 2 calls of about 3 ms (the reference on the H100: the bus, not the GPU,
 * sets it), so that a timed run lasts about 6 ms: the grader's hand-shake
 * around it then costs under 1%. */
#define TIMED_CALLS 2
#define CHECKED_PER_CALL 1024   /* elements of each z, at positions drawn from the seed */

typedef struct {
    int calls;
    saxpy_config cfg[TIMED_CALLS];
    saxpy_device *dev[TIMED_CALLS];
    float *x[TIMED_CALLS], *y[TIMED_CALLS], *z[TIMED_CALLS];   /* pinned host memory */
    uint64_t seed_x[TIMED_CALLS], seed_y[TIMED_CALLS];        /* this run's inputs */
    size_t positions[CHECKED_PER_CALL];
    float got[CHECKED_PER_CALL];
} timed_calls;

static void run_timed_calls(void *context)
{
    timed_calls *t = context;
    for (int k = 0; k < t->calls; k++) {
        saxpy_host host = {TIMED_N, t->x[k], t->y[k], t->z[k]};
        saxpy_v3_breadth_first(&t->cfg[k], t->dev[k], &host);
    }
}

static void fresh_calls(void *context, int repetition, uint64_t seed)
{
    timed_calls *t = context;
    (void)repetition;
    for (int k = 0; k < t->calls; k++) {
        t->cfg[k].a = wb_hash_float(seed, 3 * (uint64_t)k, -2.0f, 2.0f);
        t->seed_x[k] = wb_hash_u64(seed, 3 * (uint64_t)k + 1);
        t->seed_y[k] = wb_hash_u64(seed, 3 * (uint64_t)k + 2);
        for (size_t i = 0; i < TIMED_N; i++) {
            t->x[k][i] = wb_hash_float(t->seed_x[k], i, -1.0f, 1.0f);
            t->y[k][i] = wb_hash_float(t->seed_y[k], i, -1.0f, 1.0f);
        }
        memset(t->z[k], 0xFF, sizeof(float) * TIMED_N);   /* NaN: never written back */
    }
}

/* Each sampled element within the rounding of its r steps: each rounds by
 * at most 2^-24 of a partial sum no larger than |y| + r |a x|. */
static void check_calls(void *context, int repetition)
{
    timed_calls *t = context;
    for (int k = 0; k < t->calls; k++) {
        char what[96];
        snprintf(what, sizeof what, "timed run %d of %d, call %d of %d: version 3's z",
                 repetition + 1, TIMED_RUNS, k + 1, t->calls);
        size_t count = wb_sample_positions(t->positions, CHECKED_PER_CALL, TIMED_N,
                                           t->seed_x[k] ^ t->seed_y[k]);
        for (size_t j = 0; j < count; j++)
            t->got[j] = t->z[k][t->positions[j]];
        wb_observe(what, t->got, sizeof(float) * count);
        for (size_t j = 0; j < count; j++) {
            size_t i = t->positions[j];
            double a = t->cfg[k].a, x = wb_hash_float(t->seed_x[k], i, -1.0f, 1.0f),
                   y = wb_hash_float(t->seed_y[k], i, -1.0f, 1.0f);
            double expected = y + TIMED_REPEAT * a * x;
            double allowed = tolerance(TIMED_REPEAT) * (fabs(y) + TIMED_REPEAT * fabs(a * x));
            cr_assert(fabs(t->got[j] - expected) <= allowed,
                      "%s[%zu] = %g, expected %g: %s " WB_SEED_HINT, what, i, t->got[j],
                      expected,
                      host_poison(t->got[j])
                          ? "never written back: each timed run must make every call, each on "
                            "its own inputs"
                          : "not this run's result: each call must copy in its own x and y and "
                            "compute z from them when it is made, never reuse an earlier result",
                      wb_seed());
        }
    }
}

/* The graded time, observed; *calls: the calls of each timed run. */
static wb_timing graded_version3(int *calls)
{
    const int streams = 4, segments = 16;
    timed_calls *t = calloc(1, sizeof *t);
    cr_assert(t, "out of host memory");
    /* Each call's device buffers are x and y (128 MB): two of them fit in
     * half of any GPU of 1 GB or more; a smaller one gets a single call, a
     * shorter run, of which the grader's hand-shake is a larger part. */
    t->calls = wb_buffer_sets(TIMED_CALLS, 2 * sizeof(float) * (size_t)TIMED_N);
    for (int k = 0; k < t->calls; k++) {
        t->cfg[k] = (saxpy_config){0.0f, TIMED_REPEAT, streams, segments, 256, false};
        t->dev[k] = saxpy_device_new(TIMED_N, streams);
        t->x[k] = host_alloc(TIMED_N, true);
        t->y[k] = host_alloc(TIMED_N, true);
        t->z[k] = host_alloc(TIMED_N, true);
    }
    /* The warm-up's inputs; every timed run gets its own (fresh_calls). */
    wb_rng warm_up = wb_rng_for("streams timing, warm-up");
    fresh_calls(t, -1, wb_rng_u64(&warm_up));
    /* One call moves 12 bytes per element across the bus (x and y in, z
     * out) and does 2 r flops per element; the floor the grader derives
     * from them (device copy bandwidth, FP32 peak) is far below what the
     * bus allows, so it is sound. */
    wb_timing timing = wb_time_gpu_reps(run_timed_calls, t, 1, TIMED_RUNS, t->calls,
                                        (wb_rep_checks){fresh_calls, check_calls});
    timing = wb_observe_timing("version 3, 2^24 floats", timing, 12.0 * TIMED_N,
                               2.0 * TIMED_REPEAT * TIMED_N);
    for (int k = 0; k < t->calls; k++) {
        saxpy_device_free(t->dev[k]);
        host_free(t->x[k], true);
        host_free(t->y[k], true);
        host_free(t->z[k], true);
    }
    *calls = t->calls;
    free(t);
    return timing;
}

Test(streams, timing_versions, .description = "the five versions at 2^24 floats",
     .timeout = 120)
{
    const int n = TIMED_N, streams = 4, segments = 16, repeat = TIMED_REPEAT, graded = 3;
    size_t bytes = sizeof(float) * (size_t)n;
    wb_timing t[5];
    int calls;
    /* The graded time first: the first one observed. */
    t[graded] = graded_version3(&calls);
    /* The others, only shown, on one set of inputs. */
    problem p = make_problem(n, true, repeat, "streams timing");
    load_run(&p, 0);
    /* Version 0 reads the same inputs from pageable memory. */
    saxpy_host pageable = {n, p.input[0][0], p.input[0][1], host_alloc((size_t)n, false)};
    saxpy_device *dev = saxpy_device_new(n, streams);
    for (int version = 0; version <= 4; version++) {
        if (version == graded)
            continue;
        timed_call c = {version, {p.a, repeat, streams, segments, 256, false}, dev,
                        version == 0 ? pageable : (saxpy_host){n, p.x, p.y, p.z},
                        version == 4 ? saxpy_timeline_new(segments) : NULL};
        memset(c.host.z, 0xFF, bytes);
        t[version] = wb_time_gpu(run_timed, &c, 1, 5);
        char what[64];
        snprintf(what, sizeof what, "the timed version %d", version);
        wb_observe(what, c.host.z, bytes);
        wb_assert_rel_error_below(c.host.z, p.expected[0], (size_t)n, tolerance(repeat), what);
        saxpy_timeline_free(c.tl);
        snprintf(what, sizeof what, "time of version %d", version);
        wb_observe(what, &t[version], sizeof t[version]);
    }
    char title[160];
    snprintf(title, sizeof title, "streams: n = 2^24 floats, repeat = 16, 4 streams, 16 segments "
             "(median of 5; version 3: of %d runs of %d calls, on fresh inputs)", TIMED_RUNS,
             calls);
    wb_table *table = wb_table_new("streams", title,
                                   "version|host memory|time (ms)|speedup over v0");
    for (int version = 0; version <= 4; version++)
        wb_table_row(table, "%d|%s|%.2f|%.2f", version, version == 0 ? "pageable" : "pinned",
                     t[version].median_ms, t[0].median_ms / t[version].median_ms);
    wb_table_print(table, stdout);
    wb_table_free(table);
    saxpy_device_free(dev);
    host_free(pageable.z, false);
    free_problem(&p);
}
