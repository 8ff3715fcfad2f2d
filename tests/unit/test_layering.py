"""Dependencies flow one way: a package may import only from packages below it.

The order (docs/architecture.md): cli > web > reports > views > tune > study, track > load >
workloads, metrics, machine, insights > provision > hosts > archive > analysis > record > request
> the shared modules (paths, errors, __init__, units, format, table). Analysis reads run records
(record/), never the archive that stores them. The rooms inside load/ and provision/ are ordered
the same way (ROOM_RANK; a package's own modules, like provision/cluster.py, stand on the top
floor of its rooms). Inside a package too, no two modules import each other, directly or round a
loop (every import counts, also one inside a function or only for typing): a loop means neither
module can be read, tested or changed alone. A room of more than 20 modules gets rooms inside.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "pgrig"

RANK = {
    "cli": 12,
    "web": 11,
    "reports": 10,
    "views": 9,
    "tune": 8,
    "study": 7,
    "track": 7,
    "load": 6,
    "workloads": 5,
    "metrics": 5,
    "machine": 5,  # this machine: facts, checks, kernel knobs
    "insights": 5,
    "provision": 4,
    "hosts": 3.5,  # other machines over SSH: provision, metrics and load reach them
    "archive": 3.2,  # stores records; analysis must not reach it
    "analysis": 3,
    "record": 2,  # the run record, its documents, the archive's protocols
    "request": 1,
}
SHARED = 0  # paths.py, errors.py, the package root

# Rooms inside a package, bottom up; "" is the package's own modules (the top floor).
ROOM_RANK = {
    "load": {
        "engines": 1,  # pgbench and sysbench behind the driver seam
        "remote": 2,  # load agents on other hosts
        "core": 3,  # the measured run: runner, multi_runner, steps, guard, life cycle
        "backup": 4,  # backups under load use the runner
        "emit": 4,  # experiments written out use the runner's plan
        "": 5,
    },
    "provision": {
        "state": 1,  # the Environment model, its lock, the unfinished-create mark
        "system": 2,  # the OS user, child processes
        "settings": 3,  # what a server is configured with
        "server": 4,  # the PostgreSQL server: builds, postmaster, replicas, backups
        "pooler": 5,  # pgbouncer beside a running server
        "": 6,  # cluster, run_journal, live_state, repair, run_settings, study_layer
        "remote": 7,  # environments on other hosts, driven through their pgrig
        "operations": 8,  # what each `pgrig env` command does, here or on a host
    },
}
MAX_MODULES_PER_ROOM = 20


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


def _names_imported(path: Path) -> list[str]:
    """Every dotted name an import in `path` reaches: `from pgrig.provision import cluster` is
    pgrig.provision.cluster (a module of the package's top floor), not only pgrig.provision."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def _room_of(module: str) -> tuple[str, str] | None:
    """(package, room) of a dotted pgrig module inside a package with rooms."""
    parts = module.split(".")
    if len(parts) < 3 or parts[0] != "pgrig" or parts[1] not in ROOM_RANK:
        return None
    return parts[1], parts[2] if parts[2] in ROOM_RANK[parts[1]] else ""


def test_every_room_has_a_rank() -> None:
    for package, rooms in ROOM_RANK.items():
        found = {p.name for p in (SRC / package).iterdir() if (p / "__init__.py").exists()}
        assert found | {""} == set(rooms), f"add {package}'s rooms to ROOM_RANK and the docs"


def test_no_room_imports_from_above_itself() -> None:
    violations = []
    for package in ROOM_RANK:
        for path in (SRC / package).rglob("*.py"):
            rel = path.relative_to(SRC.parent).with_suffix("")
            own = _room_of(".".join(rel.parts))
            assert own is not None
            for module in _names_imported(path):
                target = _room_of(module)
                if target is None or target[0] != package or target[1] == own[1]:
                    continue
                if ROOM_RANK[package][target[1]] >= ROOM_RANK[package][own[1]]:
                    violations.append(f"{rel}: imports {module} ({own[1]!r} -> {target[1]!r})")
    assert not violations, "\n".join(violations)


def test_big_rooms_have_rooms_inside() -> None:
    for init in SRC.rglob("__init__.py"):
        modules = [p for p in init.parent.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= MAX_MODULES_PER_ROOM, (
            f"{init.parent.relative_to(SRC)} holds {len(modules)} modules: give it rooms"
        )


def test_shared_modules_import_no_package() -> None:
    for path in SRC.glob("*.py"):
        for module in _imports(path):
            allowed = (None, "", "paths", "errors", "units")  # format.py shows settings by units
            assert _package_of(module) in allowed, f"{path.name}: {module}"


def test_analysis_reads_records_not_the_archive() -> None:
    """The statistics take run records (pgrig.record), whatever stores them."""
    assert RANK["analysis"] < RANK["archive"] and RANK["record"] < RANK["analysis"]
    for path in (SRC / "analysis").rglob("*.py"):
        assert not [m for m in _imports(path) if _package_of(m) == "archive"], path.name


def _module_names() -> dict[str, Path]:
    names = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _module_imports(path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The pgrig modules `path` imports: `from pgrig.a import b` is module pgrig.a.b when there
    is one (its package's __init__ only runs first), else pgrig.a (b is a name of it)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in modules:
                    yield f"{node.module}.{alias.name}"
                elif node.module in modules:
                    yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in modules)


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_the_cycle_finder_finds_loops() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert _cycles(graph) == [frozenset({"a", "b", "c"})]
    assert _cycles({"x": {"y"}, "y": {"x"}, "z": {"x"}}) == [frozenset({"x", "y"})]


def test_no_module_imports_round_a_loop() -> None:
    modules = _module_names()
    graph = {
        name: {m for m in _module_imports(path, modules) if m != name}
        for name, path in modules.items()
    }
    loops = [sorted(c) for c in _cycles(graph)]
    assert not loops, f"modules importing each other (break the loop): {loops}"
