/*
 * Lab 10: stencils, from the naive kernel to marching planes. Read
 * handouts/10-stencil.md first.
 *
 *   0  2D, naive: each thread reads its five cells from global memory; the
 *      time loop swaps two buffers (ping-pong)
 *   1  2D, shared tile with halo: a block loads its tile and a one-cell
 *      rim around it once, then every thread reads shared memory
 *   2  2D, warps marching rows: a warp walks down the grid, the cells
 *      above and below in registers, west and east by shuffle
 *   3  3D, naive: stage 0 with a third axis, seven cells per thread
 *   4  3D, marching planes (2.5D): stage 1's tile for the plane, stage 2's
 *      registers for the axis it walks along (z)
 *   5  3D, warp strips in registers: stage 4 with neither shared memory nor
 *      barriers; a warp's neighbours come by shuffle, its loads a plane early
 *
 * Each stage is a small change from the one before; the TODOs are numbered
 * in the order of the stages. The boundary helpers (before, after,
 * is_fixed_2d, is_fixed_3d), the arithmetic of a step (heat_2d, heat_3d),
 * each stage's grid (launch_step) and the argument checks are given in
 * given.cuh, included at the top. Check a stage with
 *     meson test -C build --suite stencil-student --print-errorlogs
 * (tests stageN_...), time them with `build/stencil-bench-student`, and ask
 * for a hint with `grading/workbook hint stencil 1`.
 */
#include "lab.h"
#include "workbook.h"

// Given, the same for every stage and both sides.
#include "given.cuh"

/* Stage 0: one thread per cell, every value straight from global memory.
 * Each cell is read five times, by itself and by its four neighbours; the
 * caches catch most of the repeats. */
__global__ void heat2d_naive(const float *in, float *out, int nx, int ny, int boundary)
{
    // TODO 1 (stage 0): this thread's cell (x, y) from the block and thread
    // indices in x and y (x along threadIdx.x). Threads past the grid do
    // nothing. A fixed cell (is_fixed_2d) copies its value to out; any other
    // stores heat_2d of its value and its four neighbours, read from `in`
    // at the coordinates before() and after() give (they know the boundary).
    (void)in, (void)out, (void)nx, (void)ny, (void)boundary;
}

/* The time loop of every stage: each step reads the grid the step before
 * wrote and writes the other buffer, then the two swap roles. */
static const float *run_steps(int stage, int boundary, float *a, float *b, int nx, int ny, int nz,
                              int steps)
{
    // TODO 2 (stage 0): `steps` steps. a holds the grid, b is free. Each
    // step is one launch_step(stage, boundary, in, out, nx, ny, nz) that
    // reads the newest grid and writes the other buffer, never the one it
    // reads. Return the buffer that holds the last step's grid.
    (void)stage, (void)boundary, (void)b, (void)nx, (void)ny, (void)nz, (void)steps;
    return a;
}

/* Stage 1: the block's 32 x 8 cells and a rim of one cell around them (the
 * halo) in shared memory, loaded once; the five reads per cell then come
 * from there. A 5-point stencil needs the four edges of the rim, never its
 * corners, so nobody loads those. */
__global__ void heat2d_tile(const float *in, float *out, int nx, int ny, int boundary)
{
    // TODO 3 (stage 1): declare a (STENCIL_TILE_Y + 2) x (STENCIL_TILE_X + 2)
    // tile in shared memory. Each thread inside the grid loads its cell at
    // tile[ty + 1][tx + 1]; the threads on the tile's edges also load the
    // halo cell beyond them (west, east, south, north: not the corners),
    // and where the grid ends inside the tile, the last thread inside the
    // grid loads the halo beyond it. Wait for the whole tile, then compute
    // as in stage 0, reading the neighbours from the tile.
    (void)in, (void)out, (void)nx, (void)ny, (void)boundary;
}

/* Stage 2, a warp marches down the rows: no shared memory, no barrier. A
 * block is STENCIL_MARCH_WARPS warps; each owns 32 columns (lane = x) and
 * walks STENCIL_MARCH_ROWS rows. A lane keeps its column's cells in
 * registers: south, center, and the next STENCIL_ROWS_AHEAD rows north.
 * West and east are the lanes beside it (a shuffle); only the warp's ends
 * load a halo cell, lane 0 the west one and lane 31 the east one. Each
 * row is loaded STENCIL_ROWS_AHEAD + 1 rows before it is computed, so that
 * several loads per thread are in flight and no warp waits for another.
 * Stage 5 uses the same ideas in 3D. */
