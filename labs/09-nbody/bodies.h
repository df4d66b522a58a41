/* Lab 09, n-body: host-side helpers that test.c and bench.c share (given
 * code, built into both sides; not part of the student's file): random
 * bodies, the double-precision CPU reference, the energy, and moving
 * bodies between the host (an array of nbody_body) and a GPU layout. */
#ifndef LAB_NBODY_BODIES_H
#define LAB_NBODY_BODIES_H

#include <stdbool.h>
#include <stddef.h>

#include "lab.h"
#include "workbook.h"

/* n bodies, uniform in the ball of radius 1 around the origin, masses
 * uniform in [0.5, 1.5] / n (a total near 1), velocities uniform in the
 * ball of radius 0.5: a bound cluster, far from any collision in the few
 * steps the tests take. */
void nbody_random_bodies(nbody_body *bodies, int n, wb_rng *rng);

/* What the CPU reference sums for body i, besides the true law: the
 * mistakes whose pattern the tests recognise. */
typedef enum {
    NBODY_LAW,              /* m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2) */
    NBODY_UNSOFTENED,       /* eps = 0, the term j = i left out */
    NBODY_UNIT_MASSES,      /* every m_j taken as 1 */
    NBODY_OWN_MASS,         /* m_i instead of m_j */
} nbody_variant;

/* The acceleration of body i from bodies[0 .. sources) in double:
 * acc[0 .. 2], and in magnitude[0 .. 2] the sum of the terms' absolute
 * values (what float rounding is proportional to). magnitude may be NULL. */
void nbody_cpu_acceleration(const nbody_body *bodies, int sources, int i, double eps,
                            nbody_variant variant, double acc[3], double magnitude[3]);

/* Kinetic plus potential energy, sum m v^2 / 2 - sum over pairs i < j of
 * m_i m_j / sqrt(|r_i - r_j|^2 + eps^2): the potential whose gradient is
 * the softened force, so exact dynamics keep it constant. */
double nbody_energy(const nbody_body *bodies, int n, double eps);

/* Allocates the device arrays of `layout` for n bodies with `allocate`
 * (cudaMalloc's shape: bytes in, pointer out, failures reported through
 * wb_fail), the other pointers NULL; nbody_free_system frees them. */
typedef void *(*nbody_allocator)(size_t bytes);
typedef void (*nbody_deallocator)(void *pointer);
nbody_system nbody_alloc_system(nbody_layout layout, int n, nbody_allocator allocate);
void nbody_free_system(nbody_system *system, nbody_deallocator release);

/* Host bodies to the device layout, and back. nbody_download copies each
 * device array with `fetch` (wb_fetch's shape: the tests pass wb_fetch, so
 * that the state is an observation, wb_test.h), labelled `what` and the
 * array's name; NULL: a plain cudaMemcpy. */
typedef void (*nbody_fetcher)(void *host, const void *device, size_t bytes, const char *what);
void nbody_upload(nbody_system *system, const nbody_body *bodies);
void nbody_download(const nbody_system *system, nbody_body *bodies, nbody_fetcher fetch,
                    const char *what);

#endif
