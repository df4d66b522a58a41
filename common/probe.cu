/* Whether this build holds code the GPU can run (wb_gpu_usable): an empty
 * kernel compiled with the architecture flags of every lab (gpu_arch). */
#include <cuda_runtime.h>

__global__ static void wb_probe_kernel(void) {}

extern "C" cudaError_t wb_kernel_image_status(void)
{
    cudaFuncAttributes attributes;
    return cudaFuncGetAttributes(&attributes, wb_probe_kernel);
}
