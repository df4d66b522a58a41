/*
 * Time per hand-off: the recording versions with many turns, divided by the
 * number of turns. Where a hand-off happens depends on the shape: with 32
 * threads in one block every turn passes to the next lane of the same warp;
 * with 1024 threads, one turn in 32 passes to another warp; with one thread
 * per block, every turn passes to another block (usually on another SM).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"   /* WB_ALL_STAGES */
#include "handoff.h"
#include "lab.h"
#include "workbook.h"

typedef struct {
    char where[64];
    const char *version;
    int blocks, threads;
} shape;

/* Each stage's version, by stage number. */
static const char *const VERSIONS[] = {"barrier", "spin", "grid"};
enum { MOST_SHAPES = 6 };

/* The shapes to time (at most MOST_SHAPES); returns how many. */
static size_t chosen_shapes(handoff_choice choice, shape *out)
{
    int sms = wb_device_info().sm_count;
    const shape table[MOST_SHAPES] = {
        {"within a warp", "barrier", 1, 32},
        {"within a warp", "spin", 1, 32},
        {"block of 1024 (1 in 32 crosses warps)", "barrier", 1, 1024},
        {"block of 1024 (1 in 32 crosses warps)", "spin", 1, 1024},
        {"across blocks (1 thread per block)", "grid", sms, 1},
        {"32 per block (1 in 32 crosses blocks)", "grid", sms, 32},
    };
    size_t n = 0;
    for (int stage = 0; stage < 3; stage++) {
        if (choice.stage != WB_ALL_STAGES && stage != choice.stage)
            continue;
        for (size_t i = 0; i < MOST_SHAPES; i++) {
            if (strcmp(table[i].version, VERSIONS[stage]) != 0)
                continue;
            out[n] = table[i];
            if (choice.block) {   /* one shape per version, in blocks of `block` */
                out[n].threads = choice.block;
                snprintf(out[n].where, sizeof out[n].where, "blocks of %d (--block)", choice.block);
                n++;
                break;
            }
            n++;
        }
    }
    return n;
}

typedef struct {
    const shape *s;
    int *record;
    int count;
} job;

static void run(void *context)
{
    job *j = context;
    if (j->s->version[0] == 'b')
        ordered_barrier(j->record, j->count, j->s->threads);
    else if (j->s->version[0] == 's')
        ordered_spin(j->record, j->count, j->s->threads);
    else
        ordered_grid(j->record, j->count, j->s->blocks, j->s->threads);
}

/* Fetches, observes and checks the record of j's last run; `when` names
 * that run in the message. */
static void verify(const job *j, int *got, const handoff_observers *observe, const char *when)
{
    int everyone = j->s->blocks * j->s->threads;
    size_t bytes = sizeof(int) * (size_t)j->count;
    char what[200];
    snprintf(what, sizeof what, "%s version, %d x %d threads, %d turns%s: record",
             j->s->version, j->s->blocks, j->s->threads, j->count, when);
    CUDA_CHECK(cudaMemcpy(got, j->record, bytes, cudaMemcpyDeviceToHost));
    if (observe)
        observe->values(what, got, bytes);
    for (int n = 0; n < j->count; n++)
        if (got[n] != n % everyone)
            wb_fail("%s[%d] = %d, expected %d; %s", what, n, got[n], n % everyone,
                    *when ? "a timed run must take every turn, as the untimed runs do"
                          : "run the tests first");
}

static void check(const job *j, int *got, const handoff_observers *observe)
{
    wb_poison_ints(j->record, (size_t)j->count);
    run((void *)j);
    verify(j, got, observe, "");
}

/* One repetition of the graded time: every shape once, each into its own
 * record, and every record checked after every timed repetition, so that a
 * version that did its turns only in the untimed warm-up shows as a wrong
 * record instead of a fast time. */
typedef struct {
    job *jobs;
    size_t n;
    int *got;
    const handoff_observers *observe;
} all_jobs;

static void run_all(void *context)
{
    all_jobs *all = context;
    for (size_t i = 0; i < all->n; i++)
        run(&all->jobs[i]);
}

static void poison_all(void *context, int repetition, uint64_t seed)
{
    all_jobs *all = context;
    (void)repetition, (void)seed;   /* hand-offs have no inputs: the same turns every time */
    for (size_t i = 0; i < all->n; i++)
        wb_poison_ints(all->jobs[i].record, (size_t)all->jobs[i].count);
}

static void verify_all(void *context, int repetition)
{
    all_jobs *all = context;
    char when[48];
    snprintf(when, sizeof when, " (timed run %d)", repetition + 1);
    for (size_t i = 0; i < all->n; i++)
        verify(&all->jobs[i], all->got, all->observe, when);
}

static wb_timing observed(const handoff_observers *observe, const char *what, wb_timing t)
{
    /* A hand-off moves one int through L2 or shared memory: there is no
     * DRAM or floating-point floor under it, hence 0 bytes and 0 flops. */
    return observe ? observe->timing(what, t, 0.0, 0.0) : t;
}

static void handoff_table(int count, int reps, handoff_choice choice,
                          const handoff_observers *observe)
{
    shape shapes[MOST_SHAPES];
    size_t n = chosen_shapes(choice, shapes);
    int *got = malloc(sizeof(int) * (size_t)count);
    if (!got)
        wb_fail("out of host memory for %d turns", count);
    job jobs[MOST_SHAPES];
    for (size_t i = 0; i < n; i++) {
        jobs[i] = (job){&shapes[i], NULL, count};
        CUDA_CHECK(cudaMalloc((void **)&jobs[i].record, sizeof(int) * (size_t)count));
        check(&jobs[i], got, observe);
    }

    char title[512];
    snprintf(title, sizeof title, "time per hand-off, recording %d turns, %s, median of %d runs",
             count, wb_device_info().name, reps);
    wb_table *table = wb_table_new("sync-up-handoff", title,
                                   "hand-off|version|blocks|threads|time per call (ms)|"
                                   "ns per hand-off");
    all_jobs all = {jobs, n, got, observe};
    wb_timing total = observed(observe, "every shape once",
                               wb_time_gpu_checked(run_all, &all, 1, reps,
                                                   (wb_rep_checks){poison_all, verify_all}));
    for (size_t i = 0; i < n; i++) {
        char what[128];
        snprintf(what, sizeof what, "%.63s, %.15s", shapes[i].where, shapes[i].version);
        wb_timing t = observed(observe, what, wb_time_gpu(run, &jobs[i], 1, reps));
        wb_table_row(table, "%s|%s|%d|%d|%.3f|%.1f", shapes[i].where, shapes[i].version,
                     shapes[i].blocks, shapes[i].threads, t.median_ms, t.median_ms * 1e6 / count);
    }
    if (n > 1)
        wb_table_row(table, "all of the above, one after another|all|-|-|%.3f|%.1f",
                     total.median_ms, total.median_ms * 1e6 / ((double)count * n));
    wb_table_print(table, stdout);
    wb_table_free(table);
    for (size_t i = 0; i < n; i++)
        CUDA_CHECK(cudaFree(jobs[i].record));
    free(got);
}

void sync_up_handoff_observed(int count, int reps, const handoff_observers *observe)
{
    handoff_table(count, reps, (handoff_choice){WB_ALL_STAGES, 0}, observe);
}

void sync_up_handoff_table(int count, int reps, handoff_choice choice)
{
    handoff_table(count, reps, choice, NULL);
}
