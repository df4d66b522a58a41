/*
 * Lab 05: matmul(), the one entry point, given (the skeleton and the
 * reference both include it at their end): the argument checks, the grid
 * of each stage, the stage 5 fallback to stage 4 at partial tiles, and
 * the sizes stage 6 refuses. It comes after the kernels it launches.
 */
#include <stdint.h>

void matmul(int stage, int tile_width, const float *A, const float *B, float *C, int m, int n,
            int k)
{
    if (m < 0 || n < 0 || k < 0)
        wb_fail("matmul: sizes must not be negative (m = %d, n = %d, k = %d)", m, n, k);
    if ((stage == 2 || stage == 3) && tile_width != 16 && tile_width != 32)
        wb_fail("matmul: stage %d needs tile_width 16 or 32, not %d", stage, tile_width);
    if (stage == 2 && (m % tile_width || n % tile_width || k % tile_width))
        wb_fail("matmul: stage 2 needs m, n and k multiples of tile_width %d "
                "(got m = %d, n = %d, k = %d); stage 3 handles any size",
                tile_width, m, n, k);
    if (stage == 6 && (m % S6_BM || n % S6_BN || k % S6_BK))
        wb_fail("matmul: stage 6 needs m a multiple of %d, n of %d and k of %d "
                "(got m = %d, n = %d, k = %d); stage 4 handles any size",
                S6_BM, S6_BN, S6_BK, m, n, k);
    if (stage >= 4 && stage <= 6 &&
        ((uintptr_t)A % 16 || (uintptr_t)B % 16 || (stage > 4 && (uintptr_t)C % 16)))
        wb_fail("matmul: stage %d moves float4 (16 bytes) at a time: A, B%s must be 16-byte "
                "aligned, as cudaMalloc's pointers are", stage, stage > 4 ? " and C" : "");
    if (m == 0 || n == 0)
        return;   /* nothing to compute; a grid of zero blocks is a launch error */
    if (stage == 6 && k == 0) {   /* an empty sum: C = 0, and no tile to load */
        CUDA_CHECK(cudaMemsetAsync(C, 0, sizeof(float) * m * n));
        return;
    }
    if (stage == 5 && (m % S5_BM || n % S5_BN || k % S5_BK || k == 0))
        stage = 4;   /* stage 5 assumes whole tiles; the edges need stage 4's checks */
    dim3 block16(16, 16);
    switch (stage) {
    case 0:
        matmul_stage0<<<dim3(ceil_div(m, 16), ceil_div(n, 16)), block16>>>(A, B, C, m, n, k);
        break;
    case 1:
        matmul_stage1<<<dim3(ceil_div(n, 16), ceil_div(m, 16)), block16>>>(A, B, C, m, n, k);
        break;
    case 2:
    case 3: {
        dim3 grid(ceil_div(n, tile_width), ceil_div(m, tile_width));
        dim3 block(tile_width, tile_width);
        if (stage == 2 && tile_width == 16)
            matmul_stage2<16><<<grid, block>>>(A, B, C, m, n, k);
        else if (stage == 2)
            matmul_stage2<32><<<grid, block>>>(A, B, C, m, n, k);
        else if (tile_width == 16)
            matmul_stage3<16><<<grid, block>>>(A, B, C, m, n, k);
        else
            matmul_stage3<32><<<grid, block>>>(A, B, C, m, n, k);
        break;
    }
    case 4:
        matmul_stage4<<<dim3(ceil_div(n, S4_BN), ceil_div(m, S4_BM)), 256>>>(A, B, C, m, n, k);
        break;
    case 5:
        matmul_stage5<<<dim3(n / S5_BN, m / S5_BM), 256>>>(A, B, C, m, n, k);
        break;
    case 6:
        matmul_stage6<<<dim3(n / S6_BN, m / S6_BM), S6_THREADS>>>(A, B, C, m, n, k);
        break;
    default: wb_fail("matmul: no stage %d (stages 0 to 6)", stage);
    }
    CUDA_CHECK_LAUNCH();
}
