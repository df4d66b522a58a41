/*
 * Lab 05 reference: C = A x B (row-major, single precision), from the naive
 * kernel to one near cuBLAS. Each stage is a small change from the one
 * before; handouts/05-matmul.md walks through them.
 */
#include "lab.h"
#include "workbook.h"

static __host__ __device__ int ceil_div(int a, int b) { return (a + b - 1) / b; }

/* Stage 0: one thread per element of C, with threadIdx.x walking down a
 * column of C. Neighbouring threads of a warp then read A rows k floats
 * apart and write C n floats apart: every access is its own transaction. */
__global__ void matmul_stage0(const float *A, const float *B, float *C, int m, int n, int k)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        float sum = 0.0f;
        for (int i = 0; i < k; i++)
            sum += A[row * k + i] * B[i * n + col];
        C[row * n + col] = sum;
    }
}

/* Stage 1: the same code with x and y swapped, so threadIdx.x walks along a
 * row of C: a warp reads 32 consecutive floats of B, one broadcast float of
 * A, and writes 32 consecutive floats of C. */
__global__ void matmul_stage1(const float *A, const float *B, float *C, int m, int n, int k)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        float sum = 0.0f;
        for (int i = 0; i < k; i++)
            sum += A[row * k + i] * B[i * n + col];
        C[row * n + col] = sum;
    }
}

/* Stage 2: a block computes a TILE x TILE tile of C in phases; each phase
 * stages one tile of A and one of B in shared memory, so each float loaded
 * from global memory is used TILE times. Sizes must be multiples of TILE. */
template <int TILE>
__global__ void matmul_stage2(const float *A, const float *B, float *C, int m, int n, int k)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int phase = 0; phase < k / TILE; phase++) {
        As[ty][tx] = A[row * k + phase * TILE + tx];
        Bs[ty][tx] = B[(phase * TILE + ty) * n + col];
        __syncthreads();   /* read-after-write: the whole tile is loaded */
        for (int i = 0; i < TILE; i++)
            sum += As[ty][i] * Bs[i][tx];
        __syncthreads();   /* write-after-read: nobody still reads this tile */
    }
    C[row * n + col] = sum;
}

/* Stage 3: stage 2 for any size. Threads outside C still load (zeros past
 * the edges, which add nothing) because their neighbours need the tile;
 * only threads inside C store. */
template <int TILE>
__global__ void matmul_stage3(const float *A, const float *B, float *C, int m, int n, int k)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int phase = 0; phase < ceil_div(k, TILE); phase++) {
        int a_col = phase * TILE + tx, b_row = phase * TILE + ty;
        As[ty][tx] = row < m && a_col < k ? A[row * k + a_col] : 0.0f;
        Bs[ty][tx] = b_row < k && col < n ? B[b_row * n + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; i++)
            sum += As[ty][i] * Bs[i][tx];
        __syncthreads();
    }
    if (row < m && col < n)
        C[row * n + col] = sum;
}

/* Stage 4: register tiling. 256 threads compute a 64 x 64 tile of C, each a
 * 4 x 4 block of it held in registers, so each value read from shared
 * memory feeds 4 multiply-adds instead of 1. A thread's rows and columns are
 * 16 apart, which keeps a warp's shared-memory reads free of conflicts. */
#define S4_BM 64
#define S4_BN 64
#define S4_BK 16
__global__ void __launch_bounds__(256)
    matmul_stage4(const float *A, const float *B, float *C, int m, int n, int k)
{
    __shared__ float As[S4_BM][S4_BK];
    __shared__ float Bs[S4_BK][S4_BN];
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    int row0 = blockIdx.y * S4_BM, col0 = blockIdx.x * S4_BN;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < k; k0 += S4_BK) {
        /* 64 x 16 floats of each input, 4 per thread, zeros past the edges. */
        for (int e = tid; e < S4_BM * S4_BK; e += 256) {
            int r = e / S4_BK, i = e % S4_BK;
            As[r][i] = row0 + r < m && k0 + i < k ? A[(row0 + r) * k + k0 + i] : 0.0f;
            int bi = e / S4_BN, c = e % S4_BN;
            Bs[bi][c] = k0 + bi < k && col0 + c < n ? B[(k0 + bi) * n + col0 + c] : 0.0f;
        }
        __syncthreads();
        for (int i = 0; i < S4_BK; i++) {
            float a[4], b[4];
            for (int y = 0; y < 4; y++)
                a[y] = As[ty + 16 * y][i];   /* 2 addresses per warp: broadcasts */
            for (int x = 0; x < 4; x++)
                b[x] = Bs[i][tx + 16 * x];
            for (int y = 0; y < 4; y++)
                for (int x = 0; x < 4; x++)
                    acc[y][x] += a[y] * b[x];
        }
        __syncthreads();
    }
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            int row = row0 + ty + 16 * y, col = col0 + tx + 16 * x;
            if (row < m && col < n)
                C[row * n + col] = acc[y][x];
        }
}

