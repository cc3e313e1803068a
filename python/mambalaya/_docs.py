"""Specs, architectures and studies as objects a script inspects and edits
before pricing: each holds its YAML document as a dict (`.doc`), and is
passed to a command as the file it was loaded from while unchanged, or
as a copy written once per change (a temporary file it owns)."""

import json
import os
import shutil
import tempfile
import weakref

from . import _lib, _yaml

# The copies edited documents were written to (path -> Document), so that
# a result or an error naming a copy can say what it is a copy of.
_copies = weakref.WeakValueDictionary()

# The fields a bare number may be given for, and the unit it is in:
# architecture files write units (docs/architecture.md), Python may say
# 4194304 for "4194304 B".
_BASE_UNITS = {"capacity": "B", "word": "B", "bandwidth": "B/s",
               "read_bandwidth": "B/s", "write_bandwidth": "B/s",
               "clock": "Hz"}


def _with_unit(key, value):
    """VALUE as the file writes it: a number at a quantity field KEY
    (memory.L2.capacity's last part) in that field's base unit."""
    unit = _BASE_UNITS.get(str(key).rsplit(".", 1)[-1])
    if unit and isinstance(value, (int, float)) and \
            not isinstance(value, bool):
        return "%.17g %s" % (value, unit)
    if unit and isinstance(value, list):
        return [_with_unit(key, v) for v in value]
    return value


