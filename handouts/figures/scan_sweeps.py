"""Figure: Blelloch's work-efficient scan of the lecture's 8 values (lab 08,
stage 1). Left, the up-sweep: at level d thread t adds the word ending the
left half of its pair into the word ending the right half. Right, the
down-sweep: the root becomes 0, then each pair hands its prefix to the
left half (dashed) and prefix + left half to the right half."""
import sys

from svg import Svg

VALUES = [4, 3, 9, 3, 5, 7, 3, 2]
N, W, H, GAP = len(VALUES), 34, 26, 74
LEFT_X, RIGHT_X, TOP = 40, 380, 56
CHANGED, ROOT = "#d6efd6", "#fde2c8"


def pairs(d):
    return [(d * (2 * t + 1) - 1, d * (2 * t + 2) - 1) for t in range(N // (2 * d))]


def row(s, x0, y, values, changed=(), fill=CHANGED):
    for i, v in enumerate(values):
        s.rect(x0 + i * (W + 4), y, W, H, fill=fill if i in changed else "#fff")
        s.text(x0 + i * (W + 4) + W / 2, y + 18, v)


def centre(x0, i):
    return x0 + i * (W + 4) + W / 2


s = Svg(720, 430)
s.text(LEFT_X + 150, 24, "up-sweep (reduce)", size=14, weight="bold")
s.text(RIGHT_X + 150, 24, "down-sweep", size=14, weight="bold")

# Up-sweep: input, then levels d = 1, 2, 4.
v, y = list(VALUES), TOP
row(s, LEFT_X, y, v)
s.text(LEFT_X - 8, y + 18, "in", size=11, anchor="end")
d = 1
while d < N:
    for left, right in pairs(d):
        s.line(centre(LEFT_X, left), y + H, centre(LEFT_X, right) - 4, y + GAP - 2,
               stroke="#c0392b", arrow=True)
        s.line(centre(LEFT_X, right), y + H, centre(LEFT_X, right), y + GAP - 2, arrow=True)
        v[right] += v[left]
    y += GAP
    row(s, LEFT_X, y, v, [r for _, r in pairs(d)])
    s.text(LEFT_X - 8, y + 18, f"d={d}", size=11, anchor="end")
    d *= 2
s.text(LEFT_X + 150, y + H + 24, "the last word holds the total", size=11)

# Down-sweep: the root cleared, then d = 4, 2, 1.
y = TOP
v[N - 1] = 0
row(s, RIGHT_X, y, v, [N - 1], fill=ROOT)
s.text(RIGHT_X - 8, y + 18, "root=0", size=11, anchor="end")
d = N // 2
while d >= 1:
    for left, right in pairs(d):
        s.line(centre(RIGHT_X, right), y + H, centre(RIGHT_X, left) + 4, y + GAP - 2,
               stroke="#2c6fbb", dash="4,3", arrow=True)
        s.line(centre(RIGHT_X, left), y + H, centre(RIGHT_X, right) - 4, y + GAP - 2,
               stroke="#c0392b", arrow=True)
        s.line(centre(RIGHT_X, right), y + H, centre(RIGHT_X, right), y + GAP - 2, arrow=True)
        v[left], v[right] = v[right], v[right] + v[left]
    y += GAP
    row(s, RIGHT_X, y, v, [i for p in pairs(d) for i in p])
    s.text(RIGHT_X - 8, y + 18, f"d={d}", size=11, anchor="end")
    d //= 2
s.text(RIGHT_X + 150, y + H + 24, "the exclusive scan", size=11)

s.text(360, 400, "red: added into the word below; blue dashed: copied to the left half "
       "(its prefix); black: the word's own value", size=11)
s.text(360, 418, "thread t < n / (2d) owns words d(2t+1)-1 and d(2t+2)-1; "
       "__syncthreads() before every level", size=11)
assert v == [0, 4, 7, 16, 19, 24, 31, 34], v
s.save(sys.argv[1])
