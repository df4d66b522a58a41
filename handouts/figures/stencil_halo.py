"""Figure: lab 10's stencils. Left, the 5-point stencil and one block's tile
with its halo (the four edges loaded, the corners never needed); right, the
2.5D march: a tile walks up the planes, each thread holding down, center
and up in registers."""
import sys

from svg import Svg

s = Svg(800, 330)
C = 22   # one cell on screen
TILE_FILL, HALO_FILL, STENCIL_FILL = "#9cc3e6", "#fde2c4", "#e07b24"

# Left: a tile of 8 x 4 cells (the lab's is 32 x 8) with its halo ring.
x0, y0, cols, rows = 40, 60, 8, 4
s.text(x0 + (cols + 2) * C / 2, 30, "a tile and its halo (stage 1)", weight="bold")
for r in range(-1, rows + 1):
    for c in range(-1, cols + 1):
        corner = r in (-1, rows) and c in (-1, cols)
        edge = not corner and (r in (-1, rows) or c in (-1, cols))
        x, y = x0 + (c + 1) * C, y0 + (r + 1) * C
        if corner:
            s.rect(x, y, C - 2, C - 2, fill="#ffffff", stroke="#bbb", rx=1)
            s.line(x + 3, y + 3, x + C - 5, y + C - 5, stroke="#c33")
            s.line(x + C - 5, y + 3, x + 3, y + C - 5, stroke="#c33")
        else:
            s.rect(x, y, C - 2, C - 2, fill=HALO_FILL if edge else TILE_FILL, rx=1)
# The 5-point stencil of one cell on the tile's edge: its west neighbour is halo.
cx, cy = 0, 2
for dc, dr in ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)):
    x, y = x0 + (cx + dc + 1) * C, y0 + (cy + dr + 1) * C
    s.rect(x + 4, y + 4, C - 10, C - 10, fill=STENCIL_FILL, stroke=STENCIL_FILL, rx=2)
legend_y = y0 + (rows + 2) * C + 24
for i, (fill, words) in enumerate(((TILE_FILL, "the block's cells: one thread each"),
                                   (HALO_FILL, "halo: loaded by the threads on the edge"),
                                   (STENCIL_FILL, "a 5-point stencil: centre and 4 neighbours"))):
    s.rect(x0, legend_y + i * 22 - 12, 14, 14, fill=fill, rx=1)
    s.text(x0 + 22, legend_y + i * 22, words, size=12, anchor="start")
s.text(x0 + 22, legend_y + 3 * 22, "corners: never needed, never loaded", size=12, anchor="start",
       fill="#c33")

# Right: the march through the planes (stage 4), drawn as sheared planes.
px, py, w, h, dz = 400, 250, 150, 46, 44
s.text(560, 30, "marching planes (stage 4)", weight="bold")
names = ["z - 1: down (register)", "z: the tile in shared memory", "z + 1: up (register)",
         "z + 2: loaded next"]
fills = ["#e8e8e8", TILE_FILL, "#e8e8e8", "#ffffff"]
for k in range(4):
    y = py - k * dz
    points = [(px, y), (px + w, y), (px + w + 40, y - h * 0.6), (px + 40, y - h * 0.6)]
    s.polyline(points + [points[0]], stroke="#555", width=1.2)
    if fills[k] != "#ffffff":
        s.rect(px + 14, y - h * 0.45, w - 4, h * 0.3, fill=fills[k], stroke=fills[k], rx=2,
               opacity=0.8)
    s.text(px + w + 50, y - h * 0.25, names[k], size=11, anchor="start")
s.line(px - 20, py - 10, px - 20, py - 3 * dz - 10, arrow=True)
s.text(px - 28, py - 1.5 * dz, "z", size=13, anchor="end")
s.text(590, 300, "each step: store the centre in the tile, load its halo, __syncthreads(),",
       size=11)
s.text(590, 316, "compute, __syncthreads(), then down = centre, centre = up, load the next up",
       size=11)
s.save(sys.argv[1])
