"""The namespace rig of one integration module (scripts/test-hosts.sh: hosts that are network
namespaces on a bridge, each with its own sshd and a private mount namespace).

- `up(net, prefix, rig_dir, count)`: the rig up with hosts h1..hN for a module (skipping
  where no rig can be made), and always down after; a rig that cannot be put down fails.
- `script_env(net, prefix, rig_dir)`: the process environment that aims test-hosts.sh, or the
  commands of docs/hosts.md, at that rig.
- `home(prefix, pg_dir, **more)`: a scratch pgrig home whose commands reach the rig's hosts
  (the process environment to run `pgrig` with); every environment in it destroyed after.
- `processes(netns)`: (pid, name) of the programs running in a host's network namespace.

Each module gets its own net, prefix and directory, so two rigs never meet; the directory is
not under /tmp (the hosts get a private /tmp, which would hide the rig's files). Run the rig
modules under `flock /work/rig.lock` (their nets are fixed). Imported by name
(`import namespace_hosts`), like servers.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test-hosts.sh"


def script_env(
    net: str, prefix: str, rig_dir: Path, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """PGRIG_RIG_NET, _PREFIX and _DIR (and `extra`: PGRIG_RIG_TMPFS, fault hosts...)."""
    return {
        "PGRIG_RIG_NET": net,
        "PGRIG_RIG_PREFIX": prefix,
        "PGRIG_RIG_DIR": str(rig_dir),
        **(extra or {}),
    }


def cannot_make(prefix: str) -> str | None:
    """Why no rig can be made here (None: it can)."""
    if os.geteuid() != 0:
        return "namespaced hosts need root"
    if not Path("/usr/sbin/sshd").exists():
        return "no sshd (openssh-server): scripts/setup.sh installs it"
    if not shutil.which("ip") or not shutil.which("unshare"):
        return "no ip or unshare"
    probe = subprocess.run(
        ["ip", "netns", "add", f"{prefix}-probe"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        return f"network namespaces cannot be made here: {probe.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", f"{prefix}-probe"], capture_output=True)
    return None


def _script(env: Mapping[str, str], *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextmanager
def up(
    net: str,
    prefix: str,
    rig_dir: Path,
    count: int,
    extra: Mapping[str, str] | None = None,
    timeout: float = 180,
) -> Iterator[Path]:
    """Hosts h1..h`count` at net.11.. (`extra`: more PGRIG_RIG_* variables), the rig's
    directory yielded; the rig is put down on the way out whatever happened inside. Skips the
    test where no rig can be made."""
    why = cannot_make(prefix)
    if why:
        pytest.skip(why)
    env = script_env(net, prefix, rig_dir, extra)
    made = _script(env, "up", str(count), timeout=timeout)
    try:
        assert made.returncode == 0, made.stderr
        yield rig_dir
    finally:
        down = _script(env, "down", timeout=timeout)
    assert down.returncode == 0, down.stderr  # reached only when nothing else failed first


def processes(netns: str) -> list[tuple[int, str]]:
    """(pid, program name) of what runs in network namespace `netns` (PREFIX-hN) now."""
    out = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout
    found = []
    for pid in out.split():
        try:
            found.append((int(pid), Path(f"/proc/{pid}/comm").read_text().strip()))
        except OSError:
            continue  # ended meanwhile
    return found


@contextmanager
def home(prefix: str, pg_dir: str, **more: str) -> Iterator[dict[str, str]]:
    """A pgrig home under /tmp and the process environment to run `pgrig` in it: no PG*
    variable of this shell, PGRIG_HOME, PGRIG_PG_DIR (the build cache), the bundle cache the rig
    modules share, and `more` (PGRIG_SSH_CONNECT_TIMEOUT...). On the way out every environment
    in it is destroyed (--force: on its hosts too) and the home removed."""
    made = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    made.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(
        PGRIG_HOME=str(made),
        PGRIG_PG_DIR=pg_dir,
        PGRIG_BUNDLES_DIR=os.environ.get("PGRIG_BUNDLES_DIR", "/var/tmp/pgrig-test-bundles"),
        **more,
    )
    try:
        yield env
    finally:
        for env_json in sorted(made.glob("envs/*/env.json")):
            subprocess.run(
                ["pgrig", "env", "destroy", env_json.parent.name, "--yes", "--force"],
                env=env,
                capture_output=True,
                timeout=120,
            )
        shutil.rmtree(made, ignore_errors=True)
