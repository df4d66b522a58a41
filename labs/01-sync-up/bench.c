/*
 * Lab 01 benchmark: time per hand-off of the recording versions, within a
 * warp, in a block of 1024 threads and across blocks. This lab has no
 * performance target: the numbers are for the handout's closing note.
 */
#include <getopt.h>
#include <stdlib.h>

#include "handoff.h"
#include "workbook.h"

static void usage(FILE *out, const char *program)
{
    fprintf(out,
            "usage: %s [--n TURNS] [--reps R]\n"
            "Records TURNS turns (default 200000) with each version and shape, checks\n"
            "the record once, then prints the median of R runs (default 5) as\n"
            "nanoseconds per hand-off.\n",
            program);
}

int main(int argc, char **argv)
{
    int count = 200000, reps = 5;
    static const struct option options[] = {{"n", required_argument, 0, 'n'},
                                            {"reps", required_argument, 0, 'r'},
                                            {"help", no_argument, 0, 'h'},
                                            {0, 0, 0, 0}};
    for (int opt; (opt = getopt_long(argc, argv, "n:r:h", options, NULL)) != -1;) {
        switch (opt) {
        case 'n': count = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'h': usage(stdout, argv[0]); return 0;
        default: usage(stderr, argv[0]); return 2;
        }
    }
    if (count < 1 || reps < 1) {
        fprintf(stderr, "error: need --n >= 1 and --reps >= 1\n");
        return 2;
    }
    char reason[256];
    if (!wb_gpu_usable(reason, sizeof reason)) {
        fprintf(stderr, "skipped: %s\n", reason);
        return 77;
    }
    sync_up_handoff_table(count, reps);
    return 0;
}
