"""Figure: lab 11's halo cost. For an output tile of w x h pixels and a mask
of radius r, a block loads (w + 2r) x (h + 2r) input pixels to compute
w x h outputs: the bars show that ratio for each radius and the tiles of
the lab (32 x 8 in stages 2 and 3, 32 x 16 in stage 4: a warp's march)
next to two others."""
import sys

from svg import Svg

TILES = ((16, 16, "#c9d9ec"), (32, 8, "#9cc3e6"), (32, 16, "#e07b24"), (64, 64, "#fde2c4"))
RADII = (1, 2, 3, 4)


def ratio(w, h, r):
    return (w + 2 * r) * (h + 2 * r) / (w * h)


s = Svg(720, 330)
left, base, top, scale = 70, 270, 50, 80.0   # y pixels per unit of ratio from 1.0
s.text(360, 28, "input pixels loaded per output pixel: (w + 2r)(h + 2r) / (w h)", weight="bold")
for k in range(5):   # gridlines at 1.0 ... 3.0
    value = 1.0 + 0.5 * k
    y = base - (value - 1.0) * scale
    s.line(left, y, 680, y, stroke="#ddd")
    s.text(left - 8, y + 4, f"{value:.1f}", size=11, anchor="end")
group, bar = 150, 28
for g, r in enumerate(RADII):
    x0 = left + 20 + g * group
    for b, (w, h, fill) in enumerate(TILES):
        value = ratio(w, h, r)
        height = (value - 1.0) * scale
        x = x0 + b * bar
        s.rect(x, base - height, bar - 4, height, fill=fill, stroke="#555", rx=1)
        s.text(x + (bar - 4) / 2, base - height - 4, f"{value:.2f}", size=9)
    s.text(x0 + 2 * bar - 2, base + 18, f"radius {r} ({2 * r + 1} x {2 * r + 1} mask)", size=12)
for b, (w, h, fill) in enumerate(TILES):
    x = left + 20 + b * 150
    s.rect(x, 300, 14, 14, fill=fill, stroke="#555", rx=1)
    s.text(x + 20, 312, f"tile {w} x {h}", size=12, anchor="start")
s.save(sys.argv[1])
