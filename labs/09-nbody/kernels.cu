/*
 * Lab 09: all-pairs n-body gravitation, stage by stage. Read
 * handouts/09-nbody.md first.
 *
 *   0  AOS, naive: one thread per body, every other body read from the
 *      28-byte structs of the array of structures
 *   1  SOA: the same loop over a structure of arrays (x[], y[], z[], mass[])
 *   2  float4 AOS: position and mass in one aligned 16-byte load
 *   3  shared-memory tiles: a block loads blockDim.x bodies at a time, every
 *      thread of the block reads them from shared memory
 *   4  rsqrtf and unrolling: stage 3 with one reciprocal square root per
 *      pair in place of a square root and a division, the tile loop unrolled
 *
 * Every stage computes a_i = sum over all j of m_j (r_j - r_i) /
 * (|r_j - r_i|^2 + eps^2)^(3/2), the term j = i included (it is 0: with
 * eps > 0 nothing divides by zero), and stores it at acc[3 i .. 3 i + 2].
 * The kernels get eps2 = eps^2. The TODOs are numbered in the order of the
 * stages. The rest is given in given.cuh, included at the top: the
 * launches (one thread per body, blocks of any whole number of warps, and
 * for stages 3 and 4 blockDim.x float4s of dynamic shared memory), the
 * argument checks and the leapfrog integrator. Check a stage with
 *     meson test -C build --suite nbody-student --print-errorlogs
 * (tests stageN_...), time them with `build/nbody-bench-student`, and ask
 * for a hint with `grading/workbook hint nbody N`.
 */
#include "lab.h"
#include "workbook.h"

// Given, the same for every stage and both sides: the host side and the
// integrator's kernels.
#include "given.cuh"

/* Stages 0-3: body j's pull on a body at `self`, added to acc. `other`
 * holds body j's position and, in w, its mass. With eps2 > 0 the body's
 * own term is 0 * finite = 0. */
__device__ __forceinline__ float3 body_body(float3 acc, float3 self, float4 other, float eps2)
{
    // TODO 1 (stage 0): d = r_j - r_i (other minus self), the softened
    // squared distance d2 = eps2 + |d|^2, then acc += d * m_j / d2^(3/2),
    // with 1.0f / sqrtf(d2) for 1 / |d|. Return the new acc.
    (void)self, (void)other, (void)eps2;
    return acc;
}

/* Stage 0: every thread walks the whole array of structures. The 32
 * threads of a warp read the same body j at once (one broadcast), but
 * each field is its own 4-byte load. */
__global__ void forces_aos(const nbody_body *bodies, int n, float eps2, float *acc)
{
    // TODO 2 (stage 0): thread i (from blockIdx.x, blockDim.x, threadIdx.x)
    // owns body i, if i < n. Sum body_body over every body j = 0 .. n - 1,
    // itself included, from a zero acceleration, then store the three
    // components at acc[3 i], acc[3 i + 1], acc[3 i + 2].
    (void)bodies, (void)n, (void)eps2, (void)acc;
}

/* Stage 1: the same loop over a structure of arrays. Still four 4-byte
 * loads per pair, now from four arrays. */
__global__ void forces_soa(const float *x, const float *y, const float *z, const float *mass,
                           int n, float eps2, float *acc)
{
    // TODO 3 (stage 1): stage 0's kernel, with body j's fields read from
    // x[j], y[j], z[j] and mass[j].
    (void)x, (void)y, (void)z, (void)mass, (void)n, (void)eps2, (void)acc;
}

/* Stage 2: position and mass in one aligned float4, one 16-byte load per
 * pair instead of four 4-byte ones. */
__global__ void forces_float4(const float4 *pos_mass, int n, float eps2, float *acc)
{
    // TODO 4 (stage 2): stage 1's kernel over pos_mass[j] = (x, y, z, mass):
    // one load per body.
    (void)pos_mass, (void)n, (void)eps2, (void)acc;
}

/* Stage 3: the bodies pass through shared memory a tile of blockDim.x at a
 * time: each thread loads one body of the tile, and after the barrier
 * every thread reads all of them. Threads past n have no body of their own
 * but still load their share of every tile and wait at every barrier; the
 * last tile's slots past n hold mass 0, which pulls nothing. */
__global__ void forces_tiled(const float4 *pos_mass, int n, float eps2, float *acc)
{
    extern __shared__ float4 tile[];   // blockDim.x bodies (given launch)
    // TODO 5 (stage 3): for tiles starting at 0, blockDim.x, 2 blockDim.x,
    // ... below n: thread t stores body start + t in tile[t] (or a body of
    // mass 0 past n), barrier, adds the pull of every body of the tile,
    // barrier before the next tile overwrites it. Every thread of the block
    // takes part in every tile; only threads with i < n store.
    (void)tile, (void)pos_mass, (void)n, (void)eps2, (void)acc;
}

/* Stage 4: body_body with one reciprocal square root (a single hardware
 * instruction, within 2 units in the last place: rsqrt_ftz, given.cuh) in
 * place of an IEEE square root and an IEEE division (each several
 * instructions and a branch). */
__device__ __forceinline__ float3 body_body_fast(float3 acc, float3 self, float4 other,
                                                 float eps2)
{
    // TODO 6 (stage 4): body_body with rsqrt_ftz(d2) (given.cuh: rsqrtf as
    // one instruction) for 1 / |d|.
    (void)self, (void)other, (void)eps2;
    return acc;
}

/* Stage 4: stage 3 with body_body_fast, and the loop over the tile
 * unrolled: the loop's counter, compare and branch are paid once per
 * eight pairs, and the eight shared-memory reads get fixed offsets. */
__global__ void forces_tiled_fast(const float4 *pos_mass, int n, float eps2, float *acc)
{
    extern __shared__ float4 tile[];   // blockDim.x bodies (given launch)
    // TODO 7 (stage 4): stage 3's kernel with body_body_fast, and
    // #pragma unroll 8 on the loop over the tile. Time both with the bench.
    (void)tile, (void)pos_mass, (void)n, (void)eps2, (void)acc;
}
