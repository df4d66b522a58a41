/* Lab 09, n-body: the host-side helpers of bodies.h. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "bodies.h"

/* A point uniform in the ball of radius r (rejection from the cube). */
static void in_ball(wb_rng *rng, float r, float p[3])
{
    float d2;
    do {
        for (int k = 0; k < 3; k++)
            p[k] = wb_rng_float(rng, -r, r);
        d2 = p[0] * p[0] + p[1] * p[1] + p[2] * p[2];
    } while (d2 > r * r);
}

void nbody_random_bodies(nbody_body *bodies, int n, wb_rng *rng)
{
    for (int i = 0; i < n; i++) {
        float p[3], v[3];
        in_ball(rng, 1.0f, p);
        in_ball(rng, 0.5f, v);
        bodies[i] = (nbody_body){p[0], p[1], p[2], v[0], v[1], v[2],
                                 wb_rng_float(rng, 0.5f, 1.5f) / (float)n};
    }
}

void nbody_cpu_acceleration(const nbody_body *bodies, int sources, int i, double eps,
                            nbody_variant variant, double acc[3], double magnitude[3])
{
    const nbody_body *self = &bodies[i];
    double sum[3] = {0.0, 0.0, 0.0}, size[3] = {0.0, 0.0, 0.0};
    double eps2 = variant == NBODY_UNSOFTENED ? 0.0 : eps * eps;
    for (int j = 0; j < sources; j++) {
        if (variant == NBODY_UNSOFTENED && j == i)
            continue;
        const nbody_body *other = &bodies[j];
        double d[3] = {(double)other->x - self->x, (double)other->y - self->y,
                       (double)other->z - self->z};
        double d2 = eps2 + d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        double mass = variant == NBODY_UNIT_MASSES ? 1.0
                      : variant == NBODY_OWN_MASS  ? self->mass
                                                   : other->mass;
        double s = mass / (d2 * sqrt(d2));
        for (int k = 0; k < 3; k++) {
            sum[k] += d[k] * s;
            size[k] += fabs(d[k] * s);
        }
    }
    for (int k = 0; k < 3; k++) {
        acc[k] = sum[k];
        if (magnitude)
            magnitude[k] = size[k];
    }
}

double nbody_energy(const nbody_body *bodies, int n, double eps)
{
    double kinetic = 0.0, potential = 0.0;
    for (int i = 0; i < n; i++) {
        const nbody_body *b = &bodies[i];
        kinetic += 0.5 * b->mass *
                   ((double)b->vx * b->vx + (double)b->vy * b->vy + (double)b->vz * b->vz);
        for (int j = i + 1; j < n; j++) {
            const nbody_body *o = &bodies[j];
            double dx = (double)o->x - b->x, dy = (double)o->y - b->y, dz = (double)o->z - b->z;
            potential -= (double)b->mass * o->mass / sqrt(dx * dx + dy * dy + dz * dz + eps * eps);
        }
    }
    return kinetic + potential;
}

/* ------------------------------------------------------------ layouts */

nbody_system nbody_alloc_system(nbody_layout layout, int n, nbody_allocator allocate)
{
    nbody_system s = {.layout = layout, .n = n};
    size_t count = n > 0 ? (size_t)n : 1;   /* a real pointer even for n = 0 */
    switch (layout) {
    case NBODY_AOS: s.aos = allocate(count * sizeof(nbody_body)); break;
    case NBODY_SOA: {
        float **fields[] = {&s.x, &s.y, &s.z, &s.vx, &s.vy, &s.vz, &s.mass};
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
            *fields[f] = allocate(count * sizeof(float));
        break;
    }
    case NBODY_FLOAT4:
        s.pos_mass = allocate(count * sizeof(float4));
        s.vel = allocate(count * sizeof(float4));
        break;
    }
    return s;
}

void nbody_free_system(nbody_system *s, nbody_deallocator release)
{
    void *pointers[] = {s->aos, s->x, s->y, s->z, s->vx, s->vy, s->vz, s->mass, s->pos_mass,
                        s->vel};
    for (size_t p = 0; p < sizeof pointers / sizeof pointers[0]; p++)
        if (pointers[p])
            release(pointers[p]);
    *s = (nbody_system){0};
}

