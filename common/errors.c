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
    wb_fail("%s:%d: %s failed: %s (%s)", file, line, call, cudaGetErrorName(status),
            cudaGetErrorString(status));
}

bool wb_gpu_usable(char *reason, size_t reason_len)
{
    static int cached = -1;
    static char cached_reason[512];
    if (cached < 0) {
        int count = 0;
        cudaError_t status = cudaGetDeviceCount(&count);
        struct cudaDeviceProp prop;
        cached = 0;
        if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice) {
            snprintf(cached_reason, sizeof cached_reason,
                     "no usable GPU: no NVIDIA GPU with a driver new enough for CUDA %d.%d",
                     CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
        } else if (status != cudaSuccess) {
            snprintf(cached_reason, sizeof cached_reason, "no usable GPU: %s",
                     cudaGetErrorString(status));
        } else if (count == 0) {
            snprintf(cached_reason, sizeof cached_reason, "no CUDA GPU found");
        } else if ((status = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess) {
            snprintf(cached_reason, sizeof cached_reason, "GPU 0 does not answer: %s",
                     cudaGetErrorString(status));
        } else if (prop.major * 10 + prop.minor < WB_MIN_CC_MAJOR * 10 + WB_MIN_CC_MINOR) {
            snprintf(cached_reason, sizeof cached_reason,
                     "GPU %s is sm_%d%d, older than sm_%d%d, the oldest CUDA 13 supports",
                     prop.name, prop.major, prop.minor, WB_MIN_CC_MAJOR, WB_MIN_CC_MINOR);
        } else {
            cached = 1;
            snprintf(cached_reason, sizeof cached_reason, "%s (sm_%d%d)", prop.name,
                     prop.major, prop.minor);
        }
    }
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
    CUDA_CHECK(cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, 0));
    CUDA_CHECK(cudaDeviceGetAttribute(&info.memory_bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0));
    info.theoretical_bandwidth_gbps =
        2.0 * info.memory_clock_khz * 1e3 * (info.memory_bus_bits / 8.0) / 1e9;
    return info;
}
