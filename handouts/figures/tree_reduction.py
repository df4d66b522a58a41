"""Figure: a tree reduction of 8 values in shared memory with sequential
addressing (stage 2): in each step thread t < s adds element t + s into t."""
import sys

from svg import Svg

values = [3, 1, 7, 0, 4, 1, 6, 3]
s = Svg(520, 300)
y = 30
step = 0
while True:
    for i, v in enumerate(values):
        s.rect(60 + i * 50, y, 44, 30, fill="#d6efd6" if i < max(1, len(values)) else "#fff")
        s.text(82 + i * 50, y + 20, v)
    s.text(30, y + 20, f"step {step}" if step else "load", size=11)
    half = len(values) // 2
    if half == 0:
        break
    for t in range(half):
        s.line(82 + (t + half) * 50, y + 30, 82 + t * 50, y + 60, stroke="#c0392b", arrow=True)
        s.line(82 + t * 50, y + 30, 82 + t * 50, y + 60, stroke="#333", arrow=True)
    values = [values[t] + values[t + half] for t in range(half)]
    y += 65
    step += 1
s.text(260, 290, "s = 4, 2, 1: thread t < s adds sdata[t + s] into sdata[t]; "
       "__syncthreads() between steps", size=11)
s.save(sys.argv[1])
