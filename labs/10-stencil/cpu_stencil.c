/* Lab 10: the CPU's heat step (cpu_stencil.h). */
#include <stddef.h>

#include "cpu_stencil.h"
#include "lab.h"

bool stencil_on_grid_edge(int dims, int nx, int ny, int nz, int x, int y, int z)
{
    return x == 0 || y == 0 || x == nx - 1 || y == ny - 1 ||
           (dims == 3 && (z == 0 || z == nz - 1));
}

/* The neighbour before and after c on an axis of n cells. Periodic grids
 * wrap around; on a Dirichlet grid only interior cells look for
 * neighbours, and theirs are c - 1 and c + 1, which the same formula
 * gives. */
static int before(int c, int n) { return (c - 1 + n) % n; }
static int after(int c, int n) { return (c + 1) % n; }

void stencil_cpu_step(int dims, int boundary, int nx, int ny, int nz, const double *in,
                      double *out)
{
    const double r = dims == 2 ? (double)STENCIL_R2 : (double)STENCIL_R3;
    const size_t plane = (size_t)nx * ny;
    for (int z = 0; z < nz; z++)
        for (int y = 0; y < ny; y++) {
            const size_t row = z * plane + (size_t)y * nx;
            const double *south = in + z * plane + (size_t)before(y, ny) * nx;
            const double *north = in + z * plane + (size_t)after(y, ny) * nx;
            const double *down = in + before(z, nz) * plane + (size_t)y * nx;
            const double *up = in + after(z, nz) * plane + (size_t)y * nx;
            for (int x = 0; x < nx; x++) {
                const double center = in[row + x];
                if (boundary == STENCIL_DIRICHLET &&
                    stencil_on_grid_edge(dims, nx, ny, nz, x, y, z)) {
                    out[row + x] = center;
                    continue;
                }
                double sum = in[row + before(x, nx)] + in[row + after(x, nx)] + south[x] +
                             north[x];
                if (dims == 3)
                    sum += down[x] + up[x];
                out[row + x] = center + r * (sum - 2.0 * dims * center);
            }
        }
}
