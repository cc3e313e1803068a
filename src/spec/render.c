/* render.c — AccelForge's templating, rendered by the jinja2 library.
 *
 * An AccelForge workload is a Jinja template over YAML: `{% set %}`,
 * `{{ include("f.yaml") }}` (another file's document, referred to by a
 * `!include_loaded` tag), `include_text`, `add_to_path`, `{% assert %}`,
 * and `<<`/`<<<` merges. The script below (run by python3, with
 * python3-jinja2 and python3-yaml) renders it as AccelForge's
 * _yaml.py does and prints the resolved document as plain YAML, first
 * a line naming the given variables the templates read. A failure prints
 * one line "ERROR<TAB>FILE<TAB>LINE<TAB>MESSAGE". */
#include "peer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char script[] =
    "import glob, os, re, sys, traceback\n"
    "try:\n"
    "    import jinja2, jinja2.ext, jinja2.meta, jinja2.nodes, yaml\n"
    "except ImportError as e:\n"
    "    print(\"ERROR\\t\\t0\\tAccelForge files are Jinja templates: python3 \"\n"
    "          \"needs %s (apt-get install python3-jinja2 python3-yaml)\"\n"
    "          % e.name)\n"
    "    sys.exit(1)\n"
    "J = jinja2.nodes\n"
    "\n"
    "class Assert(jinja2.ext.Extension):\n"
    "    tags = {\"assert\"}\n"
    "    def parse(self, parser):\n"
    "        n = next(parser.stream).lineno\n"
    "        cond = parser.parse_expression()\n"
    "        msg = (parser.parse_expression()\n"
    "               if parser.stream.skip_if(\"comma\") else J.Const(None))\n"
    "        call = self.call_method(\"_check\", [cond, msg, J.Const(n)])\n"
    "        return J.CallBlock(call, [], [], []).set_lineno(n)\n"
    "    def _check(self, cond, msg, n, caller):\n"
    "        if not cond:\n"
    "            raise AssertionError(msg or \"assertion failed on line %d\" % n)\n"
    "        return \"\"\n"
    "\n"
    "given, used = {}, set()\n"
    "\n"
    "def find(p, cur, dirs):\n"
    "    bases = [\"\"] if os.path.isabs(p) else [os.path.dirname(cur)] + dirs\n"
    "    found = []\n"
    "    for b in bases:\n"
    "        for f in sorted(glob.glob(os.path.realpath(os.path.join(b, p)))):\n"
    "            if f not in found:\n"
    "                found.append(f)\n"
    "    if not found:\n"
    "        raise FileNotFoundError(\"include: no file %s next to %s or in \"\n"
    "                                \"the add_to_path directories\" % (p, cur))\n"
    "    return found\n"
    "\n"
    "def render(path, data, dirs):\n"
    "    data, dirs, count = dict(data), list(dirs), [0]\n"
    "    env = jinja2.Environment(\n"
    "        loader=jinja2.FileSystemLoader(os.path.dirname(path)),\n"
    "        undefined=jinja2.StrictUndefined, extensions=[Assert])\n"
    "    with open(path) as f:\n"
    "        tree = env.parse(f.read())\n"
    "    used.update(jinja2.meta.find_undeclared_variables(tree))\n"
    "    def child(ctx, inherit, kw):\n"
    "        d = dict(data)\n"
    "        if inherit:\n"
    "            d.update({k: v for k, v in ctx.get_all().items()\n"
    "                      if not callable(v) and not k.startswith(\"_\")})\n"
    "        d.update(kw)\n"
    "        return d\n"
    "    def include(single, ctx, p, indices=\"\", inherit_parse_data=True,\n"
    "                **kw):\n"
    "        stem = os.path.basename(path).rsplit(\".\", 1)[0]\n"
    "        name = re.sub(r\"\\W+\", \"\", \"%s_%d\" % (stem, count[0]))\n"
    "        count[0] += 1\n"
    "        files = find(p, path, dirs)\n"
    "        if single and len(files) > 1:\n"
    "            raise ValueError(\"include(%s) matches %d files: use \"\n"
    "                             \"include_all\" % (p, len(files)))\n"
    "        d = child(ctx, inherit_parse_data, kw)\n"
    "        docs = [load(f, d, dirs) for f in files]\n"
    "        data[name] = docs[0] if single else docs\n"
    "        indices = indices.lstrip(\".\")\n"
    "        return \"!include_loaded %s%s\" % (name,\n"
    "                                         \".\" + indices if indices else \"\")\n"
    "    def include_text(ctx, p, inherit_parse_data=True, **kw):\n"
    "        d = child(ctx, inherit_parse_data, kw)\n"
    "        return \"\\n\".join(render(f, d, dirs)[0]\n"
    "                         for f in find(p, path, dirs))\n"
    "    def add_to_path(p):\n"
    "        dirs.extend(f for f in find(p, path, dirs) if f not in dirs)\n"
    "        return \"\"\n"
    "    def exists(p):\n"
    "        return any(os.path.exists(os.path.join(b, p))\n"
    "                   for b in [os.path.dirname(path)] + dirs)\n"
    "    g = env.globals\n"
    "    g[\"include\"] = jinja2.pass_context(\n"
    "        lambda c, *a, **k: include(True, c, *a, **k))\n"
    "    g[\"include_all\"] = jinja2.pass_context(\n"
    "        lambda c, *a, **k: include(False, c, *a, **k))\n"
    "    g[\"include_text\"] = jinja2.pass_context(include_text)\n"
    "    g[\"add_to_path\"] = add_to_path\n"
    "    g[\"cwd\"] = lambda: os.path.dirname(path)\n"
    "    g[\"find_path\"] = lambda p: find(p, path, dirs)[0]\n"
    "    g[\"find_paths\"] = lambda p: find(p, path, dirs)\n"
    "    g[\"path_exists\"] = exists\n"
    "    text = env.get_template(os.path.basename(path)).render(data)\n"
    "    return text, data, dirs\n"
    "\n"
    "class NoMerge:\n"
    "    def __init__(self, v):\n"
    "        self.v = v\n"
    "\n"
    "def merged(x):\n"
    "    if isinstance(x, NoMerge):\n"
    "        return NoMerge(merged(x.v))\n"
    "    if isinstance(x, list):\n"
    "        return [merged(v) for v in x]\n"
    "    if not isinstance(x, dict):\n"
    "        return x\n"
    "    out, into = {}, None\n"
    "    for k, v in x.items():\n"
    "        if k in (\"<<\", \"<<<\"):\n"
    "            into = (k, merged(v))\n"
    "        else:\n"
    "            out[k] = merged(v)\n"
    "    if into:\n"
    "        srcs = into[1] if isinstance(into[1], list) else [into[1]]\n"
    "        for s in srcs:\n"
    "            merge(out, s, into[0] == \"<<<\")\n"
    "    return out\n"
    "\n"
    "def merge(into, src, deep):\n"
    "    if not isinstance(src, dict):\n"
    "        raise ValueError(\"expected a mapping under '<<<' or '<<', \"\n"
    "                         \"got %r\" % (src,))\n"
    "    for k, v in src.items():\n"
    "        if k not in into:\n"
    "            into[k] = v\n"
    "        elif deep and not isinstance(into[k], NoMerge):\n"
    "            if isinstance(into[k], dict) and isinstance(v, dict):\n"
    "                merge(into[k], v, deep)\n"
    "            elif isinstance(into[k], list) and isinstance(v, list):\n"
    "                into[k] = into[k] + v\n"
    "\n"
    "def plain(x):\n"
    "    if isinstance(x, NoMerge):\n"
    "        return plain(x.v)\n"
    "    if isinstance(x, list):\n"
    "        return [plain(v) for v in x]\n"
    "    if isinstance(x, dict):\n"
    "        return {str(k): plain(v) for k, v in x.items()}\n"
    "    return x\n"
    "\n"
    "def load(path, data, dirs):\n"
    "    text, data, dirs = render(os.path.realpath(path), data, dirs)\n"
    "    class Loader(yaml.SafeLoader):\n"
    "        def flatten_mapping(self, node):\n"
    "            pass\n"
    "    def loaded(ld, node):\n"
    "        found = data\n"
    "        for k in ld.construct_scalar(node).split(\".\"):\n"
    "            found = ([f[k] for f in found] if isinstance(found, list)\n"
    "                     else found[k])\n"
    "        return found\n"
    "    def nomerge(ld, n):\n"
    "        if isinstance(n, yaml.SequenceNode):\n"
    "            return NoMerge(ld.construct_sequence(n, deep=True))\n"
    "        return NoMerge(ld.construct_mapping(n, deep=True))\n"
    "    Loader.add_constructor(\"!include_loaded\", loaded)\n"
    "    Loader.add_constructor(\"!nomerge\", nomerge)\n"
    "    Loader.add_constructor(\"tag:yaml.org,2002:merge\", lambda ld, n: \"<<\")\n"
    "    try:\n"
    "        return merged(yaml.load(text, Loader=Loader))\n"
    "    except yaml.YAMLError as e:\n"
    "        m = getattr(e, \"problem_mark\", None)\n"
    "        lines = text.splitlines()\n"
    "        at = lines[m.line].strip() if m and m.line < len(lines) else \"\"\n"
    "        raise ValueError(\"%s, in the file as Jinja renders it (line %d: \"\n"
    "                         \"%s)\" % (getattr(e, \"problem\", None) or e,\n"
    "                                  m.line + 1 if m else 0, at))\n"
    "\n"
    "def value(s):\n"
    "    try:\n"
    "        v = float(s)\n"
    "    except ValueError:\n"
    "        return s\n"
    "    return int(v) if v == int(v) else v\n"
    "\n"
    "def where(e):\n"
    "    if isinstance(e, jinja2.TemplateSyntaxError):\n"
    "        return e.filename, e.lineno\n"
    "    at = (None, 0)\n"
    "    for fr in traceback.extract_tb(e.__traceback__):\n"
    "        if fr.filename.endswith((\".yaml\", \".yml\", \".jinja\")):\n"
    "            at = (fr.filename, fr.lineno)\n"
    "    return at\n"
    "\n"
    "def main():\n"
    "    strict = sys.argv[1] == \"--strict\"\n"
    "    path = sys.argv[1 + strict]\n"
    "    for a in sys.argv[2 + strict:]:\n"
    "        k, v = a.split(\"=\", 1)\n"
    "        given[k] = value(v)\n"
    "    try:\n"
    "        doc = plain(load(path, given, []))\n"
    "    except Exception as e:\n"
    "        f, line = where(e)\n"
    "        msg = str(e).replace(\"\\n\", \" \").replace(\"\\t\", \" \")\n"
    "        if isinstance(e, jinja2.UndefinedError):\n"
    "            msg += \" (give template variables with --set NAME=VALUE)\"\n"
    "        print(\"ERROR\\t%s\\t%d\\t%s\" % (f or path, line or 0, msg))\n"
    "        sys.exit(1)\n"
    "    unread = sorted(k for k in given if k not in used)\n"
    "    if strict and unread:\n"
    "        print(\"ERROR\\t%s\\t0\\t--set %s: the template does not read it\"\n"
    "              % (path, unread[0]))\n"
    "        sys.exit(1)\n"
    "    names = sorted(k for k in given if k in used)\n"
    "    print(\"# variables: \" + \" \".join(names))\n"
    "    sys.stdout.write(yaml.safe_dump(doc, sort_keys=False, width=1 << 20))\n"
    "\n"
    "main()\n";

