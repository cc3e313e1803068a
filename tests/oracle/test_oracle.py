#!/usr/bin/python3
"""Self-test of the NumPy oracle: /usr/bin/python3 tests/oracle/test_oracle.py

Checks the safetensors writer/reader, hand-checkable building blocks, the
decode path (prefill + steps == one pass), chunked SSD == sequential, and the
command line end to end.  Exit status 0 on success.
"""

import io
import json
import math
import os
import struct
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mamba_ref as m  # noqa: E402
import safetensors_io as st  # noqa: E402


class SafetensorsTest(unittest.TestCase):

    def test_round_trip_all_dtypes(self):
        rng = np.random.default_rng(0)
        a = rng.normal(size=(3, 5)).astype(np.float32)
        b = rng.normal(size=(7,)).astype(np.float32)
        c = np.float32(2.5) * np.ones((2, 1, 4), np.float32)
        for dt in ("F32", "F16", "BF16", "F64"):
            buf = st.serialize({"a": a, "b": b, "c": c}, dtype=dt, metadata={"format": "pt"})
            t, dts, meta = st.deserialize(buf)
            self.assertEqual(list(t), ["a", "b", "c"])
            self.assertEqual(meta, {"format": "pt"})
            for name, x in (("a", a), ("b", b), ("c", c)):
                self.assertEqual(dts[name], dt)
                self.assertEqual(t[name].shape, x.shape)
                # the stored values are exactly the rounded ones
                np.testing.assert_array_equal(t[name], st.round_to_dtype(x, dt))
            # values already representable survive a second round trip exactly
            t2, _, _ = st.deserialize(st.serialize(t, dtype=dt))
            for name in t:
                np.testing.assert_array_equal(t2[name], t[name])
            # header: u64 length, multiple of 8, space padded, offsets contiguous
            (n,) = struct.unpack("<Q", buf[:8])
            self.assertEqual(n % 8, 0)
            hdr = json.loads(buf[8:8 + n].decode())
            self.assertTrue(buf[8:8 + n].decode().rstrip(" ").endswith("}"))
            isz = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}[dt]
            self.assertEqual(hdr["a"]["data_offsets"], [0, 15 * isz])
            self.assertEqual(hdr["b"]["data_offsets"], [15 * isz, 22 * isz])
            self.assertEqual(hdr["c"]["data_offsets"], [22 * isz, 30 * isz])
            self.assertEqual(len(buf), 8 + n + 30 * isz)
        # rounding error of the lossy types is what it should be
        self.assertLess(np.max(np.abs(st.round_to_dtype(a, "F16") - a) / np.abs(a)), 2.0 ** -11 * 1.01)
        self.assertLess(np.max(np.abs(st.round_to_dtype(a, "BF16") - a) / np.abs(a)), 2.0 ** -8 * 1.01)

    def test_exact_bytes(self):
        buf = st.serialize({"x": np.array([1.0, -2.0], np.float32)}, dtype="F32")
        header = b'{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
        padded = header + b" " * ((8 - len(header) % 8) % 8)
        expect = struct.pack("<Q", len(padded)) + padded + struct.pack("<2f", 1.0, -2.0)
        self.assertEqual(buf, expect)
        # BF16 / F16 bytes of 1.0 and -2.0
        self.assertEqual(st.serialize({"x": np.array([1.0, -2.0])}, dtype="BF16")[-4:],
                         bytes([0x80, 0x3F, 0x00, 0xC0]))
        self.assertEqual(st.serialize({"x": np.array([1.0, -2.0])}, dtype="F16")[-4:],
                         bytes([0x00, 0x3C, 0x00, 0xC0]))

    def test_bf16_rounding(self):
        one = 1.0
        vals = np.array([one + 2.0 ** -8,        # exactly halfway 1 and 1+2^-7 -> even: 1
                         one + 3 * 2.0 ** -8,    # halfway 1+2^-7 and 1+2^-6 -> even: 1+2^-6
                         one + 2.0 ** -8 + 2.0 ** -20,  # just above halfway -> up
                         -0.0, np.inf, -np.inf, 3.3895313892515355e38], np.float32)
        r = st.round_to_dtype(vals, "BF16")
        self.assertEqual(r[0], 1.0)
        self.assertEqual(r[1], 1.0 + 2.0 ** -6)
        self.assertEqual(r[2], 1.0 + 2.0 ** -7)
        self.assertEqual(st.f32_to_bf16_bits(vals[3:4])[0], 0x8000)
        self.assertEqual(r[4], np.inf)
        self.assertEqual(r[5], -np.inf)
        self.assertEqual(r[6], np.float32(3.3895313892515355e38))  # max bf16 stays finite
        self.assertTrue(np.isnan(st.round_to_dtype(np.array([np.nan], np.float32), "BF16")[0]))

    def test_reader_rejects_bad_files(self):
        good = st.serialize({"a": np.zeros(2, np.float32), "b": np.zeros(3, np.float32)})
        st.deserialize(good)
        with self.assertRaises(ValueError):
            st.deserialize(good[:-1])                 # truncated data
        with self.assertRaises(ValueError):
            st.deserialize(good + b"\0\0\0\0")        # trailing bytes not covered
        hdr = b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}'
        with self.assertRaises(ValueError):           # gap at the start
            st.deserialize(struct.pack("<Q", len(hdr)) + hdr + b"\0" * 12)
        hdr = b'{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}'
        with self.assertRaises(ValueError):           # size does not match shape
            st.deserialize(struct.pack("<Q", len(hdr)) + hdr + b"\0" * 8)

    def test_unpadded_and_metadata_anywhere(self):
        # files from other writers: no padding, __metadata__ last
        hdr = b'{"w":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"__metadata__":{"k":"v"}}'
        t, d, meta = st.deserialize(struct.pack("<Q", len(hdr)) + hdr + bytes([0x00, 0x3C]))
        self.assertEqual(t["w"][0], 1.0)
        self.assertEqual(meta, {"k": "v"})


