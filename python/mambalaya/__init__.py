"""mambalaya from Python: every command of the tool, in process.

    import mambalaya
    r = mambalaya.eval("mamba1", arch="h100", design="full")
    r["latency_s"], r["energy_j"]

Each function runs the command of that name through the C library's one
entry point (src/cli/api.h) as `mambalaya COMMAND ... --json` would, and
returns the same JSON as a dict (docs/results.md); keyword arguments are
its options (see `options`). A failure raises Error with the CLI's
message (FILE:LINE:COL: error: ...) and exit status. Nothing is printed
unless echo=True. `run` reaches any command, including ones added after
this package was written. docs/python.md has a worked example."""

import json
import os
import shutil
import tempfile


from ._commands import Error, call, call_status, options, run, _with_out
from ._docs import Arch, Document, Spec, Study
from . import _lib
from ._lib import library_path

__all__ = ["Error", "Document", "Spec", "Arch", "Study", "SweepResult", "Tensors",
           "Diff", "call", "call_status", "run", "options", "library_path", "load_spec",
           "load_arch", "load_study", "classify", "fuse", "eval", "search",
           "sweep", "reproduce", "exec", "diff", "models"]

__version__ = "0.1.0"


def load_spec(source):
    """A Spec from a shipped name, a path or a dict, checked as the CLI
    checks it (classify): a bad spec raises Error at its FILE:LINE:COL."""
    spec = Spec.load(source)
    run("classify", spec)
    return spec


def load_arch(source):
    """An Arch from a shipped name, a path or a dict, checked by pricing
    the shipped mamba1 on it."""
    arch = Arch.load(source)
    run("eval", "mamba1", arch=arch)
    return arch


def load_study(source):
    """A Study from a shipped name, a path or a dict (checked when swept)."""
    return Study.load(source)


def classify(spec="mamba1", **kw):
    """`mambalaya classify SPEC --json`: every producer->consumer pair."""
    return run("classify", spec, **kw)


def fuse(spec="mamba1", **kw):
    """`mambalaya fuse SPEC --json`: the fusion groups of each strategy."""
    return run("fuse", spec, **kw)


def _workload(spec, kw):
    """The positional SPEC: none for a whole model (config=), else SPEC
    (mamba1 by default)."""
    if "config" in kw and spec is None:
        return []
    return [spec or "mamba1"]


def eval(spec=None, **kw):  # noqa: A001 (the command's name)
    """`mambalaya eval SPEC --json`: a design priced on an architecture
    (arch=, design=, strategy=, model=, set={...}, pipelined=True, ...);
    with config= (a config.json) a whole model end to end (batch=,
    prompt=, generate=, ...; docs/models.md)."""
    return run("eval", *_workload(spec, kw), **kw)


def search(spec=None, **kw):
    """`mambalaya search SPEC --json`: the best schedule and its gap; with
    config=, every block of a whole model searched, end to end."""
    return run("search", *_workload(spec, kw), **kw)


def models(config, **kw):
    """`mambalaya models --config CONFIG --json`: the model a config.json
    describes: its blocks, schedule, parameters and notes."""
    return run("models", config=config, **kw)


def reproduce(out=None, **kw):
    """`mambalaya reproduce --json`: the paper's evaluation. Its figures go
    to OUT when given, else to a temporary directory, removed."""
    return _with_out("reproduce", [], dict(kw, out=out))


