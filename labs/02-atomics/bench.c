/*
 * Lab 02 benchmark: every stage's versions under high contention (one
 * counter, list or lock for the whole grid) and low contention (thousands),
 * with throughput and the speedup over the first version of the stage.
 * `atomics-bench-reference --help` for the options (common/bench.h). Exits 1 when a target
 * of the lab is missed:
 *   - the per-warp worklist push is at least 10x faster than one atomic per
 *     item, all threads pushing into one list;
 *   - the per-block sum reads 2^26 ints (more on a GPU whose L2 they would
 *     fill more than a quarter of) at >= 85% of the copy bandwidth.
 * Each timed run makes as many calls back to back as last about 1 ms
 * (WB_MIN_RUN_MS); the tables give the median per call.
 */
#include <limits.h>
#include <stdlib.h>

#include "bench.h"
#include "lab.h"
#include "workbook.h"

static int reps = 20, block_size = 256;

/* ------------------------------------------------------------ one job */

typedef struct {
    int stage, version, slots;   /* slots: counters, lists, locks or anchors */
    int n;                       /* threads, elements or inserts */
    reduce_op op;
    int *a, *b, *c;              /* device buffers of the stage */
    tally *tallies;
    int capacity;
} job;

static void run(void *context)
{
    job *j = context;
    switch (j->stage) {
    case 0:
        (j->version ? counter_atomic : counter_racy)(j->a, j->slots, j->n / block_size, block_size);
        break;
    case 1:
        reduce_atomic(j->a, j->n, j->b, j->slots, j->op, (reduce_version)j->version, block_size);
        break;
    case 2:
        locked_tally(j->a, j->n, j->tallies, j->b, j->slots, (lock_kind)j->version, block_size);
        break;
    case 3:
        if (j->version == 0)
            single_per_grid(j->a, j->b, j->c, j->n / block_size, block_size);
        else
            single_per_block(j->b, j->c, j->n / block_size, block_size);
        break;
    case 4:
        worklist_push(j->a, j->n, j->b, j->c, j->slots, j->capacity, (push_version)j->version,
                      block_size);
        break;
    case 5:
        list_insert(j->a, j->slots, j->n, block_size);
        break;
    default:   /* c: keep, a flag per thread */
        locked_list(j->a, j->b, j->c, j->slots, j->n, block_size);
        break;
    }
}

/* Per call, from runs of as many calls as last WB_MIN_RUN_MS: every call
 * starts its counters, lists and locks afresh, so repeating it measures the
 * same work. */
static double time_ms(job *j)
{
    return wb_time_gpu_for_ms(run, j, reps, WB_MIN_RUN_MS, NULL).median_ms;
}

static int *device_ints(size_t n)
{
    int *p = NULL;
    CUDA_CHECK(cudaMalloc((void **)&p, sizeof(int) * n));
    return p;
}

/* Frees a job's device buffers; those its stage left NULL are skipped by
 * cudaFree. */
static void free_job(job *j)
{
    CUDA_CHECK(cudaFree(j->a));
    CUDA_CHECK(cudaFree(j->b));
    CUDA_CHECK(cudaFree(j->c));
    CUDA_CHECK(cudaFree(j->tallies));
}

static int first_int(const int *device)
{
    int v;
    CUDA_CHECK(cudaMemcpy(&v, device, sizeof v, cudaMemcpyDeviceToHost));
    return v;
}

/* Random ints on the device. */
static int *random_ints(int n, int lo, int hi, const char *stream)
{
    int *host = malloc(sizeof(int) * (size_t)n), *device = device_ints((size_t)n);
    if (!host)
        wb_fail("out of host memory for %d ints", n);
    wb_rng rng = wb_rng_for(stream);
    wb_fill_ints(host, (size_t)n, lo, hi, &rng);
    CUDA_CHECK(cudaMemcpy(device, host, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice));
    free(host);
    return device;
}

/* ----------------------------------------------------------- the stages */

#define HIGH 1   /* one counter / list / lock for the grid */