class BuildingBlocksTest(unittest.TestCase):

    def test_softplus(self):
        self.assertEqual(m.softplus(21.0), 21.0)                  # above threshold: identity
        self.assertEqual(m.softplus(20.0), math.log1p(math.exp(20.0)))  # 20 is not > 20
        self.assertNotEqual(m.softplus(20.0), 20.0)
        self.assertAlmostEqual(float(m.softplus(0.0)), math.log(2.0), places=15)
        self.assertAlmostEqual(float(m.softplus(-30.0)), math.exp(-30.0), delta=1e-25)
        x = np.array([1e-3, 0.01, 0.1, 1.0])
        np.testing.assert_allclose(m.softplus(m.inv_softplus(x)), x, rtol=1e-12)

    def test_silu(self):
        self.assertEqual(float(m.silu(0.0)), 0.0)
        self.assertAlmostEqual(float(m.silu(1.0)), 1.0 / (1.0 + math.exp(-1.0)), places=15)
        self.assertAlmostEqual(float(m.silu(-1000.0)), 0.0)

    def test_rmsnorm_constant(self):
        c = 3.0
        x = np.full(8, c)
        np.testing.assert_allclose(m.rmsnorm(x), c / math.sqrt(c * c + 1e-5), rtol=1e-15)
        w = np.arange(8.0)
        np.testing.assert_allclose(m.rmsnorm(x, w), w * c / math.sqrt(c * c + 1e-5), rtol=1e-15)
        np.testing.assert_array_equal(m.rmsnorm(np.zeros(4)), np.zeros(4))   # eps avoids 0/0

    def test_conv_one_hot_shift(self):
        K, L, C = 4, 6, 3
        x = np.arange(1.0, 1.0 + L * C).reshape(1, L, C)
        w = np.zeros((C, 1, K))
        w[:, 0, K - 1] = 1.0                       # last tap = current token
        y, s = m.causal_conv1d(x, w, np.zeros(C))
        np.testing.assert_array_equal(y, x)
        np.testing.assert_array_equal(s[0], x[0, L - (K - 1):].T)   # last K-1 inputs, time order
        w = np.zeros((C, 1, K))
        w[:, 0, K - 2] = 1.0                       # one tap earlier = previous token
        y, _ = m.causal_conv1d(x, w, np.array([10.0, 20.0, 30.0]))
        np.testing.assert_array_equal(y[0, 0], [10.0, 20.0, 30.0])    # x[-1] = 0
        np.testing.assert_array_equal(y[0, 1:], x[0, :-1] + [10.0, 20.0, 30.0])
        w = np.zeros((C, 1, K))
        w[:, 0, 0] = 1.0                           # first tap = K-1 tokens back
        y, _ = m.causal_conv1d(x, w, np.zeros(C))
        np.testing.assert_array_equal(y[0, :K - 1], 0.0)
        np.testing.assert_array_equal(y[0, K - 1:], x[0, :L - (K - 1)])
        # short sequence: conv state is zero padded on the old side
        _, s = m.causal_conv1d(x[:, :1], w, np.zeros(C))
        np.testing.assert_array_equal(s[0], np.stack([np.zeros(C), np.zeros(C), x[0, 0]], axis=1))

    def test_conv_step_matches_conv(self):
        rng = np.random.default_rng(3)
        x = rng.normal(size=(2, 5, 3))
        w, b = rng.normal(size=(3, 1, 4)), rng.normal(size=3)
        y, s_full = m.causal_conv1d(x, w, b)
        s = np.zeros((2, 3, 3))
        for t in range(5):
            yt, s = m.conv_step(x[:, t], w, b, s)
            np.testing.assert_allclose(yt, y[:, t], rtol=0, atol=1e-14)
        np.testing.assert_array_equal(s, s_full)

    def test_selective_scan_by_hand(self):
        # d = 1, N = 1, A = -1, delta = 1, B = C = 1, D = 0.5, u = [1, 2]
        u = np.array([[[1.0], [2.0]]])
        y, h = m.selective_scan(u, np.ones((1, 2, 1)), np.array([[-1.0]]),
                                np.ones((1, 2, 1)), np.ones((1, 2, 1)), np.array([0.5]))
        h1 = 1.0                               # exp(-1)*0 + 1*1*1
        h2 = math.exp(-1.0) * h1 + 2.0         # exp(-1)*1 + 1*1*2
        np.testing.assert_allclose(y[0, :, 0], [h1 + 0.5, h2 + 1.0], rtol=1e-15)
        self.assertAlmostEqual(h[0, 0, 0], h2, places=15)

    def test_ssd_by_hand(self):
        # one head, headdim 1, N = 2; dt = 0.5, A = -2 -> decay exp(-1)
        x = np.array([[[[1.0]], [[3.0]]]])     # [B=1, L=2, H=1, P=1]
        dt = np.full((1, 2, 1), 0.5)
        Bm = np.array([[[1.0, 2.0], [0.0, 1.0]]])
        Cm = np.array([[[1.0, 0.0], [1.0, 1.0]]])
        y, h = m.ssd_sequential(x, dt, np.array([-2.0]), Bm, Cm)
        s1 = np.array([0.5, 1.0])              # dt*x*B
        s2 = math.exp(-1.0) * s1 + 0.5 * 3.0 * np.array([0.0, 1.0])
        np.testing.assert_allclose(y[0, :, 0, 0], [s1 @ [1, 0], s2 @ [1, 1]], rtol=1e-15)
        np.testing.assert_allclose(h[0, 0, 0], s2, rtol=1e-15)
        for c in (1, 2, 5):
            yc, hc = m.ssd_chunked(x, dt, np.array([-2.0]), Bm, Cm, c)
            np.testing.assert_allclose(yc, y, rtol=1e-14)
            np.testing.assert_allclose(hc, h, rtol=1e-14)

    def test_weight_statistics(self):
        c1 = m.Config(1, 64, 2, 128, d_state=16)
        w = m.generate_weights(c1, 0)
        self.assertEqual(c1.dt_rank, 4)
        for name, shape in m.expected_weight_shapes(c1).items():
            self.assertEqual(w[name].shape, shape, name)
            self.assertEqual(w[name].dtype, np.float32)
        np.testing.assert_allclose(w["backbone.layers.0.mixer.A_log"],
                                   np.tile(np.log(np.arange(1, 17)), (128, 1)), rtol=1e-7)
        dt = m.softplus(w["backbone.layers.1.mixer.dt_proj.bias"].astype(np.float64))
        self.assertTrue(np.all(dt > 0.99e-3) and np.all(dt < 0.101))
        self.assertGreater(np.std(w["backbone.layers.0.mixer.D"]), 0.05)
        self.assertGreater(np.std(w["backbone.norm_f.weight"]), 0.05)
        self.assertAlmostEqual(float(np.std(w["backbone.embeddings.weight"])), 0.02, delta=0.002)
        self.assertLessEqual(np.max(np.abs(w["backbone.layers.0.mixer.conv1d.weight"])), 0.5)
        c2 = m.Config(2, 64, 2, 128, d_state=16, headdim=16)
        w2 = m.generate_weights(c2, 0)
        for name, shape in m.expected_weight_shapes(c2).items():
            self.assertEqual(w2[name].shape, shape, name)
        A = np.exp(w2["backbone.layers.0.mixer.A_log"])
        self.assertTrue(np.all(A >= 1) and np.all(A <= 16))
        # deterministic from the seed
        np.testing.assert_array_equal(w2["backbone.layers.1.mixer.in_proj.weight"],
                                      m.generate_weights(c2, 0)["backbone.layers.1.mixer.in_proj.weight"])


