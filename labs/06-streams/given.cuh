/*
 * Lab 06: the entry points of stages 3 and 4, given (the skeleton and the
 * reference both include it at their end). Both run breadth_first, the
 * student's: stage 3 without a timeline, stage 4 with one, after checking it
 * and recording its origin. It comes after breadth_first, which it calls.
 */

void saxpy_v3_breadth_first(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host)
{
    breadth_first(cfg, dev, host, NULL);
}

void saxpy_v4_timeline(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host,
                       saxpy_timeline *tl)
{
    if (!tl || tl->segments != cfg->segments)
        wb_fail("saxpy_v4_timeline: the timeline needs one entry per segment (%d)",
                cfg->segments);
    // Every time on the timeline is measured from here; on the default
    // stream, this event waits for whatever ran before.
    CUDA_CHECK(cudaEventRecord(tl->origin, 0));
    breadth_first(cfg, dev, host, tl);
}
