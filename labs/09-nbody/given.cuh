/*
 * Lab 09: the code given for every stage (the skeleton and the reference
 * both include it at their top): the declarations of the force kernels
 * that kernels.cu defines, stage 4's rsqrt_ftz, the given kernels (the leapfrog's kick and
 * drift, and the one-field shift of the layout comparison), and the host
 * side: stage names and layouts, the argument checks, the launches.
 */
#include <math.h>

/* ------------------------------------------------------------ kernels */

// Written in kernels.cu: one force kernel per stage, one thread per body,
// each storing body i's acceleration at acc[3 i], acc[3 i + 1], acc[3 i + 2].
__global__ void forces_aos(const nbody_body *bodies, int n, float eps2, float *acc);
__global__ void forces_soa(const float *x, const float *y, const float *z, const float *mass,
                           int n, float eps2, float *acc);
__global__ void forces_float4(const float4 *pos_mass, int n, float eps2, float *acc);
__global__ void forces_tiled(const float4 *pos_mass, int n, float eps2, float *acc);
__global__ void forces_tiled_fast(const float4 *pos_mass, int n, float eps2, float *acc);

/* Stage 4's reciprocal square root: rsqrtf as one instruction. The
 * hardware's reciprocal square root treats denormal inputs as 0; rsqrtf
 * must not, so the compiler wraps it in a compare and two multiplications
 * that scale such inputs (three more instructions per pair in a loop of
 * about fourteen). d2 >= eps^2 is never denormal here: this is the
 * instruction alone, with denormals flushed to zero (what -use_fast_math
 * makes of every rsqrtf). Within 2 units in the last place, as rsqrtf. */
__device__ __forceinline__ float rsqrt_ftz(float x)
{
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* A layout seen by the given kernels, which touch positions and velocities
 * only: field f of body i is f[i * stride]. The stride is the layout: 7
 * floats between two bodies' x in the AOS (the 28-byte struct), 4 in the
 * float4 layout, 1 in the SOA. */
typedef struct {
    float *x, *y, *z, *vx, *vy, *vz;
    int stride;
} body_fields;

/* The leapfrog's half-step kick: v += a dt / 2. */
__global__ void kick(body_fields f, const float *acc, int n, float half_dt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    size_t at = (size_t)i * f.stride;
    f.vx[at] += acc[3 * (size_t)i + 0] * half_dt;
    f.vy[at] += acc[3 * (size_t)i + 1] * half_dt;
    f.vz[at] += acc[3 * (size_t)i + 2] * half_dt;
}

/* The drift: r += v dt. */
__global__ void drift(body_fields f, int n, float dt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    size_t at = (size_t)i * f.stride;
    f.x[at] += f.vx[at] * dt;
    f.y[at] += f.vy[at] * dt;
    f.z[at] += f.vz[at] * dt;
}

/* x += dx: one field read and written per body. A warp touches 32 floats
 * that lie stride floats apart, so the memory moves whole 32-byte sectors
 * of the other fields too (handouts/09-nbody.md, "AOS or SOA"). */
__global__ void shift_x(float *x, int stride, int n, float dx)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[(size_t)i * stride] += dx;
}

/* ------------------------------------------------------------ host side */

#define GIVEN_BLOCK 256   /* threads per block of the given kernels */

const char *nbody_stage_name(int stage)
{
    static const char *names[NBODY_STAGES] = {"AOS, naive", "SOA", "float4 AOS",
                                              "shared-memory tiles", "rsqrtf, unrolled"};
    return stage >= 0 && stage < NBODY_STAGES ? names[stage] : "no such stage";
}

nbody_layout nbody_stage_layout(int stage)
{
    return stage == 0 ? NBODY_AOS : stage == 1 ? NBODY_SOA : NBODY_FLOAT4;
}

const char *nbody_layout_name(nbody_layout layout)
{
    return layout == NBODY_AOS ? "AOS" : layout == NBODY_SOA ? "SOA" : "float4";
}

static body_fields fields_of(const nbody_system *s)
{
    switch (s->layout) {
    case NBODY_AOS:
        return {&s->aos->x, &s->aos->y, &s->aos->z, &s->aos->vx, &s->aos->vy, &s->aos->vz,
                (int)(sizeof(nbody_body) / sizeof(float))};
    case NBODY_SOA: return {s->x, s->y, s->z, s->vx, s->vy, s->vz, 1};
    default:
        return {&s->pos_mass->x, &s->pos_mass->y, &s->pos_mass->z, &s->vel->x, &s->vel->y,
                &s->vel->z, 4};
    }
}

