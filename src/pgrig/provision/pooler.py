"""A connection pooler (pgbouncer) in front of a managed environment.

Seed 003 put pgbouncer between pgbench and PostgreSQL by hand: a config file, an auth file built
from pg_shadow, a .pgpass, and LimitNOFILE raised after "accept() failed: Too many open files"
above 900 clients. Here it is one command, and every piece is kept inside the environment:

  <env>/pooler/pgbouncer-K.ini|.pid|.log, run-K/ (unix socket), userlist.txt (0600)
  <env>/pooler.pgpass (0600, the invoking user's: how pgbench and the sampler log in)

Authentication: scram-sha-256. `add` generates a password for a dedicated role (pgrig_pool,
reading and writing all data), sets it on the server as a SCRAM verifier computed here (the
password itself never reaches the server or its logs), and builds the auth file from
pg_authid.rolpassword, as seed 003 did from pg_shadow. A stats user (pgrig_stats, known to
pgbouncer only) reads SHOW STATS/POOLS. Passwords are never printed or stored in env.json;
clients get them through PGPASSFILE, never on a command line.

Processes run as the server's unprivileged OS user, listen on 127.0.0.1 only, with
RLIMIT_NOFILE raised for max_client_conn. Several processes share the port with so_reuseport
(pgbouncer is single-threaded: one core each), each with its own socket dir, pid and log file.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
import re
import resource
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from string import Template
from typing import Any

from pgrig.errors import PgrigError
from pgrig.provision import osuser, ports, postmaster
from pgrig.provision.daemon import PGBOUNCER, Daemon
from pgrig.provision.environment import Environment
from pgrig.request.vocabulary import CONNECTS, VIAS

KINDS = ("pgbouncer",)
MODES = ("session", "transaction", "statement")
POOL_ROLE = "pgrig_pool"
STATS_USER = "pgrig_stats"
DEFAULT_MODE = "transaction"
DEFAULT_POOL_SIZE = 20
DEFAULT_MAX_CLIENT_CONN = 2000
MAX_PROCESSES = 64
STATS_CONNECTIONS = 1  # the sampler's console connection to each process
# SCRAM iterations slow down guessing a weak password from a stolen verifier. The generated
# passwords are 192-bit random, so iterations add no safety, only client CPU at every login:
# with PostgreSQL's 4096, 1,000 pgbench clients took over 10 s to log in on a 2-core machine.
SCRAM_ITERATIONS = 64
SOCKET_PATH_MAX = 100
TEMPLATE = Path(__file__).parent / "pooler_templates" / "pgbouncer.ini"
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class PoolerConfig:
    """What env.json keeps about the pooler (no password: that is only in the two files)."""

    kind: str = "pgbouncer"
    mode: str = DEFAULT_MODE
    pool_size: int = DEFAULT_POOL_SIZE
    max_client_conn: int = DEFAULT_MAX_CLIENT_CONN
    processes: int = 1
    port: int = 0  # 0: not chosen yet
    user: str = POOL_ROLE
    stats_user: str = STATS_USER

    @property
    def nofile(self) -> int:
        """Descriptors per process: every client, every server connection, and a margin."""
        return max(4096, self.max_client_conn + 4 * self.pool_size + 256)

    @property
    def server_connections(self) -> int:
        """Server connections the pool may open for one database/user pair, all processes."""
        return self.pool_size * self.processes

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PoolerConfig:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)


def options(
    kind: str = "pgbouncer",
    mode: str = DEFAULT_MODE,
    pool_size: int = DEFAULT_POOL_SIZE,
    max_client_conn: int = DEFAULT_MAX_CLIENT_CONN,
    processes: int = 1,
    port: int | None = None,
) -> PoolerConfig:
    """Validated pooler options (one clear error per mistake, nothing touched)."""
    if kind not in KINDS:
        raise PgrigError(f"unknown pooler {kind!r} (supported: {', '.join(KINDS)})")
    if mode not in MODES:
        raise PgrigError(f"--mode must be one of {', '.join(MODES)} (got {mode!r})")
    if pool_size < 1:
        raise PgrigError(
            f"--pool-size must be >= 1 (got {pool_size}): a pool without server connections "
            "cannot run any query"
        )
    if max_client_conn < 2:
        raise PgrigError(
            f"--max-client-conn must be >= 2 (got {max_client_conn}): one connection is kept "
            "for statistics"
        )
    if not 1 <= processes <= MAX_PROCESSES:
        raise PgrigError(f"--processes must be between 1 and {MAX_PROCESSES} (got {processes})")
    if port is not None and not 1024 <= port <= 65535:
        raise PgrigError(f"--port {port} is outside 1024..65535")
    return PoolerConfig(kind, mode, pool_size, max_client_conn, processes, port or 0)


TABLE_KEYS = ("kind", "mode", "pool_size", "max_client_conn", "processes", "port")


def options_from_table(table: dict[str, Any]) -> PoolerConfig:
    """Options from a study file's `pooler = {mode = "transaction", pool_size = 100}`."""
    unknown = sorted(set(table) - set(TABLE_KEYS))
    if unknown:
        raise PgrigError(f"unknown key {unknown[0]!r} (known: {', '.join(TABLE_KEYS)})")
    for key in ("pool_size", "max_client_conn", "processes", "port"):
        v = table.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise PgrigError(f"{key}: expected an integer, got {v!r}")
    for key in ("kind", "mode"):
        if key in table and not isinstance(table[key], str):
            raise PgrigError(f"{key}: expected a string, got {table[key]!r}")
    try:
        return options(**table)
    except PgrigError as e:  # name the key, not the command-line flag
        text = str(e)
        for key in TABLE_KEYS:
            text = text.replace(f"--{key.replace('_', '-')}", key)
        raise PgrigError(text) from None