class ModelTest(unittest.TestCase):

    def test_prefill_step_mamba1(self):
        self.assertLess(m.check_prefill_step(1), 1e-10)

    def test_prefill_step_mamba2(self):
        self.assertLess(m.check_prefill_step(2), 1e-10)
        self.assertLess(m.check_prefill_step(2, d_conv=2, headdim=4), 1e-10)

    def test_ssd_chunked(self):
        self.assertLess(m.check_ssd_chunked(), 1e-10)

    def test_batch_rows_independent(self):
        for v in (1, 2):
            cfg = m.tiny_config(v)
            p = m.params_from_weights(cfg, m.generate_weights(cfg, 5))
            tok = np.random.default_rng(9).integers(0, cfg.vocab_size, (3, 6))
            both, _ = m.forward(p, cfg, tok)
            for r in range(3):
                one, _ = m.forward(p, cfg, tok[r:r + 1])
                np.testing.assert_allclose(one[0], both[r], rtol=0, atol=1e-13)

    def test_causal(self):
        # changing a later token does not change earlier logits
        for v in (1, 2):
            cfg = m.tiny_config(v)
            p = m.params_from_weights(cfg, m.generate_weights(cfg, 1))
            tok = np.array([[1, 2, 3, 4, 5]])
            a, _ = m.forward(p, cfg, tok)
            tok2 = tok.copy()
            tok2[0, 3] = 7
            b, _ = m.forward(p, cfg, tok2)
            np.testing.assert_array_equal(a[0, :3], b[0, :3])
            self.assertGreater(np.max(np.abs(a[0, 3:] - b[0, 3:])), 1e-3)


