"""Release metadata agrees with itself: versions, changelog, licence copies, ranges between the layers."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "genesis-storage": "genesis_storage",
    "genesis-kernels": "genesis_kernels",
    "genesis-ndarray": "genesis_ndarray",
    "genesis-autograd": "genesis_autograd",
    "genesis-nn": "genesis",
}
# What a new release can break us on: these take only the ranges we test.
BOUNDED = {*PACKAGES, "triton", "torch", "cuda-python"}


def project(dist: str) -> dict:
    with open(ROOT / "packages" / dist / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def changelog_versions() -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in (ROOT / "CHANGELOG.md").read_text().splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        elif line.startswith("### ") and current is not None:
            sections[current].append(line[4:].split()[0])
    return sections


@pytest.mark.parametrize("dist", PACKAGES)
def test_changelog_heads_with_the_packages_version(dist: str) -> None:
    versions = changelog_versions()
    assert dist in versions, f"CHANGELOG.md has no section for {dist}"
    assert versions[dist], f"CHANGELOG.md's {dist} section lists no release"
    assert versions[dist][0] == project(dist)["version"], (
        f"{dist}: pyproject.toml says {project(dist)['version']}, CHANGELOG.md's newest entry is {versions[dist][0]}"
    )


@pytest.mark.parametrize("dist", PACKAGES)
def test_dunder_version_is_the_packages_version(dist: str) -> None:
    module = importlib.import_module(PACKAGES[dist])
    assert module.__version__ == project(dist)["version"]


@pytest.mark.parametrize("dist", PACKAGES)
def test_each_package_ships_the_repositorys_licence(dist: str) -> None:
    assert (ROOT / "packages" / dist / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    meta = project(dist)
    assert meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]


@pytest.mark.parametrize("dist", PACKAGES)
def test_ranges_between_the_layers_admit_the_siblings_and_are_bounded(dist: str) -> None:
    for requirement in project(dist)["dependencies"]:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)
        if name in BOUNDED:
            assert "<" in requirement, f"{dist} requires {requirement!r} with no upper bound"
        if name in PACKAGES:
            sibling = tuple(int(x) for x in project(name)["version"].split(".")[:2])
            low = tuple(int(x) for x in re.search(r">=\s*([0-9.]+)", requirement).group(1).split(".")[:2])
            high = tuple(int(x) for x in re.search(r"<\s*([0-9.]+)", requirement).group(1).split(".")[:2])
            assert low <= sibling < high, f"{dist} requires {requirement!r} but {name} is {sibling}"
