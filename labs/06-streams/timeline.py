#!/usr/bin/env python3
"""Draws the timeline that streams-bench writes (version 4's events) as an SVG.

usage: timeline.py TIMELINE.csv [--experiment NAME] [-o OUT.svg] [--title TEXT]

The CSV has one line per step of a segment:
    experiment,segment,stream,kind,start_ms,end_ms
with kind "copy in", "kernel" or "copy out". The picture has one row per
engine (all copies in, all kernels, all copies out) and one row per stream.
On a stream's row a box starts when the stream reached the step and ends
when the step was done, so it includes time spent waiting for a busy
engine. An engine does one thing at a time: on its row, the steps are taken
in the order they finished, each starting at the later of "its stream
reached it" and "the engine's previous step finished". Without
--experiment the first one in the file is drawn; without -o the SVG goes to
stdout. Standard library only.
"""
import argparse
import csv
import sys
from xml.sax.saxutils import escape

COLOURS = {"copy in": "#4e79a7", "kernel": "#59a14f", "copy out": "#f28e2b"}
KINDS = list(COLOURS)
WIDTH, LEFT, RIGHT, ROW, TOP = 1000, 130, 20, 26, 48


def read(path, experiment):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no timeline rows")
    missing = {"experiment", "segment", "stream", "kind", "start_ms", "end_ms"} - set(rows[0])
    if missing:
        sys.exit(f"{path}: not a streams timeline (no column {', '.join(sorted(missing))})")
    names = list(dict.fromkeys(r["experiment"] for r in rows))
    experiment = experiment or names[0]
    if experiment not in names:
        sys.exit(f"{path}: no experiment {experiment!r}; it has {', '.join(names)}")
    boxes = [(int(r["segment"]), int(r["stream"]), r["kind"], float(r["start_ms"]),
              float(r["end_ms"])) for r in rows if r["experiment"] == experiment]
    return experiment, boxes


def engine_boxes(boxes):
    """The boxes of the engine rows: per kind, in the order the steps
    finished, each from the later of its stream's arrival and the end of the
    engine's previous step, so that no engine does two things at once."""
    engine = []
    for kind in KINDS:
        free = 0.0
        for segment, stream, _, start, stop in sorted((b for b in boxes if b[2] == kind),
                                                      key=lambda b: b[4]):
            engine.append((segment, stream, kind, min(max(start, free), stop), stop))
            free = stop
    return engine


def svg(boxes, title):
    streams = sorted({b[1] for b in boxes})
    rows = [f"{k} (engine)" for k in KINDS] + [f"stream {s}" for s in streams]
    end = max(b[4] for b in boxes)
    scale = (WIDTH - LEFT - RIGHT) / end
    height = TOP + ROW * (len(rows) + 1) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="20" font-size="14">{escape(title)}</text>']
    # legend
    for i, kind in enumerate(KINDS):
        x = LEFT + 120 * i
        out.append(f'<rect x="{x}" y="28" width="12" height="12" fill="{COLOURS[kind]}"/>'
                   f'<text x="{x + 16}" y="38">{kind}</text>')
    for i, name in enumerate(rows):
        y = TOP + ROW * i
        out.append(f'<text x="{LEFT - 8}" y="{y + ROW * 0.65:.1f}" text-anchor="end">{name}</text>')
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y + ROW}" y2="{y + ROW}" '
                   f'stroke="#ddd"/>')
    drawn = [(b, KINDS.index(b[2]), 0.6) for b in engine_boxes(boxes)] + \
        [(b, len(KINDS) + streams.index(b[1]), 1) for b in boxes]
    for (segment, stream, kind, start, stop), row, opacity in drawn:
        x, w = LEFT + start * scale, max((stop - start) * scale, 0.5)
        y = TOP + ROW * row + 3
        out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{ROW - 6}" '
                   f'fill="{COLOURS[kind]}" fill-opacity="{opacity}" stroke="white" '
                   f'stroke-width="0.5"><title>segment {segment}, stream {stream}, '
                   f'{kind}: {start:.3f} to {stop:.3f} ms</title></rect>')
        if w > 18 and opacity == 1:
            out.append(f'<text x="{x + w / 2:.2f}" y="{y + ROW * 0.5:.1f}" fill="white" '
                       f'font-size="9" text-anchor="middle">{segment}</text>')
    # time axis: about ten ticks at a round step
    axis = TOP + ROW * len(rows) + 8
    step = next(s for s in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
                if end / s <= 10)
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{axis}" y2="{axis}" stroke="black"/>')
    t = 0.0
    while t <= end + 1e-9:
        x = LEFT + t * scale
        out.append(f'<line x1="{x:.2f}" x2="{x:.2f}" y1="{axis}" y2="{axis + 5}" stroke="black"/>'
                   f'<text x="{x:.2f}" y="{axis + 18}" text-anchor="middle">{t:g}</text>')
        t += step
    out.append(f'<text x="{WIDTH - RIGHT}" y="{axis + 34}" text-anchor="end">time since the '
               f'first copy was issued (ms); total {end:.1f} ms</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", help="the timeline CSV written by streams-bench")
    parser.add_argument("--experiment", help="which experiment of the file to draw")
    parser.add_argument("-o", "--output", help="the SVG file to write (default: stdout)")
    parser.add_argument("--title", help="the picture's title")
    args = parser.parse_args()
    try:
        experiment, boxes = read(args.csv, args.experiment)
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"timeline.py: cannot read {args.csv}: {error}")
    picture = svg(boxes, args.title or f"{experiment}: version 4's events")
    if args.output:
        with open(args.output, "w") as f:
            f.write(picture)
    else:
        sys.stdout.write(picture)
    return 0


if __name__ == "__main__":
    sys.exit(main())
