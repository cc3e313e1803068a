#!/bin/sh
# Untrusted files stay harmless (issue 34, docs/io.md "Writing", docs/
# compat.md "What a template may do"): an output never replaces a device,
# a pipe, a link's other names or an input of the run, and keeps a file's
# mode; an AccelForge template runs sandboxed, in an isolated python3 from
# a fixed path, reads only its own folders, may not use YAML aliases, and
# dies with mambalaya. Each finding of the issue has its reproducer here.
set -u
. tests/e2e/lib/harness.sh
# The renderer's script compiles (it is built in as text: a syntax error
# would show only when a template is loaded).
PYTHONPYCACHEPREFIX="$tmp/pyc" /usr/bin/python3 -m py_compile \
  "$ROOT/src/workload/render.py" || fail "src/workload/render.py does not compile"
# and, where pyflakes is installed (Debian's pyflakes3), has no unused
# name or undefined one.
if command -v pyflakes3 >/dev/null 2>&1; then
  pyflakes3 "$ROOT/src/workload/render.py" >&2 ||
    fail "pyflakes3 finds problems in src/workload/render.py"
fi
cp -r "$ROOT/tests/specs/peers/accelforge" af
cp "$ROOT/archs/mambalaya.yaml" a.yaml
cp a.yaml a.orig

# An output path that is not a regular file: exit 2, left as it was.
# mknod needs root; a named pipe stands in for a device otherwise.
if mknod n c 1 3 2>/dev/null; then kind="character special file"; else
  mkfifo n
  kind="fifo"
fi
refused "n: error: cannot write: it is a" "$M" search mamba1 --plan-out n
[ "$(stat -c %F n)" = "$kind" ] || fail "search replaced the $kind n"
mkfifo p
for cmd in "import accelforge af/block.yaml --out p" \
  "fuse mamba1 --strategy full --dot p" \
  "search mamba1 --plan-out p"; do
  # shellcheck disable=SC2086
  refused "cannot write: it is a named pipe" "$M" $cmd
  [ -p p ] || fail "$cmd replaced the pipe"
done
"$M" init-weights --model mamba-130m --set d_model=16 --set n_layer=1 \
  --set vocab=64 --out m >/dev/null || fail "init-weights"
refused "cannot write: it is a named pipe" \
  "$M" run --model m --tokens 1,2 --out p
mkdir w && mkfifo w/config.json
"$M" init-weights --model mamba-130m --set d_model=16 --set n_layer=1 \
  --set vocab=64 --out w >/dev/null 2>err
[ $? -eq 2 ] || fail "init-weights over a pipe: not exit 2: $(cat err)"
[ -p w/config.json ] || fail "init-weights replaced the pipe"
[ -e w/model.safetensors ] && fail "init-weights wrote beside the pipe"

# A symlink to a terminal or pipe (/proc/self/fd/1) is refused and stays
# a link; a symlink to a file is written through.
ln -s /proc/self/fd/1 l
"$M" search mamba1 --plan-out l >/dev/null 2>err
[ $? -eq 2 ] || fail "--plan-out /proc/self/fd/1 (a device): not exit 2"
[ -L l ] || fail "the symlink l was replaced"
echo old >target && ln -s target lt
"$M" search mamba1 --plan-out lt >/dev/null || fail "through a symlink"
[ -L lt ] || fail "the symlink lt was replaced"
grep -q '"strategy"' target || fail "the symlink's file was not written"
ln -s missing dangling
refused "a symbolic link to a missing file" \
  "$M" search mamba1 --plan-out dangling

# A file keeps its mode; a hard-linked file is refused, both names intact.
echo x >f && chmod 600 f
"$M" search mamba1 --plan-out f >/dev/null || fail "--plan-out f"
[ "$(stat -c %a f)" = 600 ] || fail "f came back $(stat -c %a f), not 600"
echo old >h && ln h h2
refused "other names (2 hard links)" "$M" search mamba1 --plan-out h
[ "$(cat h2)" = old ] && [ "$(cat h)" = old ] || fail "hard link changed"

# The inputs of a run are never written: --arch, an export's spec and
# architecture, a file the template includes.
refused "refusing to write a.yaml: it is the input a.yaml" \
  "$M" search mamba1 --arch a.yaml --plan-out a.yaml
cmp -s a.yaml a.orig || fail "search overwrote its architecture"
"$M" export timeloop "$ROOT/tests/specs/good/alg1_example.yaml" --out x \
  >/dev/null || fail "export"
cp x/01_Z.problem.yaml z.orig
"$M" export timeloop x/01_Z.problem.yaml --out x >/dev/null 2>err
[ $? -eq 2 ] || fail "export over its own spec: not exit 2"
grep -q "error: refusing to write: this output is the input" err ||
  fail "export over its own spec: $(cat err)"
cmp -s x/01_Z.problem.yaml z.orig || fail "export overwrote its spec"
cp a.yaml x/01_Z.mapping.yaml
refused "this output is the input" "$M" export timeloop \
  "$ROOT/tests/specs/good/alg1_example.yaml" --arch x/01_Z.mapping.yaml \
  --out x
cmp -s x/01_Z.mapping.yaml a.orig || fail "export overwrote its --arch"
cp af/parts/_glu.yaml glu.orig
refused "_glu.yaml: refusing to write: this output is the input" \
  "$M" import accelforge af/block.yaml --out af/parts/_glu.yaml