/* The last timed run's result must be right: a fast wrong kernel is no
 * result. The tests check every detail; this catches a broken build. */
static void expect(bool ok, const char *what)
{
    if (!ok)
        wb_fail("%s gave a wrong result; run the tests first "
                "(meson test --suite atomics)", what);
}

static void stage0(int n)
{
    int low = 1 << 16;
    job j = {.stage = 0, .n = n / block_size * block_size, .a = device_ints(low)};
    wb_table *t = wb_table_new("atomics-stage0", "stage 0: counter, one increment per thread",
                               "version|counters|time per call (ms)|M increments/s|"
                               "final x[0]|speedup");
    for (int c = 0; c < 2; c++) {
        int slots = c == 0 ? HIGH : low;
        double base = 0;
        for (j.version = 1; j.version >= 0; j.version--) {
            j.slots = slots;
            double ms = time_ms(&j);
            base = j.version == 1 ? ms : base;
            // Thread g adds to counter g % slots: counter 0 gets the threads
            // 0, slots, 2 slots, ... (one, when there are fewer threads than
            // counters).
            int expected = (j.n + slots - 1) / slots;
            expect(!j.version || first_int(j.a) == expected, "counter_atomic");
            wb_table_row(t, "%s|%d|%.3f|%.0f|%d of %d|%.1f", j.version ? "atomicAdd" : "racy ++",
                         slots, ms, wb_items_per_s(j.n, ms) / 1e6, first_int(j.a), expected,
                         base / ms);
        }
    }
    wb_table_print(t, stdout);
    wb_table_free(t);
    free_job(&j);
}

