/*
 * Lab 05: C = A x B (row-major, single precision), from the naive kernel to
 * register tiling.
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
    // TODO 5: the block's 256 threads compute a 64 x 64 tile of C, each a
    // 4 x 4 block of it in a register array. Loop over k in steps of 16:
    // together load the 64 x 16 piece of A and the 16 x 64 piece of B
    // (zeros outside the matrices), barrier, then for each of the 16 values
    // of i read 4 values of As and 4 of Bs into registers and do the 16
    // multiply-adds; barrier. Finally store the elements that lie inside C.
    // Hint: give a thread rows ty, ty + 16, ... and columns tx, tx + 16, ...
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
    // TODO 6 (optional): the tuned kernel described above. Start from your
    // stage 4 and take the steps one at a time, timing each with the bench.
    (void)A, (void)B, (void)C, (void)m, (void)n, (void)k;
}

// Given, the same for both sides: matmul() checks its arguments and
// launches the stage's kernel.
#include "given.cuh"
