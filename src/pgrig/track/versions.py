"""The versions of a series: `--versions 15,18`, `18.3,18.6`, `17.0..17.6`, expanded against
what the sources offer (provision/sources.py).

- a major (15) is its newest build already on this machine (Debian's 15), else the newest
  minor PyPI serves, else Maven Central's;
- an exact minor (18.3) is itself;
- a range (17.0..17.6) is every minor between the two (both included) that some catalogue
  offers; with bisection only its two ends are measured first, the inside is what bisection
  may measure.

A version no catalogue offers stays in the plan as "skipped" with the reason, so the series says
what it could not measure instead of silently measuring less.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from pgrig.errors import PgrigError
from pgrig.provision.server.binaries import major_of, version_key

_MINOR = r"[0-9]{1,2}\.[0-9]{1,3}"  # ASCII digits: \d also matches "١٨"
_TOKEN = re.compile(
    rf"(?P<major>[0-9]{{1,2}})|(?P<minor>{_MINOR})|(?P<lo>{_MINOR})\.\.(?P<hi>{_MINOR})"
)


@dataclass
class VersionPoint:
    """One version of the series and how it is to be (or was) measured."""

    version: str  # server version, "17.9"
    requested: str  # the token it came from: "17", "17.9", "17.0..17.6"
    sources: list[str] = field(default_factory=list)  # who offers it, preferred first
    role: str = "listed"  # listed | range | bisect (measured by bisection only)
    status: str = "planned"  # planned | ok | failed | skipped | candidate (inside a range)
    reason: str | None = None  # why skipped or failed
    source: str | None = None  # where its binaries came from once installed
    bindir: str | None = None
    env: str | None = None
    client_tools: dict[str, str] = field(default_factory=dict)  # server-only builds

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VersionPoint:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def parse_list(text: str) -> list[tuple[str, str]]:
    """'15, 18.3,17.0..17.6' -> [('major', '15'), ('minor', '18.3'), ('range', '17.0..17.6')]."""
    out: list[tuple[str, str]] = []
    for raw in text.split(","):
        token = raw.strip()
        if not token:
            continue
        m = _TOKEN.fullmatch(token)
        if not m:
            raise PgrigError(
                f"--versions: {token!r} is not a major (18), a minor (18.3) or a range (17.0..17.6)"
            )
        if m.group("major"):
            kind = "major"
        elif m.group("minor"):
            kind = "minor"
        else:
            lo, hi = m.group("lo"), m.group("hi")
            if version_key(lo) > version_key(hi):
                raise PgrigError(f"--versions: range {token!r} goes backwards")
            kind = "range"
        if int(re.match(r"[0-9]+", token).group(0)) < 10:  # type: ignore[union-attr]
            raise PgrigError(f"--versions: {token!r}: PostgreSQL 10 or later")
        out.append((kind, token))
    if not out:
        raise PgrigError("--versions: give at least one version")
    return out


def expand(
    text: str,
    offers: dict[str, list[str]],
    installed: dict[str, str] | None = None,
    bisect: bool = False,
) -> list[VersionPoint]:
    """The version points of `text`, in version order, without duplicates.

    `offers`: version -> sources offering it (provision.sources.Catalogue.offers); `installed`:
    version -> source of the builds already here (a major prefers them).
    """
    installed = installed or {}
    points: dict[str, VersionPoint] = {}

    def add(version: str, token: str, role: str, status: str = "planned", reason: str = "") -> None:
        prev = points.get(version)
        if prev is not None and (prev.role != "range" or role == "range"):
            return  # listed wins over a range's inside
        points[version] = VersionPoint(
            version, token, list(offers.get(version, [])), role, status, reason or None
        )

    for kind, token in parse_list(text):
        if kind == "major":
            major = int(token)
            here = [v for v in installed if major_of(v) == major]
            avail = [v for v in offers if major_of(v) == major]
            pool = here or [v for v in avail if "pgrig" in offers[v]] or avail
            if not pool:
                add(token, token, "listed", "skipped", f"no build of PostgreSQL {major} found")
                continue
            add(max(pool, key=version_key), token, "listed")
        elif kind == "minor":
            if token in offers or token in installed:
                add(token, token, "listed")
            else:
                add(token, token, "listed", "skipped", f"PostgreSQL {token} is in no catalogue")
        else:
            lo, hi = token.split("..")
            inside = sorted(
                (v for v in set(offers) | set(installed)
                 if version_key(lo) <= version_key(v) <= version_key(hi)),
                key=version_key,
            )  # fmt: skip
            if not inside:
                add(lo, token, "listed", "skipped", f"no catalogue offers a version in {token}")
                continue
            ends = {inside[0], inside[-1]}
            for v in inside:
                if bisect and v not in ends:
                    add(v, token, "range", "candidate")
                else:
                    add(v, token, "range")
    return sorted(points.values(), key=lambda p: version_key(p.version))
