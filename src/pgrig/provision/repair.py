"""`pgrig env repair NAME`: an environment damaged by hand made usable again.

Two kinds of damage are repaired, and only these:
- env.json unreadable: rebuilt from the data directory, which holds all it recorded (the major
  in PG_VERSION, the binaries in postmaster.opts, port and every settings layer in pgrig.conf,
  each line tagged with its layer). A pooler's settings are not there: add it again.
- the data directory removed (or left without PG_VERSION): any server still running from the
  removed directory is stopped, and a new empty cluster is made with the environment's own
  settings and port. The data is gone: `pgrig db generate` again.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import psutil

from pgrig import paths
from pgrig.errors import NotFound, PgrigError
from pgrig.provision import binaries, cluster, config, daemon, osuser
from pgrig.provision.environment import DamagedEnvironment, Environment, check_name

_LINE = re.compile(r"^\s*([A-Za-z_][\w.$]*)\s*=.*#\s*(base|insights|profile|environment|run)\b")
_PROFILE = re.compile(r"^# --- profile '([^']*)'")


def repair(name: str, say: Callable[[str], None]) -> list[str]:
    """Repair `name`; returns what was done (empty: nothing needed it)."""
    check_name(name)
    if not (paths.envs_dir() / name).is_dir():
        raise NotFound(f"environment {name!r} does not exist (see `pgrig env list`)")
    done: list[str] = []
    try:
        env = Environment.load(name)
    except DamagedEnvironment:
        env = from_datadir(name)
        env.save()
        done.append("env.json rebuilt from the data directory (a pooler must be added again)")
    if env.managed and not (env.datadir / "PG_VERSION").is_file():
        stopped = stop_orphans(env.datadir)
        shutil.rmtree(env.datadir, ignore_errors=True)
        (env.dir / config.RUN_LAYER_FILE).unlink(missing_ok=True)
        (env.dir / "datasets.json").unlink(missing_ok=True)
        cluster.rebuild(env, say)
        done.append(
            ("a server still running from the removed directory was stopped; " if stopped else "")
            + f"data directory re-created empty: `pgrig db generate {name} ...` to load data"
        )
    return done


def from_datadir(name: str) -> Environment:
    """The Environment a data directory describes (PgrigError when it cannot)."""
    env = Environment(name=name)
    conf = env.datadir / config.CONF_NAME
    try:
        major = int((env.datadir / "PG_VERSION").read_text().strip())
        text = conf.read_text()
    except (OSError, ValueError):
        raise PgrigError(
            f"environment {name!r} cannot be repaired: neither env.json nor {conf} can be read; "
            f"remove it with `pgrig env destroy {name} --yes`"
        ) from None
    values = config.parse_conf(text)
    by_layer: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m.group(1).lower() in values:
            by_layer.setdefault(m.group(2), {})[m.group(1).lower()] = values[m.group(1).lower()]
        if p := _PROFILE.match(line):
            env.profile = p.group(1)
    bindir, version = _binaries(env.datadir, major)
    env.major, env.version, env.bindir = major, version, str(bindir)
    env.port = int(by_layer.get("base", {}).get("port", "0")) or None
    env.os_user = osuser.server_user().name
    env.profile_settings = by_layer.get("profile", {})
    env.settings = by_layer.get("environment", {})
    if env.port is None:
        raise PgrigError(f"environment {name!r} cannot be repaired: no port in {conf}")
    return env


def _binaries(datadir: Path, major: int) -> tuple[Path, str]:
    """The binaries the server last ran with (postmaster.opts), else the installed major."""
    with contextlib.suppress(OSError, IndexError, NotFound):
        first = (datadir / "postmaster.opts").read_text().split()[0]
        bindir = Path(first.strip('"')).parent
        for inst in binaries.installed():
            if Path(inst.bindir) == bindir:
                return bindir, inst.version
    return binaries.find_bindir(major)


def stop_orphans(datadir: Path) -> int:
    """Stop servers whose working directory is `datadir` (removed under them); their count.

    The postmaster gets SIGQUIT (an immediate shutdown): it stops its backends and frees its
    shared memory on the way out. SIGKILL would leak that memory for good, since no later
    server can find it by a data directory that is gone. SIGKILL only for what lingers.
    """
    target = str(datadir)
    found = []
    for proc in psutil.process_iter(["name", "ppid"]):
        if proc.info["name"] not in daemon.POSTGRES:
            continue
        with contextlib.suppress(psutil.Error):
            cwd = proc.cwd()
            if cwd == target or cwd.startswith(target + " ") or cwd.startswith(target + "/"):
                found.append(proc)
    pids = {p.pid for p in found}
    for proc in found:
        if proc.info["ppid"] not in pids:  # a postmaster, not one of its backends
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGQUIT)
    _, lingering = psutil.wait_procs(found, timeout=10)
    for proc in lingering:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(lingering, timeout=10)  # their port is free before the new server starts
    return len(found)
