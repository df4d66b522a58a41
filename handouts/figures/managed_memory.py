"""Figure: lab 06's stage 5, the four ways the job's data crosses the link.
Each row runs from "the host has written x and y" (every page in host
memory) to "the host can read y": what moves the pages, and when. A
schematic, not to scale, but the rows end in the order of the H100's times
(the chapter's table): hints first, then the pinned copies, the prefetches,
and on demand last."""
import sys

from svg import Svg

HOST, MOVE, KERNEL, FAULT = "#d6efd6", "#fde2c4", "#9cc3e6", "#c33"
LEFT, RIGHT, ROW = 250, 770, 62

s = Svg(800, 380)
s.text(400, 24, "from the inputs in host memory to the result readable on the host", weight="bold")


def box(x0, x1, y, fill, label, size=11):
    s.rect(x0, y, x1 - x0, 30, fill=fill)
    s.text((x0 + x1) / 2, y + 19, label, size=size)


def faults(x0, x1, y, count):
    """Small bars: pages moved one fault at a time."""
    step = (x1 - x0) / count
    for k in range(count):
        x = x0 + k * step
        s.rect(x + 1, y, step - 3, 30, fill=MOVE, rx=1)
        s.line(x + 1, y - 4, x + 1, y + 34, stroke=FAULT, width=1.5)


rows = [
    ("on demand", "no prefetch, no hints"),
    ("prefetch (version 5)", "cudaMemPrefetchAsync both ways"),
    ("hints", "prefers host, GPU accessed-by"),
    ("explicit copies", "cudaMemcpy, pinned host memory"),
]
for k, (name, how) in enumerate(rows):
    y = 60 + k * ROW
    s.text(20, y + 13, name, anchor="start", weight="bold", size=13)
    s.text(20, y + 29, how, anchor="start", size=11, fill="#555")
    s.line(LEFT - 8, y + 15, RIGHT, y + 15, stroke="#ccc")

# On demand: the kernel's threads fault x and y over page by page (the
# kernel waits on each), then the host's reads fault y back the same way.
y = 60
faults(LEFT, 520, y, 14)
s.text((LEFT + 520) / 2, y - 8, "kernel: GPU page faults pull x, y over", size=10)
faults(530, RIGHT, y, 12)
s.text((530 + RIGHT) / 2, y - 8, "host reads: CPU page faults pull y back", size=10)

# Prefetch: bulk moves on the stream around the kernel, no faults; the
# driver migrates the pages, slower than a copy from pinned memory.
y = 60 + ROW
box(LEFT, 500, y, MOVE, "prefetch x, y to the GPU")
box(500, 540, y, KERNEL, "kernel", size=10)
box(540, 660, y, MOVE, "prefetch y back")
box(660, 700, y, HOST, "read", size=10)

# Hints: nothing migrates; the kernel reads x and y and writes y across the
# link, the two directions at once, and the host's read is local.
y = 60 + 2 * ROW
box(LEFT, 470, y, KERNEL, "kernel: x, y in and y out at once", size=10)
s.text((LEFT + 470) / 2, y - 8, "reads and writes host memory across the link", size=10)
box(470, 510, y, HOST, "read", size=10)

# Explicit copies: the copy engines move the arrays in bulk, then the result
# back, one direction after the other.
y = 60 + 3 * ROW
box(LEFT, 390, y, MOVE, "cudaMemcpy x, y in")
box(390, 430, y, KERNEL, "kernel", size=10)
box(430, 510, y, MOVE, "copy y out", size=10)
box(510, 550, y, HOST, "read", size=10)

# Legend.
y = 330
for x, fill, label in ((LEFT, MOVE, "pages crossing the link"), (430, KERNEL, "the kernel"),
                       (560, HOST, "host reads y")):
    s.rect(x, y, 18, 14, fill=fill)
    s.text(x + 24, y + 12, label, anchor="start", size=11)
s.line(LEFT, y + 30, LEFT, y + 44, stroke=FAULT, width=1.5)
s.text(LEFT + 8, y + 42, "a page fault: the processor stops until the page has arrived", anchor="start",
       size=11)
s.save(sys.argv[1])
