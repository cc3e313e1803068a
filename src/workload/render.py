# render.py — AccelForge's templating, as its _yaml.py renders a workload
# (docs/compat.md), run by src/workload/render.c as `python3 -I -c` with this
# text, compiled into the program (tools/embed.sh).
#
# A template is code from whoever wrote the file, so it runs in jinja2's
# SandboxedEnvironment (no attribute of Python's internals, no range of
# more than 100 000), reads only files under its own folder and the
# folders it adds with add_to_path, and its YAML may not use aliases (the
# native loader refuses them: a few hundred bytes of aliases can stand for
# 10^10 nodes). render.c limits the process's CPU time, memory and output.
#
# Prints the resolved document as plain YAML: first a line naming the given
# variables the templates read, last a line "# read: [...]" listing every
# file read (JSON), which render.c takes off and protects from the run's
# outputs. A failure prints one line "ERROR<TAB>FILE<TAB>LINE<TAB>MESSAGE".
import json
import glob
import math
import os
import re
import sys
import traceback

try:
    import jinja2
    import jinja2.ext
    import jinja2.meta
    import jinja2.nodes
    import jinja2.sandbox
    import yaml
except ImportError as e:
    print("ERROR\t\t0\tAccelForge files are Jinja templates: python3 "
          "needs %s (apt-get install python3-jinja2 python3-yaml)" % e.name)
    sys.exit(1)
J = jinja2.nodes


class Assert(jinja2.ext.Extension):
    tags = {"assert"}

    def parse(self, parser):
        n = next(parser.stream).lineno
        cond = parser.parse_expression()
        msg = (parser.parse_expression()
               if parser.stream.skip_if("comma") else J.Const(None))
        call = self.call_method("_check", [cond, msg, J.Const(n)])
        return J.CallBlock(call, [], [], []).set_lineno(n)

    def _check(self, cond, msg, n, caller):
        if not cond:
            raise AssertionError(msg or "assertion failed on line %d" % n)
        return ""


given, used = {}, set()
roots = []  # the folders a template may read under (realpaths)
read = []   # every file read, in order


def inside(f):
    """Is F (a realpath) under one of the roots?"""
    return any(f == r or f.startswith(r.rstrip(os.sep) + os.sep)
               for r in roots)


def note_read(f):
    if f not in read:
        read.append(f)


def find(p, cur, dirs):
    bases = [""] if os.path.isabs(p) else [os.path.dirname(cur)] + dirs
    found = []
    for b in bases:
        for f in sorted(glob.glob(os.path.realpath(os.path.join(b, p)))):
            f = os.path.realpath(f)
            if not inside(f):
                raise PermissionError(
                    "%s is outside the template's folder and the folders it "
                    "adds with add_to_path: a template reads only those" % f)
            if f not in found:
                found.append(f)
    if not found:
        raise FileNotFoundError("include: no file %s next to %s or in "
                                "the add_to_path directories" % (p, cur))
    return found


def read_text(f):
    note_read(f)
    with open(f) as fh:
        return fh.read()


class TemplateLoader(jinja2.FileSystemLoader):
    """Jinja's own {% include %} and {% import %}: files of the template's
    folder (FileSystemLoader allows no '..'), each noted as read."""

    def get_source(self, environment, template):
        source, filename, uptodate = super().get_source(environment,
                                                        template)
        note_read(os.path.realpath(filename))
        return source, filename, uptodate


