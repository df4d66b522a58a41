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
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny)
        return;
    int row = y * nx;
    if (is_fixed_2d(boundary, x, y, nx, ny)) {
        out[row + x] = in[row + x];   // copied: the other buffer needs it too
        return;
    }
    out[row + x] = heat_2d(in[row + x], in[row + before(x, nx, boundary)],
                           in[row + after(x, nx, boundary)], in[before(y, ny, boundary) * nx + x],
                           in[after(y, ny, boundary) * nx + x]);
}

/* The time loop of every stage: each step reads the grid the step before
 * wrote and writes the other buffer, then the two swap roles. */
static const float *run_steps(int stage, int boundary, float *a, float *b, int nx, int ny, int nz,
                              int steps)
{
    for (int step = 0; step < steps; step++) {
        launch_step(stage, boundary, a, b, nx, ny, nz);
        float *newest = b;
        b = a;
        a = newest;
    }
    return a;
}

/* Stage 1: the block's 32 x 8 cells and a rim of one cell around them (the
 * halo) in shared memory, loaded once; the five reads per cell then come
 * from there. A 5-point stencil needs the four edges of the rim, never its
 * corners, so nobody loads those. */
__global__ void heat2d_tile(const float *in, float *out, int nx, int ny, int boundary)
{
    __shared__ float tile[STENCIL_TILE_Y + 2][STENCIL_TILE_X + 2];
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * STENCIL_TILE_X + tx, y = blockIdx.y * STENCIL_TILE_Y + ty;
    bool inside = x < nx && y < ny;
    if (inside) {
        int row = y * nx;
        tile[ty + 1][tx + 1] = in[row + x];
        // The threads on the tile's edges load the halo beyond them. Where
        // the grid ends inside the tile, the last thread inside the grid
        // does: the threads past it load nothing.
        if (tx == 0)
            tile[ty + 1][0] = in[row + before(x, nx, boundary)];
        if (tx == STENCIL_TILE_X - 1 || x == nx - 1)
            tile[ty + 1][tx + 2] = in[row + after(x, nx, boundary)];
        if (ty == 0)
            tile[0][tx + 1] = in[before(y, ny, boundary) * nx + x];
        if (ty == STENCIL_TILE_Y - 1 || y == ny - 1)
            tile[ty + 2][tx + 1] = in[after(y, ny, boundary) * nx + x];
    }
    // Every thread, inside the grid or not: the whole tile is loaded before
    // anyone reads a neighbour that another warp loaded.
    __syncthreads();
    if (!inside)
        return;
    float center = tile[ty + 1][tx + 1];
    out[y * nx + x] = is_fixed_2d(boundary, x, y, nx, ny)
                          ? center
                          : heat_2d(center, tile[ty + 1][tx], tile[ty + 1][tx + 2],
                                    tile[ty][tx + 1], tile[ty + 2][tx + 1]);
}

/* Row y of the grid for a march that loads rows beyond the grid's last:
 * past it, the row that after() gives for the last (its north neighbour:
 * row 0 on a periodic grid). Rows further on are loaded but never used, so
 * any row inside the grid will do for them. */
__device__ __forceinline__ int row_in_grid(int y, int ny, int boundary)
{
    return y < ny ? y : after(ny - 1, ny, boundary);
}

/* Stage 2, a warp marches down the rows: no shared memory, no barrier. A
 * block is STENCIL_MARCH_WARPS warps; each owns 32 columns (lane = x) and
 * walks STENCIL_MARCH_ROWS rows. A lane keeps its column's cells in
 * registers: south, center, and the next STENCIL_ROWS_AHEAD rows north.
 * West and east are the lanes beside it (a shuffle, registers to
 * registers); only the warp's ends have no lane beside them, so lane 0
 * loads the west halo cell and lane 31 the east one. No warp ever waits
 * for another (stage 1's tile waits at a barrier for the slowest warp's
 * load), so nothing hides a lane's loads but its own pipeline:
 *   - Little's law: the memory needs bandwidth x latency bytes in flight.
 *     Each lane loads every row STENCIL_ROWS_AHEAD + 1 rows before it is
 *     computed: while it computes a row, STENCIL_ROWS_AHEAD loads per thread
 *     are in flight (4: one per row ahead), not one that it waits for in
 *     the same row;
 *   - the row loop is unrolled completely (#pragma unroll, with the
 *     register arrays indexed by constants), so the pipeline is registers:
 *     "moving one row down" renames them, it copies nothing and indexes no
 *     local memory.
 * Stage 5 uses the same ideas in 3D (a warp's strip, shuffles, every load a
 * plane early); handouts/10-stencil.md, "Loads in flight", has what each
 * change gave on the H200. */
