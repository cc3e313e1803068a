"""The Python package against the CLI: every function on a shipped spec,
results equal to the CLI's --json for the same arguments, exec's arrays
equal to the CLI's output file bit for bit, errors with file, line and
column. Run from the repository root (tests/e2e/python.sh):

    MAMBALAYA=build/mambalaya /usr/bin/python3 -m unittest tests/python/test_api.py
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, ROOT)  # the shim at the root: `import mambalaya`
import mambalaya  # noqa: E402

CLI = os.path.abspath(os.environ.get("MAMBALAYA", "build/mambalaya"))
# exec: a small attention (FuseMax, one pass), P = M1 * M0 = 64 queries
SMALL = {"B": 1, "H": 2, "E": 8, "F": 8, "M1": 4, "M0": 16}


def cli(*args, ok=(0,)):
    """The program, as a separate process: its stdout."""
    r = subprocess.run([CLI, *map(str, args)], capture_output=True,
                       text=True, cwd=ROOT)
    if r.returncode not in ok:
        raise AssertionError("%s: %d %s" % (args, r.returncode, r.stderr))
    return r.stdout


def cli_json(*args):
    return json.loads(cli(*args, "--json"))


def attention(q, k, v):
    """NumPy's AV[b,h,f,p] = softmax_m(Q.K)[m] * V[b,h,f,m]."""
    s = np.einsum("bhep,bhem->bhmp", q.astype(np.float64),
                  k.astype(np.float64))
    w = np.exp(s - s.max(axis=2, keepdims=True))
    w /= w.sum(axis=2, keepdims=True)
    return np.einsum("bhmp,bhfm->bhfp", w, v.astype(np.float64))


def small_inputs(seed=7):
    rng = np.random.default_rng(seed)
    p = m = SMALL["M1"] * SMALL["M0"]
    b, h, e, f = SMALL["B"], SMALL["H"], SMALL["E"], SMALL["F"]
    return {"Q": rng.uniform(-1, 1, (b, h, e, p)).astype(np.float32),
            "K": rng.uniform(-1, 1, (b, h, e, m)).astype(np.float32),
            "V": rng.uniform(-1, 1, (b, h, f, m)).astype(np.float32)}


def untimed(result):
    """RESULT without what the clock says (elapsed_s, seconds): the rest of
    two runs is equal."""
    if isinstance(result, dict):
        return {k: untimed(v) for k, v in result.items()
                if k not in ("elapsed_s", "seconds")}
    if isinstance(result, list):
        return [untimed(v) for v in result]
    return result


def sets(d):
    return [a for k, v in d.items() for a in ("--set", "%s=%s" % (k, v))]


