"""Inspect the wheels and sdists in a dist/ folder before anyone installs them.

Every wheel and sdist of the five packages must: carry the LICENSE; hold no tests, caches or
compiled files; (wheels) ship py.typed, classifiers, project URLs and an MIT licence expression,
and pin the genesis layer below with a bounded range. The storage wheel must not require torch or
triton. Prints each file's size; exits non-zero naming every problem found.
  python tools/inspect_dist.py dist
"""

from __future__ import annotations

import re
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

IMPORT_NAMES = {
    "genesis_storage": "genesis_storage",
    "genesis_kernels": "genesis_kernels",
    "genesis_ndarray": "genesis_ndarray",
    "genesis_autograd": "genesis_autograd",
    "genesis_nn": "genesis",
}
LAYER_BELOW = {
    "genesis_kernels": "genesis-storage",
    "genesis_ndarray": "genesis-kernels",
    "genesis_autograd": "genesis-ndarray",
    "genesis_nn": "genesis-autograd",
}
FORBIDDEN_PARTS = re.compile(r"(^|/)(tests?|__pycache__|\.pytest_cache|\.hypothesis)(/|$)|\.py[co]$|\.so$")


def check_wheel(path: Path, problems: list[str]) -> None:
    dist = path.name.split("-")[0]
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(wheel.read(meta_name).decode())
    bad = [n for n in names if FORBIDDEN_PARTS.search(n)]
    if bad:
        problems.append(f"{path.name}: holds tests / caches / compiled files: {bad[:5]}")
    package = IMPORT_NAMES[dist]
    if f"{package}/py.typed" not in names:
        problems.append(f"{path.name}: no {package}/py.typed")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        problems.append(f"{path.name}: no LICENSE under .dist-info/licenses")
    if meta.get("License-Expression") != "MIT":
        problems.append(f"{path.name}: License-Expression is {meta.get('License-Expression')!r}, not 'MIT'")
    if not meta.get_all("Classifier"):
        problems.append(f"{path.name}: no classifiers")
    if not meta.get_all("Project-URL"):
        problems.append(f"{path.name}: no project URLs")
    requires = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    below = LAYER_BELOW.get(dist)
    if below is not None:
        pinned = [r for r in requires if r.startswith(below)]
        if not pinned or not re.search(r">=\s*[\d.]+", pinned[0]) or "<" not in pinned[0]:
            problems.append(f"{path.name}: {below} is not required with a bounded range: {pinned}")
    if dist == "genesis_storage":
        heavy = [r for r in requires if re.match(r"(torch|triton)\b", r)]
        if heavy:
            problems.append(f"{path.name}: the storage wheel requires {heavy}")


def check_sdist(path: Path, problems: list[str]) -> None:
    with tarfile.open(path) as sdist:
        names = [m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name]
    if "LICENSE" not in names:
        problems.append(f"{path.name}: no LICENSE at its top")
    bad = [n for n in names if FORBIDDEN_PARTS.search(n)]
    if bad:
        problems.append(f"{path.name}: holds tests / caches / compiled files: {bad[:5]}")


def main(folder: str) -> int:
    dist = Path(folder)
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    problems: list[str] = []
    found = {w.name.split("-")[0] for w in wheels}
    if found != set(IMPORT_NAMES) or len(sdists) != len(IMPORT_NAMES):
        problems.append(f"expected one wheel and one sdist per package, found {[p.name for p in (*wheels, *sdists)]}")
    for wheel in wheels:
        check_wheel(wheel, problems)
    for sdist in sdists:
        check_sdist(sdist, problems)
    for path in (*wheels, *sdists):
        print(f"    {path.name:55s} {path.stat().st_size / 1024:8.1f} KiB")
    for problem in problems:
        print("PROBLEM:", problem, file=sys.stderr)
    if not problems:
        print(f"    {len(wheels)} wheels and {len(sdists)} sdists pass the inspection")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "dist"))
