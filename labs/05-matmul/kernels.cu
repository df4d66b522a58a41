/*
 * Lab 05: C = A x B (row-major, single precision), from the naive kernel to
 * register tiling, and (optional) on to warp tiling near cuBLAS.
 *
 * Your task: the numbered TODOs, one kernel per stage, each a small change
 * from the one before. Read handouts/05-matmul.md first. The launch code,
 * matmul(), is given in given.cuh (included at the bottom). Check your work
 * with
 *     meson test -C build --suite matmul-student --print-errorlogs
 * time it with `build/matmul-bench-student --help`, and ask for a hint with
 * `grading/workbook hint matmul 2`.
 */
#include "lab.h"
#include "workbook.h"

static __host__ __device__ int ceil_div(int a, int b) { return (a + b - 1) / b; }

/* Stage 0: one thread per element of C, with threadIdx.x walking down a
 * column of C. Neighbouring threads of a warp then read A rows k floats
 * apart and write C n floats apart: every access is its own transaction. */
__global__ void matmul_stage0(const float *A, const float *B, float *C, int m, int n, int k)
{
    // TODO 1: compute this thread's row from the x dimension (blockIdx.x,
    // blockDim.x, threadIdx.x) and its column from the y dimension. If both
    // lie inside C, sum A[row][i] * B[i][col] over i and store C[row][col].
    // (This mapping is the uncoalesced one on purpose: stage 1 fixes it.)
    (void)A, (void)B, (void)C, (void)m, (void)n, (void)k;
}

/* Stage 1: the same code with x and y swapped, so threadIdx.x walks along a
 * row of C: a warp reads 32 consecutive floats of B, one broadcast float of
 * A, and writes 32 consecutive floats of C. */
__global__ void matmul_stage1(const float *A, const float *B, float *C, int m, int n, int k)
{
    // TODO 2: stage 0 with the roles of x and y swapped, so that threads next
    // to each other in a warp own neighbouring columns of the same row.
    (void)A, (void)B, (void)C, (void)m, (void)n, (void)k;
}

/* Stage 2: a block computes a TILE x TILE tile of C in phases; each phase
 * stages one tile of A and one of B in shared memory, so each float loaded
 * from global memory is used TILE times. Sizes must be multiples of TILE. */
template <int TILE>
__global__ void matmul_stage2(const float *A, const float *B, float *C, int m, int n, int k)
{
    // TODO 3: declare two TILE x TILE tiles in shared memory. This thread owns C[row][col] of its block's TILE x TILE tile.
    // In each of the k / TILE phases, load one element of the A tile and
    // one of the B tile into As and Bs, wait until the whole tile is there,
    // add this phase's TILE products to a running sum, and wait again before
    // the next phase overwrites the tiles. Store the sum at the end.
    (void)A, (void)B, (void)C, (void)m, (void)n, (void)k;
}

/* Stage 3: stage 2 for any size. Threads outside C still load (zeros past
 * the edges, which add nothing) because their neighbours need the tile;
 * only threads inside C store. */
template <int TILE>
__global__ void matmul_stage3(const float *A, const float *B, float *C, int m, int n, int k)
{
    // TODO 4: stage 2 for any m, n, k: one more phase for a partial tile,
    // 0.0f in the shared tiles wherever the element lies outside A or B,
    // every thread taking part in loads and barriers, and only threads
    // inside C storing.
    (void)A, (void)B, (void)C, (void)m, (void)n, (void)k;
}

/* Four consecutive floats M[row][col..col + 3] of a rows x cols row-major
 * matrix, 0.0f where they lie outside it. With cols a multiple of 4 (and M
 * from cudaMalloc) the four are 16-byte aligned and all inside or all
 * outside: one float4 load instead of four. Other widths load one float at
 * a time. */
__device__ float4 load_float4(const float *M, int rows, int cols, int row, int col)
{
    // TODO 5: return zeros when the row or the first column lies outside M;
    // when cols % 4 == 0, one load: *(const float4 *)&M[row * cols + col];
    // otherwise the floats one by one, 0.0f for columns at or past cols.
    (void)M, (void)rows, (void)cols, (void)row, (void)col;
    return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
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
    // TODO 6: the block's 256 threads compute a 64 x 64 tile of C, each a
    // 4 x 4 block of it in a register array. Loop over k in steps of 16:
    // each thread loads one float4 of the 64 x 16 piece of A and one of the
    // 16 x 64 piece of B with load_float4 (zeros outside the matrices) and
    // stores it into shared memory as a float4, barrier, then for each of
    // the 16 values of i read 4 values of As and 4 of Bs into registers and
    // do the 16 multiply-adds; barrier. Finally store the elements that lie
    // inside C. Hint: give a thread rows ty, ty + 16, ... and columns tx,
    // tx + 16, ...; declare the tiles __align__(16) for the float4 stores.
    (void)A, (void)B, (void)C, (void)m, (void)n, (void)k;
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
__global__ void __launch_bounds__(256, 2)
    matmul_stage5(const float *A, const float *B, float *C, int m, int n, int k)
{
    // TODO 7 (optional): the tuned kernel described above. Start from your
    // stage 4 and take the steps one at a time, timing each with the bench.
    (void)A, (void)B, (void)C, (void)m, (void)n, (void)k;
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
__global__ void __launch_bounds__(S6_THREADS, 2)
    matmul_stage6(const float *A, const float *B, float *C, int m, int n, int k)
{
    // TODO 8 (optional): warp tiling, one step from your stage 5. Keep its
    // pipeline; give each of the 4 warps a 64 x 64 part of the block tile
    // and each thread a 4 x 4 block in each 16 x 32 step of its warp (4 x 2
    // steps); load 4 float4 of A and 4 of B per thread per tile. Check
    // `nvcc -Xptxas -v` for spills after each change.
    (void)A, (void)B, (void)C, (void)m, (void)n, (void)k;
}

// Given, the same for both sides: matmul() checks its arguments and
// launches the stage's kernel.
#include "given.cuh"
