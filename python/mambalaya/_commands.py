"""The commands, generically: keyword arguments become options, the
command runs in process (mambalaya_call), its --json output comes back as
a dict (docs/results.md: the schema is the CLI's), and a failure raises
Error with the CLI's message and exit status."""

import json as _json
import os
import re
import shutil
import sys
import tempfile
import warnings

from . import _lib
from ._docs import Document, Spec, annotate_inputs, explain_copies

# "FILE:LINE:COL: error: ..." (docs/io.md)
_WHERE = re.compile(r"^(.+?):(\d+):(\d+): error: (.*)$", re.M)


class Error(Exception):
    """A command failed: `status` its exit status (1: a failure while
    running, 2: bad input, as the CLI's), `message` what it wrote to
    stderr, `argv` the command line; for an error at a place in a file,
    `file`, `line` and `column`."""

    def __init__(self, argv, status, message):
        self.argv, self.status, self.message = argv, status, message
        m = _WHERE.search(message)
        self.file = m.group(1) if m else None
        self.line = int(m.group(2)) if m else None
        self.column = int(m.group(3)) if m else None
        super().__init__(message.strip() or "mambalaya %s: exit status %d"
                         % (argv[0] if argv else "", status))


def _value(v):
    """One option value as the command line writes it."""
    if isinstance(v, Document):
        return v.argument()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    return str(v)


def options(kwargs, command=None):
    """Keyword arguments as options: design="full" -> --design full,
    pipelined=True -> --pipelined (False or None: left out), a list or
    tuple -> its items joined by commas (keep=["y", "h"] -> --keep y,h),
    a dict -> the option once per item (set={"B": 4} -> --set B=4). An
    underscore in the name is a dash (max_memory -> --max-memory). With
    COMMAND, True for an option that takes a value (design=True) raises
    Error rather than leave --design to take the next argument."""
    argv = []
    for key, v in kwargs.items():
        if v is None or v is False:
            continue
        flag = "--" + key.rstrip("_").replace("_", "-")
        if v is True and command and _lib.option_arity(command, flag) == 1:
            raise Error([command, flag], 2, "mambalaya %s: %s=True: %s "
                        "takes a value (see mambalaya %s --help)"
                        % (command, key, flag, command))
        if v is True:
            argv.append(flag)
        elif isinstance(v, dict):
            for k, x in v.items():
                argv += [flag, "%s=%s" % (k, _value(x))]
        elif isinstance(v, (list, tuple)):
            argv += [flag, ",".join(_value(x) for x in v)]
        else:
            argv += [flag, _value(v)]
    return argv


def _report(text, echo):
    """The command's stderr on success: shown when asked (echo), its
    warnings as Python warnings, the rest (progress, notes) dropped."""
    if echo:
        sys.stderr.write(text)
        return
    for line in text.splitlines():
        if "warning:" in line:
            warnings.warn(line, stacklevel=4)


def call_status(*argv, echo=False, ok=(0,)):
    """Run `mambalaya ARGV...` in process: (exit status, stdout as text).
    Raises Error unless the status is in OK."""
    argv = [_value(a) for a in argv]
    for i, a in enumerate(argv):
        if "\0" in a:  # a C string ends there: the rest would be lost
            raise Error(argv, 2, "mambalaya: argument %d (%r) holds a NUL "
                        "character, which no command line can" % (i, a))
    status, out, err = _lib.call_raw(argv)
    err = explain_copies(err.decode("utf-8", "replace"))
    if status not in ok:
        raise Error(argv, status, err)
    _report(err, echo)
    return status, out.decode("utf-8", "replace")


def call(*argv, echo=False):
    """Run `mambalaya ARGV...` in process; its stdout as text (Error on a
    nonzero exit status)."""
    return call_status(*argv, echo=echo)[1]


def run(command, *positionals, json=True, echo=False, **kwargs):
    """Any command: `run("eval", "mamba1", design="full")` runs
    `mambalaya eval mamba1 --design full --json` and returns its result
    as a dict; with json=False its stdout as text."""
    # A dict stands for a spec (the commands whose argument is not one,
    # sweep and diff, take theirs before this).
    positionals = [Spec.load(p) if isinstance(p, dict) else p
                   for p in positionals]
    argv = [command, *positionals, *options(kwargs, command)]
    helps = any(_value(a) in ("--help", "-h") for a in argv[1:])
    if json and not helps:
        argv.append("--json")
    out = call(*argv, echo=echo)
    if not json or helps:  # --help prints its text, never JSON
        return out
    try:
        result = _json.loads(out)
    except ValueError:
        raise Error(argv, 1, "mambalaya %s printed no JSON: %.200s"
                    % (command, out)) from None
    if isinstance(result, dict):
        annotate_inputs(result.get("inputs"))
    return result


def _scratch(out):
    """The directory for a command's files: OUT, or a temporary one
    removed afterwards (the result is what was asked)."""
    return (out, None) if out else (None, tempfile.mkdtemp(
        prefix="mambalaya-"))


def _with_out(command, positionals, kwargs):
    out, tmp = _scratch(kwargs.pop("out", None))
    try:
        return run(command, *positionals, out=out or tmp, **kwargs)
    finally:
        if tmp:
            shutil.rmtree(tmp, True)
