/*
 * Lab 10: the code given for every stage (the skeleton and the reference
 * both include it at their top): the boundary conditions as index helpers,
 * the heat step's arithmetic, and the host side: stage names, each stage's
 * grid and launch, and stencil_run's argument checks. The kernels and the
 * time loop are written in kernels.cu, which comes after this file, so it
 * declares each of them, "written in kernels.cu".
 */
#include <stdint.h>

/* ------------------------------------------------- boundary conditions */

/* The coordinate of the neighbour before (c - 1) and after (c + 1) cell c
 * on an axis of n cells. Inside the grid that is c - 1 and c + 1; across
 * the edge, a periodic grid wraps around to the opposite edge, and a
 * Dirichlet grid stays on the edge cell itself: only fixed cells are there,
 * which use no neighbours, so the clamp merely keeps every load inside the
 * grid (a tile's halo may reach across the edge). */
__device__ __forceinline__ int before(int c, int n, int boundary)
{
    return c > 0 ? c - 1 : boundary == STENCIL_PERIODIC ? n - 1 : 0;
}

__device__ __forceinline__ int after(int c, int n, int boundary)
{
    return c < n - 1 ? c + 1 : boundary == STENCIL_PERIODIC ? 0 : n - 1;
}

/* Dirichlet: the cells of the outer layer keep their values. */
__device__ __forceinline__ bool is_fixed_2d(int boundary, int x, int y, int nx, int ny)
{
    return boundary == STENCIL_DIRICHLET && (x == 0 || y == 0 || x == nx - 1 || y == ny - 1);
}

__device__ __forceinline__ bool is_fixed_3d(int boundary, int x, int y, int z, int nx, int ny,
                                            int nz)
{
    return is_fixed_2d(boundary, x, y, nx, ny) ||
           (boundary == STENCIL_DIRICHLET && (z == 0 || z == nz - 1));
}

/* One heat step of one cell from its old value and its neighbours' (lab.h).
 * Every stage calls these, so that all of them round alike. */
__device__ __forceinline__ float heat_2d(float center, float west, float east, float south,
                                         float north)
{
    return center + STENCIL_R2 * ((west + east) + (south + north) - 4.0f * center);
}

__device__ __forceinline__ float heat_3d(float center, float west, float east, float south,
                                         float north, float down, float up)
{
    return center +
           STENCIL_R3 * ((west + east) + (south + north) + (down + up) - 6.0f * center);
}

/* ------------------------------------------------ written in kernels.cu */

// One step of each stage: reads `in`, writes every cell of `out`. Stage
// 5's boundary condition is a template parameter (kernels.cu says why):
// launch_step launches the kernel of the grid's condition.
__global__ void heat2d_naive(const float *in, float *out, int nx, int ny, int boundary);
__global__ void heat2d_tile(const float *in, float *out, int nx, int ny, int boundary);
__global__ void heat2d_march(const float *in, float *out, int nx, int ny, int boundary);
__global__ void heat3d_naive(const float *in, float *out, int nx, int ny, int nz, int boundary);
__global__ void heat3d_march(const float *in, float *out, int nx, int ny, int nz, int boundary);
template <int BOUNDARY>
__global__ void heat3d_strips(const float *in, float *out, int nx, int ny, int nz);

// The time loop: `steps` (at least 1) steps, each a launch_step; returns
// the buffer that holds the last step's grid.
static const float *run_steps(int stage, int boundary, float *a, float *b, int nx, int ny, int nz,
                              int steps);

/* ------------------------------------------------------------ host side */

static const char *const stage_names[STENCIL_STAGES] = {
    "2D, naive", "2D, shared tile with halo", "2D, warps marching rows in registers", "3D, naive",
    "3D, marching planes (2.5D)", "3D, warp strips in registers"};

const char *stencil_stage_name(int stage)
{
    return stage >= 0 && stage < STENCIL_STAGES ? stage_names[stage] : "no such stage";
}

const char *stencil_boundary_name(int boundary)
{
    return boundary == STENCIL_DIRICHLET ? "Dirichlet"
           : boundary == STENCIL_PERIODIC ? "periodic"
                                          : "no such boundary condition";
}

int stencil_stage_dims(int stage)
{
    return stage < 0 || stage >= STENCIL_STAGES ? 0 : stage <= 2 ? 2 : 3;
}

static unsigned blocks_for(int cells, int per_block)
{
    return (unsigned)((cells + per_block - 1) / per_block);
}

/* The naive stages' block: rows of 32 threads (a warp reads 32 neighbouring
 * cells of a row), as many rows as the benchmark's --block asks for. */
static int naive_block_threads = STENCIL_TILE_X * STENCIL_TILE_Y;

void stencil_set_naive_block(int threads)
{
    if (threads < 32 || threads > 1024 || threads % 32 != 0)
        wb_fail("stencil_set_naive_block(%d): a multiple of 32, at most 1024", threads);
    naive_block_threads = threads;
}