class SweepResult(dict):
    """sweep.json as a dict (docs/sweep.md), and its points as a table."""

    def rows(self, numbers=False):
        """One flat dict a point: point, its inputs, its figures, pareto
        (the columns of points.csv). With NUMBERS, a column of quantities
        ("4 MiB") holds numbers in the base unit, named with it
        ("memory.GlobalBuffer.capacity [B]"), as to_dataframe's."""
        rows = []
        for p in self["points"]:
            row = {"point": p["point"]}
            row.update(p["inputs"])
            row.update(p.get("figures") or {})
            row["pareto"] = p.get("pareto", False)
            if p.get("error"):
                row["error"] = p["error"]
            rows.append(row)
        return _numbers_with_units(rows) if numbers else rows

    def to_dataframe(self):
        """The points as a pandas DataFrame, quantities as numbers with
        their unit in the column's name (rows(numbers=True)); pandas is
        optional: ImportError saying so when it is not installed."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("SweepResult.to_dataframe needs pandas "
                              "(apt-get install python3-pandas); rows() "
                              "gives the same table as dicts") from e
        return pandas.DataFrame(self.rows(numbers=True))


def _numbers_with_units(rows):
    """ROWS with each column of quantities ("4 MiB", "100 GB/s") as
    numbers in their base unit, the unit in the column's name
    ("memory.VMEM.capacity [B]"): what a table to plot or fit wants."""
    units = {}
    for col in {k for r in rows for k in r}:
        found = {_lib.quantity(r[col]) if col in r else None for r in rows}
        if None not in found and len({u for _, u in found}) == 1:
            units[col] = found.pop()[1]
    return [{("%s [%s]" % (k, units[k]) if k in units else k):
             (_lib.quantity(v)[0] if k in units else v)
             for k, v in r.items()} for r in rows]


def sweep(study, out=None, **kw):
    """`mambalaya sweep STUDY --json`: every point of a study (a shipped
    name, a path, a dict or a Study). Its files (points.csv, the charts)
    go to OUT when given, else to a temporary directory, removed."""
    if isinstance(study, dict):
        study = Study.load(study)
    return SweepResult(_with_out("sweep", [study], dict(kw, out=out)))


class Tensors(dict):
    """exec's tensors (name -> NumPy array), with `report`: exec's --json
    (the plan, the traffic it counted, the check)."""
    report = None


def exec(spec="mamba1", inputs=None, out=None, **kw):  # noqa: A001
    """`mambalaya exec SPEC`: run the cascade on INPUTS and return its
    outputs (or the keep=[...] tensors) as NumPy arrays. INPUTS: a dict
    name -> array, a safetensors file, or a list of those (weights in one,
    activations in another); random=SEED fills the inputs none gives.
    Arrays are written once to a safetensors file (on /dev/shm where
    there is one); the outputs are views of the file exec wrote, mapped,
    not copied. OUT keeps that file (else it is removed)."""
    from . import _safetensors  # NumPy, only here
    tmp = tempfile.mkdtemp(prefix="mambalaya-exec-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm")
                           else None)
    try:
        given = inputs if isinstance(inputs, list) else \
            [] if inputs is None else [inputs]
        files = []
        for i, item in enumerate(given):
            if isinstance(item, dict):
                path = os.path.join(tmp, "inputs%d.safetensors" % i)
                _safetensors.write(path, item)
                item = path
            files += ["--inputs", os.fspath(item)]
        out = out or os.path.join(tmp, "outputs.safetensors")
        report = run("exec", spec, *files, out=out, **kw)
        result = Tensors(_safetensors.read(out))
        result.report = report
        return result
    finally:
        shutil.rmtree(tmp, True)


class Diff:
    """What `mambalaya diff` found: `changed` (exit status 1) and its text."""

    def __init__(self, changed, text):
        self.changed, self.text = changed, text

    def __bool__(self):
        return self.changed

    def __str__(self):
        return self.text


def diff(a, b, **kw):
    """`mambalaya diff A B`: two --json results (dicts, or files)."""
    tmp = tempfile.mkdtemp(prefix="mambalaya-diff-")
    try:
        paths = []
        for name, r in (("a.json", a), ("b.json", b)):
            if isinstance(r, dict):
                path = os.path.join(tmp, name)
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(r, f)
                r = path
            paths.append(r)
        status, text = call_status("diff", *paths, *options(kw), ok=(0, 1))
        return Diff(status == 1, text)
    finally:
        shutil.rmtree(tmp, True)
