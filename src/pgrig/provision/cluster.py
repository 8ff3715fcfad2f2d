"""Environments: create, destroy, start/stop (settings: env_settings.py; external servers:
external.py; show and list: env_status.py).

Creation validates everything it can before touching the disk (name, version, port, every
setting through the real parser), then runs initdb as the server user, writes pgrig.conf,
starts the server and creates the default database. Any failure removes the whole new
environment directory: there is never a half-made environment.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pgrig import paths
from pgrig.errors import NotFound, PgrigError
from pgrig.format import pgrig_command
from pgrig.provision import pooler
from pgrig.provision.server import (
    backups,
    binaries,
    disk_throttle,
    postmaster,
    remote_access,
    replicas,
    server_settings,
    standby,
)
from pgrig.provision.server.ports import free_port, port_problem
from pgrig.provision.settings import catalog, config, validator
from pgrig.provision.state import unfinished
from pgrig.provision.state.environment import (
    DEFAULT_DATABASE,
    DamagedEnvironment,
    Environment,
    check_name,
    check_new_name,
    incomplete_message,
    require_managed,
)
from pgrig.provision.system import osuser
from pgrig.request import disk_limit as disk_limits

if TYPE_CHECKING:
    from pgrig.request.environment import EnvironmentRequest

Progress = Callable[[str], None]
# A create's CREATE DATABASE under a disk limit: at the floor (request/disk_limit.py) it
# waited ~20 s more than unlimited; past this it is refused, not waited for silently.
LIMITED_CREATE_DATABASE_S = 180
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes including ".s.PGSQL.NNNNN" and NUL


# --- lookups -----------------------------------------------------------------------------------


def get_environment(name: str) -> Environment:
    """The environment called `name` (NotFound with a hint when there is none)."""
    return Environment.load(name)


def running_environment(name: str) -> Environment:
    """The environment called `name`, its server started if it was stopped."""
    env = get_environment(name)
    ensure_running(env)
    return env


def ensure_running(env: Environment) -> bool:
    """Start a stopped managed environment (True if it had to be started)."""
    if not env.managed:
        return False
    if postmaster.is_running(env):
        return False
    server_settings.clear_run_layer(env)  # left by an interrupted run
    return postmaster.start(env)


# --- profiles ----------------------------------------------------------------------------------


def resolve_profile(
    name: str, major: int, bindir: str | Path | None = None
) -> tuple[dict[str, str], list[str]]:
    """Settings and notes of a profile for this host (its RAM and CPUs).

    With `bindir`, PGTune's io_method=io_uring is kept only if that build has liburing.
    """
    from pgrig.provision.settings import profiles

    io_uring = bindir is not None and profiles.io_uring_supported(bindir, major)
    settings, notes = profiles.resolve_profile(name, major, io_uring=io_uring)
    return dict(settings), list(notes)


# --- create / destroy --------------------------------------------------------------------------


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _traversable(path: Path) -> None:
    """pgrig's own directories must let the server user reach the data directories."""
    home = paths.home()
    for d in [path, *path.parents]:
        if d == home.parent:
            break
        try:
            st = d.stat()
            if st.st_uid == os.geteuid() and (st.st_mode & 0o005) != 0o005:
                d.chmod(st.st_mode | 0o755)
        except OSError:
            pass


def check_settings(
    pg: str | int,
    *,
    profile: str = "default",
    settings: dict[str, str] | None = None,
    insights: bool = True,
) -> str:
    """What create_environment checks of an environment's settings (the profile resolved,
    every layer's names and the server parser's verdict on the values) without making
    anything: for a caller that must refuse before it makes a series or a run. Returns the
    exact version checked."""
    bindir, version = binaries.find_bindir(pg)
    major = binaries.major_of(version)
    env_settings = validator.normalize(settings or {})
    validator.check_reserved(env_settings)
    prof_settings, _notes = resolve_profile(profile, major, bindir)
    env = Environment(
        name="settings-check", kind="managed", major=major, version=version, bindir=str(bindir),
        port=5432, os_user=osuser.server_user().name, profile=profile,
        profile_settings=validator.normalize(prof_settings), settings=env_settings,
        insights=insights,
    )  # fmt: skip
    _validate_layers(env, bindir, major, catalog.load_catalog(bindir, version))
    return version


