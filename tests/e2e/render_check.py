#!/usr/bin/python3
"""render_check.py -- check that a figure's PDF and PNG match its SVG.

    render_check.py FILE.svg...

For each FILE.svg (the figure as svg_check.py checks it), FILE.pdf and
FILE.png must hold the same figure:

  - PDF: a "%PDF-1.x" header and a "%%EOF" trailer after startxref; one
    page, whose MediaBox is the SVG's width and height at 0.75 pt per px;
    an embedded font (the text is text); no CreationDate (so that the same
    figure gives the same bytes).
  - PNG: the signature; chunks with valid CRCs, IHDR first and IEND last;
    an 8-bit RGB image of twice the SVG's width and height (less when a
    side would pass 32000 px); IDAT data that inflates to one filter byte
    (0-4) and 3 x width bytes per row; and not blank: more than 0.05 % of
    the filtered bytes are neither 0 nor 255, which a white image (any
    filter) never has and every chart does (antialiased text and lines).

Prints one line per problem and a summary per file; exits 1 if any file
has a problem, 2 on bad usage. Standard library only.
"""

import math
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

PT_PER_PX = 0.75
PNG_SCALE = 2.0
PNG_MAX_SIDE = 32000.0
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
INK = 0.0005  # the share of filtered bytes that are neither 0 nor 255


def svg_size(path):
    root = ET.parse(path).getroot()
    return float(root.get("width")), float(root.get("height"))


def check_pdf(path, w, h, problems):
    try:
        data = open(path, "rb").read()
    except OSError as e:
        problems.append(f"{path}: cannot read: {e}")
        return
    if not re.match(rb"%PDF-1\.[0-9]\n", data):
        problems.append(f"{path}: no %PDF-1.x header")
    if not re.search(rb"startxref\n[0-9]+\n%%EOF\n?$", data):
        problems.append(f"{path}: no startxref / %%EOF trailer")
    pages = len(re.findall(rb"/Type\s*/Page\b(?!s)", data))
    if pages != 1:
        problems.append(f"{path}: {pages} pages, expected 1")
    boxes = re.findall(rb"/MediaBox\s*\[\s*([-0-9. ]+)\]", data)
    if len(boxes) != 1:
        problems.append(f"{path}: {len(boxes)} MediaBoxes, expected 1")
    else:
        nums = [float(v) for v in boxes[0].split()]
        want = [0, 0, w * PT_PER_PX, h * PT_PER_PX]
        if len(nums) != 4 or any(abs(a - b) > 0.51 for a, b in zip(nums, want)):
            problems.append(f"{path}: MediaBox {nums}, expected {want}")
    if b"/FontFile" not in data:
        problems.append(f"{path}: no embedded font")
    if b"/CreationDate" in data:
        problems.append(f"{path}: has a CreationDate")


def png_chunks(data, path, problems):
    pos, chunks = len(PNG_SIGNATURE), []
    while pos + 12 <= len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        if zlib.crc32(kind + body) != crc:
            problems.append(f"{path}: bad CRC in {kind!r}")
        chunks.append((kind, body))
        pos += 12 + n
    if pos != len(data):
        problems.append(f"{path}: {len(data) - pos} bytes after the last chunk")
    return chunks


def check_png(path, w, h, problems):
    try:
        data = open(path, "rb").read()
    except OSError as e:
        problems.append(f"{path}: cannot read: {e}")
        return
    if not data.startswith(PNG_SIGNATURE):
        problems.append(f"{path}: no PNG signature")
        return
    chunks = png_chunks(data, path, problems)
    if not chunks or chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND":
        problems.append(f"{path}: IHDR is not first or IEND not last")
        return
    pw, ph, depth, color = struct.unpack(">IIBB", chunks[0][1][:10])
    scale = min(PNG_SCALE, PNG_MAX_SIDE / max(1.0, w, h))
    want = (math.ceil(w * scale), math.ceil(h * scale))
    if (pw, ph) != want:
        problems.append(f"{path}: {pw}x{ph} px, expected {want[0]}x{want[1]}")
    if (depth, color) != (8, 2):
        problems.append(f"{path}: bit depth {depth}, colour type {color}; expected 8-bit RGB")
        return
    try:
        raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    except zlib.error as e:
        problems.append(f"{path}: IDAT does not inflate: {e}")
        return
    row = 1 + 3 * pw
    if len(raw) != ph * row:
        problems.append(f"{path}: {len(raw)} bytes of rows, expected {ph * row}")
        return
    filters = raw[::row]
    if max(filters) > 4:
        problems.append(f"{path}: filter type {max(filters)} (0-4 exist)")
    ink = len(raw) - raw.count(0) - raw.count(255) - sum(0 < f < 5 for f in filters)
    if ink <= INK * len(raw):
        problems.append(f"{path}: blank ({ink} of {len(raw)} bytes inked)")


def main(argv):
    files = argv[1:]
    if not files or any(f.startswith("-") for f in files):
        if "-h" in files or "--help" in files:
            print(__doc__.strip())
            return 0
        print("usage: render_check.py FILE.svg...", file=sys.stderr)
        return 2
    bad = 0
    for svg in files:
        problems = []
        stem = svg[:-4] if svg.endswith(".svg") else svg
        try:
            w, h = svg_size(svg)
        except (ET.ParseError, OSError, TypeError, ValueError) as e:
            problems.append(f"{svg}: no SVG width and height: {e}")
        else:
            check_pdf(stem + ".pdf", w, h, problems)
            check_png(stem + ".png", w, h, problems)
        for p in problems:
            print(p)
        if problems:
            bad += 1
            print(f"FAIL {stem}: {len(problems)} problem(s)")
        else:
            print(f"ok {stem}: pdf and png match the svg")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
