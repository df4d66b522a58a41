#!/usr/bin/env python3
"""Draws the matmul stages on a roofline, as SVG, from the bench's CSV.

    WB_RESULTS_DIR=results build/matmul-bench-reference
    python3 labs/05-matmul/roofline.py results/matmul-bench.csv -o roofline.svg

Each stage is placed at its arithmetic intensity as the lecture counts it
(CGMA FLOPs per float loaded from global memory = CGMA / 4 FLOP per byte)
and at the GFLOP/s it measured. The slanted ceiling is --bandwidth (GB/s,
e.g. the copy bandwidth from lab 00's bench), the flat one --peak (GFLOP/s,
the FP32 peak: SMs x 128 lanes x 2 x clock). Standard library only.
"""
import argparse
import csv
import math
import sys


def read_rows(path, size):
    try:
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f) if "x".join((r["m"], r["n"], r["k"])) == size]
    except (OSError, KeyError) as e:
        sys.exit(f"error: cannot read matmul-bench rows from {path}: {e}")
    if not rows:
        sys.exit(f"error: no rows for size {size} in {path}")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", help="matmul-bench.csv written by the bench under WB_RESULTS_DIR")
    p.add_argument("-o", "--output", default="roofline.svg", help="SVG file to write")
    p.add_argument("--size", default="4096x4096x4096", help="MxNxK rows to plot")
    p.add_argument("--bandwidth", type=float, default=2990.0, help="memory ceiling, GB/s")
    p.add_argument("--peak", type=float, default=66900.0, help="FP32 ceiling, GFLOP/s")
    args = p.parse_args()
    rows = read_rows(args.csv, args.size)

    width, height, left, bottom, top, right = 720, 460, 80, 60, 40, 30
    x_lo, x_hi = -1.0, 2.0   # log10 FLOP/byte
    y_lo, y_hi = 1.0, 5.0    # log10 GFLOP/s

    def sx(v):
        return left + (math.log10(v) - x_lo) / (x_hi - x_lo) * (width - left - right)

    def sy(v):
        v = min(max(v, 10 ** y_lo), 10 ** y_hi)
        return height - bottom - (math.log10(v) - y_lo) / (y_hi - y_lo) * (height - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">matmul {args.size}: '
           f'stages on the roofline (measured)</text>']
    for e in range(int(x_lo), int(x_hi) + 1):
        x = sx(10 ** e)
        out.append(f'<line x1="{x}" y1="{top}" x2="{x}" y2="{height - bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x}" y="{height - bottom + 16}" text-anchor="middle">{10.0 ** e:g}</text>')
    for e in range(int(y_lo), int(y_hi) + 1):
        y = sy(10 ** e)
        out.append(f'<line x1="{left}" y1="{y}" x2="{width - right}" y2="{y}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{10 ** e:g}</text>')
    out.append(f'<text x="{width / 2}" y="{height - 16}" text-anchor="middle">arithmetic intensity '
               f'(FLOP per byte of global loads, CGMA / 4)</text>')
    out.append(f'<text x="18" y="{height / 2}" text-anchor="middle" '
               f'transform="rotate(-90 18 {height / 2})">GFLOP/s</text>')
    # The roof: bandwidth x intensity until it meets the peak.
    knee = args.peak / args.bandwidth
    pts = [(10 ** x_lo, args.bandwidth * 10 ** x_lo), (knee, args.peak), (10 ** x_hi, args.peak)]
    out.append('<polyline fill="none" stroke="black" stroke-width="2" points="'
               + " ".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b in pts) + '"/>')
    out.append(f'<text x="{sx(10 ** x_hi) - 4}" y="{sy(args.peak) - 6}" text-anchor="end">FP32 peak '
               f'{args.peak:.0f} GFLOP/s</text>')
    out.append(f'<text x="{sx(1.5)}" y="{sy(args.bandwidth * 1.5) - 8}" text-anchor="end">{args.bandwidth:.0f} GB/s</text>')
    colours = ["#d62728", "#ff7f0e", "#2ca02c", "#17becf", "#1f77b4", "#9467bd", "#000"]
    for i, r in enumerate(rows):
        gflops = float(r["GFLOP/s"])
        if r["stage"] == "cuBLAS":
            y = sy(gflops)
            out.append(f'<line x1="{left}" y1="{y}" x2="{width - right}" y2="{y}" stroke="#000" '
                       f'stroke-dasharray="5,4"/>')
            out.append(f'<text x="{left + 6}" y="{y - 5}">cuBLAS {gflops:.0f} GFLOP/s</text>')
            continue
        intensity = float(r["CGMA"]) / 4.0
        label = f'stage {r["stage"]}' + (f' T={r["tile"]}' if r["tile"] != "-" else "")
        x, y = sx(intensity), sy(gflops)
        colour = colours[int(r["stage"]) % len(colours)]
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{colour}"/>')
        # Stages 2 and 3 share an intensity: 2 labels right, 3 labels left.
        dy = 14 if r["tile"] == "32" or r["stage"] in ("4", "5") else -8
        dx, anchor = (-8, "end") if r["stage"] == "3" else (8, "start")
        out.append(f'<text x="{x + dx:.1f}" y="{y + dy:.1f}" text-anchor="{anchor}">'
                   f'{label}: {gflops:.0f}</text>')
    out.append("</svg>")
    with open(args.output, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {args.output} ({len(rows)} rows of {args.size})")


if __name__ == "__main__":
    main()
