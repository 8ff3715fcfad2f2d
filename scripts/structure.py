"""The house's structure in figures: upward arrows inside each package, import loops, big rooms.

    python scripts/structure.py [SRC]       (SRC: src/pgrig by default)

An arrow is one module importing another of pgrig (every import counts: lazy, typing-only).
Floors: the packages' order of tests/unit/test_layering.py (RANK), and inside a package with
rooms (ROOM_RANK) the rooms' order. An arrow inside a package that has no declared rooms is
counted by its sub-package order only when it has sub-packages; loops are counted everywhere.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit"))
from test_layering import RANK, ROOM_RANK, _cycles  # noqa: E402


def modules(src: Path) -> dict[str, Path]:
    out = {}
    for path in src.rglob("*.py"):
        parts = path.relative_to(src.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def arrows(src: Path) -> list[tuple[str, str]]:
    mods = modules(src)
    found = []
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.append(full if full in mods else node.module)
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            found += [(name, t) for t in targets if t in mods and t != name]
    return found


OLD_NAMES = {"host": "machine"}  # to measure a tree from before the renames


def floor(module: str) -> tuple[float, float]:
    parts = module.split(".")
    package = parts[1] if len(parts) > 1 else ""
    package = OLD_NAMES.get(package, package)
    top = RANK.get(package, 0.0)
    rooms = ROOM_RANK.get(package)
    room = 0.0
    if rooms is not None:
        room = rooms.get(parts[2] if len(parts) > 2 and parts[2] in rooms else "", 0)
    return top, room


def main() -> None:
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "src" / "pgrig"
    edges = arrows(src)
    up_between = []
    for a, b in edges:
        pa, pb = a.split("."), b.split(".")
        if len(pa) > 2 and len(pb) > 1 and pa[1] != pb[1] and floor(b)[0] >= floor(a)[0]:
            up_between.append((a, b))
    up_inside: Counter[str] = Counter()
    for a, b in edges:
        pa, pb = a.split("."), b.split(".")
        if len(pa) > 2 and len(pb) > 2 and pa[1] == pb[1] and pa[1] in ROOM_RANK:
            ra, rb = floor(a)[1], floor(b)[1]
            room_a = pa[2] if pa[2] in ROOM_RANK[pa[1]] else ""
            room_b = pb[2] if pb[2] in ROOM_RANK[pb[1]] else ""
            if room_a != room_b and rb >= ra:
                up_inside[pa[1]] += 1
    graph: dict[str, set[str]] = {m: set() for m in modules(src)}
    for a, b in edges:
        graph[a].add(b)
    loops = _cycles(graph)
    rooms = {}
    for init in src.rglob("__init__.py"):
        n = len([p for p in init.parent.glob("*.py") if p.name != "__init__.py"])
        rooms[str(init.parent.relative_to(src)) or "."] = n
    big = {r: n for r, n in rooms.items() if n > 20}
    print(f"modules: {len(graph)}, arrows (imports between pgrig modules): {len(edges)}")
    print(f"rooms (packages): {len(rooms)}; floors: {len(set(RANK.values()))} + shared")
    print(f"upward arrows between packages: {len(up_between)}")
    for package in sorted(ROOM_RANK):
        print(f"upward arrows between the rooms inside {package}/: {up_inside[package]}")
    print(f"import loops (cycles of modules): {len(loops)}")
    print(f"rooms over 20 modules: {len(big)} {big or ''}")
    print(
        "largest rooms: "
        + ", ".join(f"{r} {n}" for r, n in sorted(rooms.items(), key=lambda kv: -kv[1])[:6])
    )
    sizes = sorted(
        ((len(p.read_text().splitlines()), str(p.relative_to(src))) for p in src.rglob("*.py")),
        reverse=True,
    )[:8]
    print("largest files: " + ", ".join(f"{name} {n}" for n, name in sizes))
    cli = [len(p.read_text().splitlines()) for p in (src / "cli").glob("*.py")]
    print(f"cli/ (parsing and rendering only): {len(cli)} modules, {sum(cli)} lines")
    for a, b in up_between[:20]:
        print(f"  up: {a} -> {b}")


if __name__ == "__main__":
    main()
