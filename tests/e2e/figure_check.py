#!/usr/bin/python3
"""figure_check.py -- check that a figure's text is readable.

    figure_check.py FILE.svg...

Every text of the figure (titles, tick labels, legend entries, point
labels, line labels) gets the box the layout gave it: the scene's anchor
point, font size, lines and angle, as the SVG writes them, and the layout's
own width estimate (a mean glyph advance of 0.6 em, src/report/chart_axis.c),
from 0.75 em above the first baseline to 0.25 em below the last. No two
boxes may overlap (by more than OVERLAP px in both directions, for
antialiasing); turned text is compared as turned rectangles (separating
axes), not as their bounding boxes. Nested <svg> panels are offset by
their x and y.

Prints one line per problem and a summary per file; exits 1 if any file
has a problem, 2 on bad usage. Standard library only.
"""

import math
import re
import sys
import xml.etree.ElementTree as ET

GLYPH_W = 0.6
OVERLAP = 1.0  # px two boxes may share


def local(tag):
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def num(v, default=0.0):
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


def text_box(el, ox, oy):
    """The corners of EL's box, in the document's px, or None."""
    lines = [("".join(t.itertext())) for t in el if local(t.tag) == "tspan"]
    if not lines:
        lines = ["".join(el.itertext())]
    lines = [ln for ln in lines]
    if not any(ln.strip() for ln in lines):
        return None
    font = num(el.get("font-size"), 11.0)
    x, y = num(el.get("x")) + ox, num(el.get("y")) + oy
    w = max(len(ln) for ln in lines) * font * GLYPH_W
    anchor = el.get("text-anchor", "start")
    x0 = x - (w / 2 if anchor == "middle" else w if anchor == "end" else 0)
    y0 = y - 0.75 * font
    y1 = y + 0.25 * font + (len(lines) - 1) * (font + 2)
    pts = [(x0, y0), (x0 + w, y0), (x0 + w, y1), (x0, y1)]
    m = re.search(r"rotate\(\s*([-0-9.e]+)(?:[ ,]+([-0-9.e]+)[ ,]+([-0-9.e]+))?",
                  el.get("transform", ""))
    if m:
        a = math.radians(float(m.group(1)))
        cx = float(m.group(2)) + ox if m.group(2) else x
        cy = float(m.group(3)) + oy if m.group(3) else y
        c, s = math.cos(a), math.sin(a)
        pts = [(cx + (px - cx) * c - (py - cy) * s,
                cy + (px - cx) * s + (py - cy) * c) for px, py in pts]
    return pts


def overlap(a, b):
    """Whether convex quads A and B overlap by more than OVERLAP px along
    every separating axis (their edges' normals)."""
    for poly in (a, b):
        for i in range(4):
            (x1, y1), (x2, y2) = poly[i], poly[(i + 1) % 4]
            nx, ny = y2 - y1, x1 - x2
            n = math.hypot(nx, ny)
            if n == 0:
                continue
            nx, ny = nx / n, ny / n
            pa = [px * nx + py * ny for px, py in a]
            pb = [px * nx + py * ny for px, py in b]
            if min(max(pa), max(pb)) - max(min(pa), min(pb)) <= OVERLAP:
                return False
    return True


def texts(el, ox, oy, out):
    for child in el:
        tag = local(child.tag)
        if tag == "svg":
            texts(child, ox + num(child.get("x")), oy + num(child.get("y")), out)
        elif tag == "text":
            box = text_box(child, ox, oy)
            if box:
                out.append((child.get("class", ""), "".join(child.itertext()).strip(), box))
        else:
            texts(child, ox, oy, out)


def check_file(path):
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        return [f"{path}: not a readable XML document: {e}"], 0
    boxes = []
    texts(root, 0.0, 0.0, boxes)
    problems = []
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            (ci, ti, bi), (cj, tj, bj) = boxes[i], boxes[j]
            if overlap(bi, bj):
                problems.append(f"{path}: text {ci} {ti[:40]!r} overlaps {cj} {tj[:40]!r}")
    return problems, len(boxes)


def main(argv):
    files = argv[1:]
    if not files or any(f.startswith("-") for f in files):
        if "-h" in files or "--help" in files:
            print(__doc__.strip())
            return 0
        print("usage: figure_check.py FILE.svg...", file=sys.stderr)
        return 2
    bad = 0
    for path in files:
        problems, n = check_file(path)
        for p in problems:
            print(p)
        if problems:
            bad += 1
            print(f"FAIL {path}: {len(problems)} overlap(s) among {n} texts")
        else:
            print(f"ok {path}: {n} texts, none overlapping")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
