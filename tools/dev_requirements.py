"""Print the development environment's requirements (hatch.toml's default env), one per line."""

import tomllib
from pathlib import Path

with open(Path(__file__).resolve().parents[1] / "hatch.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["envs"]["default"]["dependencies"]))
