"""Parsing `postgres --describe-config` and merging pg_settings (captured from real servers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgrig.provision.settings import catalog
from pgrig.provision.settings.catalog import Catalog


@pytest.fixture
def cat15(fixtures_dir: Path) -> Catalog:
    text = (fixtures_dir / "provision" / "describe-config-15.txt").read_text()
    return Catalog("15.18", catalog.parse_describe_config(text))


@pytest.fixture
def cat18(fixtures_dir: Path) -> Catalog:
    text = (fixtures_dir / "provision" / "describe-config-18.txt").read_text()
    return Catalog("18.6", catalog.parse_describe_config(text))


def test_parse_fields(cat15: Catalog) -> None:
    sb = cat15.get("shared_buffers")
    assert sb is not None
    assert (sb.context, sb.group, sb.type) == ("postmaster", "Resource Usage / Memory", "INTEGER")
    assert (sb.min, sb.max) == ("16", "1073741823")
    assert sb.description.startswith("Sets the number of shared memory buffers")
    # numbers and booleans print uninitialised defaults there: not trusted
    assert sb.default is None and cat15.get("fsync").default is None  # type: ignore[union-attr]
    assert cat15.get("wal_level").default == "replica"  # type: ignore[union-attr]
    assert cat15.get("DateStyle").name == "DateStyle"  # type: ignore[union-attr]
    assert "datestyle" in cat15 and "DATESTYLE" in cat15


def test_contexts(cat15: Catalog, cat18: Catalog) -> None:
    assert (
        cat15.needs_restart("shared_buffers") and cat15.apply_mode("max_connections") == "restart"
    )
    assert not cat15.needs_restart("work_mem") and cat15.apply_mode("work_mem") == "reload"
    assert cat15.apply_mode("checkpoint_timeout") == "reload"  # sighup
    assert cat15.apply_mode("no_such_thing") == "unknown"
    assert cat15.apply_mode("pg_stat_statements.max") == "reload"
    assert "io_method" not in cat15
    assert cat18.needs_restart("io_method") and cat18.needs_restart("io_workers") is False


def test_merge_pg_settings_adds_internal_units_and_defaults(
    cat18: Catalog, fixtures_dir: Path
) -> None:
    rows = json.loads((fixtures_dir / "provision" / "pg-settings-18.json").read_text())
    assert "block_size" not in cat18
    catalog.merge_pg_settings(cat18, [tuple(r) for r in rows])
    assert cat18.enriched
    bs = cat18.get("block_size")
    assert bs is not None and bs.context == "internal" and bs.apply == "internal"
    sb = cat18.get("shared_buffers")
    assert sb is not None and sb.default == "16384" and sb.unit == "8kB"
    assert sb.default_text() == "128MB"  # as SHOW prints it (pgrig/units.py)
    assert cat18.get("fsync").default == "on"  # type: ignore[union-attr]
    assert cat18.get("io_method").enumvals == ["sync", "worker"]  # type: ignore[union-attr]
    assert cat18.get("zero_damaged_pages") is not None  # developer option, not in describe-config


def test_json_roundtrip(cat18: Catalog) -> None:
    again = Catalog.from_json(json.loads(json.dumps(cat18.to_json())))
    assert again.settings == cat18.settings and again.version == "18.6"


def test_load_catalog_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixtures_dir: Path
) -> None:
    monkeypatch.setenv("PGRIG_HOME", str(tmp_path))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fixture = fixtures_dir / "provision" / "describe-config-18.txt"
    exe = bindir / "postgres"
    exe.write_text(f"#!/bin/sh\ncat '{fixture}'\n")
    exe.chmod(0o755)
    first = catalog.load_catalog(bindir, "18.6")
    assert "io_method" in first
    exe.write_text("#!/bin/sh\nexit 1\n")  # a second load must not run it again
    assert catalog.load_catalog(bindir, "18.6").settings == first.settings
    assert list((tmp_path / "catalog").glob("18.6-*.json"))
