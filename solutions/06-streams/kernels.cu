/*
 * Lab 06, reference: five ways to move SAXPY's data through the GPU.
 *
 * Stage 0 copies everything, computes, copies back, each step waiting for the
 * last. Stage 1 pins the host memory, so that copies run at full PCIe speed
 * and may be asynchronous. Stage 2 cuts the array into segments spread over
 * S streams: while one segment computes, the next is copied in and the one
 * before copied out. Stage 3 changes only the order the host issues the same
 * work in (the lecture's fix for GPUs with one hardware queue per engine);
 * stage 4 records events so that the timeline can be drawn. Stage 5 runs the
 * job on managed memory and moves the pages itself, in bulk, before the
 * kernel needs them and before the host reads them.
 */
#include <stdlib.h>

#include "lab.h"
#include "saxpy_kernel.cuh"
#include "workbook.h"

// ---- stage 0: synchronous baseline
void saxpy_v0_sync(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host)
{
    saxpy_check(cfg, dev, host);
    size_t bytes = sizeof(float) * (size_t)host->n;
    CUDA_CHECK(cudaMemcpy(dev->x, host->x, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dev->y, host->y, bytes, cudaMemcpyHostToDevice));
    saxpy_segment all = {0, host->n};
    saxpy_launch(cfg, dev, all, 0);
    // cudaMemcpy on the default stream waits for the kernel before copying.
    CUDA_CHECK(cudaMemcpy(host->z, dev->y, bytes, cudaMemcpyDeviceToHost));
}

// ---- stage 1: one stream, asynchronous copies (only truly so from pinned memory)
float *host_alloc(size_t n, bool pinned)
{
    float *p = NULL;
    if (pinned)
        CUDA_CHECK(cudaMallocHost((void **)&p, n * sizeof(float)));
    else if (!(p = (float *)malloc(n * sizeof(float))))
        wb_fail("host_alloc: out of host memory for %zu floats", n);
    return p;
}

void host_free(float *p, bool pinned)
{
    if (pinned)
        CUDA_CHECK(cudaFreeHost(p));
    else
        free(p);
}

static void copy_in(saxpy_device *dev, const saxpy_host *host, saxpy_segment seg,
                    cudaStream_t s)
{
    size_t bytes = sizeof(float) * (size_t)seg.count;
    CUDA_CHECK(cudaMemcpyAsync(dev->x + seg.begin, host->x + seg.begin, bytes,
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(dev->y + seg.begin, host->y + seg.begin, bytes,
                               cudaMemcpyHostToDevice, s));
}

static void copy_out(saxpy_device *dev, saxpy_host *host, saxpy_segment seg, cudaStream_t s)
{
    CUDA_CHECK(cudaMemcpyAsync(host->z + seg.begin, dev->y + seg.begin,
                               sizeof(float) * (size_t)seg.count, cudaMemcpyDeviceToHost, s));
}

void saxpy_v1_pinned(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host)
{
    saxpy_check(cfg, dev, host);
    saxpy_segment all = {0, host->n};
    cudaStream_t s = dev->stream[0];
    copy_in(dev, host, all, s);
    saxpy_launch(cfg, dev, all, s);
    copy_out(dev, host, all, s);
    // The copies return at once: z is only ready when the stream is done.
    CUDA_CHECK(cudaStreamSynchronize(s));
}

// ---- stage 2: segments over S streams, each segment's three steps issued together
void saxpy_v2_depth_first(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host)
{
    saxpy_check(cfg, dev, host);
    for (int k = 0; k < cfg->segments; k++) {
        saxpy_segment seg = saxpy_segment_of(host->n, cfg->segments, k);
        cudaStream_t s = dev->stream[k % cfg->streams];
        copy_in(dev, host, seg, s);
        saxpy_launch(cfg, dev, seg, s);
        copy_out(dev, host, seg, s);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
}

// ---- stages 3 and 4: breadth first within each group of S segments
static void mark(saxpy_timeline *tl, int k, int m, cudaStream_t s);

static void breadth_first(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host,
                          saxpy_timeline *tl)
{
    saxpy_check(cfg, dev, host);
    int S = cfg->streams;
    // Segment k always goes to stream k % S, as in stage 2; only the order
    // the host issues the work in changes: all copies in of a group, then
    // all its kernels, then all its copies out.
    for (int group = 0; group < cfg->segments; group += S) {
        int end = group + S < cfg->segments ? group + S : cfg->segments;
        for (int k = group; k < end; k++) {
            saxpy_segment seg = saxpy_segment_of(host->n, cfg->segments, k);
            mark(tl, k, MARK_COPY_IN_START, dev->stream[k % S]);
            copy_in(dev, host, seg, dev->stream[k % S]);
            mark(tl, k, MARK_COPY_IN_DONE, dev->stream[k % S]);
        }
        for (int k = group; k < end; k++) {
            saxpy_launch(cfg, dev, saxpy_segment_of(host->n, cfg->segments, k),
                         dev->stream[k % S]);
            mark(tl, k, MARK_KERNEL_DONE, dev->stream[k % S]);
        }
        for (int k = group; k < end; k++) {
            copy_out(dev, host, saxpy_segment_of(host->n, cfg->segments, k), dev->stream[k % S]);
            mark(tl, k, MARK_COPY_OUT_DONE, dev->stream[k % S]);
        }
    }
    CUDA_CHECK(cudaDeviceSynchronize());
}

// Records event m of segment k on stream s; does nothing without a timeline.
static void mark(saxpy_timeline *tl, int k, int m, cudaStream_t s)
{
    if (tl)
        CUDA_CHECK(cudaEventRecord(tl->mark[k][m], s));
}

// ---- stage 5: managed memory, prefetched both ways
void saxpy_v5_managed(const saxpy_config *cfg, saxpy_device *dev)
{
    saxpy_check_managed(cfg, dev);
    size_t bytes = sizeof(float) * (size_t)dev->n;   // prefetches count bytes, not floats
    cudaStream_t stream = dev->stream[0];
    int device;
    CUDA_CHECK(cudaGetDevice(&device));
    struct cudaMemLocation gpu = {cudaMemLocationTypeDevice, device};
    struct cudaMemLocation host = {cudaMemLocationTypeHost, 0};   // id unused for the host
    // The host wrote x and y, so their pages are in host memory. Without
    // these two calls the kernel would fault them over a page at a time.
    CUDA_CHECK(cudaMemPrefetchAsync(dev->x, bytes, gpu, 0, stream));
    CUDA_CHECK(cudaMemPrefetchAsync(dev->y, bytes, gpu, 0, stream));
    int blocks = (dev->n + cfg->block_size - 1) / cfg->block_size;
    saxpy_repeat_kernel<<<blocks, cfg->block_size, 0, stream>>>(cfg->a, dev->x, dev->y, dev->n,
                                                                 cfg->repeat);
    CUDA_CHECK_LAUNCH();
    // On the same stream, so it starts once the kernel is done with y.
    CUDA_CHECK(cudaMemPrefetchAsync(dev->y, bytes, host, 0, stream));
    // All of the above was only queued: the host may read y once it is done.
    CUDA_CHECK(cudaStreamSynchronize(stream));
}

// Given, the same on both sides: the entry points of stages 3 and 4.
#include "given.cuh"