__global__ void __launch_bounds__(32 * STENCIL_MARCH_WARPS)
    heat2d_march(const float *in, float *out, int nx, int ny, int boundary)
{
    const int AHEAD = STENCIL_ROWS_AHEAD;
    int lane = threadIdx.x, x = blockIdx.x * 32 + lane;
    int y_first = (blockIdx.y * STENCIL_MARCH_WARPS + threadIdx.y) * STENCIL_MARCH_ROWS;
    if (y_first >= ny)
        return;   // the whole warp: its march starts past the grid
    // Every lane marches and shuffles, also the lanes past the grid's last
    // column: they store nothing, and hold the cell east of the last
    // column (inside the grid), which the last column then gets by the
    // same shuffle as every other lane gets its east.
    bool inside = x < nx;
    int column = inside ? x : after(nx - 1, nx, boundary);
    // The warp's ends: lane 0 loads the halo cell west of it, lane 31 the
    // one east of it, in every row, as early as the rows of its column.
    bool halo_lane = lane == 0 || lane == 31;
    int halo_x = lane == 0 ? before(column, nx, boundary) : after(column, nx, boundary);

    // The pipeline: north[k] is row y + 1 + k of this column, halo[k] the
    // halo cell of row y + k (lanes 0 and 31 only).
    float south = in[before(y_first, ny, boundary) * nx + column];
    float center = in[y_first * nx + column];
    float north[AHEAD], halo[AHEAD + 1];
#pragma unroll
    for (int k = 0; k < AHEAD; k++)
        north[k] = in[row_in_grid(y_first + 1 + k, ny, boundary) * nx + column];
#pragma unroll
    for (int k = 0; k <= AHEAD; k++)
        halo[k] = halo_lane ? in[row_in_grid(y_first + k, ny, boundary) * nx + halo_x] : 0.0f;
#pragma unroll
    for (int r = 0; r < STENCIL_MARCH_ROWS; r++) {
        int y = y_first + r;
        // First the loads of the row AHEAD + 1 on: in flight while this
        // row and the AHEAD after it compute.
        int far_row = row_in_grid(y + AHEAD + 1, ny, boundary) * nx;
        float far = in[far_row + column];
        float far_halo = halo_lane ? in[far_row + halo_x] : 0.0f;
        // Every lane shuffles (the full mask): lane i gets west from lane
        // i - 1 and east from lane i + 1; the ends take their halo instead.
        float west = __shfl_up_sync(0xffffffffu, center, 1);
        float east = __shfl_down_sync(0xffffffffu, center, 1);
        if (lane == 0)
            west = halo[0];
        if (lane == 31)
            east = halo[0];
        if (inside && y < ny)
            out[y * nx + x] = is_fixed_2d(boundary, x, y, nx, ny)
                                  ? center
                                  : heat_2d(center, west, east, south, north[0]);
        // One row down: every register of the pipeline moves one place.
        south = center;
        center = north[0];
#pragma unroll
        for (int k = 0; k + 1 < AHEAD; k++)
            north[k] = north[k + 1];
        north[AHEAD - 1] = far;
#pragma unroll
        for (int k = 0; k < AHEAD; k++)
            halo[k] = halo[k + 1];
        halo[AHEAD] = far_halo;
    }
}

/* Stage 3: stage 0 in 3D. The grid has one layer of 32 x 8 blocks per
 * plane: z is blockIdx.z. The neighbours down and up are a whole plane
 * (nx * ny floats) away. */
__global__ void heat3d_naive(const float *in, float *out, int nx, int ny, int nz, int boundary)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z;
    if (x >= nx || y >= ny)
        return;
    int plane = nx * ny, row = z * plane + y * nx;
    if (is_fixed_3d(boundary, x, y, z, nx, ny, nz)) {
        out[row + x] = in[row + x];
        return;
    }
    out[row + x] = heat_3d(in[row + x], in[row + before(x, nx, boundary)],
                           in[row + after(x, nx, boundary)],
                           in[z * plane + before(y, ny, boundary) * nx + x],
                           in[z * plane + after(y, ny, boundary) * nx + x],
                           in[before(z, nz, boundary) * plane + y * nx + x],
                           in[after(z, nz, boundary) * plane + y * nx + x]);
}

