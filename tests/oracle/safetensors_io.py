"""Minimal safetensors writer and reader (NumPy only, no `safetensors` package).

File format (as in the reference Rust implementation, huggingface/safetensors):

    [8 bytes]  N = header length, unsigned 64-bit little-endian
    [N bytes]  JSON header (UTF-8), padded with spaces (0x20) to a multiple of 8:
                 {"__metadata__": {"key": "value", ...},              (optional, str -> str)
                  "name": {"dtype": "F32", "shape": [2, 3],
                           "data_offsets": [begin, end]}, ...}
    [rest]     data section; each tensor's bytes are [begin, end) relative to the
               start of the data section, little-endian, row-major (C order),
               contiguous, no gaps, no overlaps, covering the whole section.

Writer: tensors are laid out in the order given (the order of the header).
Supported dtypes: F64, F32, F16, BF16 (floating) and I64, I32, I16, I8, U8,
BOOL (integers) -- the model files only use F32, F16 and BF16.

BF16 is the top 16 bits of the IEEE float32 bit pattern.  Writing rounds to
nearest, ties to even (like torch's float -> bfloat16 conversion); NaN stays a
(quiet) NaN.  Reading widens exactly (bits << 16).

API
    save(path, tensors, dtype="F32", metadata=None)
        tensors: dict (insertion ordered) or list of (name, array)
        dtype:   one dtype string for every tensor, or dict name -> dtype
    serialize(tensors, dtype="F32", metadata=None) -> bytes
    load(path) -> (tensors, dtypes, metadata)
        tensors: dict name -> ndarray; F16 and BF16 are widened to float32,
                 F64 stays float64, integer types keep their numpy type
        dtypes:  dict name -> dtype string as stored in the file
        metadata: dict (empty if absent)
    deserialize(buf) -> same as load
    round_to_dtype(array, dtype) -> float32 array of the values that `dtype` stores
"""

import json
import struct

import numpy as np

# dtype string -> (numpy little-endian dtype used for the raw bytes, bytes per element)
_RAW = {
    "F64": ("<f8", 8),
    "F32": ("<f4", 4),
    "F16": ("<f2", 2),
    "BF16": ("<u2", 2),  # stored as raw 16-bit patterns
    "I64": ("<i8", 8),
    "I32": ("<i4", 4),
    "I16": ("<i2", 2),
    "I8": ("i1", 1),
    "U8": ("u1", 1),
    "BOOL": ("u1", 1),
}

FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")

# Same limit as the reference reader (100 MB header).
MAX_HEADER_SIZE = 100_000_000


# ---------------------------------------------------------------------------
# BF16 conversion
# ---------------------------------------------------------------------------

def f32_to_bf16_bits(a):
    """float32 values -> uint16 bf16 bit patterns, round to nearest even."""
    a = np.ascontiguousarray(np.asarray(a, dtype=np.float32))
    u = a.view(np.uint32).astype(np.uint64)  # widen so the addition cannot overflow
    # Round to nearest even on the 16 discarded bits: add 0x7FFF plus the lowest
    # kept bit, then truncate.  (Overflow into the exponent is the correct
    # result: it rounds up to the next binade or to infinity.)
    lsb = (u >> 16) & 1
    rounded = ((u + 0x7FFF + lsb) >> 16) & 0xFFFF
    # NaN must stay NaN (the addition could carry a NaN payload into Inf):
    # keep the top bits and force the quiet bit.
    nan = np.isnan(a)
    if nan.any():
        rounded = np.where(nan, ((u >> 16) | 0x40) & 0xFFFF, rounded)
    return rounded.astype(np.uint16)


def bf16_bits_to_f32(bits):
    """uint16 bf16 bit patterns -> float32 (exact)."""
    bits = np.asarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def round_to_dtype(a, dtype):
    """Return float32 values exactly as they would be stored in `dtype`.

    For F32 this is a plain cast to float32, for F16 a round trip through
    float16, for BF16 a round trip through the bf16 bit pattern.  F64 returns
    float64 unchanged.
    """
    a = np.asarray(a)
    if dtype == "F64":
        return a.astype(np.float64)
    if dtype == "F32":
        return a.astype(np.float32)
    if dtype == "F16":
        return a.astype(np.float32).astype(np.float16).astype(np.float32)
    if dtype == "BF16":
        return bf16_bits_to_f32(f32_to_bf16_bits(a.astype(np.float32)))
    raise ValueError("round_to_dtype: not a floating dtype: %r" % (dtype,))


# ---------------------------------------------------------------------------
# Encoding / decoding of one tensor
# ---------------------------------------------------------------------------

def _encode(array, dtype):
    """ndarray -> little-endian row-major bytes in `dtype`."""
    if dtype not in _RAW:
        raise ValueError("unsupported dtype %r" % (dtype,))
    a = np.asarray(array)
    if dtype == "BF16":
        raw = f32_to_bf16_bits(a.astype(np.float32))
    elif dtype == "F16":
        # cast via float32 so float64 input is rounded once (f64->f16 direct is
        # also round-to-nearest in numpy; going through f32 matches torch).
        raw = a.astype(np.float32).astype("<f2")
    elif dtype == "BOOL":
        raw = a.astype(bool).astype("u1")
    else:
        raw = a.astype(_RAW[dtype][0])
    return np.ascontiguousarray(raw).tobytes(order="C")