def _validate_layers(env: Environment, bindir: Path, major: int, cat: catalog.Catalog) -> None:
    """The user's layers' names, then the effective settings of every layer by the real
    parser of the environment's server (an error names the layer that set the value)."""
    ls = config.layers(env, run={})
    validator.check_names({**env.profile_settings, **env.settings}, major, cat)
    validator.validate(bindir, major, cat, ls.effective(), ls.origins())


def create_environment(
    request: EnvironmentRequest,
    *,
    progress: Progress | None = None,
    password_verifier: str | None = None,
    replication_password: str | None = None,
) -> Environment:
    """Create, start and return the managed environment `request` asks for (validated first,
    all or nothing): without its insights layer when request.insights is false
    (provision/insights_layer.py); request.replicas streaming replicas with request.sync
    replication (provision/replicas.py); request.listen: also listen on that address, where
    clients authenticate with scram-sha-256 as the superuser whose password is set from
    `password_verifier` (a SCRAM verifier: the password itself never reaches this machine's
    files, logs or argv); request.standby_of: a replica of a primary on another host instead
    of a new cluster, cloned with `replication_password` (provision/standby.py);
    request.disk_limit: the server's block I/O caps, in force from its first start
    (provision/server/disk_throttle.py). The pooler (request.pooler) is the caller's to add."""
    name, pg, profile, port = request.name, request.pg, request.profile, request.port
    replica_count, sync, listen = request.replicas, request.sync, request.listen
    disk_limit = request.disk_limit
    standby_of = (
        standby.parse(request.standby_of, request.slot, request.application_name)
        if request.standby_of is not None
        else None
    )
    say = progress or (lambda _msg: None)
    t0 = time.monotonic()
    check_new_name(name)
    if (paths.envs_dir() / name / "env.json").exists():
        raise PgrigError(
            f"environment {name!r} already exists (see `{pgrig_command('env', 'show', name)}`)"
        )
    if (paths.envs_dir() / name).exists():
        raise PgrigError(incomplete_message(name))
    bindir, version = binaries.find_bindir(pg)
    major = binaries.major_of(version)
    cat = catalog.load_catalog(bindir, version)
    env_settings = validator.normalize(request.settings)
    validator.check_reserved(env_settings)
    _check_access(listen, password_verifier, standby_of, replica_count)
    prof_settings, notes = resolve_profile(profile, major, bindir)
    prof_settings = validator.normalize(prof_settings)
    if port is not None:
        problem = port_problem(port)
        if problem:
            raise PgrigError(problem)
    env = Environment(
        name=name,
        kind="managed",
        major=major,
        version=version,
        bindir=str(bindir),
        port=port or free_port(),
        os_user=osuser.server_user().name,
        profile=profile,
        profile_settings=prof_settings,
        settings=env_settings,
        created_at=now_text(),
        insights=request.insights,
        listen=listen,
        standby_of=standby_of.as_dict() if standby_of is not None else None,
        disk_limit=disk_limit.as_dict() if disk_limit is not None else None,
    )
    _check_disk_limit(env)
    if (
        len(str(env.socket_dir / "replicas" / "r8" / "run" / f".s.PGSQL.{env.port}"))
        > (SOCKET_PATH_MAX)
        and replica_count
    ):
        raise PgrigError(
            f"socket path of a replica under {env.dir} is too long for a Unix socket: use a "
            "shorter environment name or PGRIG_HOME"
        )
    if len(str(env.socket_dir / f".s.PGSQL.{env.port}")) > SOCKET_PATH_MAX:
        raise PgrigError(
            f"socket path {env.socket_dir} is too long for a Unix socket: use a shorter "
            "environment name or PGRIG_HOME"
        )
    _validate_layers(env, bindir, major, cat)
    for note in notes:
        say(f"profile {profile}: {note}")
    say(f"settings valid for PostgreSQL {version}")

    paths.envs_dir().mkdir(parents=True, exist_ok=True)
    try:
        unfinished.make_dir(env.dir)  # marked: a killed create is removed by the next command
    except FileExistsError:
        raise PgrigError(f"environment {name!r} already exists") from None
    try:
        if password_verifier is not None:
            remote_access.save_verifier(env, password_verifier)
        if standby_of is not None:
            standby.build(env, standby_of, replication_password or "", say)
        else:
            _build(env, auto_port=port is None, say=say)
        catalog.enrich(bindir, cat, env.conninfo("postgres"))
        if replica_count:
            replicas.add(env, replica_count, say)
            if sync != "off":
                replicas.set_sync(env, sync)
                say(f"synchronous replication: {sync}")
    except postmaster.StartError as e:
        _remove(env, say)
        raise PgrigError(
            f"server did not start with these settings: {e.reason} (environment not created)"
        ) from None
    except BaseException:
        _remove(env, say)
        raise
    unfinished.clear(env.dir)
    say(f"created {name} (PostgreSQL {version}, port {env.port}) in {time.monotonic() - t0:.1f} s")
    return env


