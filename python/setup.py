"""The build step pyproject.toml cannot say: copy the C library into the
package, so that an installed mambalaya needs no repository."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        lib = os.environ.get("MAMBALAYA_LIB") or os.path.join(
            HERE, "..", "build", "libmambalaya.so")
        if not os.path.exists(lib):
            raise SystemExit("mambalaya: no %s: run `make` at the repository "
                             "root first (or set MAMBALAYA_LIB)" % lib)
        self.copy_file(lib, os.path.join(self.build_lib, "mambalaya",
                                         "libmambalaya.so"))


class WithLibrary(Distribution):
    """A wheel for this platform (it carries a shared library), not any."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=WithLibrary)
