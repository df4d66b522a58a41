"""Figure: the roofline of the H100 from the ceilings the workbook measured
(copy bandwidth from lab 00's benchmark, cuBLAS SGEMM from the matmul lab's),
with two kernels placed on it by their arithmetic intensity."""
import math
import sys

from svg import Svg

BANDWIDTH = 2.93e12      # B/s, device-to-device copy, read + write (2026-11-25: 2935 GB/s)
PEAK = 51e12             # FLOP/s, cuBLAS SGEMM FP32 at 4096^3 (2026-11-25: 50919 GFLOP/s)
X0, X1, Y0, Y1 = -3, 3, 9, 14   # log10 ranges: intensity, FLOP/s

s = Svg(640, 400)
left, top, w, h = 80, 20, 530, 320


def px(intensity, flops):
    return (left + (math.log10(intensity) - X0) / (X1 - X0) * w,
            top + h - (math.log10(flops) - Y0) / (Y1 - Y0) * h)


s.rect(left, top, w, h, fill="#fbfbfb", rx=0)
for e in range(X0, X1 + 1):
    x, _ = px(10 ** e, 1e9)
    s.line(x, top, x, top + h, stroke="#ddd")
    s.text(x, top + h + 16, f"10^{e}" if e not in (0, 1) else ("1" if e == 0 else "10"), size=11)
for e in range(Y0, Y1 + 1):
    _, y = px(1, 10 ** e)
    s.line(left, y, left + w, y, stroke="#ddd")
    s.text(left - 6, y + 4, f"{10 ** (e - 9):g}", size=11, anchor="end")
ridge = PEAK / BANDWIDTH
points = [px(10 ** X0, BANDWIDTH * 10 ** X0), px(ridge, PEAK), px(10 ** X1, PEAK)]
s.polyline(points, stroke="#1f5fa8", width=2.5)
s.text(px(ridge, PEAK)[0] + 6, px(ridge, PEAK)[1] + 20, f"ridge: {ridge:.0f} FLOP/byte",
       size=12, anchor="start")
# Labels below-right of the rising slope and above-left of the points stay
# clear of the line.
slope_x, slope_y = px(10 ** -2.5, BANDWIDTH * 10 ** -2.5)
s.text(slope_x + 12, slope_y + 26, "copy bandwidth 2.93 TB/s", size=12, anchor="start")
s.text(left + w - 6, px(1, PEAK)[1] - 8, "cuBLAS SGEMM 51 TFLOP/s", size=12, anchor="end")
for label, intensity in (("vector add (1/12)", 1 / 12), ("reduction, naive matmul (1/4)", 1 / 4)):
    x, y = px(intensity, BANDWIDTH * intensity)
    s.circle(x, y, 4, fill="#c0392b")
    s.text(x - 8, y - 8, label, size=11, anchor="end", fill="#c0392b")
s.text(left + w / 2, top + h + 34, "arithmetic intensity (FLOP per byte moved)", size=12)
s.text(left + 4, top + 14, "GFLOP/s", size=12, anchor="start")
s.save(sys.argv[1])