static bool stage1(int n, double copy, double target)
{
    int low = 4096;
    job j = {.stage = 1, .n = n, .a = random_ints(n, -1000, 1000, "atomics bench sum"),
             .b = device_ints(low)};
    int *host = malloc(sizeof(int) * (size_t)n), expected[2] = {0, INT_MIN};
    if (!host)
        wb_fail("out of host memory");
    CUDA_CHECK(cudaMemcpy(host, j.a, sizeof(int) * (size_t)n, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        /* Unsigned, to wrap around the way the GPU's int additions do. */
        expected[REDUCE_SUM] = (int)((unsigned)expected[REDUCE_SUM] + (unsigned)host[i]);
        expected[REDUCE_MAX] = host[i] > expected[REDUCE_MAX] ? host[i] : expected[REDUCE_MAX];
    }
    free(host);
    char title[200];
    snprintf(title, sizeof title, "stage 1: sum and max of %d ints (%.0f MB); copy bandwidth "
             "%.0f GB/s", n, 4.0 * n / 1e6, copy);
    wb_table *t = wb_table_new(
        "atomics-stage1", title,
        "op|version|slots|time per call (ms)|M elements/s|GB/s read|% of copy|speedup");
    double block_sum_gbps = 0;
    for (int op = REDUCE_SUM; op <= REDUCE_MAX; op++)
        for (int c = 0; c < 2; c++) {
            int slots = c == 0 ? HIGH : low;
            double base = 0;
            for (j.version = 0; j.version < REDUCE_VERSIONS; j.version++) {
                j.op = (reduce_op)op;
                j.slots = slots;
                double ms = time_ms(&j), gbps = wb_gbps(4.0 * n, ms);
                base = j.version == 0 ? ms : base;
                expect(slots > HIGH || first_int(j.b) == expected[op], "reduce_atomic");
                if (op == REDUCE_SUM && j.version == REDUCE_PER_BLOCK && slots == HIGH)
                    block_sum_gbps = gbps;
                wb_table_row(t, "%s|%s|%d|%.3f|%.0f|%.0f|%.1f|%.1f", op ? "max" : "sum",
                             reduce_version_names[j.version], slots, ms,
                             wb_items_per_s(n, ms) / 1e6, gbps, 100.0 * gbps / copy, base / ms);
            }
        }
    wb_table_print(t, stdout);
    wb_table_free(t);

    /* Under high contention the per-block sum is limited by its atomics on
     * one address as much as by memory: larger blocks make fewer of them. */
    int chosen_block = block_size;
    t = wb_table_new("atomics-stage1-blocks", "stage 1: per-block sum into one slot, by block size",
                     "block|time per call (ms)|GB/s read|% of copy");
    j.op = REDUCE_SUM;
    j.version = REDUCE_PER_BLOCK;
    j.slots = HIGH;
    for (block_size = 256; block_size <= 1024; block_size *= 2) {
        double ms = time_ms(&j), gbps = wb_gbps(4.0 * n, ms);
        expect(first_int(j.b) == expected[REDUCE_SUM], "reduce_atomic");
        block_sum_gbps = gbps > block_sum_gbps ? gbps : block_sum_gbps;
        wb_table_row(t, "%d|%.3f|%.0f|%.1f", block_size, ms, gbps, 100.0 * gbps / copy);
    }
    block_size = chosen_block;
    wb_table_print(t, stdout);
    wb_table_free(t);
    free_job(&j);
    bool met = wb_bench_target(block_sum_gbps >= target * copy,
                               "per-block sum (best block size) >= %.0f%% of copy bandwidth|%.1f%%",
                               100 * target, 100.0 * block_sum_gbps / copy);
    printf("\n");
    return met;
}

static void stage2(void)
{
    /* One lock serialises every thread: keep that run small. */
    static const int sizes[2][2] = {{HIGH, 1 << 14}, {1 << 16, 1 << 22}};
    job j = {.stage = 2, .a = random_ints(1 << 22, -1000, 1000, "atomics bench lock"),
             .b = device_ints(1 << 16)};
    CUDA_CHECK(cudaMalloc((void **)&j.tallies, sizeof(tally) << 16));
    wb_table *t = wb_table_new("atomics-stage2", "stage 2: locked update of {sum, count, max}",
                               "lock|locks|threads|time per call (ms)|M updates/s|"
                               "count in slot 0|speedup");
    for (int k = 0; k < 2; k++) {
        double base = 0;
        for (j.version = LOCK_SPIN; j.version >= 0; j.version--) {
            j.slots = sizes[k][0];
            j.n = sizes[k][1];
            double ms = time_ms(&j);
            base = j.version == LOCK_SPIN ? ms : base;
            tally first;
            CUDA_CHECK(cudaMemcpy(&first, j.tallies, sizeof first, cudaMemcpyDeviceToHost));
            expect(j.version != LOCK_SPIN || first.count == (j.n + j.slots - 1) / j.slots,
                   "locked_tally with the spin lock");
            wb_table_row(t, "%s|%d|%d|%.3f|%.1f|%d of %d|%.1f", lock_kind_names[j.version],
                         j.slots, j.n, ms, wb_items_per_s(j.n, ms) / 1e6, first.count,
                         (j.n + j.slots - 1) / j.slots, base / ms);
        }
    }
    wb_table_print(t, stdout);
    wb_table_free(t);
    free_job(&j);
}

static void stage3(int n)
{
    job j = {.stage = 3, .n = n / block_size * block_size, .a = device_ints(1)};
    j.b = device_ints((size_t)(j.n / block_size));
    j.c = device_ints((size_t)(j.n / block_size));
    wb_table *t = wb_table_new("atomics-stage3", "stage 3: single, one atomicCAS per thread",
                               "version|threads|time per call (ms)|M threads/s|sections run");
    for (j.version = 0; j.version < 2; j.version++) {
        double ms = time_ms(&j);
        expect(first_int(j.b) == 1, "single");
        wb_table_row(t, "%s|%d|%.3f|%.0f|%d per %s", j.version ? "per block" : "per grid", j.n,
                     ms, wb_items_per_s(j.n, ms) / 1e6, first_int(j.b),
                     j.version ? "block" : "grid");
    }
    wb_table_print(t, stdout);
    wb_table_free(t);
    free_job(&j);
}

static bool stage4(int n)
{
    int low = 1024;
    job j = {.stage = 4, .n = n, .a = random_ints(n, 0, WORKLIST_MAX_PUSH, "atomics bench push")};
    long long items = 0;
    int *counts = malloc(sizeof(int) * (size_t)n);
    if (!counts)
        wb_fail("out of host memory");
    CUDA_CHECK(cudaMemcpy(counts, j.a, sizeof(int) * (size_t)n, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        items += counts[i];
    free(counts);
    /* Room for every item in one list, or for a quarter more than the
     * average (plus slack) in each of `low` lists. */
    int capacity_low = (int)(items / low + items / low / 4 + 4096);
    size_t room = (size_t)low * capacity_low > (size_t)items ? (size_t)low * capacity_low
                                                             : (size_t)items;
    j.b = device_ints(room);
    j.c = device_ints(low);
    char title[160];
    snprintf(title, sizeof title, "stage 4: worklist push, %d threads, %lld items (0..%d per "
             "thread)", n, items, WORKLIST_MAX_PUSH);
    wb_table *t = wb_table_new("atomics-stage4", title,
                               "version|lists|time per call (ms)|M items/s|speedup");
    double warp_speedup = 0;
    for (int c = 0; c < 2; c++) {
        int lists = c == 0 ? HIGH : low;
        j.slots = lists;
        j.capacity = lists == HIGH ? (int)items : capacity_low;
        double base = 0;
        for (j.version = 0; j.version < PUSH_VERSIONS; j.version++) {
            double ms = time_ms(&j);
            base = j.version == 0 ? ms : base;
            expect(lists > HIGH || first_int(j.c) == items, "worklist_push");
            if (lists == HIGH && j.version == PUSH_PER_WARP)
                warp_speedup = base / ms;
            wb_table_row(t, "%s|%d|%.3f|%.0f|%.1f", push_version_names[j.version], lists, ms,
                         wb_items_per_s((double)items, ms) / 1e6, base / ms);
        }
    }
    wb_table_print(t, stdout);
    wb_table_free(t);
    free_job(&j);
    bool met = wb_bench_target(warp_speedup >= 10.0,
                               "per-warp push >= 10x per-item push into one list|%.1fx",
                               warp_speedup);
    printf("\n");
    return met;
}

static void stage5(int n)
{
    job j = {.stage = 5, .n = n, .a = device_ints((size_t)n + (1 << 16))};
    wb_table *t = wb_table_new("atomics-stage5", "stage 5: lock-free list insert (CAS retry loop)",
                               "anchors|inserts|time per call (ms)|M inserts/s");
    for (int c = 0; c < 2; c++) {
        j.slots = c == 0 ? HIGH : 1 << 16;
        double ms = time_ms(&j);
        wb_table_row(t, "%d|%d|%.3f|%.1f", j.slots, n, ms, wb_items_per_s(n, ms) / 1e6);
    }
    wb_table_print(t, stdout);
    wb_table_free(t);
    free_job(&j);
}

/* Stage 6 against stage 5: the same inserts with a lock per node, then
 * with three in four nodes removed again (a walk from the anchor each). */
static void stage6(int n)
{
    int anchors[2] = {HIGH, 1 << 16}, inserts[2] = {n / 16 < 4096 ? n / 16 : 4096, n};
    size_t nodes = (size_t)n + (1 << 16);
    job j = {.stage = 6, .a = device_ints(nodes), .b = device_ints(nodes),
             .c = device_ints((size_t)n)};
    int *keep = malloc(sizeof(int) * (size_t)n);
    if (!keep)
        wb_fail("out of host memory for %d ints", n);
    wb_table *t = wb_table_new("atomics-stage6",
                               "stage 6: a lock per node against stage 5's lock-free insert",
                               "version|anchors|threads|time per call (ms)|M threads/s");
    for (int c = 0; c < 2; c++) {
        j.slots = anchors[c];
        j.n = inserts[c];
        for (int version = 0; version < 3; version++) {
            /* 0: lock-free insert; 1: locked insert; 2: locked, 3 in 4 removed */
            for (int i = 0; i < j.n; i++)
                keep[i] = version < 2 || i % 4 == 3;
            CUDA_CHECK(cudaMemcpy(j.c, keep, sizeof(int) * (size_t)j.n, cudaMemcpyHostToDevice));
            j.stage = version == 0 ? 5 : 6;
            double ms = time_ms(&j);
            static const char *const names[3] = {"lock-free insert (stage 5)", "locked insert",
                                                 "locked insert, 3 in 4 removed"};
            wb_table_row(t, "%s|%d|%d|%.3f|%.2f", names[version], j.slots, j.n, ms,
                         wb_items_per_s(j.n, ms) / 1e6);
        }
    }
    wb_table_print(t, stdout);
    wb_table_free(t);
    free(keep);
    free_job(&j);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    int stage = WB_ALL_STAGES, n = 0;
    double target = 0.85;   /* H100 95%, H200 102% (handouts/02-atomics.md) */
    const wb_option options[] = {
        {"stage", "S", WB_INT, &stage, 0, 6, "time only stage S (default: all)"},
        {"n", "N", WB_INT, &n, 4096, INT_MAX / 2,
         "scales the work: stage 1 reduces N ints (default 2^26, more where they would hold "
         "the L2 less than 4 times), the others use N/4 threads (default 2^24; stages 5 and 6 "
         "insert N/1024 nodes, and at most 4096 behind one node in stage 6)"},
        {"block", "B", WB_WARPS, &block_size, 32, 1024,
         "threads per block, a multiple of 32"},
        WB_REPS_OPTION(reps),
        WB_TARGET_OPTION(target,
         "fails when the per-block sum into one slot (best of blocks 256, 512, 1024) reads "
         "at less than F of the copy bandwidth"),
        {0}};
    wb_bench_options(argc, argv,
                     "Times every version of each stage under high and low contention. Also\n"
                     "fails when the per-warp worklist push into one list is less than 10x\n"
                     "faster than the per-item one.",
                     options);
    wb_bench_need_gpu();
    wb_device dev = wb_device_info();
    double copy = wb_copy_bandwidth_gbps();
    wb_bench_launch("blocks of %d threads, grids as large as the work (stage 1: %d ints per "
                    "thread); stage 1's per-block sum also in blocks of 256, 512 and 1024|%s; "
                    "the per-block sum's best block size differs between GPUs (larger blocks, "
                    "fewer atomics on one slot): its target takes the best",
                    block_size, REDUCE_ITEMS, block_size == 256 ? "8 warps a block, the usual "
                    "start: several blocks per SM on any GPU" : "--block");
    bool all = stage == WB_ALL_STAGES, met = true;
    int usual = 1 << 26, sum_n = n;
    if (n == 0 && (all || stage == 1))
        sum_n = (int)wb_bench_default_size("stage 1's ints", (size_t)usual, (size_t)1 << 20,
                                           sizeof(int), sizeof(int));
    n = n ? n : usual;
    if (all || stage == 1)
        wb_bench_working_set("stage 1's ints", 4.0 * sum_n);
    printf("%s, %d SMs, median of %d runs, each of as many calls as last %.0f ms or more (times "
           "per call); copy bandwidth %.0f GB/s\n"
           "(correctness is the tests' job: run `meson test --suite atomics` first)\n\n",
           dev.name, dev.sm_count, reps, WB_MIN_RUN_MS, copy);
    if (all || stage == 0) stage0(n / 4);
    if (all || stage == 1) met &= stage1(sum_n, copy, target);
    if (all || stage == 2) stage2();
    if (all || stage == 3) stage3(n / 4);
    if (all || stage == 4) met &= stage4(n / 4);
    if (all || stage == 5) stage5(n / 1024);
    if (all || stage == 6) stage6(n / 1024);
    return met ? 0 : 1;
}
