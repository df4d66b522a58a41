#!/usr/bin/env python3
"""Draws the matmul stages on a roofline, as SVG, from the benchmark's CSV
files, and checks that no stage sits above its roof.

    WB_RESULTS_DIR=results build/matmul-bench-reference --n 4096
    python3 labs/05-matmul/roofline.py results -o roofline.svg

With Nsight Compute (ncu) present, measure the bytes first (it replays each
kernel, so this takes a minute; its counts do not depend on the clock that
ncu locks the GPU to):

    ncu --csv -k regex:matmul_stage --metrics dram__bytes_read.sum,\\
    dram__bytes_write.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,\\
    smsp__sass_thread_inst_executed_op_ffma_pred_on.sum \\
        build/matmul-bench-reference --n 4096 --reps 1 > results/matmul-ncu.csv
    python3 labs/05-matmul/roofline.py results --ncu results/matmul-ncu.csv -o roofline.svg

Each stage sits at its arithmetic intensity, FLOPs per byte of DRAM traffic,
and at the GFLOP/s the benchmark measured. The DRAM bytes are Nsight
Compute's measured count when --ncu is given; otherwise the analytic
minimum (A and B read once, C written once), which the caches never beat,
so each point lies at or right of where it really is, and the plot says so.
The ceilings are the benchmark's own (matmul-ceilings.csv, same run): the
copy bandwidth (slanted), the FP32 peak (flat) and, with --ncu, each stage's
shared-memory roof, the shared-memory bandwidth divided by the
shared-memory load wavefronts the stage needs per FLOP (as compiled).
Exits 1 when a stage is above its roof: a ceiling or a count is then wrong.
Standard library only.
"""
import argparse
import csv
import math
import os
import re
import statistics
import sys

NCU_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum",
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
               "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")
WAVEFRONT_BYTES = 128.0   # 32 banks x 4 bytes
SLACK = 1.02              # a point may sit 2% above a roof (timing noise) before it is an error


def read_csv(path, what):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"error: cannot read {what} from {path}: {e}")


def read_stages(path, size):
    rows = [r for r in read_csv(path, "matmul-bench rows")
            if "x".join((r.get("m", ""), r.get("n", ""), r.get("k", ""))) == size]
    if not rows:
        sys.exit(f"error: no rows for size {size} in {path}")
    return rows


def read_ceilings(path):
    """{'DRAM': GB/s, 'FP32': GFLOP/s, 'shared memory': GB/s} from matmul-ceilings.csv."""
    found = {r["ceiling"]: float(r["value"]) for r in read_csv(path, "the ceilings")}
    missing = {"DRAM", "FP32", "shared memory"} - set(found)
    if missing:
        sys.exit(f"error: {path} lacks the ceilings {sorted(missing)}: re-run the benchmark")
    return found


def stage_key(kernel_name):
    """'void matmul_stage2<16>(const float *, ...)' -> ('2', '16'); stage 0 -> ('0', '-')."""
    m = re.search(r"matmul_stage(\d+)(?:<(\d+)>)?", kernel_name)
    return (m.group(1), m.group(2) or "-") if m else None


