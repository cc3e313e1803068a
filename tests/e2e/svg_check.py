#!/usr/bin/python3
"""svg_check.py -- check the structure of mambalaya's SVG charts.

    svg_check.py [--expect-series NAME,NAME,...] FILE.svg...

Every file must parse as XML with an <svg> root in the SVG namespace that
has a width, a height and a viewBox, and no script. Each chart panel (an
element whose class has the word "chart": the root of a single chart, or a
nested <svg> of a stack) must have

  - a non-empty title (<text class="title">);
  - an x and a y axis (<g class="axis x">, <g class="axis y">), each with at
    least 2 ticks (<line class="tick">) and 2 labelled ones
    (<text class="tick">); a category axis (data-scale="category") needs
    only one, and none when the chart has no bars;
  - non-empty <text class="xlabel"> and <text class="ylabel">;
  - one <g class="legend"> whose <g class="legend-entry"> texts are, in
    order, the data-name of the <g class="series"> groups (and, with
    --expect-series, exactly the names given); in a stack, a panel other
    than the last may have none when the next panel with a legend lists
    its series (consecutive panels share one legend);
  - distinct looks for distinct legend entries: two entries whose swatches
    have the same shape and dashes differ in colour by at least
    MIN_DELTA_E (CIE 1976, in L*a*b*): two blues such as #0072B2 and
    #56B4E9 read as one series on a printed page.

Every coordinate attribute (x, y, x1, y1, x2, y2, cx, cy, r, width, height,
points, and the numbers of rotate/translate transforms) must be a finite
number inside the viewBox of its nearest <svg> (with a small margin).

Prints one line per problem and a one-line summary per file; exits 1 if
any file has a problem, 2 on bad usage. Standard library only.
"""

import math
import re
import sys
import xml.etree.ElementTree as ET

SVG_NS = "http://www.w3.org/2000/svg"
MARGIN = 4.0  # px a coordinate may lie outside its viewBox
X_ATTRS = ("x", "x1", "x2", "cx")
Y_ATTRS = ("y", "y1", "y2", "cy")
MIN_DELTA_E = 30.0  # CIE76 between two same-shaped swatches' colours
NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?:px)?\s*$")


def local(tag):
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def classes(el):
    return el.get("class", "").split()


def text_of(el):
    return "".join(el.itertext()).strip()


def parse_number(s):
    m = NUMBER.match(s or "")
    if not m:
        return None
    v = float(m.group(1))
    return v if math.isfinite(v) else None


class Box:
    def __init__(self, x, y, w, h):
        self.x0, self.y0, self.x1, self.y1 = x, y, x + w, y + h

    def has_x(self, v):
        return self.x0 - MARGIN <= v <= self.x1 + MARGIN

    def has_y(self, v):
        return self.y0 - MARGIN <= v <= self.y1 + MARGIN


def viewbox(el, problems, where):
    vb = el.get("viewBox")
    nums = [parse_number(t) for t in (vb or "").replace(",", " ").split()]
    if len(nums) != 4 or None in nums or nums[2] <= 0 or nums[3] <= 0:
        problems.append(f"{where}: <svg> has no usable viewBox ({vb!r})")
        return None
    return Box(*nums)


def check_coords(el, box, problems, where):
    """The coordinate attributes of EL against BOX (its viewport)."""
    tag = local(el.tag)
    name = f"{where}: <{tag} class={el.get('class', '')!r}>"

    def number(attr):
        v = parse_number(el.get(attr))
        if v is None:
            problems.append(f"{name}: {attr}={el.get(attr)!r} is not a finite number")
        return v

    for attr in X_ATTRS:
        if el.get(attr) is not None:
            v = number(attr)
            if v is not None and not box.has_x(v):
                problems.append(f"{name}: {attr}={v} outside the viewBox x range {box.x0}..{box.x1}")
    for attr in Y_ATTRS:
        if el.get(attr) is not None:
            v = number(attr)
            if v is not None and not box.has_y(v):
                problems.append(f"{name}: {attr}={v} outside the viewBox y range {box.y0}..{box.y1}")
    for attr, start, has in (("width", "x", box.has_x), ("height", "y", box.has_y)):
        if el.get(attr) is None:
            continue
        v = number(attr)
        if v is None:
            continue
        if v < 0:
            problems.append(f"{name}: negative {attr} {v}")
        s = parse_number(el.get(start, "0"))
        if s is not None and not has(s + v):
            problems.append(f"{name}: {start}+{attr}={s + v} outside the viewBox")
    if el.get("r") is not None:
        v = number("r")
        if v is not None and v < 0:
            problems.append(f"{name}: negative r {v}")
    if el.get("points") is not None:
        parts = el.get("points").replace(",", " ").split()
        nums = [parse_number(p) for p in parts]
        if None in nums or len(nums) % 2:
            problems.append(f"{name}: points={el.get('points')[:60]!r}... are not finite x,y pairs")
        else:
            for i in range(0, len(nums), 2):
                if not (box.has_x(nums[i]) and box.has_y(nums[i + 1])):
                    problems.append(f"{name}: point {nums[i]},{nums[i + 1]} outside the viewBox")
                    break
    transform = el.get("transform")
    if transform is not None:
        for fn, args in re.findall(r"(\w+)\s*\(([^)]*)\)", transform):
            nums = [parse_number(a) for a in args.replace(",", " ").split()]
            if None in nums or not nums:
                problems.append(f"{name}: transform {fn}({args}) has a bad number")
            elif fn == "rotate" and len(nums) == 3 and not (box.has_x(nums[1]) and box.has_y(nums[2])):
                problems.append(f"{name}: rotate centre {nums[1]},{nums[2]} outside the viewBox")
            elif fn == "translate" and not (box.has_x(nums[0]) and box.has_y(nums[1] if len(nums) > 1 else 0)):
                problems.append(f"{name}: translate {args} outside the viewBox")


