#!/usr/bin/python3
"""Compare mambalaya's results with the NumPy oracle's (or with another run).

    oracle_compare.py EXPECTED ACTUAL [--rtol R] [--atol A] [--label L]
                      [--keys logits,conv_state,ssm_state,mixer_output]
                      [--scale-rtol S] [--positions N]

Every tensor of EXPECTED whose name ends with one of --keys is compared
with the same name in ACTUAL: |actual - expected| <= atol + rtol*|expected|
element by element (numpy.allclose's rule), and the same shape. With
--scale-rtol S, also max|actual - expected| <= S * max|expected| for each
tensor: a test relative to the tensor's own scale, which catches errors in
small tensors (the mixer outputs, the SSM state) that atol would hide.
--positions N compares only the first N positions (axis 1) of `logits`.
Prints one line with the largest absolute error of each tensor kind (and,
in brackets, relative to its scale); exits 1 on any mismatch.  Standard
library and NumPy only.
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import safetensors_io as st  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("expected")
    ap.add_argument("actual")
    ap.add_argument("--rtol", type=float, default=6e-4)
    ap.add_argument("--atol", type=float, default=2e-3)
    ap.add_argument("--label", default="")
    ap.add_argument("--keys", default="logits,conv_state,ssm_state")
    ap.add_argument("--positions", type=int, default=None)
    ap.add_argument("--scale-rtol", type=float, default=None)
    a = ap.parse_args()
    exp, _, _ = st.load(a.expected)
    act, _, _ = st.load(a.actual)
    kinds = a.keys.split(",")
    worst = {}
    bad = []
    for name, e in exp.items():
        kind = next((k for k in kinds if name == k or name.endswith("." + k)), None)
        if kind is None:
            continue
        if name not in act:
            bad.append("%s: missing from %s" % (name, a.actual))
            continue
        g = act[name].astype(np.float64)
        e = e.astype(np.float64)
        if a.positions is not None and kind == "logits":
            e, g = e[:, :a.positions], g[:, :a.positions]
        if g.shape != e.shape:
            bad.append("%s: shape %s, expected %s" % (name, g.shape, e.shape))
            continue
        err = np.abs(g - e)
        limit = a.atol + a.rtol * np.abs(e)
        scale = max(float(np.max(np.abs(e))), 1e-30)
        abs_err = float(np.max(err)) if err.size else 0.0
        w = worst.setdefault(kind, [0.0, 0.0, 0])
        w[0] = max(w[0], abs_err)
        w[1] = max(w[1], abs_err / scale)
        w[2] += 1
        if a.scale_rtol is not None and abs_err > a.scale_rtol * scale:
            bad.append("%s: max error %.3g is %.3g of its scale %.3g (limit %g)"
                       % (name, abs_err, abs_err / scale, scale, a.scale_rtol))
        if not np.all(err <= limit):
            i = np.unravel_index(np.argmax(err - limit), err.shape)
            bad.append("%s: |%.6g - %.6g| = %.3g at %s exceeds atol %g + rtol %g"
                       % (name, g[i], e[i], err[i], i, a.atol, a.rtol))
    for k in kinds:
        if k not in worst:
            bad.append("no '%s' tensors in %s" % (k, a.expected))
    print("%smax abs err %s" % (a.label + ": " if a.label else "",
                               ", ".join("%s %.2g [%.2g]" % (k, ab, rel)
                                         for k, (ab, rel, n) in worst.items())))
    for b in bad:
        print("MISMATCH %s%s" % (a.label + ": " if a.label else "", b))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
