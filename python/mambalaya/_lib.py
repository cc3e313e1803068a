"""The C library, libmambalaya.so, through ctypes: one entry point,
mambalaya_call (src/cli/api.h), that runs any command in this process and
hands back what it wrote to stdout and stderr and its exit status.

The library is found at $MAMBALAYA_LIB, else beside this file (an
installed package carries a copy), else at build/libmambalaya.so of the
repository this package sits in (python/mambalaya/ -> ../../build/)."""

import ctypes
import os
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_NAME = "libmambalaya.so"


def library_path():
    """The libmambalaya.so this package loads (or would load)."""
    env = os.environ.get("MAMBALAYA_LIB")
    if env:
        return env
    for cand in (os.path.join(_HERE, _NAME),
                 os.path.join(_HERE, "..", "..", "build", _NAME)):
        if os.path.exists(cand):
            return os.path.normpath(cand)
    raise ImportError(
        "mambalaya: no %s beside the package nor in the repository's build/ "
        "(run `make` at the repository root, or set MAMBALAYA_LIB)" % _NAME)


_lib = None
_lock = threading.Lock()
_c_char_pp = ctypes.POINTER(ctypes.c_char_p)
_voidp, _size = ctypes.c_void_p, ctypes.c_size_t


def _load():
    global _lib
    with _lock:
        if _lib is None:
            lib = ctypes.CDLL(library_path())
            lib.mambalaya_call.argtypes = [
                ctypes.c_int, _c_char_pp, ctypes.POINTER(_voidp),
                ctypes.POINTER(_size), ctypes.POINTER(_voidp),
                ctypes.POINTER(_size)]
            lib.mambalaya_call.restype = ctypes.c_int
            lib.mambalaya_free.argtypes = [_voidp]
            lib.mambalaya_free.restype = None
            lib.mambalaya_shipped.argtypes = [
                ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_size)]
            lib.mambalaya_shipped.restype = _voidp
            lib.mambalaya_option_arity.argtypes = [ctypes.c_char_p,
                                                   ctypes.c_char_p]
            lib.mambalaya_option_arity.restype = ctypes.c_int
            lib.mambalaya_quantity.argtypes = [
                ctypes.c_char_p, ctypes.POINTER(ctypes.c_double)]
            lib.mambalaya_quantity.restype = ctypes.c_char_p
            _lib = lib
    return _lib


def _take(lib, ptr, n):
    """The bytes at PTR, then the C buffer freed."""
    if not ptr.value:
        return b""
    data = ctypes.string_at(ptr.value, n.value)
    lib.mambalaya_free(ptr)
    return data


def call_raw(argv):
    """Run `mambalaya ARGV...` (ARGV[0] the command) in process:
    (status, stdout bytes, stderr bytes). ctypes lets other Python threads
    run meanwhile; the library serializes calls."""
    lib = _lib or _load()
    enc = [a if isinstance(a, bytes) else str(a).encode() for a in argv]
    arr = (ctypes.c_char_p * max(len(enc), 1))(*enc)
    out, err = _voidp(), _voidp()
    outlen, errlen = _size(), _size()
    status = lib.mambalaya_call(len(enc), arr, ctypes.byref(out),
                                ctypes.byref(outlen), ctypes.byref(err),
                                ctypes.byref(errlen))
    return status, _take(lib, out, outlen), _take(lib, err, errlen)


def option_arity(command, option):
    """Does OPTION (--design) of COMMAND take a value? 1, 0 (a flag) or -1
    (no such option, or no such command)."""
    lib = _lib or _load()
    return lib.mambalaya_option_arity(str(command).encode(),
                                      str(option).encode())


def shipped_text(kind, name):
    """The text of the shipped file NAME under KIND ("specs", "archs",
    "studies"), or None when NAME is a path or no shipped name."""
    lib = _lib or _load()
    n = _size()
    p = lib.mambalaya_shipped(kind.encode(), str(name).encode(),
                              ctypes.byref(n))
    return ctypes.string_at(p, n.value).decode() if p else None


def quantity(text):
    """TEXT ("4 MiB", "100 GB/s") as (value in the base unit, that unit:
    "B", "B/s", "Hz", ...) by the library's own units table, or None when
    TEXT is not a quantity."""
    if not isinstance(text, str):
        return None
    lib = _lib or _load()
    v = ctypes.c_double()
    unit = lib.mambalaya_quantity(text.encode(), ctypes.byref(v))
    return (v.value, unit.decode()) if unit else None
