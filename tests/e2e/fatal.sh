#!/bin/sh
# Memory running out is a failure of the run (exit 1, one line saying
# so, nothing on stdout, no output file or temporary left), never an
# abort: issue 34's reproducer, whose arrays (4e15 bytes) no machine
# gives, with the executor's pool started (docs/io.md, "Writing").
set -u
. "$(dirname "$0")/lib/harness.sh"

"$M" exec mamba1 --random 1 --threads 4 --set B=1000000 --set I=1000000 \
  --max-memory 1e20GiB --out res.safetensors >out 2>err
st=$?
[ "$st" -eq 1 ] || fail "exec out of memory exited $st, expected 1: $(cat err)"
[ -s out ] && fail "exec out of memory printed on stdout: $(cat out)"
# (the last line: under ASan its allocator warns first)
[ "$(tail -n 1 err)" = "mambalaya: out of memory (allocating 4096000000000000 bytes)" ] ||
  fail "exec out of memory said: $(cat err)"
left=$(ls -A | grep -v -e "^out$" -e "^err$")
[ -z "$left" ] || fail "exec out of memory left: $left"

# The same in a sweep's threads: memory capped (RLIMIT_AS, 4 MiB above
# what the running sweep has mapped, once its threads have started), the
# thread that meets it, most often a worker, stops them all, and the
# program ends with its message and status 1.
cat >study.yaml <<'YAML'
study:
  name: cramped
  cascades: [{spec: mamba1, models: [mamba-130m]}]
  settings: {B: 1, tokens: {from: 16, to: 8000, step: 1}}
  architectures: [mambalaya]
  designs: [ri, full]
  stitchers: [greedy]
  phases: [prefill]
  objectives: [latency, energy]
YAML
python3 - "$M" >sweep.out 2>sweep.err <<'PY'
import os, resource, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "sweep", "study.yaml", "--threads", "4",
                      "--out", "sw"], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
while p.poll() is None and len(os.listdir("/proc/%d/task" % p.pid)) < 4:
    time.sleep(0.001)
with open("/proc/%d/status" % p.pid) as f:
    vm = [int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:")][0]
resource.prlimit(p.pid, resource.RLIMIT_AS, (vm + (4 << 20),) * 2)
out, err = p.communicate()
print(p.returncode)
sys.stdout.write(out.decode())
sys.stderr.write(err.decode())
PY
[ "$(head -n 1 sweep.out)" = 1 ] ||
  fail "sweep out of memory exited $(head -n 1 sweep.out), expected 1: $(cat sweep.err)"
[ "$(wc -l <sweep.out)" -eq 1 ] || fail "sweep out of memory printed: $(cat sweep.out)"
grep -q "^mambalaya: out of memory (allocating [0-9]* bytes)$" sweep.err ||
  fail "sweep out of memory said: $(cat sweep.err)"
[ -e sw ] && fail "sweep out of memory left its --out"
finish fatal.sh
