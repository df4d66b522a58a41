/*
 * Lab 03's stages by number, and one run of a stage as timed work: what
 * test.c and bench.c both call (lab.h). Apart from graph.c, because the
 * graph code's CPU tests link graph.c without any stage.
 */
#include <stddef.h>

#include "lab.h"

const sssp_stage_fn sssp_stages[4] = {sssp_stage0, sssp_stage1, sssp_stage2, sssp_stage3};

void sssp_run(void *job)
{
    sssp_job *j = job;
    sssp_stages[j->stage](j->g, j->source, j->dist, j->work, &j->stats);
}