def _check_disk_limit(env: Environment) -> None:
    """A throttle and a disk for it, found before anything is made."""
    if env.disk_limit:
        disk_throttle.check(env)


def _check_access(
    listen: str | None,
    verifier: str | None,
    standby_of: standby.Source | None,
    replica_count: int,
) -> None:
    """--listen needs a SCRAM verifier, except on a replica (its roles are the primary's)."""
    if standby_of is not None:
        if replica_count:
            raise PgrigError("a replica (--standby-of) has no replicas of its own")
        if listen is not None:
            remote_access.check_address(listen)
    elif listen is not None:
        remote_access.check_listen(listen, verifier)


def _build(env: Environment, auto_port: bool, say: Progress) -> None:
    env.dir.chmod(0o755)
    _traversable(env.dir)
    env.datadir.mkdir()
    osuser.give_to_server(env.datadir, 0o700)
    say("initdb")
    args = [
        env.binary("initdb"),
        "-D", str(env.datadir),
        "-U", env.user,
        "-A", "trust",
        "-E", "UTF8",
        "--locale=C",
        "--no-sync",
    ]  # fmt: skip
    if (env.major or 0) >= 14:
        args.append("--no-instructions")
    proc = osuser.run_as_server(args, timeout=120)
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        raise PgrigError(f"initdb failed: {lines[-1] if lines else proc.returncode}")
    config.ensure_include(env.datadir)
    remote_access.write_hba(env)
    config.write_conf(env, run={})
    env.save()  # before starting: a concurrent create then sees this port as taken
    say("starting server")
    for attempt in range(3):
        try:
            postmaster.start(env)
            break
        except PgrigError as e:
            # another process may have taken the automatically chosen port meanwhile (a
            # client's ephemeral port too): the log's FATAL line is "could not create any
            # TCP/IP sockets", after a LOG line "... Address already in use"
            lost = ("already in use", "could not create any tcp/ip sockets")
            if not auto_port or attempt == 2 or not any(w in str(e).lower() for w in lost):
                raise
            env.port = free_port(exclude=[env.port or 0])
            config.write_conf(env, run={})
            env.save()
    if env.disk_limit:  # the one long write under the limit: said, and bounded
        say(
            f"creating database {DEFAULT_DATABASE} under the disk limit "
            f"{disk_limits.describe(disk_throttle.limit_of(env))} (about 20 MB written; "
            f"at most {LIMITED_CREATE_DATABASE_S} s)"
        )
    _create_database(env, DEFAULT_DATABASE)
    remote_access.set_password(env)
    env.save()


def rebuild(env: Environment, say: Progress) -> None:
    """A new, empty cluster for an existing environment whose data directory is gone (env
    repair): same version, port and settings layers."""
    _build(env, auto_port=False, say=say)


def _create_database(env: Environment, dbname: str) -> None:
    """CREATE DATABASE; under a disk limit bounded by LIMITED_CREATE_DATABASE_S (a limit
    below the floor request/disk_limit.py refuses once left it waiting for minutes). A
    statement_timeout alone does not bound it: the backend waits inside one fdatasync of the
    throttled WAL (uninterruptible, seen for 5 minutes), so at the bound the limit is lifted,
    which lets that I/O out and the timeout cancel the statement."""
    import threading

    import psycopg
    from psycopg import sql

    bound = LIMITED_CREATE_DATABASE_S
    lifted = threading.Event()

    def lift() -> None:
        lifted.set()
        with contextlib.suppress(PgrigError):
            disk_throttle.lift(env)

    timer = threading.Timer(bound, lift)
    timer.daemon = True
    with psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn:
        # a synchronous primary re-created by env repair: its standbys are not back yet
        conn.execute("SET synchronous_commit = local")
        if env.disk_limit:
            conn.execute(f"SET statement_timeout = '{bound}s'")
            timer.start()
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
        except psycopg.errors.QueryCanceled:
            lifted.set()
        finally:
            timer.cancel()
    if lifted.is_set():
        raise PgrigError(
            f"CREATE DATABASE {dbname} did not finish in {bound} s under the disk limit "
            f"{disk_limits.describe(disk_throttle.limit_of(env))} (lifted then to end it): "
            "this disk is slower than the floor assumes; give a higher limit"
        )


