"""Run every ```python block of the given Markdown files, each in a fresh interpreter.

A README's examples are promises: CI runs them all (on a machine without a GPU, so each example
must run on cpu or pick cuda only when genesis.cuda.is_available()). Blocks of one file run in
order, each on its own; a block that fails prints its file, line and output, and the exit code
is non-zero.
  python tools/run_readme_blocks.py README.md packages/*/README.md
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def main(paths: list[str]) -> int:
    failures = ran = 0
    for name in paths:
        text = Path(name).read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            result = subprocess.run([sys.executable, "-c", match.group(1)], capture_output=True, text=True, timeout=300)
            ran += 1
            if result.returncode:
                failures += 1
                print(f"FAILED {name}:{line}\n{result.stdout}{result.stderr}", file=sys.stderr)
            else:
                print(f"    ok {name}:{line}")
    print(f"README code blocks: {ran - failures} ran cleanly, {failures} failing")
    return 1 if failures or not ran else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
