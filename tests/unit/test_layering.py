"""Dependencies flow one way: a package may import only from packages below it.

The order (docs/architecture.md): cli > web > reports > tune > study > load > workloads, metrics,
host, insights > provision > analysis > archive > request > the shared modules (paths, errors,
__init__, units).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "pgrig"

RANK = {
    "cli": 11,
    "web": 10,
    "reports": 9,
    "tune": 8,
    "study": 7,
    "load": 6,
    "workloads": 5,
    "metrics": 5,
    "host": 5,
    "insights": 5,
    "provision": 4,
    "analysis": 3,
    "archive": 2,
    "request": 1,
}
SHARED = 0  # paths.py, errors.py, the package root


def _package_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "pgrig":
        return None
    return parts[1] if len(parts) > 1 else ""


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            if node.module == "pgrig":
                found.extend(f"pgrig.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def test_every_package_has_a_rank() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(RANK), "add new packages to RANK and to docs/architecture.md"


def test_no_package_imports_from_above_itself() -> None:
    violations = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if len(rel.parts) == 1:
            continue  # shared modules import nothing from packages (checked below)
        own = rel.parts[0]
        for module in _imports(path):
            target = _package_of(module)
            if target is None or target == own or target not in RANK:
                continue
            if RANK[target] >= RANK[own]:
                violations.append(f"{rel}: imports {module} ({own} -> {target})")
    assert not violations, "\n".join(violations)


def test_shared_modules_import_no_package() -> None:
    for path in SRC.glob("*.py"):
        for module in _imports(path):
            assert _package_of(module) in (None, "", "paths", "errors"), f"{path.name}: {module}"