/* Stage 5: the steps that close most of the gap to cuBLAS.
 * - A 128 x 128 tile of C per block of 256 threads, 8 x 8 per thread:
 *   twice the reuse of stage 4 from both shared memory and global memory.
 * - float4 (16-byte) global loads and shared-memory reads.
 * - Double buffering: the next tile is fetched into registers while the
 *   current one is multiplied, so there is one barrier per tile, not two.
 * - Warp tiling: a warp's 32 threads cover a 4 x 8 patch of thread tiles,
 *   so its shared-memory reads touch 4 A and 8 B float4s (no conflicts).
 * - The transposed A tile is padded by 4 floats a row, so the transposing
 *   stores do not collide in one bank.
 * It needs m and n multiples of 128 and k a multiple of 8 (no bounds
 * checks, aligned float4); matmul() falls back to stage 4 otherwise. The
 * tile sizes S5_BM, S5_BN and S5_BK are in lab.h (the host side needs them
 * too). */
#define S5_PAD 4
__global__ void __launch_bounds__(256, 2)
    matmul_stage5(const float *A, const float *B, float *C, int m, int n, int k)
{
    __shared__ __align__(16) float As[2][S5_BK][S5_BM + S5_PAD];
    __shared__ __align__(16) float Bs[2][S5_BK][S5_BN];
    int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    /* This thread's 8 x 8 of C: rows ty*4 + {0..3} and 64 + ty*4 + {0..3},
     * columns tx*4 + {0..3} and 64 + tx*4 + {0..3}; warps are 4 x 2. */
    int ty = (warp / 2) * 4 + lane / 8, tx = (warp % 2) * 8 + lane % 8;
    /* Which float4 this thread loads: A row tid/2 (columns 0-3 or 4-7),
     * B row tid/32 (one 16-byte piece of 128 columns). */
    int a_row = tid / 2, a_col = (tid % 2) * 4;
    int b_row = tid / 32, b_col = (tid % 32) * 4;
    const float *a_ptr = A + (size_t)(blockIdx.y * S5_BM + a_row) * k + a_col;
    const float *b_ptr = B + (size_t)b_row * n + blockIdx.x * S5_BN + b_col;

    float4 a_next = *(const float4 *)a_ptr, b_next = *(const float4 *)b_ptr;
    As[0][a_col + 0][a_row] = a_next.x;
    As[0][a_col + 1][a_row] = a_next.y;
    As[0][a_col + 2][a_row] = a_next.z;
    As[0][a_col + 3][a_row] = a_next.w;
    *(float4 *)&Bs[0][b_row][b_col] = b_next;
    __syncthreads();

    float acc[8][8] = {};
    int buf = 0;
    for (int k0 = 0; k0 < k; k0 += S5_BK) {
        bool more = k0 + S5_BK < k;
        if (more) {   /* issued now, used after the multiply: latency hidden */
            a_next = *(const float4 *)(a_ptr + k0 + S5_BK);
            b_next = *(const float4 *)(b_ptr + (size_t)(k0 + S5_BK) * n);
        }
#pragma unroll
        for (int i = 0; i < S5_BK; i++) {
            float a[8], b[8];
            *(float4 *)&a[0] = *(const float4 *)&As[buf][i][ty * 4];
            *(float4 *)&a[4] = *(const float4 *)&As[buf][i][64 + ty * 4];
            *(float4 *)&b[0] = *(const float4 *)&Bs[buf][i][tx * 4];
            *(float4 *)&b[4] = *(const float4 *)&Bs[buf][i][64 + tx * 4];
#pragma unroll
            for (int y = 0; y < 8; y++)
#pragma unroll
                for (int x = 0; x < 8; x++)
                    acc[y][x] += a[y] * b[x];
        }
        if (more) {   /* the other buffer is free: its last readers passed the barrier */
            buf ^= 1;
            As[buf][a_col + 0][a_row] = a_next.x;
            As[buf][a_col + 1][a_row] = a_next.y;
            As[buf][a_col + 2][a_row] = a_next.z;
            As[buf][a_col + 3][a_row] = a_next.w;
            *(float4 *)&Bs[buf][b_row][b_col] = b_next;
            __syncthreads();
        }
    }
    float *c_ptr = C + (size_t)(blockIdx.y * S5_BM) * n + blockIdx.x * S5_BN;
#pragma unroll
    for (int y = 0; y < 8; y++) {
        int row = (y < 4 ? 0 : 64) + ty * 4 + y % 4;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            float4 v = make_float4(acc[y][half * 4], acc[y][half * 4 + 1], acc[y][half * 4 + 2],
                                   acc[y][half * 4 + 3]);
            *(float4 *)&c_ptr[(size_t)row * n + half * 64 + tx * 4] = v;
        }
    }
}

// Given, the same for both sides: matmul() checks its arguments and
// launches the stage's kernel.
#include "given.cuh"