def config_of(env: Environment) -> PoolerConfig | None:
    return PoolerConfig.from_dict(env.pooler) if env.pooler else None


# --- locations ---------------------------------------------------------------------------------


def pooler_dir(env: Environment) -> Path:
    return env.dir / "pooler"


def passfile(env: Environment) -> Path:
    """The clients' password file (libpq format), readable by the invoking user only."""
    return env.dir / "pooler.pgpass"


def auth_file(env: Environment) -> Path:
    return pooler_dir(env) / "userlist.txt"


def ini_file(env: Environment, i: int) -> Path:
    return pooler_dir(env) / f"pgbouncer-{i}.ini"


def pid_file(env: Environment, i: int) -> Path:
    return pooler_dir(env) / f"pgbouncer-{i}.pid"


def log_file(env: Environment, i: int) -> Path:
    return pooler_dir(env) / f"pgbouncer-{i}.log"


def socket_dir(env: Environment, i: int) -> Path:
    return pooler_dir(env) / f"run-{i}"


# --- the binary --------------------------------------------------------------------------------


def binary() -> str:
    """Path of pgbouncer (Debian installs it in /usr/sbin, often not on a user's PATH)."""
    found = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/usr/bin")
    if not found:
        raise PgrigError(
            "pgbouncer is not installed: run scripts/setup.sh or `apt-get install -y pgbouncer`"
        )
    return found


