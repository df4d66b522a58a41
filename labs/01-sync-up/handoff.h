/* Lab 01: time per hand-off, shared by test.c (a short run) and bench.c. */
#ifndef LAB_SYNC_UP_HANDOFF_H
#define LAB_SYNC_UP_HANDOFF_H

#include <stddef.h>

#include "workbook.h"

/* How the test sees what the code under test produced (wb_test.h's
 * observations); the benchmark has none. values: a result copied back to
 * the host; timing: a measured time. */
typedef struct {
    void (*values)(const char *what, void *host, size_t bytes);
    wb_timing (*timing)(const char *what, wb_timing t, double bytes, double flops);
} handoff_observers;

/* Which hand-offs the table times: every stage's version (stage
 * WB_ALL_STAGES) or one (barrier: stage 0, spin: 1, grid: 2); in the
 * table's shapes (block 0) or in blocks of `block` threads (one block, and
 * for the grid version one block per SM). */
typedef struct {
    int stage, block;
} handoff_choice;

/* Times every shape of the recording versions with `count` turns per run
 * (median of `reps`), after checking each once, and prints the table
 * "sync-up-handoff". The first time it observes is that of every shape run
 * once, one after another. */
void sync_up_handoff_observed(int count, int reps, const handoff_observers *observe);

/* The chosen shapes, without observers (bench.c). */
void sync_up_handoff_table(int count, int reps, handoff_choice choice);

#endif
