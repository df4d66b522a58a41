/*
 * Lab 06: streams, pinned memory and copy/compute overlap.
 *
 * Your task: six versions of the same job (SAXPY on an array that lives on
 * the host), each issuing the copies and kernels differently; the sixth
 * (stage 5) on managed memory. The kernel (saxpy_kernel.cuh) and the
 * bookkeeping are given (saxpy.cu, lab.h), and so are the entry points of
 * stages 3 and 4 around your breadth_first (given.cuh, included at the end).
 * Read handouts/06-streams.md first. Check your work stage by stage with
 *     meson test -C build --suite streams-student --print-errorlogs
 * and ask for a hint with `grading/workbook hint streams 0`.
 */
#include <stdlib.h>

#include "lab.h"
#include "saxpy_kernel.cuh"
#include "workbook.h"

// ---- stage 0: synchronous baseline
void saxpy_v0_sync(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host)
{
    saxpy_check(cfg, dev, host);
    // TODO 1: copy host->x and host->y (host->n floats each) into dev->x and
    // dev->y with cudaMemcpy.
    // TODO 2: run the kernel on the whole array: saxpy_launch with the
    // segment {0, host->n} on the default stream (0).
    // TODO 3: copy the result, dev->y, back into host->z.
}

// ---- stage 1: one stream, asynchronous copies
float *host_alloc(size_t n, bool pinned)
{
    // TODO 4 (stage 1): when pinned is true, allocate page-locked host
    // memory instead, with the CUDA call for it (checked with CUDA_CHECK).
    (void)pinned;
    float *p = (float *)malloc(n * sizeof(float));
    if (!p)
        wb_fail("host_alloc: out of host memory for %zu floats", n);
    return p;
}

void host_free(float *p, bool pinned)
{
    // TODO 5 (stage 1): page-locked memory goes back with its own CUDA call.
    (void)pinned;
    free(p);
}

static void copy_in(saxpy_device *dev, const saxpy_host *host, saxpy_segment seg,
                    cudaStream_t s)
{
    // TODO 6: copy segment seg of host->x and host->y into the same place of
    // dev->x and dev->y, asynchronously on stream s.
    (void)dev, (void)host, (void)seg, (void)s;
}

static void copy_out(saxpy_device *dev, saxpy_host *host, saxpy_segment seg, cudaStream_t s)
{
    // TODO 7: copy segment seg of dev->y into host->z, asynchronously on s.
    (void)dev, (void)host, (void)seg, (void)s;
}

void saxpy_v1_pinned(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host)
{
    saxpy_check(cfg, dev, host);
    // TODO 8: version 0 again on the stream dev->stream[0], with copy_in,
    // saxpy_launch and copy_out over the whole array. The calls return
    // before the work is done: wait for that stream before returning.
    (void)copy_in, (void)copy_out;
}

// ---- stage 2: segments over S streams, depth first
void saxpy_v2_depth_first(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host)
{
    saxpy_check(cfg, dev, host);
    // TODO 9: for each of the cfg->segments segments (saxpy_segment_of gives
    // segment k), copy in, compute and copy out on stream k % cfg->streams.
    // Then wait until every stream is done.
}

// ---- stages 3 and 4: breadth first within each group of S segments
static void mark(saxpy_timeline *tl, int k, int m, cudaStream_t s);

static void breadth_first(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host,
                          saxpy_timeline *tl)
{
    saxpy_check(cfg, dev, host);
    // TODO 10 (stage 3): the same work on the same streams as stage 2 (segment
    // k on stream k % S), issued in another order: for each group of S
    // consecutive segments (the last group may be shorter), first all its
    // copies in, then all its kernels, then all its copies out. Then wait
    // until every stream is done.
    // TODO 11 (stage 4): call mark() with MARK_COPY_IN_START before each copy
    // in, and with MARK_COPY_IN_DONE, MARK_KERNEL_DONE and MARK_COPY_OUT_DONE
    // after each of the three steps, on the segment's stream.
    (void)mark, (void)tl;
}

// Records event m of segment k on stream s; does nothing without a timeline.
static void mark(saxpy_timeline *tl, int k, int m, cudaStream_t s)
{
    if (tl) {
        // TODO 12 (stage 4): record the event tl->mark[k][m] on stream s.
        (void)k, (void)m, (void)s;
    }
}

// ---- stage 5: managed memory
void saxpy_v5_managed(const saxpy_config *cfg, saxpy_device *dev)
{
    saxpy_check_managed(cfg, dev);
    // The host has written dev->x and dev->y (dev->n floats each, managed):
    // their pages are in host memory. Everything goes on dev->stream[0].
    // TODO 13: prefetch dev->x and dev->y to this GPU with cudaMemPrefetchAsync
    // (CUDA 13: the destination is a struct cudaMemLocation,
    // {cudaMemLocationTypeDevice, the device cudaGetDevice names}; flags 0).
    // TODO 14: launch saxpy_repeat_kernel (saxpy_kernel.cuh) over the whole
    // array with cfg->block_size threads per block, and check the launch.
    // TODO 15: prefetch dev->y back to the host ({cudaMemLocationTypeHost, 0}).
    // TODO 16: the host reads dev->y as soon as this returns: make it wait.
    (void)saxpy_repeat_kernel;
}

// Given, the same on both sides: the entry points of stages 3 and 4.
#include "given.cuh"
