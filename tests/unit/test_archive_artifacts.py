"""Per-run artifact directories and compression."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from pgrig.archive.artifacts import (
    artifact_path,
    compress_file,
    remove_run_artifacts,
    run_artifacts_dir,
    store_artifact,
)
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError

HOME = "sqlite:///{home}/archive.sqlite"


def test_run_directory_is_under_home_keyed_by_its_archive(pgrig_home: Path) -> None:
    d = run_artifacts_dir(12, archive=HOME.format(home=pgrig_home))
    assert d == pgrig_home / "artifacts" / "home" / "12" and d.is_dir()
    with pytest.raises(PgrigError, match="invalid run id"):
        run_artifacts_dir(0, archive=HOME.format(home=pgrig_home))


def test_compress_file_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "txlog.1"
    data = b"".join(b"%d 1 2345 0 1700000000 %d\n" % (i % 20, i) for i in range(20000))
    src.write_bytes(data)
    dst = compress_file(src)
    assert dst == tmp_path / "txlog.1.gz" and src.exists()
    assert gzip.decompress(dst.read_bytes()) == data
    assert dst.stat().st_size < len(data) / 2
    assert not list(tmp_path.glob("*.part"))
    with pytest.raises(PgrigError, match="cannot compress"):
        compress_file(tmp_path / "missing")


def test_store_artifact_records_a_relative_path(pgrig_home: Path, tmp_path: Path) -> None:
    rec = RunRecord(env_name="e", workload="w", clients=1, threads=1, id=5)
    log = tmp_path / "server.log"
    log.write_text("LOG:  checkpoint starting\n")
    url = HOME.format(home=pgrig_home)
    rel = store_artifact(rec, log, "server log", archive=url)
    assert rel == "home/5/server.log.gz" and rec.artifacts == {"server log": rel}
    assert gzip.decompress(artifact_path(rel).read_bytes()) == log.read_bytes()
    out = tmp_path / "pgbench.stdout"
    out.write_text("tps = 1\n")
    assert store_artifact(rec, out, compress=False, move=True, archive=url) == (
        "home/5/pgbench.stdout"
    )
    assert not out.exists() and artifact_path("home/5/pgbench.stdout").read_text() == "tps = 1\n"
    with pytest.raises(PgrigError, match="points outside"):
        artifact_path("../../etc/passwd")
    with pytest.raises(PgrigError, match="needs an id"):
        store_artifact(
            RunRecord(env_name="e", workload="w", clients=1, threads=1), log, archive=url
        )
    remove_run_artifacts(5, archive=url, recorded=rec.artifacts)
    assert not (pgrig_home / "artifacts" / "home" / "5").exists()
