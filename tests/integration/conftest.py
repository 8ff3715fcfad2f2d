"""Fixtures for tests against real PostgreSQL servers, reusable by every area.

- `pg15` / `pg18`: (bindir, exact version), skipping when that major is not available
  (18 only from pgrig's shared build cache: `pgrig pg install 18` fills it once).
- `managed_env`: a running PG15 environment in the per-test pgrig home (empty database
  `pgrig`), destroyed afterwards.
- `make_env`: a factory for more environments, e.g. `make_env("e18", pg="18", settings={...})`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.provision.state.environment import Environment


def _find(major: str) -> tuple[Path, str] | None:
    from pgrig.provision.server import binaries

    try:
        return binaries.find_bindir(major)
    except PgrigError:
        return None


def _found_or_skip(major: str, missing: str) -> tuple[Path, str]:
    found = _find(major)
    if found is None:
        pytest.skip(missing)
    return found


@pytest.fixture
def pg15(pgrig_home: Path) -> tuple[Path, str]:
    return _found_or_skip("15", "PostgreSQL 15 is not installed")


@pytest.fixture
def pg18(pgrig_home: Path) -> tuple[Path, str]:
    return _found_or_skip(
        "18", "PostgreSQL 18 is not in the build cache (run `pgrig pg install 18`)"
    )


@pytest.fixture
def make_env(pgrig_home: Path) -> Iterator[Callable[..., Environment]]:
    """create_environment of EnvironmentRequest(name, pg, **kwargs) with automatic destroy at
    the end of the test."""
    from pgrig.provision import cluster
    from pgrig.request.environment import EnvironmentRequest

    created: list[str] = []

    def make(name: str = "pg15", pg: str = "15", **kwargs: object) -> Environment:
        if _find(pg) is None:
            pytest.skip(f"PostgreSQL {pg} is not installed")
        env = cluster.create_environment(EnvironmentRequest(name=name, pg=pg, **kwargs))  # type: ignore[arg-type]
        created.append(name)
        return env

    yield make
    for name in created:
        with contextlib.suppress(PgrigError):
            cluster.destroy_environment(name)


@pytest.fixture
def managed_env(make_env: Callable[..., Environment]) -> Environment:
    """A running PostgreSQL 15 environment named "pg15" with an empty `pgrig` database."""
    return make_env("pg15", "15")
