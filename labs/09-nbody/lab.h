/* Lab 09, n-body: the entry points that the skeleton (labs/) and the
 * reference (solutions/) both define, and that test.c and bench.c call.
 *
 * The physics: softened gravity with G = 1. Body i feels
 *     a_i = sum over j of m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2)
 * The sum runs over every j, i included: with eps > 0 the term j = i is
 * exactly 0 (its r_j - r_i is 0), so no kernel needs a branch for it.
 *
 * The flop convention: NBODY_FLOPS_PER_INTERACTION = 20 per pair (i, j),
 * n^2 pairs per evaluation (the term j = i is computed, so it counts), as
 * in GPU Gems 3, chapter 31, and the CUDA samples' nbody. Counted on the
 * code: 3 subtractions (r_j - r_i), 3 multiply-adds for the softened
 * squared distance (6), a square root and a division (1 / sqrt(d^2):
 * 2), 3 multiplications for m_j / d^3 and 3 multiply-adds into a_i (6).
 * Stage 4 replaces the square root and the division by one reciprocal
 * square root, still counted as 2: the count is the problem's work, the
 * same for every stage, not what a kernel happens to execute.
 */
#ifndef LAB_NBODY_H
#define LAB_NBODY_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stages 0 ... NBODY_STAGES - 1, as in handouts/09-nbody.md. */
#define NBODY_STAGES 5

#define NBODY_FLOPS_PER_INTERACTION 20

/* Block sizes every stage takes: whole warps, from 32 to 1024 threads. */
#define NBODY_MIN_BLOCK 32
#define NBODY_MAX_BLOCK 1024

/* Stage 0's layout, an array of structures (AOS): one 28-byte struct per
 * body, as most programs keep their data. */
typedef struct {
    float x, y, z;      /* position */
    float vx, vy, vz;   /* velocity */
    float mass;
} nbody_body;

/* The three layouts of the stages:
 *   NBODY_AOS     stage 0      aos: n nbody_body
 *   NBODY_SOA     stage 1      a structure of arrays: x, y, z, vx, vy, vz
 *                              and mass, n floats each
 *   NBODY_FLOAT4  stages 2-4   aligned 16-byte structures: pos_mass[i] =
 *                              (x, y, z, mass), vel[i] = (vx, vy, vz, 0) */
typedef enum { NBODY_AOS, NBODY_SOA, NBODY_FLOAT4 } nbody_layout;

/* n bodies on the GPU in one layout; only that layout's pointers are used
 * (the others may be NULL). */
typedef struct {
    nbody_layout layout;
    int n;
    nbody_body *aos;
    float *x, *y, *z, *vx, *vy, *vz, *mass;
    float4 *pos_mass, *vel;
} nbody_system;

/* The lecture's name of a stage ("AOS, naive", ...), its layout, and a
 * layout's name ("AOS", "SOA", "float4"). */
const char *nbody_stage_name(int stage);
nbody_layout nbody_stage_layout(int stage);
const char *nbody_layout_name(nbody_layout layout);

/* d_acc[3 i + 0 .. 2] = a_i (x, y, z) for every body of `bodies`, with the
 * kernel of `stage` in blocks of block_size threads, one thread per body.
 * `bodies` must be in the stage's layout; eps > 0 is the softening length.
 * Asynchronous: returns after the launch, which it has checked. Bad
 * arguments (a stage outside 0-4, a block size that is not whole warps
 * from 32 to 1024, n < 0, eps <= 0 or not finite, the wrong layout, a NULL
 * pointer) are reported through wb_fail. */
void nbody_accelerations(int stage, const nbody_system *bodies, float eps, int block_size,
                         float *d_acc);

/* One leapfrog step (kick, drift, kick) of length dt, given code around the
 * stage's force kernel: v += a dt / 2; r += v dt; a = the accelerations of
 * the new positions (nbody_accelerations); v += a dt / 2. On entry d_acc
 * must hold the accelerations of the current positions; on return it holds
 * those of the new ones. Argument checks as above, and dt finite. */
void nbody_step(int stage, nbody_system *bodies, float eps, float dt, int block_size,
                float *d_acc);

/* x += dx for every body, in the bodies' own layout: a given kernel that
 * reads and writes a single field, where the layout decides how many bytes
 * move (handouts/09-nbody.md, "AOS or SOA"). */
void nbody_shift_x(nbody_system *bodies, float dx);

#ifdef __cplusplus
}
#endif

#endif
