"""Run every ```console block of docs/tutorial.md and compare its output
with the block: the first line is `$ COMMAND`, the rest what it prints
(stdout and stderr together). Times ("0.000365 s") compare equal whatever
their value. Run from a directory holding the tutorial's files under
docs/tutorial/, with `mambalaya` and `python3` (with NumPy) first on PATH.

    tutorial_check.py TUTORIAL.md            compare; exit 1 on a difference
    tutorial_check.py TUTORIAL.md --update   rewrite the outputs in place
"""
import re
import subprocess
import sys

BLOCK = re.compile(r"```console\n\$ (.*?)\n(.*?)```\n", re.S)
TIME = re.compile(r"\b\d+(\.\d+)?(e[-+]?\d+)? s\b")


def run(cmd):
    p = subprocess.run(["sh", "-c", cmd], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def same(want, got):
    return TIME.sub("T s", want) == TIME.sub("T s", got)


def main():
    path, update = sys.argv[1], "--update" in sys.argv[2:]
    text = open(path, encoding="utf-8").read()
    bad, n, out, at = 0, 0, [], 0
    for m in BLOCK.finditer(text):
        n += 1
        rc, got = run(m.group(1))
        if rc != 0:
            print("FAIL: exit %d: $ %s\n%s" % (rc, m.group(1), got))
            bad += 1
        elif not same(m.group(2), got):
            print("FAIL: $ %s\n--- the tutorial\n%s--- now\n%s"
                  % (m.group(1), m.group(2), got))
            bad += 1
        out.append(text[at:m.start()])
        out.append("```console\n$ %s\n%s```\n" % (m.group(1), got))
        at = m.end()
    out.append(text[at:])
    if update:
        open(path, "w", encoding="utf-8").write("".join(out))
    print("tutorial: %d commands run, %d differ" % (n, bad))
    sys.exit(1 if bad and not update else 0)


main()