def _decode(buf, dtype, shape):
    """bytes -> ndarray of `shape` (F16/BF16 widened to float32)."""
    raw_dtype, _ = _RAW[dtype]
    a = np.frombuffer(buf, dtype=raw_dtype).reshape(shape)
    if dtype == "BF16":
        return bf16_bits_to_f32(a)
    if dtype == "F16":
        return a.astype(np.float32)
    if dtype == "BOOL":
        return a.astype(bool)
    return a.astype(a.dtype.newbyteorder("="))  # native-endian copy


# ---------------------------------------------------------------------------
# Whole file
# ---------------------------------------------------------------------------

def _items(tensors):
    if isinstance(tensors, dict):
        return list(tensors.items())
    return list(tensors)


def serialize(tensors, dtype="F32", metadata=None):
    """Build the bytes of a safetensors file.

    tensors: dict name -> array (insertion order is the file order) or a list
             of (name, array) pairs.
    dtype:   dtype string for all tensors, or dict name -> dtype string.
    metadata: optional dict str -> str, stored as "__metadata__".
    """
    items = _items(tensors)
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        raise ValueError("duplicate tensor names")
    if "__metadata__" in names:
        raise ValueError("'__metadata__' is reserved")

    header = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError("metadata must map str -> str")
        header["__metadata__"] = dict(metadata)

    chunks = []
    offset = 0
    for name, arr in items:
        dt = dtype[name] if isinstance(dtype, dict) else dtype
        arr = np.asarray(arr)
        data = _encode(arr, dt)
        assert len(data) == arr.size * _RAW[dt][1]
        header[name] = {
            "dtype": dt,
            "shape": [int(s) for s in arr.shape],
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)

    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    # Pad with spaces so the data section starts 8-byte aligned (reference behaviour).
    hbytes += b" " * ((8 - len(hbytes) % 8) % 8)
    return struct.pack("<Q", len(hbytes)) + hbytes + b"".join(chunks)


def save(path, tensors, dtype="F32", metadata=None):
    """Write a safetensors file (see serialize)."""
    buf = serialize(tensors, dtype=dtype, metadata=metadata)
    with open(path, "wb") as f:
        f.write(buf)


def deserialize(buf):
    """Parse safetensors bytes -> (tensors, dtypes, metadata); validates the layout."""
    buf = memoryview(buf)
    if len(buf) < 8:
        raise ValueError("file too short for header length")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > MAX_HEADER_SIZE:
        raise ValueError("header too large: %d" % n)
    if 8 + n > len(buf):
        raise ValueError("header length %d exceeds file size" % n)
    try:
        header = json.loads(bytes(buf[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError("invalid JSON header: %s" % e)
    if not isinstance(header, dict):
        raise ValueError("header is not a JSON object")
    data = buf[8 + n:]

    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise ValueError("__metadata__ must map str -> str")

    # Validate: sorted by offset the tensors must tile [0, len(data)) exactly.
    entries = []
    for name, info in header.items():
        if not isinstance(info, dict):
            raise ValueError("bad entry for %r" % name)
        dt, shape, offs = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dt not in _RAW:
            raise ValueError("%r: unsupported dtype %r" % (name, dt))
        if (not isinstance(shape, list) or
                not all(isinstance(s, int) and s >= 0 for s in shape)):
            raise ValueError("%r: bad shape %r" % (name, shape))
        if (not isinstance(offs, list) or len(offs) != 2 or
                not all(isinstance(o, int) for o in offs) or offs[0] > offs[1]):
            raise ValueError("%r: bad data_offsets %r" % (name, offs))
        nbytes = int(np.prod(shape, dtype=np.int64)) * _RAW[dt][1]
        if offs[1] - offs[0] != nbytes:
            raise ValueError("%r: %d bytes for shape %r %s" % (name, offs[1] - offs[0], shape, dt))
        entries.append((offs[0], offs[1], name, dt, shape))
    entries.sort()
    pos = 0
    for b, e, name, _, _ in entries:
        if b != pos:
            raise ValueError("%r: data_offsets not contiguous (begin %d, expected %d)" % (name, b, pos))
        pos = e
    if pos != len(data):
        raise ValueError("data section is %d bytes, tensors cover %d" % (len(data), pos))

    tensors, dtypes = {}, {}
    # Return in header order (json.loads keeps the file's key order).
    for name in header:
        b, e = header[name]["data_offsets"]
        dt = header[name]["dtype"]
        tensors[name] = _decode(bytes(data[b:e]), dt, tuple(header[name]["shape"]))
        dtypes[name] = dt
    return tensors, dtypes, metadata


def load(path):
    """Read a safetensors file -> (tensors, dtypes, metadata)."""
    with open(path, "rb") as f:
        return deserialize(f.read())
