/* Lab 10: the CPU's heat step, in double precision, that the tests and the
 * benchmark check every stage against (lab.h states the rule). */
#ifndef LAB_STENCIL_CPU_H
#define LAB_STENCIL_CPU_H

#include <stdbool.h>

/* Whether cell (x, y, z) lies in the outer layer of an nx x ny x nz grid
 * (in 2D, dims == 2, z plays no part): with Dirichlet boundaries, the fixed
 * cells. */
bool stencil_on_grid_edge(int dims, int nx, int ny, int nz, int x, int y, int z);

/* One step of the 5-point (dims == 2, nz == 1) or 7-point (dims == 3) heat
 * stencil from in to out, both nx * ny * nz doubles, with the GPU's float
 * weights. */
void stencil_cpu_step(int dims, int boundary, int nx, int ny, int nz, const double *in,
                      double *out);

#endif
