/* Lab 06, streams: the entry points that the skeleton (labs/) and the
 * reference (solutions/) both define, and the given helpers (saxpy.cu) they
 * build on. test.c and bench.c call both.
 *
 * The job: z = y, then z = a x + z applied `repeat` times per element (SAXPY
 * with an adjustable amount of arithmetic), for n floats that live on the
 * host. Each version copies x and y to the device, runs the kernel and copies
 * the result back into z; versions differ in how the copies and kernels are
 * issued. Every version returns when z holds the result.
 *
 * Stage 5 runs the same job on managed memory (cudaMallocManaged): x and y
 * are one pair of pointers, valid on the host and on the device, and the
 * result is y itself, updated in place. */
#ifndef LAB_STREAMS_H
#define LAB_STREAMS_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SAXPY_MAX_STREAMS 16
#define SAXPY_MAX_SEGMENTS 64

typedef struct {
    float a;
    int repeat;         /* r >= 1: FMAs per element, the arithmetic intensity */
    int streams;        /* S, 1 .. SAXPY_MAX_STREAMS (versions 2 to 4) */
    int segments;       /* 1 .. SAXPY_MAX_SEGMENTS, need not divide n (versions 2 to 4) */
    int block_size;     /* threads per block of the kernel */
    /* The implicit-synchronisation experiment: when set, saxpy_launch makes
     * a small cudaMemset on the default stream after every kernel. */
    bool default_stream_call;
} saxpy_config;

typedef struct {
    int n;
    const float *x, *y; /* inputs, n floats each, host memory */
    float *z;           /* output, n floats, host memory */
} saxpy_host;

typedef struct {
    int n;
    float *x, *y;       /* device, n floats each; the kernel updates y in place */
    float *scratch;     /* one device float, for the experiment */
    int streams;        /* how many of stream[] exist */
    cudaStream_t stream[SAXPY_MAX_STREAMS];
} saxpy_device;

/* Elements [begin, begin + count) of the arrays. */
typedef struct {
    int begin, count;
} saxpy_segment;

/* The four events of a segment, recorded on its stream. */
enum { MARK_COPY_IN_START, MARK_COPY_IN_DONE, MARK_KERNEL_DONE, MARK_COPY_OUT_DONE, MARKS };

typedef struct {
    int segments;
    cudaEvent_t origin;                           /* recorded before any work */
    cudaEvent_t mark[SAXPY_MAX_SEGMENTS][MARKS];
} saxpy_timeline;

/* ---- given (labs/06-streams/saxpy.cu; the kernel: saxpy_kernel.cuh) ---- */

/* Device buffers for n floats and `streams` streams from cudaStreamCreate
 * (ordinary streams: the default stream waits for them and they for it). */
saxpy_device *saxpy_device_new(int n, int streams);
/* The same with x and y from cudaMallocManaged (stage 5): one pointer each,
 * valid on the host and on the device; a page lives where it was last
 * touched, and moves on a page fault or a prefetch. */
saxpy_device *saxpy_managed_new(int n, int streams);
/* Frees either kind. */
void saxpy_device_free(saxpy_device *dev);

/* Segment k of `segments` nearly equal parts of n elements (empty when
 * n < segments and k falls between two elements). */
saxpy_segment saxpy_segment_of(int n, int segments, int k);

/* Fails with a clear message unless cfg, dev and host fit together. */
void saxpy_check(const saxpy_config *cfg, const saxpy_device *dev, const saxpy_host *host);

/* Stage 5's check: cfg and dev non-NULL, repeat >= 1, x and y managed.
 * The block size is left to CUDA, which refuses a block of more than 1024
 * threads at the launch: an unchecked launch loses that error. */
void saxpy_check_managed(const saxpy_config *cfg, const saxpy_device *dev);

/* Launches the kernel on segment seg of dev->x, dev->y, on stream s, and
 * checks the launch. Nothing is launched for an empty segment. */
void saxpy_launch(const saxpy_config *cfg, saxpy_device *dev, saxpy_segment seg,
                  cudaStream_t s);

saxpy_timeline *saxpy_timeline_new(int segments);
void saxpy_timeline_free(saxpy_timeline *tl);
/* ms[k][m]: milliseconds from tl->origin to tl->mark[k][m]. Returns the first
 * error (cudaErrorInvalidResourceHandle: an event never recorded) and the
 * segment and mark it was met at. */
cudaError_t saxpy_timeline_read(const saxpy_timeline *tl, double (*ms)[MARKS], int *bad_segment,
                                int *bad_mark);

/* ---- the student's (labs/06-streams/kernels.cu) ---- */

/* Stage 1: n floats of host memory, page-locked when pinned is true. */
float *host_alloc(size_t n, bool pinned);
void host_free(float *p, bool pinned);

/* Stage 0: cudaMemcpy in, one kernel, cudaMemcpy out. */
void saxpy_v0_sync(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host);
/* Stage 1: the same with asynchronous copies on one stream (pinned memory). */
void saxpy_v1_pinned(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host);
/* Stage 2: cfg->segments segments on cfg->streams streams, depth first. */
void saxpy_v2_depth_first(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host);
/* Stage 3: the same, breadth first within each group of cfg->streams segments. */
void saxpy_v3_breadth_first(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host);
/* Stage 4: version 3 recording the events of tl (tl->segments == cfg->segments). */
void saxpy_v4_timeline(const saxpy_config *cfg, saxpy_device *dev, saxpy_host *host,
                       saxpy_timeline *tl);
/* Stage 5: the job on managed memory. The host has written dev->x and
 * dev->y (saxpy_managed_new): their pages are in host memory. Prefetch both
 * to the GPU, launch the kernel, prefetch y back to the host, all on
 * dev->stream[0], and return when the host may read the result in dev->y. */
void saxpy_v5_managed(const saxpy_config *cfg, saxpy_device *dev);

#ifdef __cplusplus
}
#endif

#endif
