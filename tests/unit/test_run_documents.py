"""The declared run documents (record/documents.py and record/*_docs.py) against real runs.

tests/fixtures/runs/*.json are `pgrig runs show --json` documents of real runs (how each was
made: tests/fixtures/runs/README.md). Each one's `extra` and `host` must use only the keys
record/ declares, with values of the declared types, at every depth: a key written by a
module but not declared, or declared with the wrong type, fails here. The stored
JSON goes through the types unchanged (TypedDicts are plain dicts at run time; the test says so
by dumping the checked document back).
"""

from __future__ import annotations

import importlib
import json
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pytest
from typing_extensions import is_typeddict  # the documents are typing_extensions' (pydantic)

from pgrig.record import documents
from pgrig.record.documents import HostDoc, RunExtra

RUNS = Path(__file__).parents[1] / "fixtures" / "runs"
FIXTURES = sorted(RUNS.glob("*.json"))


def problems(value: Any, declared: Any, path: str) -> list[str]:
    """Where `value` does not fit the type `declared` (a TypedDict, a container, a scalar)."""
    if declared is Any or declared is object:
        return []
    if is_typeddict(declared):
        if not isinstance(value, dict):
            return [f"{path}: expected a {declared.__name__} (got {type(value).__name__})"]
        hints = get_type_hints(declared)
        out = []
        for key, item in value.items():
            if key not in hints:
                out.append(f"{path}.{key}: not declared in {declared.__name__}")
            else:
                out += problems(item, hints[key], f"{path}.{key}")
        return out
    origin = get_origin(declared)
    if origin in (Union, types.UnionType):
        found = [problems(value, arm, path) for arm in get_args(declared)]
        return [] if any(not f for f in found) else min(found, key=len)
    if origin is Literal:
        return [] if value in get_args(declared) else [f"{path}: {value!r} not allowed"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: expected a list (got {type(value).__name__})"]
        (item,) = get_args(declared)
        return [p for i, v in enumerate(value) for p in problems(v, item, f"{path}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: expected an object (got {type(value).__name__})"]
        _key, item = get_args(declared)
        return [p for k, v in value.items() for p in problems(v, item, f"{path}.{k}")]
    return _scalar(value, declared, path)


def _scalar(value: Any, declared: Any, path: str) -> list[str]:
    if declared is type(None):
        ok = value is None
    elif declared is float:  # JSON writes 2.0 as 2
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif declared is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, declared)
    return [] if ok else [f"{path}: {value!r} is not {getattr(declared, '__name__', declared)}"]


def _load(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    assert isinstance(doc, dict), path
    return doc


def test_fixtures_are_there() -> None:
    assert len(FIXTURES) >= 5, "captured run documents are missing from tests/fixtures/runs"


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_extra_is_declared(path: Path) -> None:
    doc = _load(path)
    extra = doc["extra"]
    assert problems(extra, RunExtra, "extra") == []
    checked: RunExtra = extra  # what every reader gets: the same dict, the same JSON
    assert json.dumps(checked, sort_keys=False) == json.dumps(doc["extra"], sort_keys=False)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_host_is_declared(path: Path) -> None:
    host = _load(path).get("host")
    if host:
        assert problems(host, HostDoc, "host") == []


def test_the_fixtures_cover_the_declared_extra() -> None:
    """Every declared key appears in some captured run but those written on rare paths (named
    below): a declaration nobody writes any more shows up here as uncovered."""
    rare = {
        "results_error", "load_error",  # a run whose figures or load hosts failed
        "crosscheck",  # pgbench's summary disagreed with its log
        "figures_from",  # pgbench killed before its summary
        "host_sampler_errors",  # a host's sampler could not start
        "restored_before_run",  # the live server differed from what the run records
        "pgbench_launched_at",  # written again at launch (load/core/runner.py): newer than these
        "server_log",  # the server log's growth (load/core/server_log_follow.py): newer than these
        "backends_ended",  # backends left after the client (sync replicas gone mid-run)
        "server_on",  # a run on an environment pgrig made on another host (`env create --on`)
    }  # fmt: skip
    seen = {key for path in FIXTURES for key in _load(path)["extra"]}
    missing = set(get_type_hints(RunExtra)) - seen - rare
    assert not missing, f"declared but in no captured run: {sorted(missing)}"


def test_the_checker_finds_undeclared_keys_and_wrong_types() -> None:
    """The checker above is what the other tests rest on: it must see a stray key at depth
    and a value of the wrong type."""
    assert problems({"window": {"start_us": 1, "oops": 2}}, RunExtra, "extra") == [
        "extra.window.oops: not declared in WindowDoc"
    ]
    assert problems({"load": {"hosts": {"h1": {"ncpu": "two"}}}}, RunExtra, "extra") == [
        "extra.load.hosts.h1.ncpu: 'two' is not int"
    ]
    assert problems({"network": {"paths": [{"from": "h1", "samples": 3}]}}, RunExtra, "x") == []
    assert problems({"stability": {"cv": None, "n": 3}}, RunExtra, "extra") == []
    assert problems({"topology": {"sync": 1}}, RunExtra, "extra") == [
        "extra.topology.sync: 1 is not str"
    ]


def test_every_document_is_exported() -> None:
    """Every document, declared in documents.py or in a *_docs.py module of its theme, is
    imported from documents.py (its __all__), and is the same object there."""
    themes = [documents] + [
        importlib.import_module(f"pgrig.record.{path.stem}")
        for path in sorted(Path(documents.__file__).parent.glob("*_docs.py"))
    ]
    assert len(themes) > 1
    for module in themes:
        declared = {
            name for name, value in vars(module).items()
            if is_typeddict(value) and value.__module__ == module.__name__
        }  # fmt: skip
        assert declared, module.__name__
        assert declared <= set(documents.__all__), module.__name__
        assert all(getattr(documents, name) is getattr(module, name) for name in declared)
    assert typing.get_type_hints(documents.RunExtra)  # resolvable at run time