class CommandLineTest(unittest.TestCase):

    def run_cli(self, args):
        with redirect_stdout(io.StringIO()):
            self.assertEqual(m.main(args), 0)

    def test_cli_both_versions(self):
        for v, dtype in ((1, "F32"), (2, "BF16"), (1, "F16")):
            with tempfile.TemporaryDirectory() as d:
                self.run_cli(["--version", str(v), "--d-model", "32", "--n-layer", "2",
                              "--vocab", "40", "--d-state", "8", "--expand", "2", "--d-conv", "4",
                              "--headdim", "8", "--tokens", "1,2,3,4,5,6", "--batch", "2",
                              "--seed", "3", "--dtype", dtype, "--prefill", "1", "--out", d])
                with open(os.path.join(d, "config.json")) as fh:
                    cj = json.load(fh)
                self.assertEqual(cj["ssm_cfg"]["layer"], "Mamba%d" % v)
                self.assertEqual(cj["vocab_size"], 40)
                w, wd, wmeta = st.load(os.path.join(d, "model.safetensors"))
                self.assertTrue(all(x == dtype for x in wd.values()))
                self.assertEqual(wmeta, {"format": "pt"})
                cfg = m.Config.from_json(cj)
                self.assertEqual(set(w), set(m.expected_weight_shapes(cfg)))
                e, ed, meta = st.load(os.path.join(d, "expected.safetensors"))
                self.assertTrue(all(x == "F32" for x in ed.values()))
                self.assertEqual(meta["tokens"], "1,2,3;4,5,6")
                self.assertEqual(e["logits"].shape, (2, 3, 40))
                np.testing.assert_allclose(e["step_logits"], e["logits"], rtol=0, atol=1e-6)
                conv_ch = 64 if v == 1 else 64 + 16
                ssm = (2, 64, 8) if v == 1 else (2, 8, 8, 8)
                for i in range(2):
                    self.assertEqual(e["layers.%d.conv_state" % i].shape, (2, conv_ch, 3))
                    self.assertEqual(e["layers.%d.ssm_state" % i].shape, ssm)
                    self.assertEqual(e["layers.%d.mixer_output" % i].shape, (2, 3, 32))
                # the file alone reproduces the expected logits
                cfg2, p = m.load_model(d)
                lg, _ = m.forward(p, cfg2, np.array([[1, 2, 3], [4, 5, 6]]))
                np.testing.assert_allclose(lg, e["logits"], rtol=1e-6, atol=1e-7)

    def test_cli_layer_only(self):
        with tempfile.TemporaryDirectory() as d:
            self.run_cli(["--version", "2", "--d-model", "32", "--n-layer", "3", "--vocab", "16",
                          "--d-state", "8", "--headdim", "8", "--tokens", "random:5",
                          "--layer-only", "--prefill", "2", "--ssd-chunk", "2", "--out", d])
            e, _, _ = st.load(os.path.join(d, "expected.safetensors"))
            self.assertEqual(sorted(e), ["layers.0.conv_state", "layers.0.mixer_input",
                                         "layers.0.mixer_output", "layers.0.ssm_state",
                                         "layers.0.step_mixer_output"])
            np.testing.assert_allclose(e["layers.0.step_mixer_output"], e["layers.0.mixer_output"],
                                       rtol=0, atol=1e-6)


if __name__ == "__main__":
    unittest.main(verbosity=1)
