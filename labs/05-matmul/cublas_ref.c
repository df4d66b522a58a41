/*
 * Lab 05's yardstick: cuBLAS SGEMM on row-major matrices, FP32 throughout,
 * and the CGMA of each stage for the tables.
 */
#include <cublas_v2.h>

#include "lab.h"
#include "workbook.h"

static void cublas_check(cublasStatus_t status, const char *call)
{
    if (status != CUBLAS_STATUS_SUCCESS)
        wb_fail("%s failed: cuBLAS status %d", call, (int)status);
}

void matmul_cublas(const float *A, const float *B, float *C, int m, int n, int k)
{
    static cublasHandle_t handle;
    if (!handle) {
        cublas_check(cublasCreate(&handle), "cublasCreate");
        /* Pedantic: FP32 inputs, FP32 products and sums, no TF32 tensor cores. */
        cublas_check(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    }
    if (m == 0 || n == 0)
        return;
    const float one = 1.0f, zero = 0.0f;
    /* cuBLAS is column-major. A row-major C is a column-major C^T, and
     * C^T = B^T A^T, so pass B first: no transposes are needed. */
    cublas_check(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, B, n, A, k, &zero,
                             C, n),
                 "cublasSgemm");
}

double matmul_cgma(int stage, int tile_width)
{
    switch (stage) {
    case 0:
    case 1: return 1.0;                    /* 2 loads per multiply-add */
    case 2:
    case 3: return (double)tile_width;     /* 2T loads feed 2T^2 operations per phase */
    case 4: return 2.0 * 64 * 64 / (64 + 64);      /* 64x64 block tile */
    case 5: return 2.0 * 128 * 128 / (128 + 128);  /* 128x128 block tile */
    default: wb_fail("no stage %d in lab 05 (stages 0 to 5)", stage);
    }
    return 0.0;
}
