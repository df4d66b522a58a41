"""Figure: registers and shared memory per SM, L2 and device memory shared by all."""
import sys

from svg import Svg

s = Svg(720, 300)
for i, x in enumerate((20, 250, 480)):
    s.rect(x, 20, 220, 150, fill="#eef4fb")
    s.text(x + 110, 40, f"SM {i}" if i < 2 else "SM 131", weight="bold")
    s.rect(x + 10, 52, 200, 30, fill="#fde2c4")
    s.text(x + 110, 72, "registers: per thread", size=12)
    s.rect(x + 10, 90, 200, 30, fill="#d6efd6")
    s.text(x + 110, 110, "shared memory + L1: per block", size=12)
    s.rect(x + 10, 128, 200, 30, fill="#fff")
    s.text(x + 110, 148, "warp schedulers, cores", size=12)
    s.line(x + 110, 170, x + 110, 195, arrow=True)
s.text(470, 110, "...", size=20)
s.rect(20, 195, 680, 36, fill="#e8e0f4")
s.text(360, 218, "L2 cache (shared by all SMs)", size=13)
s.line(360, 231, 360, 247, arrow=True)
s.rect(20, 247, 680, 40, fill="#f4e0e0")
s.text(360, 272, "device memory: global, local, constant (+ host memory over PCIe/NVLink)", size=13)
s.save(sys.argv[1])