class EqualsCli(unittest.TestCase):
    """Each function returns what `mambalaya COMMAND ... --json` prints."""

    def test_classify(self):
        self.assertEqual(mambalaya.classify("mamba2"),
                         cli_json("classify", "mamba2"))

    def test_fuse(self):
        self.assertEqual(mambalaya.fuse("mamba1", strategy="full"),
                         cli_json("fuse", "mamba1", "--strategy", "full"))

    def test_eval(self):
        r = mambalaya.eval("mamba1", arch="h100", design="full",
                           set={"B": 4}, pipelined=True)
        self.assertEqual(r, cli_json("eval", "mamba1", "--arch", "h100",
                                     "--design", "full", "--set", "B=4",
                                     "--pipelined"))
        self.assertEqual(r["inputs"]["design"], "full")
        self.assertEqual(r["inputs"]["settings"], {"B": 4.0})

    def test_whole_model(self):
        cfg = os.path.join(ROOT, "tests", "configs", "Qwen3-8B.json")
        self.assertEqual(mambalaya.models(cfg),
                         cli_json("models", "--config", cfg))
        got = mambalaya.eval(config=cfg, arch="h100", batch=2, generate=4)
        want = cli_json("eval", "--config", cfg, "--arch", "h100",
                        "--batch", 2, "--generate", 4)
        self.assertEqual(got["decode"], want["decode"])
        self.assertEqual(got["inputs"]["design"], "full")

    def test_search(self):
        self.assertEqual(mambalaya.search("mamba1", set={"I": 256}),
                         cli_json("search", "mamba1", "--set", "I=256"))

    def test_sweep(self):
        with tempfile.TemporaryDirectory() as d:
            want = cli_json("sweep", "eyeriss-scratchpad", "--out", d)
        got = mambalaya.sweep("eyeriss-scratchpad")
        self.assertEqual(got, want)
        rows = got.rows()
        self.assertEqual(len(rows), 48)
        self.assertEqual(rows[0]["spec"], "cnn_layer")
        self.assertEqual(rows[0]["memory.Scratchpad.capacity"], "64 B")
        self.assertEqual(rows[0]["dram_bytes"], 7143936.0)
        self.assertEqual(sum(r["pareto"] for r in rows),
                         sum(len(f["points"]) for f in got["fronts"]))
        try:
            import pandas  # noqa: F401
        except ImportError:
            print("pandas not installed: SweepResult.to_dataframe not run",
                  file=sys.stderr)
            return
        frame = got.to_dataframe()
        self.assertEqual(frame.shape[0], 48)
        self.assertEqual(frame["dram_bytes"][0], 7143936.0)

    def test_reproduce(self):
        with tempfile.TemporaryDirectory() as d:
            want = cli_json("reproduce", "--out", d, "--format", "svg")
        got = mambalaya.reproduce(format=["svg"])
        self.assertEqual(untimed(got), untimed(want))
        self.assertIn("targets", got)

    def test_diff(self):
        a = mambalaya.eval("mamba1")
        b = mambalaya.eval("mamba1", arch="h100")
        self.assertFalse(mambalaya.diff(a, a))
        d = mambalaya.diff(a, b)
        self.assertTrue(d)
        with tempfile.TemporaryDirectory() as t:
            for name, r in (("a", a), ("b", b)):
                with open(os.path.join(t, name + ".json"), "w") as f:
                    json.dump(r, f)
            self.assertEqual(d.text, cli("diff", t + "/a.json",
                                         t + "/b.json", ok=(1,)))

    def test_run_any_command(self):
        self.assertEqual(mambalaya.call("--version"),
                         "mambalaya %s\n" % mambalaya.__version__)
        self.assertEqual(mambalaya.run("eval", "mamba2", json=False),
                         cli("eval", "mamba2"))


