/*
 * Lab 09, reference: all-pairs n-body gravitation, from the naive kernel
 * over an array of structures to shared-memory tiles with rsqrtf:
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
 * The launches, the argument checks and the leapfrog integrator are given
 * in given.cuh; this file has the kernels, the skeleton's TODOs filled in.
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
    float dx = other.x - self.x, dy = other.y - self.y, dz = other.z - self.z;
    // Evaluated left to right: three multiply-adds.
    float d2 = eps2 + dx * dx + dy * dy + dz * dz;
    float inv_d = 1.0f / sqrtf(d2);   // an IEEE square root and an IEEE division
    float s = other.w * inv_d * inv_d * inv_d;
    acc.x += dx * s;
    acc.y += dy * s;
    acc.z += dz * s;
    return acc;
}

/* Stage 0: every thread walks the whole array of structures. The 32
 * threads of a warp read the same body j at once (one broadcast), but
 * each field is its own 4-byte load. */
__global__ void forces_aos(const nbody_body *bodies, int n, float eps2, float *acc)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float3 self = make_float3(bodies[i].x, bodies[i].y, bodies[i].z);
    float3 a = make_float3(0.0f, 0.0f, 0.0f);
    for (int j = 0; j < n; j++) {
        const nbody_body *other = &bodies[j];
        a = body_body(a, self, make_float4(other->x, other->y, other->z, other->mass), eps2);
    }
    acc[3 * i + 0] = a.x;
    acc[3 * i + 1] = a.y;
    acc[3 * i + 2] = a.z;
}

/* Stage 1: the same loop over a structure of arrays. Still four 4-byte
 * loads per pair, now from four arrays. */
__global__ void forces_soa(const float *x, const float *y, const float *z, const float *mass,
                           int n, float eps2, float *acc)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float3 self = make_float3(x[i], y[i], z[i]);
    float3 a = make_float3(0.0f, 0.0f, 0.0f);
    for (int j = 0; j < n; j++)
        a = body_body(a, self, make_float4(x[j], y[j], z[j], mass[j]), eps2);
    acc[3 * i + 0] = a.x;
    acc[3 * i + 1] = a.y;
    acc[3 * i + 2] = a.z;
}

/* Stage 2: position and mass in one aligned float4, one 16-byte load per
 * pair instead of four 4-byte ones. */
__global__ void forces_float4(const float4 *pos_mass, int n, float eps2, float *acc)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float4 me = pos_mass[i];
    float3 self = make_float3(me.x, me.y, me.z);
    float3 a = make_float3(0.0f, 0.0f, 0.0f);
    for (int j = 0; j < n; j++)
        a = body_body(a, self, pos_mass[j], eps2);
    acc[3 * i + 0] = a.x;
    acc[3 * i + 1] = a.y;
    acc[3 * i + 2] = a.z;
}

/* Stage 3: the bodies pass through shared memory a tile of blockDim.x at a
 * time: each thread loads one body of the tile, and after the barrier
 * every thread reads all of them. Threads past n have no body of their own
 * but still load their share of every tile and wait at every barrier; the
 * last tile's slots past n hold mass 0, which pulls nothing. */
__global__ void forces_tiled(const float4 *pos_mass, int n, float eps2, float *acc)
{
    extern __shared__ float4 tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 me = i < n ? pos_mass[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float3 self = make_float3(me.x, me.y, me.z);
    float3 a = make_float3(0.0f, 0.0f, 0.0f);
    for (int start = 0; start < n; start += blockDim.x) {
        int j = start + threadIdx.x;
        tile[threadIdx.x] = j < n ? pos_mass[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        __syncthreads();   // read-after-write: the whole tile is loaded
        for (int k = 0; k < blockDim.x; k++)
            a = body_body(a, self, tile[k], eps2);
        __syncthreads();   // write-after-read: nobody still reads this tile
    }
    if (i < n) {
        acc[3 * i + 0] = a.x;
        acc[3 * i + 1] = a.y;
        acc[3 * i + 2] = a.z;
    }
}

/* Stage 4: body_body with one reciprocal square root (a single hardware
 * instruction, within 2 units in the last place: rsqrt_ftz, given.cuh) in
 * place of an IEEE square root and an IEEE division (each several
 * instructions and a branch). */
__device__ __forceinline__ float3 body_body_fast(float3 acc, float3 self, float4 other,
                                                 float eps2)
{
    float dx = other.x - self.x, dy = other.y - self.y, dz = other.z - self.z;
    float d2 = eps2 + dx * dx + dy * dy + dz * dz;
    float inv_d = rsqrt_ftz(d2);
    float s = other.w * inv_d * inv_d * inv_d;
    acc.x += dx * s;
    acc.y += dy * s;
    acc.z += dz * s;
    return acc;
}

/* Stage 4: stage 3 with body_body_fast, and the loop over the tile
 * unrolled: the loop's counter, compare and branch are paid once per
 * eight pairs, and the eight shared-memory reads get fixed offsets. */
__global__ void forces_tiled_fast(const float4 *pos_mass, int n, float eps2, float *acc)
{
    extern __shared__ float4 tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 me = i < n ? pos_mass[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float3 self = make_float3(me.x, me.y, me.z);
    float3 a = make_float3(0.0f, 0.0f, 0.0f);
    for (int start = 0; start < n; start += blockDim.x) {
        int j = start + threadIdx.x;
        tile[threadIdx.x] = j < n ? pos_mass[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        __syncthreads();   // read-after-write: the whole tile is loaded
#pragma unroll 8
        for (int k = 0; k < blockDim.x; k++)
            a = body_body_fast(a, self, tile[k], eps2);
        __syncthreads();   // write-after-read: nobody still reads this tile
    }
    if (i < n) {
        acc[3 * i + 0] = a.x;
        acc[3 * i + 1] = a.y;
        acc[3 * i + 2] = a.z;
    }
}
