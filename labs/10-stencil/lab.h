/* Lab 10, stencils: the entry points that the skeleton (labs/) and the
 * reference (solutions/) both define, and that test.c and bench.c call.
 *
 * The grids. A 2D grid of nx x ny floats is stored row by row: cell (x, y)
 * is at y * nx + x, so x is the fast index (neighbours in x are neighbours
 * in memory). A 3D grid of nx x ny x nz floats is stored plane by plane:
 * cell (x, y, z) is at (z * ny + y) * nx + x.
 *
 * One time step of the heat equation (explicit Euler, a Jacobi sweep): every
 * cell moves towards the mean of its neighbours,
 *     2D, 5 points:  u' = u + STENCIL_R2 * (west + east + south + north - 4 u)
 *     3D, 7 points:  u' = u + STENCIL_R3 * (west + east + south + north
 *                                          + down + up - 6 u)
 * where west/east are x - 1 and x + 1, south/north y - 1 and y + 1,
 * down/up z - 1 and z + 1. Every new value is computed from the old grid
 * only, so a step reads one buffer and writes another (ping-pong).
 *
 * The boundary conditions (what a cell on the grid's edge uses for the
 * neighbour that is not there):
 *   STENCIL_DIRICHLET  the cells of the outer layer (x == 0 or x == nx - 1,
 *                      the same in y and, in 3D, z) are fixed: they keep
 *                      their values in every step, and only the cells
 *                      inside them are updated;
 *   STENCIL_PERIODIC   the grid wraps around: every cell is updated, and the
 *                      neighbour of x == 0 in -x is x == nx - 1 (the same in
 *                      every axis), as on a torus.
 */
#ifndef LAB_STENCIL_H
#define LAB_STENCIL_H

#ifdef __cplusplus
extern "C" {
#endif

/* Stages 0 ... STENCIL_STAGES - 1, as in handouts/10-stencil.md: 0-2 are
 * 2D, 3-5 are 3D. */
#define STENCIL_STAGES 6

#define STENCIL_DIRICHLET 0
#define STENCIL_PERIODIC 1
#define STENCIL_BOUNDARIES 2

/* The heat step's weight of the neighbours: stable (every new value a
 * convex combination of old ones) up to 1/4 in 2D and 1/6 in 3D. */
#define STENCIL_R2 0.2f
#define STENCIL_R3 0.125f

/* Blocks of stages 0, 1, 3 and 4: STENCIL_TILE_X x STENCIL_TILE_Y threads,
 * one cell of a 2D tile (or of a plane of a 3D one) each. */
#define STENCIL_TILE_X 32
#define STENCIL_TILE_Y 8
/* Stage 2: a block is STENCIL_MARCH_WARPS warps; each owns 32 columns and
 * marches down STENCIL_MARCH_ROWS rows, loading each row
 * STENCIL_ROWS_AHEAD + 1 rows before it computes it (STENCIL_ROWS_AHEAD
 * loads per thread in flight). Stage 4: a block's tile marches through
 * STENCIL_PLANES planes. */
#define STENCIL_MARCH_WARPS 8
#define STENCIL_MARCH_ROWS 16
#define STENCIL_ROWS_AHEAD 4
#define STENCIL_PLANES 64
/* Stage 5: a warp owns a strip of 32 x STENCIL_STRIP_ROWS cells of a plane
 * (each lane one column, a register per row) and marches through
 * STENCIL_PLANES planes; a block is STENCIL_STRIP_WARPS such warps, one
 * above the other. */
#define STENCIL_STRIP_ROWS 4
#define STENCIL_STRIP_WARPS 4

/* The lecture's name for a stage ("2D, naive", ...), for boundary
 * conditions "Dirichlet" and "periodic". */
const char *stencil_stage_name(int stage);
const char *stencil_boundary_name(int boundary);

/* 2 for the 2D stages, 3 for the 3D ones, 0 for a stage that does not
 * exist. */
int stencil_stage_dims(int stage);

/* Threads per block of the naive stages 0 and 3 from now on, in rows of 32
 * (a multiple of 32, at most 1024; STENCIL_TILE_X x STENCIL_TILE_Y until
 * set): the benchmark's --block. The other stages' blocks are their tiles,
 * fixed above. */
void stencil_set_naive_block(int threads);

/* `steps` time steps of stage `stage` on the grid in d_a (device memory,
 * nx x ny x nz floats; nz == 1 for a 2D stage), with d_b (as large) as the
 * second buffer. Returns the buffer that holds the grid after the last step
 * (d_a after 0 steps); the other holds scratch. Asynchronous: returns after
 * the launches, which it has checked. A stage, boundary condition or size
 * that does not exist, NULL or identical buffers and a negative step count
 * are reported through wb_fail. */
const float *stencil_run(int stage, int boundary, float *d_a, float *d_b, int nx, int ny, int nz,
                         int steps);

#ifdef __cplusplus
}
#endif

#endif
