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

/* Four consecutive floats M[row][col..col + 3] of a rows x cols row-major
 * matrix, 0.0f where they lie outside it. With cols a multiple of 4 (and M
 * from cudaMalloc) the four are 16-byte aligned and all inside or all
 * outside: one float4 load instead of four. Other widths load one float at
 * a time. */
__device__ float4 load_float4(const float *M, int rows, int cols, int row, int col)
{
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row >= rows || col >= cols)
        return v;
    const float *p = M + (size_t)row * cols + col;
    if (cols % 4 == 0)
        return *(const float4 *)p;
    v.x = p[0];
    if (col + 1 < cols)
        v.y = p[1];
    if (col + 2 < cols)
        v.z = p[2];
    if (col + 3 < cols)
        v.w = p[3];
    return v;
}

/* Stage 4: register tiling. 256 threads compute a 64 x 64 tile of C, each a
 * 4 x 4 block of it held in registers, so each value read from shared
 * memory feeds 4 multiply-adds instead of 1. A thread's rows and columns are
 * 16 apart, which keeps a warp's shared-memory reads free of conflicts.
 * Each thread loads one float4 of each tile: the A tile is 64 rows of 4
 * float4, the B tile 16 rows of 16. */
#define S4_BM 64
#define S4_BN 64
#define S4_BK 16
__global__ void __launch_bounds__(256)
    matmul_stage4(const float *A, const float *B, float *C, int m, int n, int k)
{
    __shared__ __align__(16) float As[S4_BM][S4_BK];
    __shared__ __align__(16) float Bs[S4_BK][S4_BN];
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    int row0 = blockIdx.y * S4_BM, col0 = blockIdx.x * S4_BN;
    int a_row = tid / 4, a_col = (tid % 4) * 4;     /* this thread's float4 of the A tile */
    int b_row = tid / 16, b_col = (tid % 16) * 4;   /* and of the B tile */
    float acc[4][4] = {};
    for (int k0 = 0; k0 < k; k0 += S4_BK) {
        *(float4 *)&As[a_row][a_col] = load_float4(A, m, k, row0 + a_row, k0 + a_col);
        *(float4 *)&Bs[b_row][b_col] = load_float4(B, k, n, k0 + b_row, col0 + b_col);
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

/* Stage 6: warp tiling. Stage 5's pipeline (float4 loads, A transposed and
 * padded, two shared buffers, one barrier per tile), with the work split in
 * three levels that each get their own tile:
 * - block: a 128 x 128 tile of C, now with 128 threads (4 warps) and
 *   S6_BK = 16 columns of A per step (half the barriers of stage 5);
 * - warp: a 64 x 64 sub-tile of the block tile (the 4 warps are 2 x 2), so a
 *   warp reads only its own 64 rows of As and 64 columns of Bs;
 * - thread: the warp walks its sub-tile in 4 x 2 steps of 16 x 32, its 32
 *   threads a 4 x 8 patch of 4 x 4 blocks in each: 16 x 8 = 128 sums per
 *   thread, twice stage 5's. Per step of k a thread reads 6 float4 of
 *   shared memory for 128 multiply-adds (stage 5: 4 for 64).
 * A warp's float4 reads cover 64 (As) or 128 (Bs) consecutive bytes: no
 * bank conflicts. 128 sums and the 8 float4 fetched ahead need about 200
 * registers, which __launch_bounds__(128, 2) allows (255 at most): 2 blocks
 * (8 warps) per SM, and no spills. It needs m and n multiples of 128 and k
 * a multiple of 16 (matmul() refuses other sizes). The sizes S6_BM, S6_BN,
 * S6_BK and S6_THREADS are in lab.h. */
#define S6_PAD 4
#define S6_WARP_M 64   /* a warp's sub-tile of the block tile */
#define S6_WARP_N 64
#define S6_STEP_M 16   /* one step of a warp: 4 x 8 threads of 4 x 4 */
#define S6_STEP_N 32

/* The 4 float4 of the A tile and the 4 of the B tile that a thread brings
 * from global memory for the tile at k0: A rows a_row + 32 j, B rows
 * b_row + 4 j (j = 0..3). a and b point at the thread's first float4. */
static __device__ void s6_fetch(const float *a, const float *b, int k, int n, int k0,
                                float4 a_next[4], float4 b_next[4])
{
#pragma unroll
    for (int j = 0; j < 4; j++) {
        a_next[j] = *(const float4 *)(a + (size_t)(32 * j) * k + k0);
        b_next[j] = *(const float4 *)(b + (size_t)(k0 + 4 * j) * n);
    }
}

/* The fetched floats into one shared buffer, A transposed: A[row][k0 + i]
 * goes to As[i][row], so a thread's 4 rows of A for one i are one float4. */
static __device__ void s6_stash(float (*As)[S6_BM + S6_PAD], float (*Bs)[S6_BN], int a_row,
                                int a_col, int b_row, int b_col, const float4 a_next[4],
                                const float4 b_next[4])
{
#pragma unroll
    for (int j = 0; j < 4; j++) {
        As[a_col + 0][a_row + 32 * j] = a_next[j].x;
        As[a_col + 1][a_row + 32 * j] = a_next[j].y;
        As[a_col + 2][a_row + 32 * j] = a_next[j].z;
        As[a_col + 3][a_row + 32 * j] = a_next[j].w;
        *(float4 *)&Bs[b_row + 4 * j][b_col] = b_next[j];
    }
}

__global__ void __launch_bounds__(S6_THREADS, 2)
    matmul_stage6(const float *A, const float *B, float *C, int m, int n, int k)
{
    __shared__ __align__(16) float As[2][S6_BK][S6_BM + S6_PAD];
    __shared__ __align__(16) float Bs[2][S6_BK][S6_BN];
    int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    /* The warp's sub-tile in the block tile, and the thread's 4 x 4 block in
     * each step of the warp. */
    int warp_row = (warp / 2) * S6_WARP_M, warp_col = (warp % 2) * S6_WARP_N;
    int thread_row = (lane / 8) * 4, thread_col = (lane % 8) * 4;
    /* Which float4 this thread loads: A row tid/4 (4 threads a row of 16
     * floats), B row tid/32 (32 threads a row of 128); 4 of each. */
    int a_row = tid / 4, a_col = (tid % 4) * 4;
    int b_row = tid / 32, b_col = (tid % 32) * 4;
    const float *a_ptr = A + (size_t)(blockIdx.y * S6_BM + a_row) * k + a_col;
    const float *b_ptr = B + (size_t)b_row * n + blockIdx.x * S6_BN + b_col;

    float4 a_next[4], b_next[4];
    s6_fetch(a_ptr, b_ptr, k, n, 0, a_next, b_next);
    s6_stash(As[0], Bs[0], a_row, a_col, b_row, b_col, a_next, b_next);
    __syncthreads();

    /* acc[y][x]: row y / 4 step, y % 4 within it; column x / 4 step. */
    float acc[16][8] = {};
    int buf = 0;
    for (int k0 = 0; k0 < k; k0 += S6_BK) {
        bool more = k0 + S6_BK < k;
        if (more)   /* issued now, used after the multiply: latency hidden */
            s6_fetch(a_ptr, b_ptr, k, n, k0 + S6_BK, a_next, b_next);
#pragma unroll
        for (int i = 0; i < S6_BK; i++) {
            float a[16], b[8];
#pragma unroll
            for (int step = 0; step < 4; step++)
                *(float4 *)&a[4 * step] =
                    *(const float4 *)&As[buf][i][warp_row + step * S6_STEP_M + thread_row];
#pragma unroll
            for (int step = 0; step < 2; step++)
                *(float4 *)&b[4 * step] =
                    *(const float4 *)&Bs[buf][i][warp_col + step * S6_STEP_N + thread_col];
#pragma unroll
            for (int y = 0; y < 16; y++)
#pragma unroll
                for (int x = 0; x < 8; x++)
                    acc[y][x] += a[y] * b[x];
        }
        if (more) {   /* the other buffer is free: its last readers passed the barrier */
            buf ^= 1;
            s6_stash(As[buf], Bs[buf], a_row, a_col, b_row, b_col, a_next, b_next);
            __syncthreads();
        }
    }
    float *c_ptr = C + (size_t)(blockIdx.y * S6_BM + warp_row + thread_row) * n +
                   blockIdx.x * S6_BN + warp_col + thread_col;
#pragma unroll
    for (int y = 0; y < 16; y++) {
        int row = (y / 4) * S6_STEP_M + y % 4;
#pragma unroll
        for (int step = 0; step < 2; step++)
            *(float4 *)&c_ptr[(size_t)row * n + step * S6_STEP_N] =
                make_float4(acc[y][4 * step], acc[y][4 * step + 1], acc[y][4 * step + 2],
                            acc[y][4 * step + 3]);
    }
}

// Given, the same for both sides: matmul() checks its arguments and
// launches the stage's kernel.
#include "given.cuh"
