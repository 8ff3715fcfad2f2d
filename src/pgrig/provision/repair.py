"""`pgrig env repair NAME`: an environment damaged by hand made usable again.

Two kinds of damage are repaired, and only these:
- env.json unreadable: rebuilt from the data directory, which holds all it recorded (the major
  in PG_VERSION, the binaries in postmaster.opts, port and every settings layer in pgrig.conf,
  each line tagged with its layer). A pooler's settings are not there: add it again.
- the data directory removed (or left without PG_VERSION): any server still running from the
  removed directory is stopped, and a new empty cluster is made with the environment's own
  settings and port. The data is gone: `pgrig db generate` again.
- a replica of a primary on another host (`--standby-of`) whose data directory is gone: cloned
  again from its primary (pg_basebackup over the network through its slot, the password in
  its passfile or, from the control machine, a new one on stdin), into a staging directory
  that replaces the old one only once complete (a failure or a signal leaves it as it was).
  From the control machine, `env repair NAME` drives it (provision/remote/repair.py): the primary's
  host re-creates the slot first (`env replication NAME renew rN`).

`diagnose` says what a repair would do without doing it (`env repair NAME --check`).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from pgrig import paths, safe_write
from pgrig.errors import NotFound, PgrigError
from pgrig.format import pgrig_command
from pgrig.provision import cluster, run_journal
from pgrig.provision.server import binaries, daemon, server_settings
from pgrig.provision.settings import config
from pgrig.provision.state.environment import DamagedEnvironment, Environment, check_name
from pgrig.provision.system import osuser

if TYPE_CHECKING:
    from pgrig.provision.server.standby import Source

_LINE = re.compile(r"^\s*([A-Za-z_][\w.$]*)\s*=.*#\s*(" + "|".join(config.LAYERS) + r")\b")
_PROFILE = re.compile(r"^# --- profile '([^']*)'")


@dataclass(frozen=True)
class Diagnosis:
    """What `repair` would do to an environment (`env repair NAME --check --json`)."""

    name: str
    env_json: str | None = None  # why env.json would be rebuilt
    rebuild: bool = False  # a primary's data directory is gone: a new, empty cluster
    reclone: bool = False  # a replica of another host's primary lost its data: cloned again
    replicas: tuple[str, ...] = ()  # this host's replicas of it that would be cloned again
    leftovers: tuple[str, ...] = ()  # what an interrupted repair left (removed)
    dead_run: tuple[str, ...] = ()  # what a killed run left in force (undone: run_journal)
    stopped: tuple[str, ...] = ()  # replicas that are not running (`env start` starts them)
    disk_limit: str | None = None  # what `env show` flags about the disk limit, and the remedy
    dead_study: str | None = None  # a killed study's or tune's settings left as the env's own

    @property
    def needed(self) -> bool:
        return bool(
            self.env_json or self.rebuild or self.reclone or self.replicas or self.leftovers
            or self.dead_run or self.disk_limit or self.dead_study
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        notes = [f"replica {n} is stopped: `{pgrig_command('env', 'start', self.name)}` starts it"
                 for n in self.stopped]  # fmt: skip
        return {"name": self.name, "needed": self.needed, "env_json": self.env_json,
                "rebuild": self.rebuild, "reclone": self.reclone,
                "replicas": list(self.replicas), "leftovers": list(self.leftovers),
                "dead_run": list(self.dead_run), "stopped": list(self.stopped),
                "disk_limit": self.disk_limit, "dead_study": self.dead_study,
                "notes": [*self.dead_run, *([self.dead_study] if self.dead_study else []),
                          *notes]}  # fmt: skip


def diagnose(name: str) -> Diagnosis:
    """What `repair(name)` would do; nothing is changed."""
    from pgrig.provision.server import replicas

    check_name(name)
    if not (paths.envs_dir() / name).is_dir():
        raise NotFound(f"environment {name!r} does not exist (see `pgrig env list`)")
    env_json = None
    try:
        env = Environment.load(name)
    except DamagedEnvironment as e:
        env_json = e.reason or "unreadable"
        env = from_datadir(name)
    gone = env.managed and not (env.datadir / "PG_VERSION").is_file()
    rebuild = gone and not env.standby_of
    again = [
        str(rep["name"])
        for rep in env.replicas
        if rebuild or not (replicas.member(env, rep).datadir / "PG_VERSION").is_file()
    ]
    remedy = _disk_limit_remedy(env) if env_json is None and not gone else None
    return Diagnosis(
        name, env_json, rebuild, bool(gone and env.standby_of), tuple(again),
        tuple(p.name for p in _leftovers(env)), tuple(run_journal.pending(env)),
        tuple(_stopped_replicas(env, again)),
        remedy[0] if remedy is not None else None,
        _dead_study(env) if not gone else None,
    )  # fmt: skip


def _dead_study(env: Environment) -> str | None:
    """What `env show` warns of a dead study's borrowed layer, as a repair would put it right
    (None: not borrowed, or borrowed by a study still running: its own to put back)."""
    from pgrig.provision import study_layer

    if not env.managed:
        return None
    borrowed = study_layer.borrowed(env.name, env.dir)
    if borrowed is None or borrowed["alive"]:
        return None
    return f"{borrowed['text']}: would put its own settings back"


def _disk_limit_remedy(env: Environment) -> tuple[str, bool] | None:
    """What `env show` flags about the disk limit (env_status.disk_limit_fault, the one
    check), what a repair does about it and whether it can; None: nothing to repair."""
    from pgrig.provision import env_status
    from pgrig.provision.server import disk_throttle

    if not env.managed or env.standby_of:
        return None
    fault = env_status.disk_limit_fault(env)
    if fault is None:
        return None
    if env.disk_limit and disk_throttle.limit_of_or_none(env) is None:
        held = disk_throttle.held(env)
        if held is None:
            return (
                f"{fault}: the kernel holds no limit to rebuild it from, so a repair cannot "
                f"know it: `{pgrig_command('env', 'set', env.name, rest='--disk-limit LIMITS')}` "
                f"sets it again, `{pgrig_command('env', 'set', env.name, '--disk-limit', 'none')}` "
                "removes it",
                False,
            )
        return f"{fault}: rebuilt from what the kernel holds ({held.text()})", True
    return f"{fault}: put back in force", True


def _rebuild_disk_limit_record(env: Environment, remedy: str) -> None:
    """A damaged disk-limit record rebuilt from the kernel's files, first: every start refuses
    a damaged record (a killed run's settings put back by a restart would be refused)."""
    from pgrig.provision.server import disk_throttle

    if env.disk_limit and disk_throttle.limit_of_or_none(env) is None:
        held = disk_throttle.held(env)
        if held is None:  # refused before anything else is repaired: nothing changed
            raise PgrigError(f"{env.name}: {remedy}; nothing repaired")
        env.disk_limit = held.as_dict()
        env.save()


def _repair_disk_limit(env: Environment, remedy: str) -> str:
    """The disk limit put right as `_disk_limit_remedy` said: its record rebuilt first
    (_rebuild_disk_limit_record), then a limit not in force applied again (checked after)."""
    from pgrig.provision import env_status
    from pgrig.provision.server import disk_throttle, postmaster

    pid = postmaster.pid(env)
    if pid is not None:
        disk_throttle.apply(env, pid)
    still = env_status.disk_limit_fault(env)
    if still is not None:
        raise PgrigError(f"{env.name}: {remedy}, and then still: {still}")
    return remedy


def _stopped_replicas(env: Environment, recloned: list[str]) -> list[str]:
    """This host's replicas whose data is there but whose server is not running (a repair
    leaves them so and says it; `env start` starts them)."""
    from pgrig.provision.server import postmaster, replicas

    if not env.managed:
        return []
    return [
        str(rep["name"])
        for rep in env.replicas
        if str(rep["name"]) not in recloned and not postmaster.is_running(replicas.member(env, rep))
    ]


def repair(
    name: str,
    say: Callable[[str], None],
    *,
    source: Source | None = None,
    password: str | None = None,
    reclone: bool = False,
) -> list[str]:
    """Repair `name`; returns what was done (empty: nothing needed it). A replica of another
    host's primary: `source` (standby.Source) says where its primary is now (default: where
    it was), `password` a new replication password, `reclone` clones it again even when its
    data directory is there (its primary was re-created: its data no longer matches)."""
    check_name(name)
    if not (paths.envs_dir() / name).is_dir():
        raise NotFound(f"environment {name!r} does not exist (see `pgrig env list`)")
    done: list[str] = []
    try:
        env = Environment.load(name)
    except DamagedEnvironment as e:
        try:
            env = from_datadir(name)
        except PgrigError as cannot:  # the diagnosis with the verdict
            raise PgrigError(f"{cannot} ({e.reason or e})") from None
        if source is not None:
            env.standby_of = source.as_dict()
        from pgrig.provision.server import disk_throttle

        held = disk_throttle.held(env)  # the kernel may still hold the limit the record lost
        if held is not None:
            env.disk_limit = held.as_dict()
        env.save()
        from pgrig.provision.pooler import layout

        # its pooler's files say there was one (env.json held its settings, lost with it)
        had_pooler = any(layout.pooler_dir(env).glob("pgbouncer-*.ini"))
        pooler = "; its pooler must be added again (`pgrig env pooler add`)" if had_pooler else ""
        done.append(
            f"env.json rebuilt from the data directory ({e.reason or 'unreadable'}{pooler})"
            + (f"; its disk limit from what the kernel holds: {held.text()}" if held else "")
        )
    rebuilt = False
    gone = env.managed and not (env.datadir / "PG_VERSION").is_file()
    # what `env show` flags of the disk limit; one a repair cannot put right is refused here,
    # before anything else is changed
    limit_remedy, can = (_disk_limit_remedy(env) if not done and not gone else None) or ("", True)
    if not can:
        raise PgrigError(f"{name}: {limit_remedy}; nothing repaired")
    if limit_remedy:
        _rebuild_disk_limit_record(env, limit_remedy)
    if env.standby_of and env.managed:
        for left in _leftovers(env):
            _discard(left)
            done.append(f"removed {left.name}, left by an interrupted repair")
        if gone or reclone:  # an empty new cluster would be a primary of its own: cloned again
            done += _reclone_standby(env, source, password, say)
        return done
    if env.managed and not (env.datadir / "PG_VERSION").is_file():
        rebuilt = True
        stopped = stop_orphans(env.datadir)
        shutil.rmtree(env.datadir, ignore_errors=True)
        server_settings.drop_run_layer(env)
        (env.dir / "datasets.json").unlink(missing_ok=True)
        cluster.rebuild(env, say)
        done.append(
            ("a server still running from the removed directory was stopped; " if stopped else "")
            + f"data directory re-created empty: "
            f"`{pgrig_command('db', 'generate', name, rest='...')}` to load data"
        )
    done += _repair_replicas(env, say, rebuilt)
    if not rebuilt:  # a killed run's settings and CPU pinning (a rebuilt cluster has neither)
        done += run_journal.recover(env)
        if _dead_study(env) is not None:  # what env show warns of, as every command does
            from pgrig.provision import study_layer

            done += [line for line in [study_layer.put_back(name)] if line]
    if limit_remedy:
        done.append(_repair_disk_limit(env, limit_remedy))
    return done


def stopped_notes(name: str) -> list[str]:
    """What a repair leaves as it is and says: replicas that are stopped."""
    try:
        env = Environment.load(name)
    except PgrigError:
        return []
    return [
        f"replica {n} is stopped (not repaired: `{pgrig_command('env', 'start', name)}` starts it)"
        for n in _stopped_replicas(env, [])
    ]


def _repair_replicas(env: Environment, say: Callable[[str], None], rebuilt: bool) -> list[str]:
    """A replica whose data directory is gone is cloned again from the primary (a replica of
    a re-created primary too: its old data no longer matches)."""
    from pgrig.provision.server import replicas

    done = []
    for rep in env.replicas:
        m = replicas.member(env, rep)
        if (m.datadir / "PG_VERSION").is_file() and not rebuilt:
            continue
        stop_orphans(m.datadir)
        replicas.kill(m)
        cluster.ensure_running(env)
        say(f"replica {rep['name']}: cloning again from the primary")
        replicas.clone(env, rep)
        done.append(f"replica {rep['name']} cloned again from the primary")
    return done


STAGING = "data.reclone"  # a replica's new clone, until it is complete
SET_ASIDE = "data.old"  # its old data directory, for the instant of the swap
SLOT_BUSY_WAIT_S = 15.0  # the old replica's walsender may hold the slot a moment longer


def _leftovers(env: Environment) -> list[Path]:
    return [p for p in (env.dir / STAGING, env.dir / SET_ASIDE) if p.exists()]


def _discard(path: Path) -> None:
    """A partial clone or an old data directory: its writers stopped, then removed."""
    from pgrig.provision.server import backups

    stop_orphans(path)
    backups.kill_writers(path)  # pg_basebackup -X stream's WAL child outlives its parent
    shutil.rmtree(path, ignore_errors=True)


def _reclone_standby(
    env: Environment,
    source: Source | None,
    password: str | None,
    say: Callable[[str], None],
) -> list[str]:
    """Clone the primary again into a replica of another host's primary: into STAGING, which
    replaces the data directory only once complete. A failure, Ctrl-C or SIGTERM on the way
    leaves the replica as it was (its old data directory, if any, untouched) and no partial
    clone (its old server, useless now, stays stopped); an interrupted swap (kill -9) is
    finished by the next repair."""
    from pgrig.provision.server import postmaster, replicas, standby

    src = source or standby.Source(**(env.standby_of or {}))
    if password:
        standby.write_passfile(env, src, password)
    elif not Path(standby.passfile(env)).is_file():
        raise PgrigError(
            f"{env.name}: its replication password is gone ({standby.passfile(env)}): repair "
            "its primary's environment from the control machine (`pgrig env repair NAME` "
            "there sends a new one)"
        )
    # the old server first (one still running from a removed directory too): its walreceiver
    # would take the slot back from the primary, and its data is of no use any more
    had_data = (env.datadir / "PG_VERSION").is_file()
    stopped = stop_orphans(env.datadir)
    replicas.kill(env)
    staging = env.dir / STAGING
    staging.mkdir()
    osuser.give_to_server(staging, 0o700)
    primary = standby.conninfo(env, src)
    say(f"pg_basebackup from {src.host}:{src.port} (slot {src.slot})")
    try:
        deadline = time.monotonic() + SLOT_BUSY_WAIT_S
        while (failed := standby.base_backup(env, staging, primary, src.slot,
                                             create_slot=False)) is not None:  # fmt: skip
            if "is active for PID" not in failed or time.monotonic() > deadline:
                raise PgrigError(f"pg_basebackup from {src.host}:{src.port} failed: {failed}")
            _discard(staging)  # the old replica's walsender still holds the slot: again
            staging.mkdir()
            osuser.give_to_server(staging, 0o700)
            time.sleep(1)
        standby.plain_conninfo(staging, primary, src.slot)
        # said before the swap: a control machine gone (kill -9) makes this write fail, which
        # must leave a discarded staging directory, not a clone in place never started
        say("cloned: swapping it in and starting the replica")
    except BaseException:
        _discard(staging)
        raise
    # the swap: the old directory set aside, the new clone in its place
    aside = env.dir / SET_ASIDE
    if env.datadir.exists():
        safe_write.set_aside(env.datadir, aside)
    safe_write.publish_dir(staging, env.datadir)
    shutil.rmtree(aside, ignore_errors=True)
    env.standby_of = src.as_dict()
    server_settings.clear_run_layer(env)
    env.save()
    postmaster.start(env)
    was = ""
    if stopped and had_data:
        was = "its old server was stopped; "
    elif stopped:
        was = "a server still running from the removed directory was stopped; "
    return [was + f"cloned again from its primary {src.host}:{src.port} (slot {src.slot})"]


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
            f"remove it with `{pgrig_command('env', 'destroy', name, '--yes')}`"
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
    env.replicas = _replicas_of(env)
    return env


def _replicas_of(env: Environment) -> list[dict[str, object]]:
    """Replicas found in <env>/replicas/rN (their port from their pgrig.conf); the sync mode
    is not recorded there: it comes back as "off" (async)."""
    found: list[dict[str, object]] = []
    root = env.dir / "replicas"
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            port = int(config.parse_conf((d / "data" / config.CONF_NAME).read_text())["port"])
            found.append({"name": d.name, "port": port, "slot": f"pgrig_{d.name}"})
    return found


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