/* The seven fields of a body: where each lies in an nbody_body, and its
 * array in the SOA layout. */
#define BODY_FLOATS 7
static const size_t field_offsets[BODY_FLOATS] = {
    offsetof(nbody_body, x),  offsetof(nbody_body, y),  offsetof(nbody_body, z),
    offsetof(nbody_body, vx), offsetof(nbody_body, vy), offsetof(nbody_body, vz),
    offsetof(nbody_body, mass)};

static float *field_of(const nbody_body *b, int f)
{
    return (float *)((char *)b + field_offsets[f]);
}

static float *soa_fields(const nbody_system *s, int f)
{
    float *fields[BODY_FLOATS] = {s->x, s->y, s->z, s->vx, s->vy, s->vz, s->mass};
    return fields[f];
}

void nbody_upload(nbody_system *s, const nbody_body *bodies)
{
    size_t n = (size_t)s->n;
    if (n == 0)
        return;
    if (s->layout == NBODY_AOS) {
        CUDA_CHECK(cudaMemcpy(s->aos, bodies, n * sizeof(nbody_body), cudaMemcpyHostToDevice));
        return;
    }
    float *staging = malloc(n * sizeof(float4) * 2);
    if (!staging)
        wb_fail("nbody_upload: out of host memory for %zu bodies", n);
    if (s->layout == NBODY_SOA) {
        for (int f = 0; f < BODY_FLOATS; f++) {
            for (size_t i = 0; i < n; i++)
                staging[i] = *field_of(&bodies[i], f);
            CUDA_CHECK(cudaMemcpy(soa_fields(s, f), staging, n * sizeof(float),
                                  cudaMemcpyHostToDevice));
        }
    } else {
        float4 *pos_mass = (float4 *)staging, *vel = pos_mass + n;
        for (size_t i = 0; i < n; i++) {
            const nbody_body *b = &bodies[i];
            pos_mass[i] = (float4){b->x, b->y, b->z, b->mass};
            vel[i] = (float4){b->vx, b->vy, b->vz, 0.0f};
        }
        CUDA_CHECK(cudaMemcpy(s->pos_mass, pos_mass, n * sizeof(float4), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(s->vel, vel, n * sizeof(float4), cudaMemcpyHostToDevice));
    }
    free(staging);
}

/* One device array back to the host, through fetch when there is one. */
static void copy_back(void *host, const void *device, size_t bytes, nbody_fetcher fetch,
                      const char *what, const char *array)
{
    if (!fetch) {
        CUDA_CHECK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
        return;
    }
    char label[256];
    snprintf(label, sizeof label, "%s: %s", what, array);
    fetch(host, device, bytes, label);
}

void nbody_download(const nbody_system *s, nbody_body *bodies, nbody_fetcher fetch,
                    const char *what)
{
    static const char *const soa_names[BODY_FLOATS] = {"x", "y", "z", "vx", "vy", "vz", "mass"};
    size_t n = (size_t)s->n;
    if (n == 0)
        return;
    if (s->layout == NBODY_AOS) {
        copy_back(bodies, s->aos, n * sizeof(nbody_body), fetch, what, "bodies");
        return;
    }
    float *staging = malloc(n * sizeof(float4) * 2);
    if (!staging)
        wb_fail("nbody_download: out of host memory for %zu bodies", n);
    if (s->layout == NBODY_SOA) {
        for (int f = 0; f < BODY_FLOATS; f++) {
            copy_back(staging, soa_fields(s, f), n * sizeof(float), fetch, what, soa_names[f]);
            for (size_t i = 0; i < n; i++)
                *field_of(&bodies[i], f) = staging[i];
        }
    } else {
        float4 *pos_mass = (float4 *)staging, *vel = pos_mass + n;
        copy_back(pos_mass, s->pos_mass, n * sizeof(float4), fetch, what, "pos_mass");
        copy_back(vel, s->vel, n * sizeof(float4), fetch, what, "vel");
        for (size_t i = 0; i < n; i++)
            bodies[i] = (nbody_body){pos_mass[i].x, pos_mass[i].y, pos_mass[i].z, vel[i].x,
                                     vel[i].y, vel[i].z, pos_mass[i].w};
    }
    free(staging);
}
