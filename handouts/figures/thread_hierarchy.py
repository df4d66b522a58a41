"""Figure: a 2D grid of blocks, one block's threads, and the warps they form."""
import sys

from svg import Svg

s = Svg(760, 300)
s.text(150, 22, "grid (gridDim = 3 x 2 blocks)", weight="bold")
for by in range(2):
    for bx in range(3):
        x, y = 20 + bx * 90, 40 + by * 80
        s.rect(x, y, 80, 70, fill="#dbe9f6" if (bx, by) != (1, 1) else "#9cc3e6")
        s.text(x + 40, y + 40, f"block ({bx},{by})", size=12)
s.line(230, 150, 330, 60, dash="4 3")
s.line(230, 190, 330, 270, dash="4 3")
s.text(520, 22, "block (1,1): blockDim = 8 x 4 threads", weight="bold")
for ty in range(4):
    for tx in range(8):
        x, y = 340 + tx * 44, 40 + ty * 58
        warp = (ty * 8 + tx) // 32
        s.rect(x, y, 38, 50, fill="#fde2c4" if ty < 4 else "#fff")
        s.text(x + 19, y + 22, f"{tx},{ty}", size=11)
        s.text(x + 19, y + 40, f"t{ty * 8 + tx}", size=10, fill="#666")
s.text(520, 285, "threadIdx (x,y) and the linear number t = x + 8y; "
       "threads t0..t31 form warp 0", size=12)
s.text(150, 230, "global index of a thread:", size=12)
s.text(150, 250, "col = blockIdx.x * blockDim.x + threadIdx.x", size=11)
s.text(150, 268, "row = blockIdx.y * blockDim.y + threadIdx.y", size=11)
s.save(sys.argv[1])