def read_ncu(path):
    """Per (stage, tile): the median over its launches of each metric."""
    values = {}
    with open(path, newline="") as f:
        # ncu's rows are quoted; its own messages and the program's output are not.
        lines = [line for line in f if line.startswith('"')]
    for r in csv.DictReader(lines):
        key = stage_key(r.get("Kernel Name", ""))
        if key and r.get("Metric Name") in NCU_METRICS:
            launch = values.setdefault(key, {}).setdefault(r["ID"], {})
            launch[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    if not values:
        sys.exit(f"error: no matmul_stage kernels with the metrics {NCU_METRICS} in {path}")
    counts = {}
    for key, launches in values.items():
        whole = [v for v in launches.values() if len(v) == len(NCU_METRICS)]
        if not whole:
            sys.exit(f"error: {path}: stage {key[0]} lacks some of {NCU_METRICS}")
        counts[key] = {m: statistics.median(v[m] for v in whole) for m in NCU_METRICS}
    return counts


def place(rows, ceilings, ncu):
    """Each stage's intensity, measured speed and roof, and what bounds it."""
    points = []
    for r in rows:
        if r["stage"] == "cuBLAS":
            continue
        m, n, k = (int(r[c]) for c in "mnk")
        flops = 2.0 * m * n * k
        counts = ncu.get((r["stage"], r["tile"])) if ncu else None
        if ncu and counts is None:
            sys.exit(f"error: the ncu file has no launch of stage {r['stage']} (tile {r['tile']})")
        if counts:
            dram_bytes = counts["dram__bytes_read.sum"] + counts["dram__bytes_write.sum"]
            wavefronts_per_flop = (counts["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
                                   / (2.0 * counts["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"]))
        else:
            dram_bytes, wavefronts_per_flop = 4.0 * (m * k + k * n + m * n), 0.0
        intensity = flops / dram_bytes
        roofs = {"DRAM": ceilings["DRAM"] * intensity, "FP32": ceilings["FP32"]}
        if wavefronts_per_flop > 0:
            roofs["shared memory"] = ceilings["shared memory"] / WAVEFRONT_BYTES / wavefronts_per_flop
        bound = min(roofs, key=roofs.get)
        label = f'stage {r["stage"]}' + (f' T={r["tile"]}' if r["tile"] != "-" else "")
        points.append({"label": label, "stage": r["stage"], "tile": r["tile"],
                       "intensity": intensity, "gflops": float(r["GFLOP/s"]),
                       "roofs": roofs, "bound": bound})
    return points


def draw(points, rows, ceilings, size, measured, path):
    width, height, left, bottom, top, right = 760, 480, 80, 60, 40, 30
    x_lo, x_hi = -1.0, 3.0   # log10 FLOP/byte
    y_lo, y_hi = 2.0, 5.0    # log10 GFLOP/s

    def sx(v):
        v = min(max(v, 10 ** x_lo), 10 ** x_hi)
        return left + (math.log10(v) - x_lo) / (x_hi - x_lo) * (width - left - right)

    def sy(v):
        v = min(max(v, 10 ** y_lo), 10 ** y_hi)
        return height - bottom - (math.log10(v) - y_lo) / (y_hi - y_lo) * (height - top - bottom)

    bytes_kind = "DRAM bytes measured by Nsight Compute" if measured else \
        "DRAM bytes: analytic minimum (A, B read once, C written once)"
    legend_top = height + 4   # one line per stage under the plot
    full_height = legend_top + 15 * (len(points) + 1) + 8
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{full_height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{full_height}" fill="white"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">matmul {size}: '
           f'stages on the roofline ({bytes_kind})</text>']
    for e in range(int(x_lo), int(x_hi) + 1):
        x = sx(10 ** e)
        out.append(f'<line x1="{x}" y1="{top}" x2="{x}" y2="{height - bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x}" y="{height - bottom + 16}" text-anchor="middle">{10.0 ** e:g}</text>')
    for e in range(int(y_lo), int(y_hi) + 1):
        y = sy(10 ** e)
        out.append(f'<line x1="{left}" y1="{y}" x2="{width - right}" y2="{y}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{10 ** e:g}</text>')
    out.append(f'<text x="{width / 2}" y="{height - 16}" text-anchor="middle">arithmetic intensity '
               f'(FLOP per byte of DRAM traffic)</text>')
    out.append(f'<text x="18" y="{height / 2}" text-anchor="middle" '
               f'transform="rotate(-90 18 {height / 2})">GFLOP/s</text>')
    bandwidth, peak = ceilings["DRAM"], ceilings["FP32"]
    knee = peak / bandwidth
    pts = [(10 ** x_lo, bandwidth * 10 ** x_lo), (knee, peak), (10 ** x_hi, peak)]
    out.append('<polyline fill="none" stroke="black" stroke-width="2" points="'
               + " ".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b in pts) + '"/>')
    out.append(f'<text x="{sx(10 ** x_hi) - 4}" y="{sy(peak) - 6}" text-anchor="end">FP32 peak '
               f'{peak:.0f} GFLOP/s</text>')
    out.append(f'<text x="{sx(knee / 8) + 6}" y="{sy(peak / 8) + 16}">DRAM {bandwidth:.0f} GB/s</text>')
    colours = ["#d62728", "#ff7f0e", "#2ca02c", "#17becf", "#1f77b4", "#9467bd", "#000"]
    for r in rows:
        if r["stage"] == "cuBLAS":
            y = sy(float(r["GFLOP/s"]))
            out.append(f'<line x1="{left}" y1="{y}" x2="{width - right}" y2="{y}" stroke="#000" '
                       f'stroke-dasharray="5,4"/>')
            out.append(f'<text x="{width - right - 4}" y="{y + 15}" text-anchor="end">cuBLAS '
                       f'{float(r["GFLOP/s"]):.0f} GFLOP/s</text>')
    for i, p in enumerate(points):
        colour = colours[int(p["stage"]) % len(colours)]
        x, y = sx(p["intensity"]), sy(p["gflops"])
        shared = p["roofs"].get("shared memory")
        if shared and shared < peak:
            ys = sy(shared)
            out.append(f'<line x1="{x - 18:.1f}" y1="{ys:.1f}" x2="{x + 18:.1f}" y2="{ys:.1f}" '
                       f'stroke="{colour}" stroke-width="2" stroke-dasharray="3,2"/>')
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{colour}"/>')
        # A short tag by the point (stages 2 and 3 share their intensities:
        # 2 tags above right, 3 below left), the whole story in the legend.
        tag = p["stage"] + (f'/{p["tile"]}' if p["tile"] != "-" else "")
        dx, dy, anchor = (-8, 16, "end") if p["stage"] == "3" else (8, -6, "start")
        out.append(f'<text x="{x + dx:.1f}" y="{y + dy:.1f}" text-anchor="{anchor}" fill="{colour}">'
                   f'{tag}</text>')
        roof = p["roofs"][p["bound"]]
        out.append(f'<text x="{left}" y="{legend_top + 15 * i}" fill="{colour}">{tag}: '
                   f'{p["label"]}, {p["gflops"]:.0f} GFLOP/s at {p["intensity"]:.1f} FLOP/byte; '
                   f'roof {roof:.0f} ({p["bound"]})</text>')
    if any("shared memory" in p["roofs"] for p in points):
        out.append(f'<text x="{left}" y="{legend_top + 15 * len(points)}" fill="#555">dashes: each stage\'s '
                   f'shared-memory roof ({ceilings["shared memory"]:.0f} GB/s / its load wavefronts '
                   f'per FLOP)</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", help="the folder WB_RESULTS_DIR named for the benchmark "
                   "(matmul-bench.csv and matmul-ceilings.csv)")
    p.add_argument("-o", "--output", default="roofline.svg", help="SVG file to write (default: %(default)s)")
    p.add_argument("--size", default="4096x4096x4096", help="MxNxK rows to plot (default: %(default)s)")
    p.add_argument("--ncu", metavar="CSV", help="Nsight Compute's --csv output for the same size "
                   "(above): measured DRAM bytes and shared-memory roofs")
    args = p.parse_args()
    rows = read_stages(os.path.join(args.results, "matmul-bench.csv"), args.size)
    ceilings = read_ceilings(os.path.join(args.results, "matmul-ceilings.csv"))
    ncu = read_ncu(args.ncu) if args.ncu else None
    points = place(rows, ceilings, ncu)
    draw(points, rows, ceilings, args.size, ncu is not None, args.output)
    print(f"{'stage':<12} {'FLOP/byte':>9} {'GFLOP/s':>8} {'roof':>8}  bound by")
    above = []
    for q in points:
        roof = q["roofs"][q["bound"]]
        print(f"{q['label']:<12} {q['intensity']:9.1f} {q['gflops']:8.0f} {roof:8.0f}  {q['bound']}")
        if q["gflops"] > roof * SLACK:
            above.append(q)
    print(f"wrote {args.output} ({len(points)} stages of {args.size}; "
          f"{'measured' if ncu else 'analytic minimum'} DRAM bytes)")
    for q in above:
        print(f"error: {q['label']} measured {q['gflops']:.0f} GFLOP/s, above its {q['bound']} roof of "
              f"{q['roofs'][q['bound']]:.0f}: a ceiling or a count is wrong", file=sys.stderr)
    return 1 if above else 0


if __name__ == "__main__":
    sys.exit(main())