def version(exe: str | None = None) -> str | None:
    """ "1.18.0" from `pgbouncer --version` (None if it cannot be asked)."""
    try:
        out = subprocess.run(
            [exe or binary(), "--version"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"PgBouncer\s+(\d+\.\d+(?:\.\d+)?)", out)
    return m.group(1) if m else None


# --- passwords ---------------------------------------------------------------------------------


def scram_verifier(
    password: str, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS
) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL would store for `password` (RFC 5802/7677).

    ASCII passwords only (the generated ones are), so SASLprep leaves them unchanged.
    """
    salt = salt if salt is not None else os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()

    def b64(b: bytes) -> str:
        return base64.b64encode(b).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def _new_password() -> str:
    return secrets.token_urlsafe(24)  # [A-Za-z0-9_-]: nothing to escape in pgpass or userlist


def _write_private(path: Path, text: str, *, owner_server: bool) -> None:
    """Write a 0600 file atomically; it is never readable by others, not even for a moment."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL, 0o600)
    try:
        os.write(fd, text.encode())
        if owner_server and osuser.is_root():
            u = osuser.server_user()
            os.fchown(fd, u.uid, u.gid)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _credentials(env: Environment, cfg: PoolerConfig) -> None:
    """(Re)create the pool role with a fresh password; write the auth file and the passfile."""
    import psycopg
    from psycopg import sql

    pool_pw, stats_pw = _new_password(), _new_password()
    role = sql.Identifier(cfg.user)
    verifier = sql.Literal(scram_verifier(pool_pw))
    try:
        with psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (cfg.user,))
            verb = "ALTER" if exists.fetchone() else "CREATE"
            conn.execute(
                sql.SQL("{} ROLE {} LOGIN PASSWORD {}").format(sql.SQL(verb), role, verifier)
            )
            if (env.major or 0) >= 14:
                conn.execute(
                    sql.SQL("GRANT pg_read_all_data, pg_write_all_data TO {}").format(role)
                )
            else:  # no predefined data roles before 14
                conn.execute(sql.SQL("ALTER ROLE {} SUPERUSER").format(role))
            row = conn.execute(
                "SELECT rolpassword FROM pg_authid WHERE rolname = %s", (cfg.user,)
            ).fetchone()
    except psycopg.Error as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PgrigError(f"cannot create the pooler role on {env.name!r}: {first}") from None
    _make_dir(env)
    if not row or not str(row[0]).startswith("SCRAM-SHA-256$"):
        raise PgrigError(f"the server of {env.name!r} did not store a SCRAM verifier for the role")
    lines = [
        f'"{cfg.user}" "{row[0]}"',  # from pg_authid, as seed 003 built it from pg_shadow
        f'"{cfg.stats_user}" "{scram_verifier(stats_pw)}"',
    ]
    _write_private(auth_file(env), "\n".join(lines) + "\n", owner_server=True)
    _write_private(
        passfile(env),
        f"*:*:pgbouncer:{cfg.stats_user}:{stats_pw}\n*:*:*:{cfg.user}:{pool_pw}\n",
        owner_server=False,
    )


def _drop_role(env: Environment, cfg: PoolerConfig) -> None:
    import psycopg
    from psycopg import sql

    role = sql.Identifier(cfg.user)
    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn,
    ):
        try:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(role))
        except psycopg.Error:  # it owns something: at least it can no longer log in
            conn.execute(sql.SQL("ALTER ROLE {} NOLOGIN PASSWORD NULL").format(role))


# --- configuration -----------------------------------------------------------------------------


def render_ini(env: Environment, cfg: PoolerConfig, i: int) -> str:
    """The ini of process i: its own socket dir, pid and log file; the shared port."""
    values = {
        "env_name": env.name,
        "index": i,
        "processes": cfg.processes,
        "server_host": str(env.socket_dir),  # unix socket to the server: no TCP overhead
        "server_port": env.port,
        "port": cfg.port,
        "so_reuseport": 1 if cfg.processes > 1 else 0,
        "socket_dir": socket_dir(env, i),
        "pidfile": pid_file(env, i),
        "logfile": log_file(env, i),
        "auth_file": auth_file(env),
        "stats_user": cfg.stats_user,
        "mode": cfg.mode,
        "pool_size": cfg.pool_size,
        "max_client_conn": cfg.max_client_conn,
    }
    return Template(TEMPLATE.read_text()).substitute(values)


def _make_dir(env: Environment) -> Path:
    d = pooler_dir(env)
    d.mkdir(exist_ok=True)
    osuser.give_to_server(d, 0o755)
    return d


def _write_config(env: Environment, cfg: PoolerConfig) -> None:
    d = _make_dir(env)
    for i in range(cfg.processes):
        s = socket_dir(env, i)
        s.mkdir(exist_ok=True)
        osuser.give_to_server(s, 0o755)
        f = ini_file(env, i)
        f.write_text(render_ini(env, cfg, i))
        osuser.give_to_server(f, 0o644)
    for stale in d.glob("pgbouncer-*.ini"):  # fewer processes than before
        idx = stale.stem.rsplit("-", 1)[-1]
        if idx.isdigit() and int(idx) >= cfg.processes:
            stale.unlink(missing_ok=True)


# --- processes ---------------------------------------------------------------------------------


def _daemon(env: Environment, i: int) -> Daemon | None:
    """Process i of the pooler if it runs (a stale pid file or a zombie gives None)."""
    return Daemon.from_file(pid_file(env, i), PGBOUNCER)


