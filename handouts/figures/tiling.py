"""Figure: tiled matrix multiply; the block computing one tile of C walks
phase by phase along a row of A tiles and a column of B tiles."""
import sys

from svg import Svg

s = Svg(640, 300)
T = 40   # one tile on screen


def matrix(x, y, rows, cols, name, highlight):
    for r in range(rows):
        for c in range(cols):
            fill = highlight(r, c)
            s.rect(x + c * T, y + r * T, T - 2, T - 2, fill=fill, rx=1)
    s.text(x + cols * T / 2, y - 8, name, weight="bold")


phase_colours = ["#fde2c4", "#f9c58d", "#f4a259", "#e07b24"]
matrix(20, 60, 4, 4, "A", lambda r, c: phase_colours[c] if r == 1 else "#f4f4f4")
matrix(360, 60, 4, 4, "B", lambda r, c: phase_colours[r] if c == 2 else "#f4f4f4")
s.text(200, 150, "x", size=20)
s.text(540, 150, "=", size=20)
s.rect(560, 60 + T, T - 2, T - 2, fill="#9cc3e6", rx=1)
s.text(580, 50, "C tile (1,2)", weight="bold", size=12)
s.text(320, 250, "phase p: the block loads A tile (1,p) and B tile (p,2) into shared memory,", size=12)
s.text(320, 268, "__syncthreads(), multiplies them into its registers, __syncthreads(), next phase",
       size=12)
s.save(sys.argv[1])