__global__ void heat2d_march(const float *in, float *out, int nx, int ny, int boundary)
{
    // TODO 4 (stage 2): x = blockIdx.x * 32 + lane; the warp's march starts
    // at row (blockIdx.y * STENCIL_MARCH_WARPS + threadIdx.y) *
    // STENCIL_MARCH_ROWS (a warp that starts past ny returns). Every lane
    // marches, also the lanes past nx: they load the cell after() the last
    // column (the last column's east, by the same shuffle) and store
    // nothing. Before the loop load south (before()), center and the next
    // STENCIL_ROWS_AHEAD rows north; lanes 0 and 31 also the halo cell
    // west or east of their column in those rows. In each row first load
    // the row STENCIL_ROWS_AHEAD + 1 on (rows past ny: after(ny - 1, ...)),
    // then west and east by __shfl_up_sync / __shfl_down_sync with every
    // lane taking part (the ends take their halo), store the rows y < ny,
    // and move every register one row down. Unroll the row loop
    // (#pragma unroll) and index the register arrays only by constants.
    (void)in, (void)out, (void)nx, (void)ny, (void)boundary;
}

/* Stage 3: stage 0 in 3D. The grid has one layer of 32 x 8 blocks per
 * plane: z is blockIdx.z. The neighbours down and up are a whole plane
 * (nx * ny floats) away. */
__global__ void heat3d_naive(const float *in, float *out, int nx, int ny, int nz, int boundary)
{
    // TODO 5 (stage 3): stage 0 with a third axis: z is blockIdx.z, cell
    // (x, y, z) is at (z * ny + y) * nx + x, the fixed cells are
    // is_fixed_3d's, and heat_3d also takes the cells down (z - 1) and up
    // (z + 1), a whole plane away.
    (void)in, (void)out, (void)nx, (void)ny, (void)nz, (void)boundary;
}

/* Stage 4, marching planes: a 32 x 8 block walks up STENCIL_PLANES planes.
 * Each thread keeps its column's down, center and up in registers (stage 2
 * in z); the plane's tile and halo are in shared memory (stage 1 in x and
 * y). Per plane a thread loads one new cell of its column and, on the
 * tile's edge, a halo cell: about 1.3 loads per cell instead of stage 3's
 * seven. Like stage 2's rows, each new cell is loaded early, two planes
 * before it is needed. */
__global__ void heat3d_march(const float *in, float *out, int nx, int ny, int nz, int boundary)
{
    // TODO 6 (stage 4): the block's 32 x 8 tile walks up planes
    // blockIdx.z * STENCIL_PLANES ... (at most STENCIL_PLANES, not past nz).
    // Stage 2 in z (down, center, up in registers, moved one plane up after
    // each) and stage 1 in x and y (the plane's tile and halo in shared
    // memory), with a wait after the tile is loaded and another before the
    // next plane overwrites it. Load each new cell of the column two planes
    // early (stage 2 loads rows early too): before the loop down, center,
    // up and ahead (the next plane's up); in each plane the up of the plane
    // two on (if the march gets there), which becomes ahead after the move.
    (void)in, (void)out, (void)nx, (void)ny, (void)nz, (void)boundary;
}

/* Stage 5, warp strips in registers: stage 4 without shared memory and
 * without a barrier. A warp owns a strip of 32 columns (lane = x) and
 * STENCIL_STRIP_ROWS rows, one register per cell of its column, and
 * marches up STENCIL_PLANES planes as stage 4 does. West and east are the
 * lanes beside it (a shuffle); only the strip's two ends load a halo cell,
 * lane 0 the west one and lane 31 the east one. South and north are the
 * thread's own registers, with one row beyond each end of the strip loaded
 * too. Every load is issued a plane before it is needed. The boundary
 * condition is a template parameter, BOUNDARY: a constant, so that the
 * compiler drops the other condition's code (given.cuh launches
 * heat3d_strips<STENCIL_DIRICHLET> or heat3d_strips<STENCIL_PERIODIC>). */
template <int BOUNDARY>
__global__ void heat3d_strips(const float *in, float *out, int nx, int ny, int nz)
{
    // TODO 7 (stage 5): x = blockIdx.x * 32 + lane; the warp's strip starts
    // at row (blockIdx.y * STENCIL_STRIP_WARPS + threadIdx.y) *
    // STENCIL_STRIP_ROWS (a warp that starts past ny returns) and marches
    // through the planes of stage 4. Keep in registers, per row of the
    // strip, the cells down, center and up, and center and up of one row
    // beyond each end of the strip too (rows past the grid's edge at
    // before()/after()). West and east by __shfl_up_sync /
    // __shfl_down_sync with every lane taking part; lane 0 loads the west
    // halo, lane 31 the east one. A lane past the grid holds the column
    // after(nx - 1) and stores nothing, so that the last column's east
    // comes by the shuffle (as in stage 2). In each plane first issue the
    // loads of the next: up two planes on (after(min(z + 1, nz - 1), ...))
    // and the halo one plane on. Pass BOUNDARY wherever a helper takes the
    // boundary, unroll the loops over the rows (#pragma unroll) and index
    // the register arrays only by constants.
    (void)in, (void)out, (void)nx, (void)ny, (void)nz;
}
