/* The SM clock the GPU runs at now, measured (wb_sm_clock_mhz in
 * workbook.h): peaks and rooflines assume a clock, and a GPU that is
 * throttled or not yet boosted runs below the one its attributes name. */
#include <cuda_runtime.h>

#include "workbook.h"

__device__ static unsigned long long global_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* One thread counts SM cycles (clock64) while the global timer advances by
 * wait_ns: cycles per nanosecond is the clock in GHz. */
__global__ static void count_cycles(unsigned long long wait_ns, unsigned long long *out)
{
    unsigned long long start = global_ns(), now;
    long long first = clock64();
    do
        now = global_ns();
    while (now - start < wait_ns);
    out[0] = (unsigned long long)(clock64() - first);
    out[1] = now - start;
}

extern "C" double wb_sm_clock_mhz(void)
{
    unsigned long long *d, h[2];
    CUDA_CHECK(cudaMalloc((void **)&d, sizeof h));
    /* The first run wakes the GPU from idle clocks; the second is measured. */
    for (int run = 0; run < 2; run++) {
        count_cycles<<<1, 1>>>(20 * 1000 * 1000ull, d);
        CUDA_CHECK_LAUNCH();
    }
    CUDA_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(d));
    return h[1] ? 1e3 * (double)h[0] / (double)h[1] : 0.0;
}