/* Stage 4, marching planes: a 32 x 8 block walks up STENCIL_PLANES planes.
 * Each thread keeps its column's down, center and up in registers (stage 2
 * in z); the plane's tile and halo are in shared memory (stage 1 in x and
 * y). Per plane a thread loads one new cell of its column and, on the
 * tile's edge, a halo cell: about 1.3 loads per cell instead of stage 3's
 * seven. Like stage 2's rows, the new cell is loaded early, two planes
 * before it is needed, so that two loads per thread are in flight while
 * the block works on this plane. */
__global__ void heat3d_march(const float *in, float *out, int nx, int ny, int nz, int boundary)
{
    __shared__ float tile[STENCIL_TILE_Y + 2][STENCIL_TILE_X + 2];
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * STENCIL_TILE_X + tx, y = blockIdx.y * STENCIL_TILE_Y + ty;
    int z_first = blockIdx.z * STENCIL_PLANES, z_end = min(z_first + STENCIL_PLANES, nz);
    int plane = nx * ny, column = y * nx + x;
    bool inside = x < nx && y < ny;
    float down = 0.0f, center = 0.0f, up = 0.0f, ahead = 0.0f;   // ahead: the next up
    if (inside) {
        down = in[before(z_first, nz, boundary) * plane + column];
        center = in[z_first * plane + column];
        up = in[after(z_first, nz, boundary) * plane + column];
        if (z_first + 1 < z_end)
            ahead = in[after(z_first + 1, nz, boundary) * plane + column];
    }
    for (int z = z_first; z < z_end; z++) {
        float next = 0.0f;   // up two planes on
        if (inside) {
            if (z + 2 < z_end)
                next = in[after(z + 2, nz, boundary) * plane + column];
            int row = z * plane + y * nx;
            tile[ty + 1][tx + 1] = center;
            if (tx == 0)
                tile[ty + 1][0] = in[row + before(x, nx, boundary)];
            if (tx == STENCIL_TILE_X - 1 || x == nx - 1)
                tile[ty + 1][tx + 2] = in[row + after(x, nx, boundary)];
            if (ty == 0)
                tile[0][tx + 1] = in[z * plane + before(y, ny, boundary) * nx + x];
            if (ty == STENCIL_TILE_Y - 1 || y == ny - 1)
                tile[ty + 2][tx + 1] = in[z * plane + after(y, ny, boundary) * nx + x];
        }
        __syncthreads();   // the plane's tile and halo are complete
        if (inside)
            out[z * plane + column] =
                is_fixed_3d(boundary, x, y, z, nx, ny, nz)
                    ? center
                    : heat_3d(center, tile[ty + 1][tx], tile[ty + 1][tx + 2], tile[ty][tx + 1],
                              tile[ty + 2][tx + 1], down, up);
        __syncthreads();   // every thread has read the tile before the next plane overwrites it
        // One plane up: the registers move along with it.
        down = center;
        center = up;
        up = ahead;
        ahead = next;
    }
}

/* Stage 5, warp strips in registers: stage 4 without shared memory and
 * without a barrier. A warp owns a strip of 32 columns (lane = x) and
 * STENCIL_STRIP_ROWS rows, one register per cell of its column, and marches
 * up STENCIL_PLANES planes as stage 4 does. West and east are the lanes
 * beside it (a shuffle); only the strip's two ends load a halo cell, lane 0
 * the west one and lane 31 the east one. South and north are the thread's
 * own registers, with one row beyond each end of the strip loaded too.
 * Stage 4's plane waits at a barrier for the slowest warp's halo load; here
 * no warp waits for another, and every load is issued a plane before it is
 * needed (handouts/10-stencil.md, "Stage 5").
 *
 * Two choices, measured on an H200 (2026-11-29, 512^3, 10 steps a call,
 * copies of this kernel; handouts/10-stencil.md, "Loads in flight"):
 *   - the boundary condition is a template parameter, BOUNDARY: before(),
 *     after() and is_fixed_3d() get a constant, and the compiler drops the
 *     other condition's code. The kernel is partly bound by the
 *     instructions it issues: with two columns a lane, the boundary a
 *     runtime argument reached 72.8% of the copy bandwidth (periodic
 *     73.1%), the same code with a constant 75.3% (periodic 79.4%).
 *     given.cuh launches the kernel of the grid's condition;
 *   - one column a lane and four rows: a strip of R rows loads R + 2 rows
 *     of each plane (the rows beyond its ends), so four rows load 1.5 cells
 *     per cell and two rows 2. With both choices, 78.4%; two columns with
 *     four rows need too many registers (62-72%).
 * The rows' loops are unrolled (#pragma unroll), so that every index into
 * the arrays is a constant and they are registers. The launch bound caps
 * the registers at 64 a thread, so that 8 blocks (32 warps) fit on an SM,
 * with nothing spilled. */
