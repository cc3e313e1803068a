"""YAML as mambalaya reads it (the YAML 1.2 core schema), for PyYAML.

PyYAML follows YAML 1.1, where `ON` and `no` are booleans and `1e3` is a
string; mambalaya's parser (libyaml, src/ydoc) takes `ON` as a name and
`1e3` as a number. These loader and dumper classes resolve plain scalars
by the 1.2 rules, both ways, so that a document loaded, edited and dumped
again reads back in mambalaya as it was written."""

import re

import yaml

_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BASE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_RESOLVERS = [
    ("tag:yaml.org,2002:bool",
     re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
     list("tTfF")),
    ("tag:yaml.org,2002:int",
     re.compile(r"^[-+]?[0-9]+$"),
     list("-+0123456789")),
    ("tag:yaml.org,2002:float",
     re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
     list("-+0123456789.")),
    ("tag:yaml.org,2002:null",
     re.compile(r"^(?:~|null|Null|NULL|)$"),
     ["~", "n", "N", ""]),
]


def _core(cls):
    cls.yaml_implicit_resolvers = {}
    for tag, regexp, first in _RESOLVERS:
        cls.add_implicit_resolver(tag, regexp, first)
    return cls


@_core
class Loader(_BASE_LOADER):
    """PyYAML's safe loader with the 1.2 core schema's scalars."""


@_core
class Dumper(_BASE_DUMPER):
    """PyYAML's safe dumper: a string a 1.2 reader would take for a number
    or a boolean is quoted; others (ON, 16 MiB) are written plain."""


def _float(dumper, value):
    # repr() is the shortest text that reads back as the same double.
    text = repr(value)
    if value != value or value in (float("inf"), float("-inf")):
        text = {"nan": ".nan", "inf": ".inf", "-inf": "-.inf"}[text]
    return dumper.represent_scalar("tag:yaml.org,2002:float", text)


Dumper.add_representer(float, _float)


def load(text):
    return yaml.load(text, Loader=Loader)


def dump(doc):
    return yaml.dump(doc, Dumper=Dumper, sort_keys=False,
                     default_flow_style=None, width=1 << 20,
                     allow_unicode=True)
