"""Writes constraints.txt: every package pgrig[dev] installs, at the version installed here.

`make demo` and `make test` install with `pip install -c constraints.txt`, so a fresh machine
gets the versions the suite last passed with, not whatever PyPI serves that day (cryptography
51 once turned asyncssh's import into five warnings on every host command). To upgrade on
purpose: `pip install -U -e '.[dev]'`, run `make test`, then `python3 scripts/constraints.py`
and commit the difference with what changed.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(root: str, extras: set[str]) -> dict[str, str]:
    """{distribution name: version} of root and everything it needs, as installed."""
    env = default_environment()
    found: dict[str, str] = {}
    done: set[tuple[str, frozenset[str]]] = set()
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset(extras))]
    while todo:
        name, wanted = todo.pop()
        if (_key(name), wanted) in done:
            continue
        done.add((_key(name), wanted))
        dist = metadata.distribution(name)
        found[_key(dist.metadata["Name"])] = dist.version
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or any(
                req.marker.evaluate({**env, "extra": e}) for e in wanted | {""}
            ):
                todo.append((req.name, frozenset(req.extras)))
    return found


def main() -> int:
    pins = closure("pgrig", {"dev"})
    pins.pop("pgrig")
    lines = [f"{name}=={version}" for name, version in sorted(pins.items())]
    out = Path(__file__).resolve().parents[1] / "constraints.txt"
    header = "# Written by scripts/constraints.py: the versions `make test` last passed with.\n"
    out.write_text(header + "\n".join(lines) + "\n")
    print(f"{out}: {len(lines)} packages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
