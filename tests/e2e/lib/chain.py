"""A chain of N matrix products, T_i = T_{i-1} W_i over SIZE x SIZE
matrices, as a spec at PATH: the long cascade the search's bounds are
checked on (tests/e2e/bounded.sh, bench/search.sh). With `dag`, every
second Einsum is a residual sum instead, T_i = T_{i-1} + T_{i-2}: each
T_{i-2} then has two consumers, one of them across the product between,
so the cascade is a DAG whose groups cut edges that skip a node.

    python3 tests/e2e/lib/chain.py N SIZE PATH [dag]
"""
import sys

n, size, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
dag = len(sys.argv) > 4 and sys.argv[4] == "dag"


def residual(i):
    return dag and i >= 2 and i % 2 == 0


with open(path, "w") as f:
    f.write("shape: {M: %d, K: %d}\neinsum:\n  declaration:\n" % (size, size))
    for i in range(n + 1):
        f.write("    T%d: [M, K]\n" % i)
        if not residual(i):
            f.write("    W%d: [K, K]\n" % i)
    f.write("  expressions:\n")
    for i in range(1, n + 1):
        if residual(i):
            f.write("    - T%d[m,k] = T%d[m,k] + T%d[m,k]\n" % (i, i - 1, i - 2))
        else:
            f.write("    - T%d[m,n] = T%d[m,k] * W%d[k,n]\n" % (i, i - 1, i))
