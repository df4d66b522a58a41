/* Lab 01: time per hand-off, shared by test.c (a short run) and bench.c. */
#ifndef LAB_SYNC_UP_HANDOFF_H
#define LAB_SYNC_UP_HANDOFF_H

/* Times the recording versions with `count` turns per run (median of
 * `reps`), after checking each once, and prints the table "sync-up-handoff".
 * Returns the time per hand-off of the spin version within one warp (ns). */
double sync_up_handoff_table(int count, int reps);

#endif