def render(path, data, dirs):
    data, dirs, count = dict(data), list(dirs), [0]
    env = jinja2.sandbox.SandboxedEnvironment(
        loader=TemplateLoader(os.path.dirname(path)),
        undefined=jinja2.StrictUndefined, extensions=[Assert])
    tree = env.parse(read_text(path))
    used.update(jinja2.meta.find_undeclared_variables(tree))

    def child(ctx, inherit, kw):
        d = dict(data)
        if inherit:
            d.update({k: v for k, v in ctx.get_all().items()
                      if not callable(v) and not k.startswith("_")})
        d.update(kw)
        return d

    def include(single, ctx, p, indices="", inherit_parse_data=True, **kw):
        stem = os.path.basename(path).rsplit(".", 1)[0]
        name = re.sub(r"\W+", "", "%s_%d" % (stem, count[0]))
        count[0] += 1
        files = find(p, path, dirs)
        if single and len(files) > 1:
            raise ValueError("include(%s) matches %d files: use "
                             "include_all" % (p, len(files)))
        d = child(ctx, inherit_parse_data, kw)
        docs = [load(f, d, dirs) for f in files]
        data[name] = docs[0] if single else docs
        indices = indices.lstrip(".")
        return "!include_loaded %s%s" % (name,
                                         "." + indices if indices else "")

    def include_text(ctx, p, inherit_parse_data=True, **kw):
        d = child(ctx, inherit_parse_data, kw)
        return "\n".join(render(f, d, dirs)[0]
                         for f in find(p, path, dirs))

    def add_to_path(p):
        base = os.path.dirname(path)
        found = sorted(glob.glob(p if os.path.isabs(p)
                                 else os.path.join(base, p)))
        if not found:
            raise FileNotFoundError("add_to_path: no folder %s next to %s"
                                    % (p, path))
        for f in found:
            f = os.path.realpath(f)
            if f not in roots:
                roots.append(f)
            if f not in dirs:
                dirs.append(f)
        return ""

    def exists(p):
        return any(os.path.exists(os.path.join(b, p)) and
                   inside(os.path.realpath(os.path.join(b, p)))
                   for b in [os.path.dirname(path)] + dirs)

    g = env.globals
    g["include"] = jinja2.pass_context(
        lambda c, *a, **k: include(True, c, *a, **k))
    g["include_all"] = jinja2.pass_context(
        lambda c, *a, **k: include(False, c, *a, **k))
    g["include_text"] = jinja2.pass_context(include_text)
    g["add_to_path"] = add_to_path
    g["cwd"] = lambda: os.path.dirname(path)
    g["find_path"] = lambda p: find(p, path, dirs)[0]
    g["find_paths"] = lambda p: find(p, path, dirs)
    g["path_exists"] = exists
    text = env.get_template(os.path.basename(path)).render(data)
    return text, data, dirs


class NoMerge:
    def __init__(self, v):
        self.v = v


class Tagged:
    """A node with a local tag (an AccelForge architecture's !Memory,
    !Compute, !Container): kept, and written back with its tag."""

    def __init__(self, tag, v):
        self.tag, self.v = tag, v


def represent_tagged(dumper, x):
    if isinstance(x.v, dict):
        return dumper.represent_mapping(x.tag, x.v)
    if isinstance(x.v, list):
        return dumper.represent_sequence(x.tag, x.v)
    return dumper.represent_scalar(x.tag, str(x.v))


yaml.SafeDumper.add_representer(Tagged, represent_tagged)


def merged(x):
    if isinstance(x, NoMerge):
        return NoMerge(merged(x.v))
    if isinstance(x, Tagged):
        return Tagged(x.tag, merged(x.v))
    if isinstance(x, list):
        return [merged(v) for v in x]
    if not isinstance(x, dict):
        return x
    out, into = {}, None
    for k, v in x.items():
        if k in ("<<", "<<<"):
            into = (k, merged(v))
        else:
            out[k] = merged(v)
    if into:
        srcs = into[1] if isinstance(into[1], list) else [into[1]]
        for s in srcs:
            merge(out, s, into[0] == "<<<")
    return out


def merge(into, src, deep):
    if not isinstance(src, dict):
        raise ValueError("expected a mapping under '<<<' or '<<', "
                         "got %r" % (src,))
    for k, v in src.items():
        if k not in into:
            into[k] = v
        elif deep and not isinstance(into[k], NoMerge):
            if isinstance(into[k], dict) and isinstance(v, dict):
                merge(into[k], v, deep)
            elif isinstance(into[k], list) and isinstance(v, list):
                into[k] = into[k] + v


def plain(x):
    if isinstance(x, NoMerge):
        return plain(x.v)
    if isinstance(x, Tagged):
        return Tagged(x.tag, plain(x.v))
    if isinstance(x, list):
        return [plain(v) for v in x]
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    return x


