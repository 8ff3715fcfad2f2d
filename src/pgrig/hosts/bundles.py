"""What the control machine pushes to a host, packed once into single files (hosts have no
registry access, and one file is one checksum for Ansible instead of one per file).

    pg_bundle(prefix)            <bundles>/pg-<X.Y.Z>.tar: a relocatable PostgreSQL build from
                                 pgrig's cache (server, pgbench, psql, contrib)
    pgbouncer_bundle()           <bundles>/pgbouncer-<version>.tar: this machine's pgbouncer
                                 binary and the shared libraries it needs beyond glibc
    pgrig_bundle(python)         <bundles>/pgrig-<hash>-cp<XY>.tar: a wheel of this pgrig, the
                                 wheels of its runtime dependencies at the versions installed
                                 here, and pip's own wheel (installs without a registry)

<bundles> is <home>/bundles (or PGRIG_BUNDLES_DIR). Each bundle is built once and reused
while its inputs are the same: PostgreSQL builds are immutable, pgrig's is keyed by a hash of
its sources.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pgrig
from pgrig import paths, safe_write
from pgrig.errors import PgrigError

# glibc's own libraries: every host has them, and they must match its kernel and loader.
_GLIBC = re.compile(r"^(libc|libm|libdl|librt|libpthread|ld-linux[-\w]*|linux-vdso)\.so")


def bundles_dir() -> Path:
    """<home>/bundles, or PGRIG_BUNDLES_DIR (the test suite shares one between homes)."""
    env = os.environ.get("PGRIG_BUNDLES_DIR")
    d = Path(env).expanduser().resolve() if env else paths.home() / "bundles"
    d.mkdir(parents=True, exist_ok=True)
    return d


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """One builder at a time per bundles directory (tests and users may share one)."""
    with open(bundles_dir() / ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _deterministic(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _write_tar(dest: Path, members: list[tuple[Path, str]]) -> Path:
    """A tar of (source, name in the archive), written atomically."""
    with safe_write.replacing(dest, mode=0o644) as tmp, tarfile.open(tmp, "w") as tar:
        for src, name in members:
            tar.add(src, arcname=name, filter=_deterministic)
    return dest


def pg_bundle(prefix: Path) -> Path:
    """The tar of a cached build <cache>/<X.Y.Z>/ (bin, lib, share...), named after it."""
    if not (prefix / "bin" / "postgres").exists():
        raise PgrigError(f"{prefix} is not a PostgreSQL build (no bin/postgres)")
    dest = bundles_dir() / f"pg-{prefix.name}.tar"
    with _locked():
        if not dest.exists():
            _write_tar(dest, [(prefix, prefix.name)])
    return dest


def pgbouncer_binary() -> Path:
    found = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/usr/bin")
    if not found:
        raise PgrigError("pgbouncer is not installed on this machine: nothing to push")
    return Path(found).resolve()


def pgbouncer_version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=10)
    m = re.search(r"PgBouncer (\S+)", out.stdout + out.stderr)
    return m.group(1) if m else "unknown"


def _shared_libs(binary: Path) -> list[Path]:
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=10)
    libs = []
    for line in out.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m and not _GLIBC.match(m.group(1)):
            libs.append(Path(m.group(2)))
    return libs


def pgbouncer_bundle() -> tuple[Path, str]:
    """(tar, version): bin/pgbouncer and lib/*.so.* (run with LD_LIBRARY_PATH=lib)."""
    binary = pgbouncer_binary()
    version = pgbouncer_version(binary)
    dest = bundles_dir() / f"pgbouncer-{version}.tar"
    with _locked():
        if dest.exists():
            return dest, version
        top = f"pgbouncer-{version}"
        members = [(binary, f"{top}/bin/pgbouncer")]
        members += [(lib.resolve(), f"{top}/lib/{lib.name}") for lib in _shared_libs(binary)]
        _write_tar(dest, members)
    return dest, version


def source_root() -> Path:
    """The source tree of the running pgrig (a wheel is built from it)."""
    root = Path(pgrig.__file__).resolve().parents[2]
    if not (root / "pyproject.toml").exists():
        raise PgrigError(
            f"pgrig runs from {Path(pgrig.__file__).parent}, not from a source tree: a host "
            "needs a wheel of it (install pgrig from its repository)"
        )
    return root


def _source_hash(root: Path) -> str:
    h = hashlib.sha256()
    sources = sorted(
        p
        for p in (root / "src" / "pgrig").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")
    )
    files = [root / "pyproject.toml", *sources]
    for f in files:
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _constraints() -> str:
    """name==version of every distribution installed here but pgrig: hosts get the same."""
    lines = set()
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name and name.lower() != "pgrig":
            lines.add(f"{name}=={dist.version}")
    return "\n".join(sorted(lines)) + "\n"


def _pip(*args: str, cwd: Path | None = None) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=900)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise PgrigError(f"pip {args[0]} failed on this machine: {last}")


def _forget_own_wheels(deps: Path) -> None:
    """pgrig's own wheel out of the dependencies' cache: its name (pgrig-0.1.0) stays when its
    sources change, and pip download takes a file already in the directory by its name, so the
    wheel of earlier sources came back with its old dependencies (a bundle built after TPC-H
    added tpchgen-cli and duckdb lacked them, and its offline download was ResolutionImpossible)."""
    for wheel in deps.glob("pgrig-*.whl"):
        wheel.unlink(missing_ok=True)


@dataclass(frozen=True)
class WheelBundle:
    tar: Path
    digest: str  # of pgrig's sources
    pgrig_wheel: str  # file names inside the tar's wheels/
    pip_wheel: str


def _wheel_names(tar: Path) -> tuple[str, str]:
    with tarfile.open(tar) as t:
        names = [Path(n).name for n in t.getnames()]
    pgrig_wheel = next(n for n in names if n.startswith("pgrig-") and n.endswith(".whl"))
    pip_wheel = next(n for n in names if n.startswith("pip-") and n.endswith(".whl"))
    return pgrig_wheel, pip_wheel


def pgrig_bundle(python: str) -> WheelBundle:
    """The wheels a host with python `X.Y[.Z]` installs pgrig from."""
    with _locked():
        return _pgrig_bundle(python)


def _pgrig_bundle(python: str) -> WheelBundle:
    xy = ".".join(python.split(".")[:2])
    root = source_root()
    digest = _source_hash(root)
    dest = bundles_dir() / f"pgrig-{digest}-cp{xy.replace('.', '')}.tar"
    if dest.exists():
        return WheelBundle(dest, digest, *_wheel_names(dest))
    with tempfile.TemporaryDirectory(dir=bundles_dir(), prefix=".build-") as tmp:
        work = Path(tmp)
        src = work / "src"
        # A copy of the tree: building in place would leave build/ and egg-info behind.
        shutil.copytree(
            root / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (root / name).exists():
                shutil.copy2(root / name, src / name)
        wheels = work / "wheels"
        wheels.mkdir()
        _pip("wheel", "--no-deps", "-w", str(wheels), str(src))
        constraints = work / "constraints.txt"
        constraints.write_text(_constraints())
        pgrig_wheel = next(wheels.glob("pgrig-*.whl"))
        deps = bundles_dir() / f"deps-cp{xy.replace('.', '')}"
        deps.mkdir(exist_ok=True)
        _forget_own_wheels(deps)
        target = ["--only-binary=:all:", "--python-version", xy, "-d", str(deps)]
        wanted = ["-c", str(constraints), str(pgrig_wheel), "pip"]
        try:  # the dependencies downloaded for an earlier build serve again, offline
            _pip("download", "--no-index", "--find-links", str(deps), *target, *wanted)
        except PgrigError:
            _pip("download", *target, *wanted)
        _pip(
            "download",
            "--no-index",
            "--find-links",
            str(deps),
            "-d",
            str(wheels),
            "--only-binary=:all:",
            "--python-version",
            xy,
            *wanted,
        )
        _forget_own_wheels(deps)
        (wheels / "SOURCE_HASH").write_text(digest + "\n")
        _write_tar(dest, [(wheels, "wheels")])
    for old in bundles_dir().glob(f"pgrig-*-cp{xy.replace('.', '')}.tar"):
        if old != dest:
            old.unlink(missing_ok=True)  # bundles of earlier sources: nothing refers to them
    return WheelBundle(dest, digest, *_wheel_names(dest))
