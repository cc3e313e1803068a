"""safetensors files to and from NumPy arrays, for exec: inputs are
written once into a file the executor reads; outputs are mapped from the
file it wrote (no copy: NumPy views of the mapping, copy-on-write)."""

import json
import struct

import numpy as np

_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8",
           "I32": "<i4", "U8": "u1", "I8": "i1", "BOOL": "?", "U64": "<u8"}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def write(path, arrays):
    """ARRAYS (name -> array-like) into PATH. float32 goes as it is; an
    array of another floating or integer dtype keeps its dtype (the
    executor converts or refuses it with a message)."""
    header, blobs, offset = {}, [], 0
    for name, value in arrays.items():
        a = np.asarray(value)
        if a.dtype not in _NAMES:
            a = a.astype(np.float32)
        a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
        n = a.nbytes
        header[name] = {"dtype": _NAMES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + n]}
        blobs.append(a)
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for a in blobs:
            f.write(memoryview(a).cast("B"))


def read(path):
    """PATH's tensors as arrays viewing one copy-on-write mapping of it (the
    file may be removed afterwards: the mapping stays)."""
    raw = np.memmap(path, dtype=np.uint8, mode="c")
    (n,) = struct.unpack("<Q", raw[:8].tobytes())
    header = json.loads(raw[8:8 + n].tobytes())
    header.pop("__metadata__", None)
    base = 8 + n
    out = {}
    for name, h in header.items():
        lo, hi = h["data_offsets"]
        dt = np.dtype(_DTYPES[h["dtype"]])
        view = raw[base + lo:base + hi]
        out[name] = np.ndarray(h["shape"], dtype=dt, buffer=view) \
            if hi > lo else np.zeros(h["shape"], dtype=dt)
    return out
