"""Run the worked example of a Markdown file: its blocks fenced ```python,
in order, as one script, in a fresh directory (the example writes there).

    /usr/bin/python3 tests/python/doc_example.py docs/python.md
"""

import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def example(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    blocks = re.findall(r"^```python\n(.*?)^```$", text, re.S | re.M)
    if not blocks:
        sys.exit("%s: no ```python block" % path)
    return "\n".join(blocks)


def main():
    path = os.path.abspath(sys.argv[1])
    code = compile(example(path), path, "exec")
    sys.path.insert(0, ROOT)  # the shim: `import mambalaya`
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        exec(code, {"__name__": "__main__"})


if __name__ == "__main__":
    main()
