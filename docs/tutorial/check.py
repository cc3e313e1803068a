"""The tutorial's cascade in NumPy (docs/tutorial.md): read the inputs and
Y that `mambalaya exec ... --keep X,WG,WU,WO,H0,Y --out FILE` wrote,
compute Y again, and print the largest relative difference."""
import json, struct, sys
import numpy as np

raw = open(sys.argv[1], "rb").read()           # safetensors: a JSON header, then the data
n = struct.unpack("<Q", raw[:8])[0]
t = {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                      dtype=np.float32).reshape(v["shape"])
     for k, v in json.loads(raw[8:8 + n]).items() if k != "__metadata__"}

G = 1 / (1 + np.exp(-(t["X"] @ t["WG"])))      # G = sigmoid(X WG)
U = t["X"] @ t["WU"]                           # U = X WU
H = np.empty_like(U)
h = t["H0"]
for i in range(U.shape[1]):                    # H_i = G_i * H_{i-1} + U_i
    h = G[:, i] * h + U[:, i]
    H[:, i] = h
Y = H @ t["WO"]                                # Y = H WO
diff = np.abs(Y - t["Y"]).max() / np.abs(Y).max()
print("Y", list(Y.shape), "agrees with NumPy" if diff < 1e-5 else "DIFFERS", "(within 1e-5)")
