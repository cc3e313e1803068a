"""A chain of N matrix products, T_i = T_{i-1} W_i over SIZE x SIZE
matrices, as a spec at PATH: the long cascade the search's bounds are
checked on (tests/e2e/bounded.sh, bench/search.sh).

    python3 tests/e2e/lib/chain.py N SIZE PATH
"""
import sys

n, size, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with open(path, "w") as f:
    f.write("shape: {M: %d, K: %d}\neinsum:\n  declaration:\n" % (size, size))
    for i in range(n + 1):
        f.write("    T%d: [M, K]\n    W%d: [K, K]\n" % (i, i))
    f.write("  expressions:\n")
    for i in range(1, n + 1):
        f.write("    - T%d[m,n] = T%d[m,k] * W%d[k,n]\n" % (i, i - 1, i))