def walk_coords(el, box, problems, where):
    """Check EL and its descendants; a nested <svg> is placed in BOX and
    gives its children its own viewBox."""
    check_coords(el, box, problems, where)
    if local(el.tag) == "svg":
        inner = viewbox(el, problems, where)
        if inner is None:
            return
        box = inner
    for child in el:
        walk_coords(child, box, problems, where)


def panel_elements(panel):
    """The elements of PANEL, not descending into nested chart panels."""
    out = []

    def visit(el):
        for child in el:
            if "chart" in classes(child):
                continue
            out.append(child)
            visit(child)

    visit(panel)
    return out


def check_axis(els, which, has_bars, problems, where):
    axes = [e for e in els if local(e.tag) == "g" and {"axis", which} <= set(classes(e))]
    if len(axes) != 1:
        problems.append(f"{where}: {len(axes)} {which} axes, expected 1")
        return
    axis = axes[0]
    ticks = [e for e in axis.iter() if local(e.tag) == "line" and "tick" in classes(e)]
    labels = [e for e in axis.iter() if local(e.tag) == "text" and "tick" in classes(e) and text_of(e)]
    category = axis.get("data-scale") == "category"
    need = (1 if has_bars else 0) if category else 2
    if len(ticks) < need:
        problems.append(f"{where}: {which} axis has {len(ticks)} ticks, expected at least {need}")
    if len(labels) < need:
        problems.append(f"{where}: {which} axis has {len(labels)} labelled ticks, expected at least {need}")


def legend_names(els):
    """The entries of the panel's one legend, or None where it has not one."""
    legends = [e for e in els if local(e.tag) == "g" and "legend" in classes(e)]
    if len(legends) != 1:
        return None
    entries = [e for e in legends[0].iter() if local(e.tag) == "g" and "legend-entry" in classes(e)]
    return [text_of(e) for e in entries]


def lab(hexcolor):
    """#rrggbb as CIE L*a*b* (D65)."""
    h = hexcolor.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    rgb = [int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return (116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2]))


def swatch_look(entry):
    """(shape, colour) of a legend entry's swatch: its shape is the element
    (the marker inside a group) with its dashes and fill opacity."""
    for e in entry.iter():
        if "swatch" not in classes(e):
            continue
        shape = e
        if local(e.tag) == "g":
            inner = [c for c in e if local(c.tag) != "title"]
            shape = inner[0] if inner else e
        # a polygon by its corners relative to the first (triangles up
        # and down are two markers)
        pts = [float(v) for v in re.split(r"[ ,]+", (shape.get("points") or "").strip()) if v]
        points = tuple(round(pts[i] - pts[i % 2]) for i in range(len(pts)))
        color = e.get("fill") if e.get("fill") not in (None, "none") else e.get("stroke")
        key = (local(e.tag), local(shape.tag), points, e.get("stroke-dasharray"),
               e.get("fill-opacity"), e.get("fill") == "none")
        return key, color
    return None, None


def check_looks(entries, names, problems, where):
    looks = [swatch_look(e) for e in entries]
    for i in range(len(looks)):
        for j in range(i + 1, len(looks)):
            (ki, ci), (kj, cj) = looks[i], looks[j]
            if ki is None or ki != kj or not ci or not cj or not ci.startswith("#") or not cj.startswith("#"):
                continue
            d = math.dist(lab(ci), lab(cj))
            if d < MIN_DELTA_E:
                problems.append(f"{where}: legend entries {names[i]!r} ({ci}) and {names[j]!r} ({cj}) "
                                f"look alike: colour difference {d:.0f} < {MIN_DELTA_E:.0f}")


