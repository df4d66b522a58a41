/*
 * Lab 06, given code: the kernel's launch and the bookkeeping every version
 * shares (device buffers, managed or not, streams, segments, events). Nothing
 * to change here; the versions in kernels.cu are the lab.
 */
#include <math.h>
#include <stdlib.h>

#include "lab.h"
#include "saxpy_kernel.cuh"
#include "workbook.h"

// Device state for n floats and `streams` streams; x and y from
// cudaMallocManaged when managed is true, from cudaMalloc otherwise.
static saxpy_device *device_new(int n, int streams, bool managed, const char *caller)
{
    if (n < 1 || streams < 1 || streams > SAXPY_MAX_STREAMS)
        wb_fail("%s: need n >= 1 and 1 <= streams <= %d, got n = %d, streams = %d", caller,
                SAXPY_MAX_STREAMS, n, streams);
    saxpy_device *dev = (saxpy_device *)calloc(1, sizeof *dev);
    if (!dev)
        wb_fail("%s: out of host memory", caller);
    dev->n = n;
    dev->streams = streams;
    size_t bytes = sizeof(float) * (size_t)n;
    if (managed) {
        CUDA_CHECK(cudaMallocManaged((void **)&dev->x, bytes, cudaMemAttachGlobal));
        CUDA_CHECK(cudaMallocManaged((void **)&dev->y, bytes, cudaMemAttachGlobal));
    } else {
        CUDA_CHECK(cudaMalloc((void **)&dev->x, bytes));
        CUDA_CHECK(cudaMalloc((void **)&dev->y, bytes));
    }
    CUDA_CHECK(cudaMalloc((void **)&dev->scratch, sizeof(float)));
    for (int s = 0; s < streams; s++)
        CUDA_CHECK(cudaStreamCreate(&dev->stream[s]));
    return dev;
}

saxpy_device *saxpy_device_new(int n, int streams)
{
    return device_new(n, streams, false, "saxpy_device_new");
}

saxpy_device *saxpy_managed_new(int n, int streams)
{
    return device_new(n, streams, true, "saxpy_managed_new");
}

void saxpy_device_free(saxpy_device *dev)
{
    if (!dev)
        return;
    for (int s = 0; s < dev->streams; s++)
        CUDA_CHECK(cudaStreamDestroy(dev->stream[s]));
    CUDA_CHECK(cudaFree(dev->x));
    CUDA_CHECK(cudaFree(dev->y));
    CUDA_CHECK(cudaFree(dev->scratch));
    free(dev);
}

saxpy_segment saxpy_segment_of(int n, int segments, int k)
{
    // 64-bit products: n * k overflows an int for n near 2^28 and k = 64.
    long long begin = (long long)n * k / segments, end = (long long)n * (k + 1) / segments;
    saxpy_segment seg = {(int)begin, (int)(end - begin)};
    return seg;
}

void saxpy_check(const saxpy_config *cfg, const saxpy_device *dev, const saxpy_host *host)
{
    if (!cfg || !dev || !host || !host->x || !host->y || !host->z)
        wb_fail("saxpy: a NULL config, device or host array was passed");
    if (host->n != dev->n)
        wb_fail("saxpy: the host arrays hold %d elements but the device buffers %d",
                host->n, dev->n);
    if (cfg->repeat < 1 || cfg->block_size < 1 || cfg->block_size > 1024)
        wb_fail("saxpy: need repeat >= 1 and 1 <= block_size <= 1024, got %d and %d",
                cfg->repeat, cfg->block_size);
    if (cfg->streams < 1 || cfg->streams > dev->streams)
        wb_fail("saxpy: %d streams asked for, the device state has %d", cfg->streams,
                dev->streams);
    if (cfg->segments < 1 || cfg->segments > SAXPY_MAX_SEGMENTS)
        wb_fail("saxpy: segments must be 1 to %d, got %d", SAXPY_MAX_SEGMENTS, cfg->segments);
}

static bool is_managed(const void *p)
{
    struct cudaPointerAttributes attributes;
    CUDA_CHECK(cudaPointerGetAttributes(&attributes, p));
    return attributes.type == cudaMemoryTypeManaged;
}

void saxpy_check_managed(const saxpy_config *cfg, const saxpy_device *dev)
{
    if (!cfg || !dev || !dev->x || !dev->y)
        wb_fail("saxpy_v5_managed: a NULL config or device state was passed");
    if (cfg->repeat < 1 || dev->streams < 1)
        wb_fail("saxpy_v5_managed: need repeat >= 1 and a stream, got repeat = %d, %d streams",
                cfg->repeat, dev->streams);
    if (!is_managed(dev->x) || !is_managed(dev->y))
        wb_fail("saxpy_v5_managed: dev->x and dev->y must be managed memory "
                "(saxpy_managed_new), not memory from cudaMalloc or malloc");
}

void saxpy_launch(const saxpy_config *cfg, saxpy_device *dev, saxpy_segment seg,
                  cudaStream_t s)
{
    if (seg.count == 0)
        return;   // a grid of 0 blocks is a launch error
    int blocks = (seg.count + cfg->block_size - 1) / cfg->block_size;
    saxpy_repeat_kernel<<<blocks, cfg->block_size, 0, s>>>(
        cfg->a, dev->x + seg.begin, dev->y + seg.begin, seg.count, cfg->repeat);
    CUDA_CHECK_LAUNCH();
    // The experiment: a harmless-looking call on the default stream (say,
    // zeroing a counter). It waits for all earlier work on every ordinary
    // stream, and all later work waits for it.
    if (cfg->default_stream_call)
        CUDA_CHECK(cudaMemset(dev->scratch, 0, sizeof(float)));
}

saxpy_timeline *saxpy_timeline_new(int segments)
{
    if (segments < 1 || segments > SAXPY_MAX_SEGMENTS)
        wb_fail("saxpy_timeline_new: segments must be 1 to %d, got %d", SAXPY_MAX_SEGMENTS,
                segments);
    saxpy_timeline *tl = (saxpy_timeline *)calloc(1, sizeof *tl);
    if (!tl)
        wb_fail("saxpy_timeline_new: out of host memory");
    tl->segments = segments;
    CUDA_CHECK(cudaEventCreate(&tl->origin));
    for (int k = 0; k < segments; k++)
        for (int m = 0; m < MARKS; m++)
            CUDA_CHECK(cudaEventCreate(&tl->mark[k][m]));
    return tl;
}

void saxpy_timeline_free(saxpy_timeline *tl)
{
    if (!tl)
        return;
    CUDA_CHECK(cudaEventDestroy(tl->origin));
    for (int k = 0; k < tl->segments; k++)
        for (int m = 0; m < MARKS; m++)
            CUDA_CHECK(cudaEventDestroy(tl->mark[k][m]));
    free(tl);
}

cudaError_t saxpy_timeline_read(const saxpy_timeline *tl, double (*ms)[MARKS], int *bad_segment,
                                int *bad_mark)
{
    for (int k = 0; k < tl->segments; k++)
        for (int m = 0; m < MARKS; m++) {
            float t = NAN;
            cudaError_t status = cudaEventElapsedTime(&t, tl->origin, tl->mark[k][m]);
            if (status != cudaSuccess) {
                cudaGetLastError();   // do not leave the error for the next check
                *bad_segment = k;
                *bad_mark = m;
                return status;
            }
            ms[k][m] = t;
        }
    return cudaSuccess;
}