/* Run the script on PATH with the template variables; its stdout into
 * OUT. False, with D set, if python3 cannot run. */
static bool run_script(const char *path, const SpecLoad *o, Buf *out,
                       Diag *d) {
  int nvars = o ? (o->vars ? o->nvars : o->nsets) : 0;
  char **argv = xcalloc((size_t)nvars + 6, sizeof *argv);
  char (*set)[160] = xcalloc((size_t)nvars + 1, sizeof *set);
  int n = 0;
  argv[n++] = "python3";
  argv[n++] = "-c";
  argv[n++] = (char *)script;
  if (o && o->vars) /* given for the template alone: each must be read */
    argv[n++] = "--strict";
  argv[n++] = (char *)path;
  for (int i = 0; i < nvars; i++) {
    if (o->vars)
      snprintf(set[i], sizeof set[i], "%s", o->vars[i]);
    else
      snprintf(set[i], sizeof set[i], "%s=%.17g", o->sets[i].name,
               o->sets[i].value);
    argv[n++] = set[i];
  }
  int fd[2];
  bool ok = pipe(fd) == 0;
  pid_t pid = ok ? fork() : -1;
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    execvp("python3", argv);
    _exit(127);
  }
  if (ok)
    close(fd[1]);
  char chunk[65536];
  ssize_t got;
  while (pid > 0 && (got = read(fd[0], chunk, sizeof chunk)) != 0) {
    if (got > 0)
      buf_printf(out, "%.*s", (int)got, chunk);
    else if (errno != EINTR)
      break;
  }
  if (ok)
    close(fd[0]);
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  free(argv);
  free(set);
  if (pid < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 127)) {
    diag_error(d, path, (Loc){0, 0},
               "an AccelForge template is rendered by python3 with "
               "python3-jinja2 and python3-yaml, and python3 cannot be run");
    return false;
  }
  return true;
}