def _units_everywhere(node):
    """A copy of NODE with every number at a quantity field written with
    its unit."""
    if isinstance(node, dict):
        return {k: _with_unit(k, _units_everywhere(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_units_everywhere(v) for v in node]
    return node


def explain_copies(text):
    """TEXT (an error message) with a note for each copy of an edited
    document it names: what the copy was made from, and which paths were
    set."""
    notes = ["note: %s is %s" % (path, doc.provenance())
             for path, doc in list(_copies.items()) if path in text]
    return text + "".join(n + "\n" for n in notes)


def annotate_inputs(node):
    """Mark, in a result's inputs, each file that is the copy of an edited
    document: `edited_from` (its name or path) and `edits` (the paths set,
    in order)."""
    if isinstance(node, list):
        for v in node:
            annotate_inputs(v)
    elif isinstance(node, dict):
        doc = _copies.get(node.get("path")) if isinstance(
            node.get("path"), str) else None
        if doc is not None:
            node["edited_from"] = doc.name or "a dict"
            node["edits"] = list(doc.edits)
        for v in node.values():
            annotate_inputs(v)


def _is_path(name):
    """The CLI's rule (src/embed/embed.h): written as a path when it has a
    '/' or ends in .yaml; otherwise a shipped name when one exists."""
    return "/" in name or name.endswith(".yaml")


def _fingerprint(doc):
    return json.dumps(doc, sort_keys=True, default=_as_argument)


def _as_argument(obj):
    if isinstance(obj, Document):
        return obj.argument()
    raise TypeError("%r cannot be written into a document" % (obj,))


def _represent_document(dumper, obj):
    return dumper.represent_str(obj.argument())


def _child(node, part, path):
    if isinstance(node, dict) and part in node:
        return node[part]
    if isinstance(node, list):
        for item in node:
            if isinstance(item, dict) and item.get("name") == part:
                return item
    raise KeyError("%s: no %r" % (path, part))


class Document:
    """A YAML input of mambalaya. `name` is what it was loaded from (a
    shipped name or a path), `text` the YAML as read, `doc` the document
    as Python values (dicts, lists, numbers, strings), to edit in place."""

    kind = None  # the shipped directory: "specs", "archs", "studies"

    def __init__(self, text, name=None):
        self.name = name
        self.text = text
        self._doc = None
        self._original = None  # the fingerprint of the document as read
        self._written = None   # (fingerprint, path) of the last copy
        self._dir = None
        self.edits = []  # the paths set() changed, in order

    @classmethod
    def load(cls, source):
        """From a shipped name (mamba1, h100, arch-neighbourhood), a path,
        or a dict (the document itself)."""
        if isinstance(source, cls):
            return source
        if isinstance(source, dict):
            obj = cls(_yaml.dump(source))
            obj._doc = source
            return obj
        source = os.fspath(source)
        text = None if _is_path(source) else _lib.shipped_text(cls.kind,
                                                                source)
        if text is None:
            with open(source, encoding="utf-8") as f:
                text = f.read()
        return cls(text, source)

    @classmethod
    def from_text(cls, text):
        return cls(text)

    @property
    def doc(self):
        if self._doc is None:
            self._doc = _yaml.load(self.text)
            self._original = _fingerprint(self._doc)
        return self._doc

    root = None  # the top-level key the paths of get and set start under

    def _walk(self, path):
        """The container holding PATH's last part, and that part. A part
        names a mapping's key or, in a list, the item of that `name`
        (memory.GlobalBuffer.capacity: the paths a study's parameters
        use, docs/sweep.md)."""
        node = self.doc[self.root] if self.root else self.doc
        parts = path.split(".")
        for part in parts[:-1]:
            node = _child(node, part, path)
        return node, parts[-1]

    def get(self, path):
        """The value at PATH (memory.GlobalBuffer.capacity)."""
        node, last = self._walk(path)
        return _child(node, last, path)

    def set(self, path, value):
        """Set the value at PATH; returns self, so that edits chain."""
        node, last = self._walk(path)
        if isinstance(node, list):
            raise KeyError("%s: %s names a list item, not a value"
                           % (path, last))
        if last not in node:
            raise KeyError("%s: no %r here (keys: %s)"
                           % (path, last, ", ".join(map(str, node))))
        node[last] = value
        if path not in self.edits:
            self.edits.append(path)
        return self

    def provenance(self):
        """What the copy passed for this document is: "a copy of h100 as
        edited in Python (set: memory.L2.capacity)"."""
        what = ("a copy of %s" % self.name if self.name is not None
                else "a document given as a dict")
        if self.edits:
            what += " as edited in Python (set: %s)" % ", ".join(self.edits)
        elif self.name is not None:
            what += " as edited in Python"
        return what

    def dump(self):
        """The YAML text of the document as it is now."""
        if self._unchanged():
            return self.text
        return _yaml.dump(_units_everywhere(self._doc) if self.units
                          else self._doc)

    # Whether a number at a quantity field (capacity, bandwidth, clock,
    # word) is in that field's base unit: in architectures and studies.
    units = False

    def write(self, path):
        """Write the document as it is now to PATH (YAML)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.dump())
        return path

    def _unchanged(self):
        return self._doc is None or (
            self._original is not None
            and _fingerprint(self._doc) == self._original)

    def argument(self):
        """What a command line names it by: its own name or path while it
        is as loaded, else the path of a copy of its current state."""
        if self.name is not None and self._unchanged():
            return self.name
        fp = _fingerprint(self.doc) if self._doc is not None else self.text
        if self._written and self._written[0] == fp:
            return self._written[1]
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="mambalaya-")
            weakref.finalize(self, shutil.rmtree, self._dir, True)
        base = os.path.basename(self.name or "document.yaml")
        if not base.endswith(".yaml"):
            base += ".yaml"
        path = os.path.join(self._dir, base)
        self.write(path)
        self._written = (fp, path)
        _copies[path] = self
        return path

    def __fspath__(self):
        return self.argument()

    def __repr__(self):
        state = "" if self._unchanged() else ", edited"
        return "%s(%r%s)" % (type(self).__name__, self.name, state)


class Spec(Document):
    """A cascade of Einsums (docs/spec-format.md)."""
    kind = "specs"


class Arch(Document):
    """An accelerator (docs/architecture.md): arch.set(
    "memory.GlobalBuffer.capacity", "64 MiB")."""
    kind = "archs"
    root = "architecture"
    units = True


class Study(Document):
    """A design-space study for sweep (docs/sweep.md). Its specs and
    architectures may be Spec and Arch objects: they are written as the
    files they stand for."""
    kind = "studies"
    root = "study"
    units = True


_yaml.Dumper.add_multi_representer(Document, _represent_document)