/* The checks every entry point makes: `what` names the caller. */
static void check_system(const char *what, const nbody_system *s)
{
    if (!s)
        wb_fail("%s: the bodies are NULL", what);
    if (s->layout != NBODY_AOS && s->layout != NBODY_SOA && s->layout != NBODY_FLOAT4)
        wb_fail("%s: layout %d is none of NBODY_AOS, NBODY_SOA, NBODY_FLOAT4", what,
                (int)s->layout);
    if (s->n < 0)
        wb_fail("%s: n = %d is negative", what, s->n);
    if (s->n == 0)
        return;
    bool missing = s->layout == NBODY_AOS   ? !s->aos
                   : s->layout == NBODY_SOA ? !s->x || !s->y || !s->z || !s->vx || !s->vy ||
                                                  !s->vz || !s->mass
                                            : !s->pos_mass || !s->vel;
    if (missing)
        wb_fail("%s: a device pointer of the %s layout is NULL", what, nbody_layout_name(s->layout));
}

static void check_stage(const char *what, int stage, const nbody_system *s, float eps,
                        int block_size, const float *d_acc)
{
    if (stage < 0 || stage >= NBODY_STAGES)
        wb_fail("%s: stage %d does not exist (0 to %d)", what, stage, NBODY_STAGES - 1);
    if (block_size < NBODY_MIN_BLOCK || block_size > NBODY_MAX_BLOCK || block_size % 32 != 0)
        wb_fail("%s: block size %d is not whole warps from %d to %d threads", what, block_size,
                NBODY_MIN_BLOCK, NBODY_MAX_BLOCK);
    // Written so that NaN fails too. eps = 0 would make the body's own
    // term 0 / 0.
    if (!(eps > 0.0f && eps < INFINITY))
        wb_fail("%s: the softening eps = %g must be positive and finite (with eps = 0 the "
                "term j = i is 0 / 0)", what, (double)eps);
    check_system(what, s);
    if (s->layout != nbody_stage_layout(stage))
        wb_fail("%s: stage %d reads the %s layout, the bodies are in the %s layout", what, stage,
                nbody_layout_name(nbody_stage_layout(stage)), nbody_layout_name(s->layout));
    if (s->n > 0 && !d_acc)
        wb_fail("%s: the accelerations d_acc are NULL", what);
}

static unsigned blocks_for(int n, int block_size)
{
    return (unsigned)((n + block_size - 1) / block_size);
}

/* The launch, once the arguments are known to be good. */
static void launch_forces(int stage, const nbody_system *s, float eps, int block_size,
                          float *d_acc)
{
    float eps2 = eps * eps;
    unsigned blocks = blocks_for(s->n, block_size);
    size_t tile_bytes = (size_t)block_size * sizeof(float4);   // stages 3 and 4
    switch (stage) {
    case 0: forces_aos<<<blocks, block_size>>>(s->aos, s->n, eps2, d_acc); break;
    case 1:
        forces_soa<<<blocks, block_size>>>(s->x, s->y, s->z, s->mass, s->n, eps2, d_acc);
        break;
    case 2: forces_float4<<<blocks, block_size>>>(s->pos_mass, s->n, eps2, d_acc); break;
    case 3:
        forces_tiled<<<blocks, block_size, tile_bytes>>>(s->pos_mass, s->n, eps2, d_acc);
        break;
    case 4:
        forces_tiled_fast<<<blocks, block_size, tile_bytes>>>(s->pos_mass, s->n, eps2, d_acc);
        break;
    }
    CUDA_CHECK_LAUNCH();
}

void nbody_accelerations(int stage, const nbody_system *bodies, float eps, int block_size,
                         float *d_acc)
{
    check_stage("nbody_accelerations", stage, bodies, eps, block_size, d_acc);
    if (bodies->n == 0)
        return;   // nothing to compute; a grid of 0 blocks is a launch error
    launch_forces(stage, bodies, eps, block_size, d_acc);
}

void nbody_step(int stage, nbody_system *bodies, float eps, float dt, int block_size,
                float *d_acc)
{
    check_stage("nbody_step", stage, bodies, eps, block_size, d_acc);
    if (!(fabsf(dt) < INFINITY))
        wb_fail("nbody_step: the time step dt = %g is not finite", (double)dt);
    int n = bodies->n;
    if (n == 0)
        return;
    body_fields f = fields_of(bodies);
    unsigned blocks = blocks_for(n, GIVEN_BLOCK);
    kick<<<blocks, GIVEN_BLOCK>>>(f, d_acc, n, 0.5f * dt);
    CUDA_CHECK_LAUNCH();
    drift<<<blocks, GIVEN_BLOCK>>>(f, n, dt);
    CUDA_CHECK_LAUNCH();
    launch_forces(stage, bodies, eps, block_size, d_acc);
    kick<<<blocks, GIVEN_BLOCK>>>(f, d_acc, n, 0.5f * dt);
    CUDA_CHECK_LAUNCH();
}

void nbody_shift_x(nbody_system *bodies, float dx)
{
    check_system("nbody_shift_x", bodies);
    if (bodies->n == 0)
        return;
    body_fields f = fields_of(bodies);
    shift_x<<<blocks_for(bodies->n, GIVEN_BLOCK), GIVEN_BLOCK>>>(f.x, f.stride, bodies->n, dx);
    CUDA_CHECK_LAUNCH();
}