def pids(env: Environment) -> list[int]:
    """Pids of the pooler processes that are running (for process CPU tracking)."""
    cfg = config_of(env)
    if cfg is None:
        return []
    return [d.pid for i in range(cfg.processes) if (d := _daemon(env, i)) is not None]


def pids_callable(env: Environment) -> Callable[[], list[int]]:
    """For OsSampler.track_processes: re-read the pid files at every sample."""
    return lambda: pids(env)


def status(env: Environment) -> str:
    """none | running | stopped | partial (some processes down)."""
    cfg = config_of(env)
    if cfg is None:
        return "none"
    n = len(pids(env))
    return "running" if n == cfg.processes else ("stopped" if n == 0 else "partial")


def is_running(env: Environment) -> bool:
    return status(env) == "running"


def raise_nofile(needed: int) -> int:
    """Make this process's RLIMIT_NOFILE (inherited by the programs it starts) >= `needed`.

    Returns the soft limit in force. As root the hard limit is raised too; otherwise a hard
    limit below `needed` is a clear error.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed or soft == resource.RLIM_INFINITY:
        return soft
    if hard != resource.RLIM_INFINITY and hard < needed:
        if not osuser.is_root():
            raise PgrigError(
                f"{needed} open files are needed but the hard limit is {hard}: raise it "
                "(ulimit -Hn, LimitNOFILE=) or run pgrig as root"
            )
        hard = needed
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    except (ValueError, OSError) as e:
        raise PgrigError(f"cannot raise the open files limit to {needed}: {e}") from None
    return needed


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _log_problems(path: Path, since: int) -> str:
    try:
        with path.open("rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    bad = [ln.split(" ", 3)[-1] for ln in text.splitlines() if " FATAL " in ln or " ERROR " in ln]
    return " ".join(bad[-2:])


def _start_one(env: Environment, cfg: PoolerConfig, i: int, exe: str) -> None:
    """Start process i as a daemon owned by the server user; wait until it answers."""
    if _daemon(env, i) is not None:
        return
    pid_file(env, i).unlink(missing_ok=True)  # stale
    log = log_file(env, i)
    mark = _log_size(log)
    kwargs: dict[str, Any] = {}
    if osuser.is_root():
        u = osuser.server_user()
        kwargs = {"user": u.uid, "group": u.gid, "extra_groups": [], "umask": 0o027}
    # The child inherits this process's open-files limit (raised here: no preexec needed).
    raise_nofile(cfg.nofile)
    try:
        proc = subprocess.run(
            [exe, "-d", str(ini_file(env, i))],
            cwd=str(pooler_dir(env)),
            env=osuser.server_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=START_TIMEOUT_S,
            check=False,
            **kwargs,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise PgrigError(f"cannot start pgbouncer for {env.name!r}: {e}") from None
    why = _log_problems(log, mark) or " ".join((proc.stderr or "").split())
    if proc.returncode != 0:
        raise PgrigError(
            f"pgbouncer of {env.name!r} did not start: {why or f'exit {proc.returncode}'} "
            f"(log: {log})"
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    sock = socket_dir(env, i) / f".s.PGSQL.{cfg.port}"
    while _daemon(env, i) is None or not sock.exists():
        if time.monotonic() > deadline:
            why = _log_problems(log, mark)
            raise PgrigError(
                f"pgbouncer of {env.name!r} did not start: {why or 'no pid file'} (log: {log})"
            )
        time.sleep(0.05)


def _stop_one(env: Environment, i: int) -> bool:
    daemon = _daemon(env, i)
    if daemon is not None:
        daemon.stop(STOP_TIMEOUT_S)  # SIGTERM: 1.18's immediate shutdown (benchmarks are over)
    pid_file(env, i).unlink(missing_ok=True)
    return daemon is not None


def start(env: Environment) -> bool:
    """Start whatever pooler processes are down (False: all were running already)."""
    cfg = config_of(env)
    if cfg is None:
        raise no_pooler_error(env)
    if is_running(env):
        return False
    exe = binary()
    if not auth_file(env).exists() or not passfile(env).exists():
        _credentials(env, cfg)
    _launch(env, cfg, exe)
    return True


def _launch(env: Environment, cfg: PoolerConfig, exe: str) -> None:
    """Write the config and start every process; if one fails, none is left running."""
    _write_config(env, cfg)
    try:
        for i in range(cfg.processes):
            _start_one(env, cfg, i, exe)
    except BaseException:
        stop(env)
        raise


def stop(env: Environment) -> bool:
    """Stop every pooler process (False: none was running)."""
    cfg = config_of(env)
    if cfg is None:
        return False
    stopped = False
    d = pooler_dir(env)
    n = max(cfg.processes, len(list(d.glob("pgbouncer-*.ini"))) if d.exists() else 0)
    for i in range(n):
        stopped = _stop_one(env, i) or stopped
    return stopped


def no_pooler_error(env: Environment) -> PgrigError:
    return PgrigError(
        f"environment {env.name!r} has no pooler: add one with "
        f"`pgrig env pooler {env.name} add pgbouncer` (or run with --via direct)"
    )


# --- add / remove / restart --------------------------------------------------------------------


def _choose_port(env: Environment, wanted: int) -> int:
    taken = ports.pooler_ports(env.name) | {env.port or 0}
    if wanted:
        if wanted in taken:
            raise PgrigError(f"port {wanted} is used by another environment or pooler")
        problem = ports.port_problem(wanted, ignore_env=env.name)
        if problem:
            raise PgrigError(problem)
        return wanted
    return ports.free_port(exclude=taken)


def _require_running(env: Environment) -> None:
    """A pooler needs its server up: callers start it (cluster.running_environment)."""
    if not env.managed:
        raise PgrigError(
            f"environment {env.name!r} is external: pgrig runs poolers for managed ones"
        )
    if not postmaster.is_running(env):
        raise PgrigError(
            f"the server of {env.name!r} is not running: `pgrig env start {env.name}` first"
        )


def server_limits(env: Environment, overrides: dict[str, str] | None = None) -> tuple[int, int]:
    """(max_connections, slots reserved for superusers) of the running server.

    `overrides` (a run's own settings) win over the server's current values.
    """
    import psycopg

    names = ("max_connections", "superuser_reserved_connections", "reserved_connections")
    try:
        with psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn:
            rows = dict(
                conn.execute(
                    "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", (list(names),)
                ).fetchall()
            )
    except psycopg.Error as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PgrigError(f"cannot read connection limits of {env.name!r}: {first}") from None
    for k, v in (overrides or {}).items():
        if k.lower() in names:
            rows[k.lower()] = v
    try:
        mc = int(rows["max_connections"])
        reserved = int(rows.get("superuser_reserved_connections", 3)) + int(
            rows.get("reserved_connections", 0)
        )
    except (KeyError, ValueError) as e:
        raise PgrigError(f"cannot read connection limits of {env.name!r}: {e}") from None
    return mc, reserved


def _suggest_max_connections(needed: int, reserved: int) -> int:
    return -(-(needed + reserved + 10) // 100) * 100  # round up to a hundred


def check_pool_fits(env: Environment, cfg: PoolerConfig, limits: tuple[int, int]) -> None:
    mc, reserved = limits
    usable = mc - reserved
    if cfg.server_connections > usable:
        procs = f" x {cfg.processes} processes" if cfg.processes > 1 else ""
        raise PgrigError(
            f"a pool of {cfg.pool_size}{procs} = {cfg.server_connections} server connections "
            f"exceeds max_connections={mc} on env {env.name} ({reserved} reserved): raise it "
            f"with `pgrig env set {env.name} max_connections="
            f"{_suggest_max_connections(cfg.server_connections, reserved)}` or use a smaller "
            "--pool-size"
        )


def add(env: Environment, cfg: PoolerConfig) -> Environment:
    """Put a pooler in front of a running managed environment and start it (all or nothing)."""
    _require_running(env)
    name = env.name
    if env.pooler:
        raise PgrigError(
            f"environment {name!r} already has a {env.pooler.get('kind')} pooler "
            f"(see `pgrig env pooler {name} show`; remove it first to change it)"
        )
    exe = binary()
    cfg = replace(cfg, port=_choose_port(env, cfg.port))
    longest = socket_dir(env, cfg.processes - 1) / f".s.PGSQL.{cfg.port}"
    if len(str(longest)) > SOCKET_PATH_MAX:
        raise PgrigError(
            f"socket path {longest} is too long for a Unix socket: use a shorter environment "
            "name or PGRIG_HOME"
        )
    if not osuser.is_root():
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < cfg.nofile:
            raise PgrigError(
                f"pgbouncer needs {cfg.nofile} open files for max_client_conn="
                f"{cfg.max_client_conn} but the hard limit is {hard}: raise it (ulimit -Hn) "
                "or run pgrig as root"
            )
    check_pool_fits(env, cfg, server_limits(env))
    env.pooler = cfg.as_dict()
    try:
        _credentials(env, cfg)
        _write_config(env, cfg)
        for i in range(cfg.processes):
            _start_one(env, cfg, i, exe)
    except BaseException:
        _teardown(env, cfg)
        raise
    env.save()
    return env


def _teardown(env: Environment, cfg: PoolerConfig) -> None:
    with contextlib.suppress(Exception):
        stop(env)
    with contextlib.suppress(Exception):
        if postmaster.is_running(env):
            _drop_role(env, cfg)
    shutil.rmtree(pooler_dir(env), ignore_errors=True)
    passfile(env).unlink(missing_ok=True)
    env.pooler = None


def remove(env: Environment) -> Environment:
    """Stop the pooler, drop its role (when the server runs) and delete its files."""
    cfg = config_of(env)
    if cfg is None:
        raise PgrigError(f"environment {env.name!r} has no pooler to remove")
    _teardown(env, cfg)
    env.save()
    return env


def restart(env: Environment) -> Environment:
    """Stop, regenerate config and credentials (fresh passwords), start. The server runs."""
    cfg = config_of(env)
    if cfg is None:
        raise no_pooler_error(env)
    _require_running(env)
    exe = binary()
    stop(env)
    _credentials(env, cfg)
    _launch(env, cfg, exe)
    return env


def ensure(env: Environment, wanted: PoolerConfig) -> Environment:
    """The pooler as `wanted` (port aside) and running, for studies: re-added if different."""
    _require_running(env)
    cfg = config_of(env)
    if cfg is not None and replace(cfg, port=wanted.port or cfg.port) == replace(
        wanted, port=wanted.port or cfg.port
    ):
        start(env)
        return env
    if cfg is not None:
        remove(env)
    return add(env, wanted)


def describe(env: Environment) -> dict[str, Any]:
    """What `pooler show` prints (no password, ever)."""
    cfg = config_of(env)
    if cfg is None:
        return {"env": env.name, "pooler": None}
    return {
        "env": env.name,
        "pooler": cfg.kind,
        "version": version() if shutil.which("pgbouncer", path="/usr/sbin:/usr/bin") else None,
        "status": status(env),
        "pids": pids(env),
        "target": f"postgresql://{cfg.user}@127.0.0.1:{cfg.port}/",
        "config": {**cfg.as_dict(), "nofile": cfg.nofile},
        "paths": {
            "dir": str(pooler_dir(env)),
            "ini": [str(ini_file(env, i)) for i in range(cfg.processes)],
            "log": [str(log_file(env, i)) for i in range(cfg.processes)],
            "socket_dir": [str(socket_dir(env, i)) for i in range(cfg.processes)],
            "auth_file": str(auth_file(env)),
            "passfile": str(passfile(env)),
        },
    }


# --- runs --------------------------------------------------------------------------------------


def normalize_via(via: str) -> str:
    """ "direct", or the pooler kind for "pooler"/"pgbouncer" (what the archive records)."""
    v = (via or "direct").strip().lower()
    if v not in VIAS:
        raise PgrigError(f"--via must be direct or pooler (got {via!r})")
    return "direct" if v == "direct" else ("pgbouncer" if v == "pooler" else v)


def check_run(
    env: Environment,
    *,
    clients: int,
    via: str,
    connect: str,
    protocol: str,
    run_settings: dict[str, str] | None = None,
) -> str:
    """Reject a run that cannot work, before anything starts. Returns the normalized via."""
    via = normalize_via(via)
    if connect not in CONNECTS:
        raise PgrigError(f"--connect must be tcp or socket (got {connect!r})")
    if connect == "socket" and not env.managed:
        raise PgrigError(
            f"--connect socket needs a managed environment ({env.name!r} is external): use tcp"
        )
    if via == "direct":
        mc, reserved = server_limits(env, run_settings)
        if clients > mc - reserved:
            raise PgrigError(
                f"{clients} clients exceed max_connections={mc} on env {env.name} "
                f"({reserved} reserved for superusers): raise it with `pgrig env set "
                f"{env.name} max_connections={_suggest_max_connections(clients, reserved)}`"
                " or use --via pooler"
            )
        return via
    cfg = config_of(env)
    if cfg is None:
        raise no_pooler_error(env)
    if cfg.kind != via:
        raise PgrigError(f"environment {env.name!r} has a {cfg.kind} pooler, not {via}")
    if connect == "socket" and cfg.processes > 1:
        raise PgrigError(
            f"--connect socket reaches only one of the {cfg.processes} pgbouncer processes "
            "(each has its own socket): use --connect tcp to spread clients over all"
        )
    room = cfg.max_client_conn - STATS_CONNECTIONS
    if clients > room:
        raise PgrigError(
            f"{clients} clients exceed max_client_conn={cfg.max_client_conn} of the pgbouncer "
            f"on env {env.name} ({STATS_CONNECTIONS} kept for statistics): `pgrig env pooler "
            f"{env.name} remove`, then add it with --max-client-conn {clients + 100}"
        )
    if protocol == "prepared" and cfg.mode != "session":
        raise PgrigError(
            f"--protocol prepared does not work through pgbouncer in {cfg.mode} mode "
            "(prepared statements need max_prepared_statements, pgbouncer 1.21+): "
            "use --protocol simple or extended"
        )
    if cfg.mode == "session" and clients > cfg.server_connections:
        raise PgrigError(
            f"{clients} clients through a session-mode pool of {cfg.server_connections} "
            "server connections: the others would wait forever; use --mode transaction "
            "or a larger --pool-size"
        )
    check_pool_fits(env, cfg, server_limits(env, run_settings))
    return via


def client_env(env: Environment, dbname: str, via: str, connect: str) -> dict[str, str]:
    """libpq variables for pgbench: the server or the pooler, over TCP or a Unix socket.

    Through the pooler the password comes from PGPASSFILE: never on a command line.
    """
    base = env.libpq_env(dbname)
    if normalize_via(via) == "direct":
        if connect == "socket" and env.managed:
            base["PGHOST"] = str(env.socket_dir)
        return base
    cfg = config_of(env)
    if cfg is None:
        raise no_pooler_error(env)
    return {
        "PGHOST": "127.0.0.1" if connect == "tcp" else str(socket_dir(env, 0)),
        "PGPORT": str(cfg.port),
        "PGUSER": cfg.user,
        "PGDATABASE": dbname,
        "PGPASSFILE": str(passfile(env)),
        "PGCONNECT_TIMEOUT": base.get("PGCONNECT_TIMEOUT", "5"),
    }


def console_params(env: Environment) -> list[dict[str, Any]]:
    """psycopg connect() parameters for the admin console of each process (its Unix socket)."""
    cfg = config_of(env)
    if cfg is None:
        return []
    return [
        {
            "host": str(socket_dir(env, i)),
            "port": cfg.port,
            "dbname": "pgbouncer",
            "user": cfg.stats_user,
            "passfile": str(passfile(env)),
            "connect_timeout": 5,
        }
        for i in range(cfg.processes)
    ]


def log_offsets(env: Environment) -> list[int]:
    cfg = config_of(env)
    return [_log_size(log_file(env, i)) for i in range(cfg.processes)] if cfg else []


def log_since(env: Environment, offsets: list[int], limit: int = 1_000_000) -> str:
    """What the pooler processes logged since `offsets` (process-prefixed when several)."""
    out: list[str] = []
    for i, off in enumerate(offsets):
        try:
            with log_file(env, i).open("rb") as f:
                f.seek(off)
                text = f.read(limit).decode(errors="replace")
        except OSError:
            continue
        prefix = f"[{i}] " if len(offsets) > 1 else ""
        out.extend(prefix + ln for ln in text.splitlines())
    return "\n".join(out) + ("\n" if out else "")