class Loader(yaml.SafeLoader):
    """SafeLoader without aliases (as the native loader) and with
    AccelForge's merge keys kept for merged() to apply."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.events.AliasEvent):
            ev = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "an alias (*%s): aliases are refused, as in "
                "every YAML file mambalaya reads" % ev.anchor,
                ev.start_mark)
        return super().compose_node(parent, index)

    def flatten_mapping(self, node):
        pass


def load(path, data, dirs):
    text, data, dirs = render(os.path.realpath(path), data, dirs)

    class DocLoader(Loader):
        pass

    def loaded(ld, node):
        found = data
        for k in ld.construct_scalar(node).split("."):
            found = ([f[k] for f in found] if isinstance(found, list)
                     else found[k])
        return found

    def nomerge(ld, n):
        if isinstance(n, yaml.SequenceNode):
            return NoMerge(ld.construct_sequence(n, deep=True))
        return NoMerge(ld.construct_mapping(n, deep=True))
    DocLoader.add_constructor("!include_loaded", loaded)
    DocLoader.add_constructor("!nomerge", nomerge)

    def tagged(ld, suffix, n):
        if isinstance(n, yaml.SequenceNode):
            v = ld.construct_sequence(n, deep=True)
        elif isinstance(n, yaml.MappingNode):
            v = ld.construct_mapping(n, deep=True)
        else:
            v = ld.construct_scalar(n)
        return Tagged("!" + suffix, v)
    DocLoader.add_multi_constructor("!", tagged)
    DocLoader.add_constructor("tag:yaml.org,2002:merge", lambda ld, n: "<<")
    try:
        return merged(yaml.load(text, Loader=DocLoader))
    except yaml.YAMLError as e:
        m = getattr(e, "problem_mark", None)
        lines = text.splitlines()
        at = lines[m.line].strip() if m and m.line < len(lines) else ""
        raise ValueError("%s, in the file as Jinja renders it (line %d: "
                         "%s)" % (getattr(e, "problem", None) or e,
                                  m.line + 1 if m else 0, at))


def value(s):
    """A --set value: a finite number (an int when whole), else a word."""
    try:
        v = float(s)
    except ValueError:
        return s
    if not math.isfinite(v):
        return s
    return int(v) if v == int(v) else v


def where(e):
    if isinstance(e, jinja2.TemplateSyntaxError):
        return e.filename, e.lineno
    at = (None, 0)
    for fr in traceback.extract_tb(e.__traceback__):
        if fr.filename.endswith((".yaml", ".yml", ".jinja")):
            at = (fr.filename, fr.lineno)
    return at


def fail(f, line, msg):
    msg = str(msg).replace("\n", " ").replace("\t", " ")
    print("ERROR\t%s\t%d\t%s" % (f, line or 0, msg))
    sys.exit(1)


def main():
    strict = sys.argv[1] == "--strict"
    path = sys.argv[1 + strict]
    for a in sys.argv[2 + strict:]:
        k, v = a.split("=", 1)
        given[k] = value(v)
    top = os.path.realpath(path)
    roots.append(os.path.dirname(top))
    try:
        doc = plain(load(top, given, []))
    except Exception as e:
        f, line = where(e)
        msg = str(e)
        if isinstance(e, jinja2.UndefinedError):
            msg += " (give template variables with --set NAME=VALUE)"
        elif isinstance(e, jinja2.sandbox.SecurityError):
            msg = "the template does what a sandboxed one may not: " + msg
        elif isinstance(e, RecursionError):
            msg = "the template nests too deeply"
        fail(f or path, line, msg)
    except MemoryError:
        fail(path, 0, "the template needs more memory than a template "
                      "may have")
    unread = sorted(k for k in given if k not in used)
    if strict and unread:
        fail(path, 0, "--set %s: the template does not read it" % unread[0])
    names = sorted(k for k in given if k in used)
    print("# variables: " + " ".join(names))
    sys.stdout.write(yaml.safe_dump(doc, sort_keys=False, width=1 << 20))
    print("# read: " + json.dumps(read))


main()