template <int BOUNDARY>
__global__ void __launch_bounds__(32 * STENCIL_STRIP_WARPS, 8)
    heat3d_strips(const float *in, float *out, int nx, int ny, int nz)
{
    const int R = STENCIL_STRIP_ROWS;
    int lane = threadIdx.x, x = blockIdx.x * 32 + lane;
    int y_first = (blockIdx.y * STENCIL_STRIP_WARPS + threadIdx.y) * R;
    int z_first = blockIdx.z * STENCIL_PLANES, z_end = min(z_first + STENCIL_PLANES, nz);
    if (y_first >= ny)
        return;   // the whole warp: its strip starts past the grid
    int plane = nx * ny;
    // Every lane marches and shuffles, also the lanes past the grid's last
    // column: they store nothing, and hold the column after the last (inside
    // the grid), which the last column then gets as its east by the same
    // shuffle as every other lane (as in stage 2).
    bool inside = x < nx;
    int column = inside ? x : after(nx - 1, nx, BOUNDARY);
    // The strip's ends: lane 0 loads the halo cell west of its column, lane
    // 31 the one east of it, in every row of the strip.
    bool halo_lane = lane == 0 || lane == 31;
    int halo_x = lane == 0 ? before(column, nx, BOUNDARY) : after(column, nx, BOUNDARY);
    // Row j of the registers is y_first - 1 + j: the row south of the strip,
    // its R rows, the row north of it. Past the grid's edge the neighbour
    // row is what before() and after() say; rows further out are never used.
    int row[R + 2];
#pragma unroll
    for (int j = 0; j < R + 2; j++) {
        int y = y_first - 1 + j;
        row[j] = (y < 0 ? before(0, ny, BOUNDARY) : y >= ny ? after(ny - 1, ny, BOUNDARY) : y) * nx;
    }
    // down: plane z - 1 (the strip's rows); center and up: planes z and
    // z + 1 (with the rows beyond the ends); halo: lane 0's west or lane
    // 31's east cell of each row, plane z.
    float down[R], center[R + 2], up[R + 2], halo[R];
    int z_below = before(z_first, nz, BOUNDARY), z_above = after(z_first, nz, BOUNDARY);
#pragma unroll
    for (int j = 0; j < R + 2; j++) {
        center[j] = in[z_first * plane + row[j] + column];
        up[j] = in[z_above * plane + row[j] + column];
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        down[r] = in[z_below * plane + row[r + 1] + column];
        halo[r] = halo_lane ? in[z_first * plane + row[r + 1] + halo_x] : 0.0f;
    }
    for (int z = z_first; z < z_end; z++) {
        // First the loads of the next plane: the up two planes on and the
        // halo one plane on. They are in flight while this plane computes.
        // (Past the top of the grid the plane two on is never used: any
        // plane inside it will do.)
        int z_up = after(z, nz, BOUNDARY), z_next = after(min(z + 1, nz - 1), nz, BOUNDARY);
        float next[R + 2], next_halo[R];
#pragma unroll
        for (int j = 0; j < R + 2; j++)
            next[j] = in[z_next * plane + row[j] + column];
#pragma unroll
        for (int r = 0; r < R; r++)
            next_halo[r] = halo_lane ? in[z_up * plane + row[r + 1] + halo_x] : 0.0f;
#pragma unroll
        for (int r = 0; r < R; r++) {
            float c = center[r + 1];
            // Every lane shuffles (the full mask): lane i gets west from
            // lane i - 1 and east from lane i + 1; the ends take their halo.
            float west = __shfl_up_sync(0xffffffffu, c, 1);
            float east = __shfl_down_sync(0xffffffffu, c, 1);
            if (lane == 0)
                west = halo[r];
            if (lane == 31)
                east = halo[r];
            int y = y_first + r;
            if (inside && y < ny)
                out[z * plane + y * nx + x] =
                    is_fixed_3d(BOUNDARY, x, y, z, nx, ny, nz)
                        ? c
                        : heat_3d(c, west, east, center[r], center[r + 2], down[r], up[r + 1]);
        }
        // One plane up: the registers move along with it.
#pragma unroll
        for (int r = 0; r < R; r++) {
            down[r] = center[r + 1];
            halo[r] = next_halo[r];
        }
#pragma unroll
        for (int j = 0; j < R + 2; j++) {
            center[j] = up[j];
            up[j] = next[j];
        }
    }
}
