"""Fixtures shared by the unit tests of the web pages: one SQLite archive in the test's home.

- `url`: the archive's URL (`archive.sqlite` in the per-test pgrig home).
- `archive`: that archive opened, for filling it; closed after the test.
- `client`: a TestClient of the web app serving it.

A module that wants another archive defines its own fixture of the same name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pgrig.archive.store import Archive

if TYPE_CHECKING:
    from fastapi.testclient import TestClient


@pytest.fixture
def url(pgrig_home: Path) -> str:
    return f"sqlite:///{pgrig_home / 'archive.sqlite'}"


@pytest.fixture
def archive(url: str) -> Iterator[Archive]:
    a = Archive(url)
    yield a
    a.close()


@pytest.fixture
def client(url: str, archive: Archive) -> TestClient:
    from fastapi.testclient import TestClient

    from pgrig.web.app import create_app

    return TestClient(create_app(url))
