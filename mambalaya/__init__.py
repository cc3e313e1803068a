"""`import mambalaya` from the repository root: this shim stands for the
package in python/mambalaya (pip install ./python installs that one).
Its modules are found there, and its body runs here."""
import os as _os

__path__ = [_os.path.join(_os.path.dirname(_os.path.dirname(
    _os.path.abspath(__file__))), "python", "mambalaya")]
__file__ = _os.path.join(__path__[0], "__init__.py")
with open(__file__, encoding="utf-8") as _f:
    exec(compile(_f.read(), __file__, "exec"))
