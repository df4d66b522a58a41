/*
 * Lab 01 benchmark: time per hand-off of the recording versions, within a
 * warp, in a block of 1024 threads and across blocks. This lab has no
 * performance target: the numbers are for the handout's closing note.
 */
#include <limits.h>

#include "bench.h"
#include "handoff.h"
#include "workbook.h"

int main(int argc, char **argv)
{
    int count = 200000, reps = 5;
    handoff_choice choice = {WB_ALL_STAGES, 0};
    const wb_option options[] = {
        {"stage", "S", WB_INT, &choice.stage, 0, 2,
         "time only stage S's version: 0 barrier, 1 spin, 2 grid (default: all; stages 3 to 5 "
         "are not hand-offs of the table: their tests and sync-up-experiments time them)"},
        {"n", "TURNS", WB_INT, &count, 1, INT_MAX, "turns recorded per run"},
        {"block", "B", WB_WARPS, &choice.block, 32, 1024,
         "one shape per version, in blocks of B threads (the grid version: one block per "
         "SM) (default: the table's shapes, blocks of 1, 32 and 1024 threads)"},
        WB_REPS_OPTION(reps),
        WB_REFUSED_OPTION("target", "this lab has no performance target"),
        {0}};
    wb_bench_options(argc, argv,
                     "Records TURNS turns with each version and shape, checks the record once,\n"
                     "then prints the median time as nanoseconds per hand-off.",
                     options);
    wb_bench_need_gpu();
    if (choice.block)
        wb_bench_launch("barrier and spin: one block of %d threads; grid: one block of %d per "
                        "SM|--block %d", choice.block, choice.block, choice.block);
    else
        wb_bench_launch("barrier and spin: one block of 32, then of 1024 threads; grid: one "
                        "block per SM of 1, then of 32 threads|each shape puts the hand-off "
                        "elsewhere: the next lane, another warp, another block");
    sync_up_handoff_table(count, reps, choice);
    return 0;
}