cmp -s af/parts/_glu.yaml glu.orig || fail "import overwrote an include"
mkdir ji && printf 'workload:\n  x: 1\n' >ji/part.yaml
printf '{%% include "part.yaml" %%}\n' >ji/top.yaml
cp ji/part.yaml part.orig
refused "part.yaml: refusing to write: this output is the input" \
  "$M" import accelforge ji/top.yaml --rendered --out ji/part.yaml
cmp -s ji/part.yaml part.orig || fail "import overwrote a Jinja include"
# sweep: a file a study's template includes is an input too.
mkdir sw && cp -r af/parts sw/
{
  echo '{{ include_text("sweep.json") }}'
  cat af/block.yaml
} >sw/block.yaml
echo "# not json" >sw/sweep.json
printf 'study:\n  name: incl\n  cascades:\n    - {spec: block.yaml}\n  designs: [full]\n  phases: [prefill]\n' >sw/study.yaml
refused "refusing to write sw/sweep.json: it is the input .*sw/sweep.json" \
  "$M" sweep sw/study.yaml --out sw
[ "$(cat sw/sweep.json)" = "# not json" ] || fail "sweep overwrote an include"
refused "f: error: exists and is not a directory, so f/out cannot be" \
  "$M" export timeloop mamba1 --out f/out
long=$(printf 'T%.0s' $(seq 300))
sed "s/\bU\b/$long/g" "$ROOT/tests/specs/good/alg1_example.yaml" >long.yaml
refused "is too long for a file name" \
  "$M" export timeloop long.yaml --out y
[ -e y ] && fail "export made y for names it cannot write"

# A template that reaches Python's internals is refused under every
# command that loads one, and what it asked for never happens.
{
  echo "{{ cycler.__init__.__globals__.os.system('id > P') }}"
  cat af/block.yaml
} >af/evil.yaml
cat >study.yaml <<'EOF'
study:
  name: evil
  cascades:
    - {spec: af/evil.yaml}
  designs: [full]
EOF
for cmd in "import accelforge af/evil.yaml" "eval af/evil.yaml" \
  "classify af/evil.yaml" "sweep study.yaml --out s"; do
  # shellcheck disable=SC2086
  "$M" $cmd >/dev/null 2>err
  [ $? -eq 2 ] || fail "$cmd: not exit 2: $(cat err)"
  grep -q "access to attribute '__init__' of 'type' object is unsafe" err ||
    fail "$cmd: $(cat err)"
  [ -e P ] && fail "$cmd ran the template's command"
  [ -e af/P ] && fail "$cmd ran the template's command (in af)"
done

# Python's imports never come from here, nor python3 from PATH.
echo 'import os; os.system("touch PWNED_YAML")' >yaml.py
echo 'import os; os.system("touch PWNED_JINJA")' >jinja2.py
mkdir bin && printf '#!/bin/sh\ntouch PWNED_PATH\n' >bin/python3
chmod +x bin/python3
PATH="$tmp/bin:$PATH" "$M" import accelforge af/block.yaml >/dev/null ||
  fail "import beside yaml.py, jinja2.py and a PATH python3"
for f in PWNED_YAML PWNED_JINJA PWNED_PATH; do
  [ -e $f ] && fail "$f: code from the working directory or PATH ran"
done
rm yaml.py jinja2.py

# Files outside the template's folders, and aliases, are refused.
{
  echo '{{ include_text("/etc/hostname") }}'
  cat af/block.yaml
} >af/read.yaml
refused "/etc/hostname is outside the template's folder" \
  "$M" import accelforge af/read.yaml --rendered
cat >af/bomb.yaml <<'EOF'
{% set X = 1 %}
workload:
  a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
  g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
EOF
start=$(date +%s)
refused "an alias (\*a): aliases are refused" \
  "$M" import accelforge af/bomb.yaml
[ $(($(date +%s) - start)) -le 5 ] || fail "the alias bomb took long"

# The renderer dies with mambalaya (SIGTERM), never left spinning.
cat >af/spin_34.yaml <<'EOF'
{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}
workload: {}
EOF
"$M" import accelforge af/spin_34.yaml >/dev/null 2>&1 &
pid=$!
sleep 1
kill -TERM $pid
wait $pid 2>/dev/null
sleep 0.5
pgrep -f "af/spin_34.yaml" >/dev/null && fail "the renderer outlived mambalaya"

# --set values: not finite is refused (no traceback), long is whole.
for v in nan inf 1e400; do
  refused "a number must be a finite plain decimal" \
    "$M" import accelforge af/block.yaml --set BATCH_SIZE=$v
done
word=$(printf 'w%.0s' $(seq 300))
{
  echo "the_word: {{ WORD }}"
  cat af/block.yaml
} >af/word.yaml
"$M" import accelforge af/word.yaml --set WORD="$word" --rendered >r.yaml ||
  fail "a 300-byte --set"
grep -q "^the_word: $word\$" r.yaml || fail "the 300-byte --set was cut"

# Sizes that divide by zero are refused, not written as inf.
sed 's|MC: ceil({{N_TOKENS}} / 3)|MC: 4/0|' af/block.yaml >af/div.yaml
refused "'4/0' is infinite, not a finite number" \
  "$M" import accelforge af/div.yaml
sed 's|MC: ceil({{N_TOKENS}} / 3)|MC: 4%0|' af/block.yaml >af/mod.yaml
refused "'4%0' is NaN, not a finite number" "$M" import accelforge af/mod.yaml

finish untrusted