def _remove(env: Environment, say: Progress | None = None) -> None:
    """Stop (immediately) and delete everything of an environment."""
    _stop_pooler(env)
    if env.managed:
        replicas.kill_all(env)  # before the primary: none must outlive it
    if env.managed and postmaster.pid(env) is not None:
        try:
            postmaster.stop(env, mode="immediate", timeout=30)
        except PgrigError:
            server = postmaster.daemon(env)
            if server is not None:
                server.signal(signal.SIGKILL)
                server.wait_gone(5.0)
    if env.managed:
        with contextlib.suppress(PgrigError, OSError):
            backups.recover_interrupted(env)  # a killed pgrig's partial backup, maybe outside
        with contextlib.suppress(PgrigError, OSError):
            backups.remove_all(env)  # backup roots pgrig made outside the environment
    left = postmaster.release_crashed_memory(env)  # a server killed before, or just now
    if left is not None and say is not None:
        say(f"warning: {left}")
    try:
        disk_throttle.remove(env)  # its disk-limit cgroup, once its server is gone
    except PgrigError as e:
        if say is not None:
            say(f"warning: {e}")
    shutil.rmtree(env.dir, ignore_errors=True)


def destroy_environment(name: str, say: Progress | None = None) -> Environment | None:
    """Stop and delete an environment (external ones only forget the DSN)."""
    check_name(name)
    d = paths.envs_dir() / name
    if not (d / "env.json").exists():
        if d.is_dir():  # leftovers of an interrupted create: a server it started too
            _remove(Environment(name=name), say)
            return None
        raise NotFound(f"environment {name!r} does not exist (see `pgrig env list`)")
    try:
        env = Environment.load(name)
    except DamagedEnvironment:  # env.json unreadable: its server is found by its pid file
        _remove(Environment(name=name), say)
        return None
    _remove(env, say)
    return env


def remove_abandoned_creates(say: Progress | None = None) -> list[str]:
    """Destroy every environment whose `env create` was killed before it finished
    (provision/state/unfinished.py: its mark names a process that is gone); their names."""
    removed = []
    for name in unfinished.abandoned():
        try:
            destroy_environment(name)
        except NotFound:
            continue  # another command removed it meanwhile
        except (PgrigError, OSError) as e:
            if say is not None:
                say(f"environment {name} was left by a killed `env create`; removing it: {e}")
            continue
        removed.append(name)
        if say is not None:
            say(f"removed environment {name}: its `env create` was killed before it finished")
    return removed


# --- start / stop ------------------------------------------------------------------------------


def start_environment(name: str) -> tuple[Environment, bool, list[str]]:
    """Start what of `name` is down: (env, whether the primary was started, the replicas
    started), so the caller says what it started, not "already running" over started
    replicas."""
    env = managed(name, "start it")
    if postmaster.is_running(env):
        started_replicas = replicas.start_all(env)
        _start_pooler(env)
        return env, False, started_replicas
    server_settings.clear_run_layer(env)  # left by an interrupted run
    started = postmaster.start(env)
    started_replicas = replicas.start_all(env)
    _start_pooler(env)
    return env, started, started_replicas


def _start_pooler(env: Environment) -> None:
    """`env start` brings the environment's pooler up with its server (provision/pooler/)."""
    if env.pooler:
        pooler.start(env)


def stop_environment(name: str) -> tuple[Environment, bool]:
    env = managed(name, "stop it")
    _stop_pooler(env)
    replicas.stop_all(env)
    return env, postmaster.stop(env)


def _stop_pooler(env: Environment) -> None:
    """A pooler never outlives its server (provision/pooler/)."""
    if env.pooler:
        with contextlib.suppress(PgrigError, OSError):
            pooler.stop(env)


def restart_environment(name: str) -> Environment:
    env = managed(name, "restart it")
    replicas.stop_all(env)
    postmaster.stop(env)
    server_settings.clear_run_layer(env)
    postmaster.start(env)
    replicas.start_all(env)
    return env


def managed(name: str, what: str) -> Environment:
    """The managed environment `name` (another: pgrig cannot `what`, require_managed)."""
    env = get_environment(name)
    require_managed(env, what)
    return env
