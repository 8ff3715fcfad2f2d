"""Every dependency pgrig declares is pinned in constraints.txt, which setup.sh installs with."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not NAME==VERSION"
            pins[_key(name)] = version
    return pins


def test_every_declared_dependency_is_pinned_to_a_version_it_allows() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    pins = _pins()
    for line in declared:
        req = Requirement(line)
        assert _key(req.name) in pins, f"{req.name}: run scripts/constraints.py"
        assert req.specifier.contains(pins[_key(req.name)]), (req.name, pins[_key(req.name)])


def test_setup_installs_with_the_constraints() -> None:
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert re.search(r"pip install .*-c constraints\.txt", setup)
