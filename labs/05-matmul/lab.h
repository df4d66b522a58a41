/* Lab 05, tiled matrix multiplication: C = A x B in single precision.
 * The skeleton (labs/) and the reference (solutions/) define matmul();
 * cublas_ref.c defines the cuBLAS yardstick and the timed run (matmul_run)
 * that test.c and bench.c use. */
#ifndef LAB_MATMUL_H
#define LAB_MATMUL_H

#ifdef __cplusplus
extern "C" {
#endif

/* C (m x n) = A (m x k) x B (k x n), all row-major, all device pointers,
 * with the kernel of stage 0..6:
 *   0 naive, 1 naive with coalesced mapping, 2 shared-memory tiles (sizes
 *   multiples of tile_width only), 3 tiles for any size, 4 register tiling,
 *   5 the tuned kernel (double buffering, warp layout, float4), 6 warp
 *   tiling (sizes multiples of its tiles only).
 * tile_width (16 or 32) is used by stages 2 and 3 and ignored by the others.
 * Bad arguments end the program with a message (wb_fail). Asynchronous:
 * returns after the launch, which it has checked. */
void matmul(int stage, int tile_width, const float *A, const float *B, float *C, int m, int n,
            int k);

/* Stage 5's tiles: a block of 256 threads computes an S5_BM x S5_BN tile of
 * C, S5_BK columns of A (rows of B) at a time. matmul() runs stage 5 only
 * when m and n are multiples of 128 and k of 8, and stage 4 otherwise. */
#define S5_BM 128
#define S5_BN 128
#define S5_BK 8

/* Stage 6's tiles: a block of S6_THREADS threads computes an S6_BM x S6_BN
 * tile of C, S6_BK columns of A at a time. matmul() runs stage 6 only when
 * m and n are multiples of 128 and k of 16, and refuses other sizes. */
#define S6_BM 128
#define S6_BN 128
#define S6_BK 16
#define S6_THREADS 128

/* The same product with cuBLAS SGEMM in FP32: the faster of its default and
 * pedantic modes for this shape (neither uses TF32). */
void matmul_cublas(const float *A, const float *B, float *C, int m, int n, int k);

/* Global-memory loads per floating-point operation of a stage, inverted:
 * the lecture's CGMA (FLOPs per float loaded from global memory). */
double matmul_cgma(int stage, int tile_width);

/* One product as wb_time_gpu's work (common/workbook.h), for test.c and
 * bench.c: stage 0..6 through matmul(), or stage -1 through matmul_cublas().
 * tile_width as for matmul(). */
typedef struct {
    int stage, tile_width, m, n, k;
    const float *A, *B;
    float *C;
} matmul_job;
void matmul_run(void *job);

#ifdef __cplusplus
}
#endif

#endif
