#!/usr/bin/env bash
# mambalaya from Python (python/mambalaya, docs/python.md) against C, in
# one run on the same machine:
#  - one `eval mamba1 --json` through the C entry point (mambalaya_call,
#    called straight through ctypes: the command's own time), through the
#    Python function (the same call, plus building the command line and
#    parsing the JSON into a dict), and as a CLI process; the ratio
#    Python / C must be at most 2 (issue 20);
#  - a 10 000-point study swept from Python, its rows as dicts: points
#    per second (target >= 2000).
#   bash bench/python.sh [BUILD]
set -euo pipefail
BUILD=${1:-build}
MAMBALAYA_LIB=$(cd "$BUILD" && pwd)/libmambalaya.so \
CLI=$BUILD/mambalaya /usr/bin/python3 - <<'PY'
import os, subprocess, sys, time
sys.path.insert(0, os.getcwd())
import mambalaya
from mambalaya import _lib


def per_call(f, n):
    f()  # warm: the library loaded, the caches filled
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n


N = 200
argv = ["eval", "mamba1", "--json"]
c = per_call(lambda: _lib.call_raw(argv), N)
py = per_call(lambda: mambalaya.eval("mamba1"), N)
spec, arch = mambalaya.load_spec("mamba1"), mambalaya.load_arch("mambalaya")
arch.set("memory.GlobalBuffer.capacity", "64 MiB")  # an edited object, reused
obj = per_call(lambda: mambalaya.eval(spec, arch=arch), N)
c_obj = per_call(lambda: _lib.call_raw(["eval", "mamba1", "--arch",
                                        arch.argument(), "--json"]), N)
cli = per_call(lambda: subprocess.run([os.environ["CLI"], *argv],
                                      capture_output=True, check=True), 50)
print("eval mamba1 --json, per call (%d calls):" % N)
print("  C entry point (mambalaya_call via ctypes) %8.3f ms" % (c * 1e3))
print("  Python mambalaya.eval (dict back)         %8.3f ms  (%.2fx C)"
      % (py * 1e3, py / c))
print("  with a 64 MiB buffer: C entry point      %8.3f ms" % (c_obj * 1e3))
print("  the same, a Spec and an edited Arch reused%8.3f ms  (%.2fx C)"
      % (obj * 1e3, obj / c_obj))
print("  CLI process (mambalaya eval ... --json)   %8.3f ms  (%.2fx C)"
      % (cli * 1e3, cli / c))

study = {"study": {
    "name": "python-bench",
    "cascades": [{"spec": "mamba1", "models": ["mamba-370m"]}],
    "settings": {"B": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
                 "tokens": [2 ** k for k in range(6, 16)]},
    "architectures": ["mambalaya"],
    "parameters": {
        "buffer": {"memory.GlobalBuffer.capacity":
                   ["8 MiB", "16 MiB", "32 MiB", "64 MiB", "128 MiB"]},
        "bandwidth": {"memory.DRAM.bandwidth":
                      ["1019.5 GB/s", "2039 GB/s", "3350 GB/s", "4000 GB/s"]}},
    "designs": ["unfused", "ri", "ri+rsb", "ri+rsb+rsp", "full"],
    "phases": ["prefill"], "objectives": ["latency", "energy"]}}
t = time.perf_counter()
rows = mambalaya.sweep(study).rows()
dt = time.perf_counter() - t
print("sweep from Python: %d points in %.2f s: %.0f points/s (every core: %d)"
      % (len(rows), dt, len(rows) / dt, os.cpu_count()))
ok = py / c <= 2 and obj / c_obj <= 2 and len(rows) / dt >= 2000
print("targets (eval within 2x of C, >= 2000 points/s): %s"
      % ("met" if ok else "NOT met"))
sys.exit(0 if ok else 1)
PY