/* "ERROR\tFILE\tLINE\tMESSAGE" into D. */
static void script_error(const char *path, const char *line, Diag *d) {
  char file[512] = "", msg[1024] = "";
  int l = 0;
  const char *f = strchr(line, '\t');
  const char *ln = f ? strchr(f + 1, '\t') : NULL;
  const char *m = ln ? strchr(ln + 1, '\t') : NULL;
  if (m) {
    snprintf(file, sizeof file, "%.*s", (int)(ln - f - 1), f + 1);
    l = atoi(ln + 1);
    snprintf(msg, sizeof msg, "%.*s", (int)strcspn(m + 1, "\n"), m + 1);
  } else {
    snprintf(msg, sizeof msg, "rendering failed: %s", line);
  }
  diag_error(d, file[0] ? file : path, (Loc){l, l ? 1 : 0}, "%s", msg);
}

bool spec_render_accelforge(const char *path, const SpecLoad *o, Buf *out,
                            Diag *d) {
  Buf raw = {0};
  if (!run_script(path, o, &raw, d)) {
    buf_free(&raw);
    return false;
  }
  bool ok = raw.s && strncmp(raw.s, "# variables:", 12) == 0;
  if (ok)
    buf_printf(out, "%s", raw.s);
  else
    script_error(path, raw.s ? raw.s : "python3 printed nothing", d);
  buf_free(&raw);
  return ok;
}
