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
    const wb_option options[] = {
        WB_REFUSED_OPTION("stage",
         "one table times every stage's version (barrier: stage 0, spin: stage 1, grid: "
         "stage 2)"),
        {"n", "TURNS", WB_INT, &count, 1, INT_MAX, "turns recorded per run"},
        WB_REFUSED_OPTION("block",
         "the hand-off shapes fix their blocks (one block of 32 or 1024 threads, or one "
         "block of 1 or 32 threads per SM)"),
        WB_REPS_OPTION(reps),
        WB_REFUSED_OPTION("target", "this lab has no performance target"),
        {0}};
    wb_bench_options(argc, argv,
                     "Records TURNS turns with each version and shape, checks the record once,\n"
                     "then prints the median time as nanoseconds per hand-off.",
                     options);
    wb_bench_need_gpu();
    sync_up_handoff_table(count, reps);
    return 0;
}
