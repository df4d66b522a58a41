"""Figure: the three layouts of lab 09 in memory, and what a warp that
reads x alone makes the memory move. Each cell is one float; the brackets
below each row are 32-byte sectors, the unit DRAM and L2 move. x is
highlighted; every sector that holds an x is shaded: it is read whole."""
import sys

from svg import Svg

CELL = 22          # one float on screen
FLOATS = 24        # floats drawn per row (three sectors of eight)
LEFT = 120
s = Svg(LEFT + FLOATS * CELL + 40, 330)

X_COLOUR, OTHER, SECTOR_READ = "#e07b24", "#f4f4f4", "#fde2c4"


def row(y, title, fields, note):
    """fields(k): the name of float k of the layout."""
    s.text(LEFT - 10, y + 15, title, anchor="end", weight="bold")
    names = [fields(k) for k in range(FLOATS)]
    for sector in range(FLOATS // 8):
        holds_x = any(name == "x" for name in names[8 * sector:8 * sector + 8])
        x0 = LEFT + 8 * sector * CELL
        s.rect(x0 - 2, y - 4, 8 * CELL + 2, CELL + 8, fill=SECTOR_READ if holds_x else "#fff",
               stroke="#999", rx=2)
    for k, name in enumerate(names):
        fill = X_COLOUR if name == "x" else OTHER
        s.rect(LEFT + k * CELL, y, CELL - 2, CELL - 2, fill=fill, rx=1)
        s.text(LEFT + k * CELL + CELL / 2 - 1, y + 14, name, size=9)
    s.text(LEFT + FLOATS * CELL / 2, y + CELL + 22, note, size=11, fill="#444")


aos = ["x", "y", "z", "vx", "vy", "vz", "m"]
row(40, "AOS (stage 0)", lambda k: aos[k % 7],
    "28-byte structs: every 32-byte sector holds an x; 4 of every 28 bytes moved are used")
row(130, "float4 (2-4)", lambda k: ["x", "y", "z", "m"][k % 4],
    "16-byte (x, y, z, m): two x per sector; 4 of every 16 bytes used (velocities elsewhere)")
row(220, "SOA (stage 1)", lambda k: "x",
    "one array per field: a warp's 32 x fill four sectors, every byte moved is used")
s.text(s.width / 2, 20, "x += dx: shaded, the 32-byte sectors that the memory moves", size=12)
s.text(s.width / 2, 312, "The force loop reads each body n times, from L1 or shared memory: "
       "there the layout matters little", size=11)
s.save(sys.argv[1])