/* The grid of blocks each stage's step launches: one thread per cell of a
 * 2D grid or of a plane (stages 0 and 3: blocks of the naive block's shape,
 * stage 3 a layer of them per plane; stage 1: one block per tile), one per
 * column of 32 cells and STENCIL_MARCH_WARPS marches of STENCIL_MARCH_ROWS
 * rows (stage 2), one per column of STENCIL_PLANES planes (stage 4; stage 5
 * the same, its blocks STENCIL_STRIP_WARPS strips of 32 columns and
 * STENCIL_STRIP_ROWS rows each). */
static dim3 step_grid(int stage, int nx, int ny, int nz)
{
    switch (stage) {
    case 2:
        return dim3(blocks_for(nx, 32), blocks_for(ny, STENCIL_MARCH_WARPS * STENCIL_MARCH_ROWS));
    case 0:
        return dim3(blocks_for(nx, 32), blocks_for(ny, naive_block_threads / 32));
    case 3:
        return dim3(blocks_for(nx, 32), blocks_for(ny, naive_block_threads / 32), (unsigned)nz);
    case 4:
        return dim3(blocks_for(nx, STENCIL_TILE_X), blocks_for(ny, STENCIL_TILE_Y),
                    blocks_for(nz, STENCIL_PLANES));
    case 5:
        return dim3(blocks_for(nx, 32),
                    blocks_for(ny, STENCIL_STRIP_WARPS * STENCIL_STRIP_ROWS),
                    blocks_for(nz, STENCIL_PLANES));
    default:
        return dim3(blocks_for(nx, STENCIL_TILE_X), blocks_for(ny, STENCIL_TILE_Y));
    }
}

/* One step of `stage`: reads in, writes out. Only the time loop of
 * kernels.cu calls it ([[maybe_unused]]: the untouched skeleton does not). */
[[maybe_unused]] static void launch_step(int stage, int boundary, const float *in, float *out,
                                         int nx, int ny, int nz)
{
    dim3 grid = step_grid(stage, nx, ny, nz), tile(STENCIL_TILE_X, STENCIL_TILE_Y),
         naive(32, naive_block_threads / 32), marches(32, STENCIL_MARCH_WARPS),
         strips(32, STENCIL_STRIP_WARPS);
    switch (stage) {
    case 0: heat2d_naive<<<grid, naive>>>(in, out, nx, ny, boundary); break;
    case 1: heat2d_tile<<<grid, tile>>>(in, out, nx, ny, boundary); break;
    case 2: heat2d_march<<<grid, marches>>>(in, out, nx, ny, boundary); break;
    case 3: heat3d_naive<<<grid, naive>>>(in, out, nx, ny, nz, boundary); break;
    case 4: heat3d_march<<<grid, tile>>>(in, out, nx, ny, nz, boundary); break;
    case 5:
        // One kernel per boundary condition: the condition is a constant in
        // each, so the other one's code is compiled away (stencil_run has
        // refused any other condition).
        static_assert(STENCIL_BOUNDARIES == 2, "a launch for every boundary condition");
        if (boundary == STENCIL_PERIODIC)
            heat3d_strips<STENCIL_PERIODIC><<<grid, strips>>>(in, out, nx, ny, nz);
        else
            heat3d_strips<STENCIL_DIRICHLET><<<grid, strips>>>(in, out, nx, ny, nz);
        break;
    }
    CUDA_CHECK_LAUNCH();
}

const float *stencil_run(int stage, int boundary, float *d_a, float *d_b, int nx, int ny, int nz,
                         int steps)
{
    if (stage < 0 || stage >= STENCIL_STAGES)
        wb_fail("stencil_run: stage %d does not exist (0 to %d)", stage, STENCIL_STAGES - 1);
    if (boundary != STENCIL_DIRICHLET && boundary != STENCIL_PERIODIC)
        wb_fail("stencil_run: boundary condition %d does not exist (STENCIL_DIRICHLET or "
                "STENCIL_PERIODIC)", boundary);
    if (nx < 1 || ny < 1 || nz < 1)
        wb_fail("stencil_run: a grid of %d x %d x %d cells: every size must be at least 1", nx,
                ny, nz);
    if (stencil_stage_dims(stage) == 2 && nz != 1)
        wb_fail("stencil_run: stage %d is 2D and needs nz = 1, not %d", stage, nz);
    if ((int64_t)nx * ny * nz > INT32_MAX)
        wb_fail("stencil_run: %d x %d x %d cells are more than the 2^31 - 1 an int indexes", nx,
                ny, nz);
    dim3 grid = step_grid(stage, nx, ny, nz);
    if (grid.y > 65535 || grid.z > 65535)
        wb_fail("stencil_run: stage %d would launch %u x %u x %u blocks, more than the 65535 "
                "CUDA allows in y and z: a grid this narrow and long is not supported", stage,
                grid.x, grid.y, grid.z);
    if (!d_a || !d_b)
        wb_fail("stencil_run: a buffer is NULL (d_a = %p, d_b = %p)", (void *)d_a, (void *)d_b);
    if (d_a == d_b)
        wb_fail("stencil_run: d_a and d_b are the same buffer: a step reads one grid and "
                "writes the other (ping-pong)");
    if (steps < 0)
        wb_fail("stencil_run: %d steps: the count must not be negative", steps);
    if (steps == 0)
        return d_a;   // the grid as it is
    return run_steps(stage, boundary, d_a, d_b, nx, ny, nz, steps);
}
