/* Error reporting and device facts (see workbook.h). */
#include "workbook.h"

#include <cuda_runtime.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void exit_with_message(const char *message)
{
    fprintf(stderr, "error: %s\n", message);
    exit(EXIT_FAILURE);
}

static wb_error_handler current_handler = exit_with_message;

void wb_set_error_handler(wb_error_handler handler)
{
    current_handler = handler ? handler : exit_with_message;
}

void wb_fail(const char *format, ...)
{
    char message[2048];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    current_handler(message);
    /* A handler that returns would let the caller run on with bad state. */
    exit_with_message(message);
}

void wb_check_cuda(cudaError_t status, const char *call, const char *file, int line)
{
    if (status == cudaSuccess)
        return;
    /* The tests end their buffers at unmapped memory: name the usual cause. */
    const char *hint = status == cudaErrorIllegalAddress
                           ? ": a thread read or wrote past the end of the buffer or before its "
                             "start (a bound such as i <= n instead of i < n, a missing bounds "
                             "check, an index off by one or without blockIdx)"
                           : "";
    wb_fail("%s:%d: %s failed: %s (%s)%s", file, line, call, cudaGetErrorName(status),
            cudaGetErrorString(status), hint);
}

/* probe.cu: cudaSuccess when this build has code for device 0. */
cudaError_t wb_kernel_image_status(void);

#ifndef WB_GPU_ARCHS
#define WB_GPU_ARCHS "?"
#endif

/* Whether device 0 is usable. The reason says why not (no driver, a driver
 * older than this CUDA, no GPU seen, a GPU too old, one this build has no
 * code for), or names the GPU. */
static bool find_gpu(char *reason, size_t len)
{
    int driver = 0, count = 0;
    struct cudaDeviceProp prop;
    cudaDriverGetVersion(&driver);   /* 0 when no driver is installed */
    cudaError_t status = cudaGetDeviceCount(&count);
    if (driver == 0) {
        snprintf(reason, len, "no usable GPU: no NVIDIA driver is installed (no GPU here, or "
                 "its driver is missing)");
    } else if (status == cudaErrorInsufficientDriver) {
        snprintf(reason, len, "no usable GPU: the NVIDIA driver supports CUDA %d.%d, older "
                 "than the CUDA %d.%d this build uses: update the driver", driver / 1000,
                 driver % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
    } else if (status == cudaErrorNoDevice || (status == cudaSuccess && count == 0)) {
        snprintf(reason, len, "no usable GPU: the NVIDIA driver sees no GPU (is one "
                 "visible? nvidia-smi, CUDA_VISIBLE_DEVICES)");
    } else if (status != cudaSuccess) {
        snprintf(reason, len, "no usable GPU: %s", cudaGetErrorString(status));
    } else if ((status = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess) {
        snprintf(reason, len, "no usable GPU: GPU 0 does not answer: %s",
                 cudaGetErrorString(status));
    } else if (prop.major * 10 + prop.minor < WB_MIN_CC_MAJOR * 10 + WB_MIN_CC_MINOR) {
        snprintf(reason, len, "no usable GPU: GPU %s is sm_%d%d, older than sm_%d%d, the "
                 "oldest CUDA 13 supports", prop.name, prop.major, prop.minor,
                 WB_MIN_CC_MAJOR, WB_MIN_CC_MINOR);
    } else if ((status = wb_kernel_image_status()) != cudaSuccess) {
        snprintf(reason, len, "no usable GPU for this build: GPU %s is %d.%d, and the "
                 "build has no code for it (gpu_arch: %s; %s): rebuild for it with "
                 "`grading/workbook --gpu-arch auto` (or -Dgpu_arch=%d.%d)", prop.name,
                 prop.major, prop.minor, WB_GPU_ARCHS, cudaGetErrorName(status), prop.major,
                 prop.minor);
    } else {
        snprintf(reason, len, "%s (sm_%d%d)", prop.name, prop.major, prop.minor);
        return true;
    }
    return false;
}

bool wb_gpu_usable(char *reason, size_t reason_len)
{
    static int cached = -1;
    static char cached_reason[512];
    if (cached < 0)
        cached = find_gpu(cached_reason, sizeof cached_reason);
    if (reason && reason_len)
        snprintf(reason, reason_len, "%s", cached_reason);
    return cached == 1;
}

wb_device wb_device_info(void)
{
    char reason[256];
    wb_device info;
    struct cudaDeviceProp prop;
    memset(&info, 0, sizeof info);
    if (!wb_gpu_usable(reason, sizeof reason))
        wb_fail("%s", reason);
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    snprintf(info.name, sizeof info.name, "%s", prop.name);
    info.major = prop.major;
    info.minor = prop.minor;
    info.sm_count = prop.multiProcessorCount;
    info.global_mem_bytes = prop.totalGlobalMem;
    info.l2_bytes = (size_t)prop.l2CacheSize;
    info.max_threads_per_block = prop.maxThreadsPerBlock;
    info.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
    CUDA_CHECK(cudaDeviceGetAttribute(&info.clock_khz, cudaDevAttrClockRate, 0));
    CUDA_CHECK(cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, 0));
    CUDA_CHECK(cudaDeviceGetAttribute(&info.memory_bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0));
    info.theoretical_bandwidth_gbps =
        2.0 * info.memory_clock_khz * 1e3 * (info.memory_bus_bits / 8.0) / 1e9;
    return info;
}