def check_panel(panel, expect, problems, where, shared=None):
    els = panel_elements(panel)
    titles = [e for e in els if local(e.tag) == "text" and "title" in classes(e)]
    title = text_of(titles[0]) if titles else ""
    if len(titles) != 1 or not title:
        problems.append(f"{where}: expected one non-empty title, found {[text_of(t) for t in titles]}")
    where = f"{where} {title!r}"
    has_bars = any("bar" in classes(e) for e in els)
    check_axis(els, "x", has_bars, problems, where)
    check_axis(els, "y", has_bars, problems, where)
    for cls in ("xlabel", "ylabel"):
        found = [e for e in els if local(e.tag) == "text" and cls in classes(e)]
        if len(found) != 1 or not text_of(found[0]):
            problems.append(f"{where}: expected one non-empty {cls}")
    series = [e.get("data-name") for e in els if local(e.tag) == "g" and "series" in classes(e)]
    if None in series:
        problems.append(f"{where}: a <g class=\"series\"> has no data-name")
    legends = [e for e in els if local(e.tag) == "g" and "legend" in classes(e)]
    if not legends and shared is not None:
        if shared != series:
            problems.append(f"{where}: no legend, and the shared one lists {shared}, not its series {series}")
        return len(series)
    if len(legends) != 1:
        problems.append(f"{where}: {len(legends)} legends, expected 1")
        return len(series)
    entries = [e for e in legends[0].iter() if local(e.tag) == "g" and "legend-entry" in classes(e)]
    names = [text_of(e) for e in entries]
    if names != series:
        problems.append(f"{where}: legend entries {names} differ from the series {series}")
    for e, n in zip(entries, names):
        if e.get("data-name") is not None and e.get("data-name") != n:
            problems.append(f"{where}: legend entry {n!r} has data-name {e.get('data-name')!r}")
    check_looks(entries, names, problems, where)
    if expect is not None and names != expect:
        problems.append(f"{where}: legend entries {names}, expected {expect}")
    return len(series)


def check_file(path, expect):
    problems = []
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        return [f"{path}: not a readable XML document: {e}"], ""
    if root.tag != f"{{{SVG_NS}}}svg":
        return [f"{path}: the root is <{root.tag}>, expected <svg> in {SVG_NS}"], ""
    for attr in ("width", "height"):
        v = parse_number(root.get(attr))
        if v is None or v <= 0:
            problems.append(f"{path}: root {attr}={root.get(attr)!r} is not a positive number")
    box = viewbox(root, problems, path)
    for el in root.iter():
        if local(el.tag) in ("script", "foreignObject"):
            problems.append(f"{path}: has a <{local(el.tag)}> element")
        for attr in el.attrib:
            if attr.lower().startswith("on") or local(attr) == "href":
                problems.append(f"{path}: <{local(el.tag)}> has an {attr} attribute")
    if box is not None:
        for child in root:
            walk_coords(child, box, problems, path)
    panels = [root] if "chart" in classes(root) else []
    panels += [e for e in root.iter() if e is not root and "chart" in classes(e)]
    if not panels:
        problems.append(f"{path}: no chart panel (class \"chart\")")
    nseries = 0
    legends = [legend_names(panel_elements(p)) for p in panels]
    for i, panel in enumerate(panels):
        # the legend of the next panel that has one, which this one shares
        shared = next((n for n in legends[i + 1:] if n is not None), None)
        nseries += check_panel(panel, expect, problems, f"{path}: panel {i + 1}",
                               shared if i < len(panels) - 1 else None)
    elements = sum(1 for _ in root.iter())
    return problems, f"{len(panels)} panel(s), {nseries} series, {elements} elements"


def main(argv):
    expect = None
    files = []
    args = iter(argv[1:])
    for a in args:
        if a == "--expect-series":
            value = next(args, None)
            if value is None:
                print("svg_check.py: --expect-series needs NAME,NAME,...", file=sys.stderr)
                return 2
            expect = [n for n in value.split(",")] if value else []
        elif a.startswith("--expect-series="):
            value = a.split("=", 1)[1]
            expect = value.split(",") if value else []
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        elif a.startswith("-") and a != "-":
            print(f"svg_check.py: unknown option {a}", file=sys.stderr)
            return 2
        else:
            files.append(a)
    if not files:
        print("usage: svg_check.py [--expect-series NAME,NAME,...] FILE.svg...", file=sys.stderr)
        return 2
    bad = 0
    for path in files:
        problems, summary = check_file(path, expect)
        for p in problems:
            print(p)
        if problems:
            bad += 1
            print(f"FAIL {path}: {len(problems)} problem(s)" + (f"; {summary}" if summary else ""))
        else:
            print(f"ok {path}: {summary}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