class Documents(unittest.TestCase):
    """load_spec and load_arch: inspected, edited, then priced."""

    def test_edited_arch_is_priced_as_its_file(self):
        arch = mambalaya.load_arch("mambalaya")
        self.assertEqual(arch.get("memory.GlobalBuffer.capacity"), "32 MiB")
        base = mambalaya.eval("mamba1", arch=arch, design="unfused")
        self.assertEqual(base["inputs"]["architecture"]["name"], "mambalaya")
        arch.set("memory.GlobalBuffer.capacity", "1 MiB")
        small = mambalaya.eval("mamba1", arch=arch, design="unfused")
        path = arch.argument()
        self.assertTrue(path.endswith("/mambalaya.yaml"), path)
        # The copy says what it is a copy of; the rest is the CLI's.
        used = small["inputs"]["architecture"]
        self.assertEqual((used.pop("edited_from"), used.pop("edits")),
                         ("mambalaya", ["memory.GlobalBuffer.capacity"]))
        self.assertEqual(small, cli_json("eval", "mamba1", "--arch", path,
                                         "--design", "unfused"))
        self.assertGreater(small["totals"]["dram_read_bytes"],
                           base["totals"]["dram_read_bytes"])
        arch.set("memory.GlobalBuffer.capacity", "32 MiB")
        self.assertEqual(arch.argument(), "mambalaya")  # as loaded again

    def test_edited_spec(self):
        spec = mambalaya.load_spec("mamba1")
        self.assertEqual(spec.doc["shape"]["I"], 2048)
        spec.set("shape.B", 2)
        r = mambalaya.eval(spec)
        self.assertEqual(r["inputs"]["ranks"]["B"], 2)
        self.assertEqual(r["inputs"]["spec"].pop("edits"), ["shape.B"])
        self.assertEqual(r["inputs"]["spec"].pop("edited_from"), "mamba1")
        self.assertEqual(r, cli_json("eval", spec.argument()))

    def test_study_with_an_edited_arch(self):
        study = mambalaya.load_study("eyeriss-scratchpad")
        self.assertEqual(study.get("designs"), ["unfused", "full"])
        study.set("designs", ["full"])
        arch = mambalaya.load_arch("eyeriss")
        arch.set("clock", "400 MHz")
        study.set("architectures", [arch])
        got = mambalaya.sweep(study)
        self.assertEqual(len(got["points"]), 24)
        with tempfile.TemporaryDirectory() as d:
            path = study.write(d + "/study.yaml")
            want = cli_json("sweep", path, "--out", d + "/out")
        self.assertEqual(untimed(got["points"]), untimed(want["points"]))
        specs = got["inputs"]["architectures"]
        self.assertEqual(specs[0]["path"], arch.argument())

    def test_numbers_for_quantities(self):
        # 1 MiB as bytes, 1.75 GHz as Hz, 2039 GB/s as bytes/s: the same
        # file, so the same figures, as the strings with units.
        a = mambalaya.load_arch("mambalaya")
        a.set("memory.GlobalBuffer.capacity", "1 MiB")
        b = mambalaya.load_arch("mambalaya")
        b.set("memory.GlobalBuffer.capacity", 1048576)
        b.set("clock", 1.75e9).set("memory.DRAM.bandwidth", 2039 * 10**9)
        self.assertIn("capacity: 1048576 B", b.dump())
        self.assertIn("clock: 1750000000 Hz", b.dump())
        self.assertEqual(mambalaya.eval("mamba1", arch=a)["totals"],
                         mambalaya.eval("mamba1", arch=b)["totals"])
        self.assertEqual(b.get("clock"), 1.75e9)  # the document keeps it

    def test_study_numbers_and_rows_with_units(self):
        study = mambalaya.load_study("eyeriss-scratchpad")
        path = "memory.Scratchpad.capacity"
        group = study.get("parameters")["scratchpad"]
        self.assertEqual(group[path][:2], ["64 B", "128 B"])
        group[path] = [64, 128]
        study.set("designs", ["full"])
        rows = mambalaya.sweep(study).rows(numbers=True)
        self.assertEqual(sorted({r[path + " [B]"] for r in rows}),
                         [64.0, 128.0])
        self.assertNotIn(path, rows[0])
        self.assertEqual(rows[0]["spec"], "cnn_layer")  # text stays text

    def test_error_in_an_edited_copy_says_what_it_copies(self):
        arch = mambalaya.load_arch("mambalaya")
        arch.set("memory.GlobalBuffer.capacity", "32 parsecs")
        with self.assertRaises(mambalaya.Error) as e:
            mambalaya.eval("mamba1", arch=arch)
        self.assertEqual(e.exception.file, arch.argument())
        self.assertIn("note: %s is a copy of mambalaya as edited in Python "
                      "(set: memory.GlobalBuffer.capacity)\n"
                      % arch.argument(), e.exception.message)

    def test_bad_spec_raises_with_its_place(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.yaml")
            with open(path, "w") as f:
                f.write("einsum:\n  declaration:\n    A: [X]\n"
                        "  expressions:\n    - A[x] = B[x] +\n")
            with self.assertRaises(mambalaya.Error) as e:
                mambalaya.load_spec(path)
            r = subprocess.run([CLI, "classify", path], capture_output=True,
                               text=True)
        err = e.exception
        self.assertEqual(err.status, 2)
        self.assertEqual(err.status, r.returncode)
        self.assertEqual(err.message, r.stderr)
        self.assertEqual(err.file, path)
        self.assertEqual((err.line, err.column), (5, 14))
        self.assertIn(": error: ", str(err))

    def test_bad_option_raises(self):
        with self.assertRaises(mambalaya.Error) as e:
            mambalaya.eval("mamba1", design="nope")
        self.assertEqual(e.exception.status, 2)
        self.assertIn("unknown design 'nope'", e.exception.message)

    def test_options(self):
        self.assertEqual(
            mambalaya.options({"design": "full", "pipelined": True,
                               "two_pass": False, "set": {"B": 4, "I": 2.5},
                               "keep": ["y", "h"], "max_memory": None}),
            ["--design", "full", "--pipelined", "--set", "B=4", "--set",
             "I=2.5", "--keep", "y,h"])


class Exec(unittest.TestCase):
    def test_arrays_round_trip_bit_for_bit(self):
        x = small_inputs()
        got = mambalaya.exec("fusemax_1pass", inputs=x, set=SMALL,
                             strategy="full")
        self.assertEqual(list(got), ["AV"])
        self.assertEqual(got["AV"].dtype, np.float32)
        self.assertEqual(got["AV"].shape, (1, 2, 8, 64))
        self.assertEqual(got.report["executor"], "fused")
        self.assertEqual(got.report["sizes"]["P"], 64)
        with tempfile.TemporaryDirectory() as d:
            from mambalaya import _safetensors
            _safetensors.write(d + "/in.safetensors", x)
            cli("exec", "fusemax_1pass", *sets(SMALL), "--strategy", "full",
                "--inputs", d + "/in.safetensors", "--out", d + "/out.st")
            want = _safetensors.read(d + "/out.st")
            with open(d + "/out.st", "rb") as f:
                raw = f.read()
        self.assertEqual(got["AV"].tobytes(), want["AV"].tobytes())
        self.assertIn(got["AV"].tobytes(), raw)
        ref = attention(x["Q"], x["K"], x["V"])
        self.assertLess(np.abs(got["AV"] - ref).max(), 1e-5)

    def test_interpreter_keep_and_inputs_in_two(self):
        x = small_inputs(3)
        with tempfile.TemporaryDirectory() as d:
            from mambalaya import _safetensors
            _safetensors.write(d + "/k.safetensors", {"K": x["K"]})
            got = mambalaya.exec("fusemax_1pass", set=SMALL, keep=["AV", "RD"],
                                 inputs=[{"Q": x["Q"], "V": x["V"]},
                                         d + "/k.safetensors"],
                                 out=d + "/kept.safetensors")
            self.assertTrue(os.path.exists(d + "/kept.safetensors"))
        self.assertEqual(sorted(got), ["AV", "RD"])
        self.assertEqual(got["RD"].shape, (1, 2, 4, 64))
        ref = attention(x["Q"], x["K"], x["V"])
        self.assertLess(np.abs(got["AV"] - ref).max(), 1e-5)


class InProcess(unittest.TestCase):
    def test_nothing_on_stdout(self):
        code = ("import sys; sys.path.insert(0, %r); import mambalaya; "
                "mambalaya.eval('mamba1'); mambalaya.fuse('mamba1');"
                "mambalaya.reproduce(format=['svg'])" % ROOT)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))

    def test_ctrl_c_is_python_s_after_a_call(self):
        # sweep stages its files, which installs the library's handlers for
        # SIGINT (util/temps.c): the call puts Python's back.
        code = ("import os, signal, sys, time; sys.path.insert(0, %r); "
                "import mambalaya; mambalaya.sweep('eyeriss-scratchpad')\n"
                "try:\n os.kill(os.getpid(), signal.SIGINT); time.sleep(1)\n"
                "except KeyboardInterrupt:\n print('KeyboardInterrupt')"
                % ROOT)
        # The child starts with SIGINT's default disposition, whatever this
        # process inherited (`nohup make test &` ignores it, and a Python
        # started with SIGINT ignored keeps it ignored).
        r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, preexec_fn=lambda: signal.signal(
                               signal.SIGINT, signal.SIG_DFL))
        self.assertEqual((r.returncode, r.stdout), (0, "KeyboardInterrupt\n"))

    def test_threads_take_turns(self):
        want = mambalaya.eval("mamba2")
        got = [None] * 4

        def one(i):
            got[i] = mambalaya.eval("mamba2")
        ts = [threading.Thread(target=one, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(got, [want] * 4)



class NeverEndsTheHost(unittest.TestCase):
    """Issue 34: an allocation failure is an Error, never the end of the
    process; arguments Python cannot pass are errors, not cut."""

    def test_out_of_memory_raises(self):
        ran_finally = False
        try:
            mambalaya.run("exec", "mamba1", "--random", "1", "--set",
                          "B=1000000", "--set", "I=1000000",
                          "--max-memory", "1e20GiB")
        except mambalaya.Error as e:
            self.assertEqual(e.status, 1)
            self.assertIn("out of memory (allocating", e.message)
        finally:
            ran_finally = True
        self.assertTrue(ran_finally)
        # and the library goes on working
        self.assertEqual(mambalaya.classify("mamba1")["spec"],
                         "specs/mamba1.yaml")

    # Under ASan (python.sh preloads it) the address-space cap leaves the
    # sanitizer itself no room: the worker path is test_fatal.c's there.
    @unittest.skipIf("libasan" in os.environ.get("LD_PRELOAD", ""),
                     "an address-space cap starves ASan's own allocator")
    def test_out_of_memory_in_worker_threads(self):
        """Memory runs out while a sweep's threads and the executor's pool
        run (RLIMIT_AS in a child interpreter, a little room above what a
        first, smaller run left mapped; a sweep's threads fail there, most
        often a worker, not the caller): each call is an Error of status 1,
        never the end of the interpreter, which then runs a command."""
        study = """study:
  name: cramped
  cascades: [{spec: mamba1, models: [mamba-130m]}]
  settings: {B: 1, tokens: {from: 16, to: %d, step: 1}}
  architectures: [mambalaya]
  designs: [ri, full]
  stitchers: [greedy]
  phases: [prefill]
  objectives: [latency, energy]
"""
        script = r"""
import os, resource, sys
sys.path.insert(0, %r)
import mambalaya

def vmsize():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024

def cramped(room, *argv):
    resource.setrlimit(resource.RLIMIT_AS,
                       (vmsize() + room, resource.RLIM_INFINITY))
    try:
        mambalaya.run(*argv)
        return "ran"
    except mambalaya.Error as e:
        return "%%d %%s" %% (e.status, e.message.strip())
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY,) * 2)

tmp = sys.argv[1]
sweep = ("sweep", "--threads", "4", "--out", os.path.join(tmp, "out"))
mambalaya.run(sweep[0], os.path.join(tmp, "small.yaml"), *sweep[1:])
print(cramped(4 << 20, sweep[0], os.path.join(tmp, "large.yaml"), *sweep[1:]))
exe = ("exec", "mamba1", "--random", "1", "--threads", "4", "--set", "B=1",
       "--max-memory", "1e20GiB")
mambalaya.run(*exe, "--set", "I=16")
print(cramped(16 << 20, *exe, "--set", "I=4096"))
print(mambalaya.classify("mamba1")["einsums"])
""" % ROOT
        with tempfile.TemporaryDirectory() as tmp:
            for name, last in (("small.yaml", 17), ("large.yaml", 400)):
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(study % last)
            r = subprocess.run([sys.executable, "-c", script, tmp],
                               capture_output=True, text=True, cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        for line in lines[:2]:
            self.assertRegex(line, r"^1 mambalaya: out of memory "
                             r"\(allocating [0-9]+ bytes\)$")
        self.assertEqual(lines[2], "24")

    def test_help_is_its_text(self):
        self.assertTrue(mambalaya.eval("--help").startswith(
            "usage: mambalaya eval SPEC [options]"))

    def test_nul_in_an_argument(self):
        with self.assertRaises(mambalaya.Error) as e:
            mambalaya.classify("mam\0ba1")
        self.assertEqual(e.exception.status, 2)
        self.assertIn("holds a NUL character", e.exception.message)

    def test_true_for_an_option_with_a_value(self):
        with self.assertRaises(mambalaya.Error) as e:
            mambalaya.eval("mamba1", design=True, arch="h100")
        self.assertEqual(e.exception.status, 2)
        self.assertIn("design=True: --design takes a value",
                      e.exception.message)

    def test_dict_spec(self):
        doc = {"shape": {"M": 4, "K": 3},
               "einsum": {"declaration": {"A": ["M", "K"], "Z": ["M"]},
                          "expressions": ["Z[m] = A[m,k]"]}}
        r = mambalaya.classify(doc)
        self.assertEqual((r["einsums"], r["edges"]), (1, []))
        self.assertTrue(r["spec"].endswith("document.yaml"))

    def test_template_traceback_stays_in_the_error(self):
        tpl = os.path.join(ROOT, "tests/specs/peers/accelforge/block.yaml")
        with self.assertRaises(mambalaya.Error) as e:
            mambalaya.run("import", "accelforge", tpl, "--set",
                          "BATCH_SIZE=nan", json=False)
        self.assertEqual(e.exception.status, 2)
        self.assertNotIn("Traceback", e.exception.message)


if __name__ == "__main__":
    unittest.main()
