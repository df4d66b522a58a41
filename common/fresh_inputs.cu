/*
 * Fresh inputs and sampled results for timed repetitions (wb_test.h, "fresh
 * inputs for every timed run"): fills from the counter-based hash of
 * workbook.h, and a gather of the positions a check looks at.
 *
 * The kernels here are the test's, not the submission's: like
 * dirty_shared.cu they launch past the launch counter (meson.build's
 * --wrap), so that a submission does not get credit for GPU work the test
 * did.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workbook.h"

extern "C" cudaError_t __real_cudaLaunchKernel(const void *kernel, dim3 grid, dim3 block,
                                               void **args, size_t shared, cudaStream_t stream);
extern "C" void wb_observe(const char *what, void *host, size_t bytes);

/* Grid-stride loops over a grid that fills the GPU a few times over: the
 * fills move gigabytes per repetition, at about the copy bandwidth. */
#define FILL_THREADS 256

__global__ void fill_floats_kernel(float *out, size_t n, float lo, float hi, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = wb_hash_float(seed, i, lo, hi);
}

__global__ void fill_ints_kernel(int *out, size_t n, int lo, int hi, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = wb_hash_int(seed, i, lo, hi);
}

__global__ void gather_kernel(unsigned char *out, const unsigned char *in, size_t element_bytes,
                              const size_t *positions, size_t count)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < count)
        for (size_t b = 0; b < element_bytes; b++)
            out[i * element_bytes + b] = in[positions[i] * element_bytes + b];
}

static dim3 fill_grid(size_t n)
{
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    size_t blocks = (n + FILL_THREADS - 1) / FILL_THREADS, most = 8 * (size_t)sms;
    return dim3((unsigned)(blocks < most ? blocks : most));
}

extern "C" void wb_fill_floats_on_gpu(float *device_ptr, size_t n, float lo, float hi,
                                      uint64_t seed)
{
    if (n == 0)
        return;
    void *args[] = {&device_ptr, &n, &lo, &hi, &seed};
    CUDA_CHECK(__real_cudaLaunchKernel((const void *)fill_floats_kernel, fill_grid(n),
                                       dim3(FILL_THREADS), args, 0, 0));
}

extern "C" void wb_fill_ints_on_gpu(int *device_ptr, size_t n, int lo, int hi, uint64_t seed)
{
    if (n == 0)
        return;
    void *args[] = {&device_ptr, &n, &lo, &hi, &seed};
    CUDA_CHECK(__real_cudaLaunchKernel((const void *)fill_ints_kernel, fill_grid(n),
                                       dim3(FILL_THREADS), args, 0, 0));
}

extern "C" int wb_buffer_sets(int wanted, size_t set_bytes)
{
    size_t free_bytes, total_bytes;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    size_t fit = set_bytes ? total_bytes / 2 / set_bytes : (size_t)wanted;
    if (fit < (size_t)wanted)
        wanted = (int)fit;
    return wanted < 1 ? 1 : wanted;
}

static int compare_sizes(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

extern "C" size_t wb_sample_positions(size_t *positions, size_t count, size_t n, uint64_t seed)
{
    if (n <= count) {
        for (size_t i = 0; i < n; i++)
            positions[i] = i;
        return n;
    }
    /* The ends are where a grid too small or an off-by-one shows. */
    for (size_t i = 0; i < count; i++)
        positions[i] = i == 0 ? 0 : i == 1 ? n - 1 : (size_t)(wb_hash_u64(seed, i) % n);
    qsort(positions, count, sizeof *positions, compare_sizes);
    return count;
}

extern "C" void wb_fetch_sample(void *got, void *own, const void *device, size_t element_bytes,
                                const size_t *positions, size_t count, const char *what)
{
    size_t bytes = element_bytes * count;
    if (count > 0) {
        size_t *device_positions;
        unsigned char *device_values;
        CUDA_CHECK(cudaMalloc((void **)&device_positions, sizeof(size_t) * count));
        CUDA_CHECK(cudaMalloc((void **)&device_values, bytes));
        CUDA_CHECK(cudaMemcpy(device_positions, positions, sizeof(size_t) * count,
                              cudaMemcpyHostToDevice));
        const unsigned char *in = (const unsigned char *)device;
        void *args[] = {&device_values, &in, &element_bytes, &device_positions, &count};
        CUDA_CHECK(__real_cudaLaunchKernel((const void *)gather_kernel,
                                           dim3((unsigned)((count + 255) / 256)), dim3(256),
                                           args, 0, 0));
        CUDA_CHECK(cudaMemcpy(got, device_values, bytes, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaFree(device_positions));
        CUDA_CHECK(cudaFree(device_values));
    }
    if (own)
        memcpy(own, got, bytes);
    wb_observe(what, got, bytes);
}

extern "C" void wb_timed_call_label(char *what, size_t capacity, int run, int runs, int call,
                                    int calls, const char *output)
{
    snprintf(what, capacity, "timed run %d of %d, call %d of %d: %s", run + 1, runs, call + 1,
             calls, output);
}

extern "C" const char *wb_timed_call_mistake(bool never_written)
{
    return never_written
        ? "never written: each timed run must make every call, each on its own inputs"
        : "not from this run's inputs: each call must compute its result from its own inputs "
          "when it is made, never reuse an earlier result";
}
