"""The pooler's options: what env.json keeps, how they are validated, and its ini file."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from string import Template
from typing import Any

from pydantic import ValidationError

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.pooler import layout
from pgrig.provision.state.environment import Environment
from pgrig.provision.system import osuser
from pgrig.request.pooler import (
    DEFAULT_MAX_CLIENT_CONN,
    DEFAULT_MODE,
    DEFAULT_POOL_SIZE,
    PoolerRequest,
)
from pgrig.request.problems import from_flags, in_file
from pgrig.request.vocabulary import VIAS

POOL_ROLE = "pgrig_pool"
STATS_USER = "pgrig_stats"
TEMPLATE = Path(__file__).parent / "templates" / "pgbouncer.ini"


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
    # another address pgbouncer listens on, beside 127.0.0.1: clients on other hosts
    listen: str = ""
    # the host pgbouncer runs on ("": with its server); kept by the control machine's record
    on: str = ""
    # "here": this pgrig made the role and its passwords; "control": the control machine did
    # (a pooler on a host: only SCRAM verifiers reached it, the passwords stayed there)
    auth_from: str = "here"

    @property
    def nofile(self) -> int:
        """Descriptors per process: every client, every server connection, and a margin."""
        return max(4096, self.max_client_conn + 4 * self.pool_size + 256)

    @property
    def server_connections(self) -> int:
        """Server connections the pool may open for one database/user pair, all processes."""
        return self.pool_size * self.processes

    @property
    def address(self) -> str:
        """Where clients connect over TCP."""
        return self.listen or "127.0.0.1"

    @property
    def target(self) -> str:
        return f"postgresql://{self.user}@{self.address}:{self.port}/"

    def options(self) -> dict[str, Any]:
        """The options a user chose (what a study's pooler table states), nothing placed."""
        return {k: getattr(self, k) for k in TABLE_KEYS}

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
    """Validated pooler options from the CLI (request.pooler.PoolerRequest: one error naming
    the flag, nothing touched)."""
    req = from_flags(
        PoolerRequest,
        kind=kind,
        mode=mode,
        pool_size=pool_size,
        max_client_conn=max_client_conn,
        processes=processes,
        port=port,
    )
    return _config(req)


TABLE_KEYS = tuple(PoolerRequest.model_fields)


def options_from_table(table: dict[str, Any]) -> PoolerConfig:
    """Options from a study file's `pooler = {mode = "transaction", pool_size = 100}`; a
    problem names the key (`pool_size: must be >= 1 (got 0): ...`)."""
    try:
        return _config(PoolerRequest.model_validate(table))
    except ValidationError as e:
        raise PgrigError(in_file(e, PoolerRequest)) from None


def _config(req: PoolerRequest) -> PoolerConfig:
    return PoolerConfig(
        req.kind, req.mode, req.pool_size, req.max_client_conn, req.processes, req.port or 0
    )


def config_of(env: Environment) -> PoolerConfig | None:
    return PoolerConfig.from_dict(env.pooler) if env.pooler else None


def no_pooler_error(env: Environment) -> PgrigError:
    return PgrigError(
        f"environment {env.name!r} has no pooler: add one with "
        f"`{pgrig_command('env', 'pooler', env.name, 'add', 'pgbouncer')}` "
        "(or run with --via direct)"
    )


def normalize_via(via: str) -> str:
    """ "direct", or the pooler kind for "pooler"/"pgbouncer" (what the archive records)."""
    v = (via or "direct").strip().lower()
    if v not in VIAS:
        raise PgrigError(f"--via must be direct or pooler (got {via!r})")
    return "direct" if v == "direct" else ("pgbouncer" if v == "pooler" else v)


# --- the ini file ------------------------------------------------------------------------------


def render_ini(env: Environment, cfg: PoolerConfig, i: int) -> str:
    """The ini of process i: its own socket dir, pid and log file; the shared port."""
    values = {
        "env_name": env.name,
        "index": i,
        "processes": cfg.processes,
        # a unix socket to a server on this host (no TCP overhead), its address otherwise
        "server_host": str(env.socket_dir) if env.managed else env.host,
        "server_port": env.port,
        "listen_addr": ",".join(["127.0.0.1"] + ([cfg.listen] if cfg.listen else [])),
        "port": cfg.port,
        "so_reuseport": 1 if cfg.processes > 1 else 0,
        "socket_dir": layout.socket_dir(env, i),
        "pidfile": layout.pid_file(env, i),
        "logfile": layout.log_file(env, i),
        "auth_file": layout.auth_file(env),
        "stats_user": cfg.stats_user,
        "mode": cfg.mode,
        "pool_size": cfg.pool_size,
        "max_client_conn": cfg.max_client_conn,
    }
    return Template(TEMPLATE.read_text()).substitute(values)


def write_config(env: Environment, cfg: PoolerConfig) -> None:
    """Every process's ini and socket dir; the ini of processes beyond cfg.processes removed."""
    d = layout.make_dir(env)
    for i in range(cfg.processes):
        s = layout.socket_dir(env, i)
        s.mkdir(exist_ok=True)
        osuser.give_to_server(s, 0o755)
        f = layout.ini_file(env, i)
        f.write_text(render_ini(env, cfg, i))
        osuser.give_to_server(f, 0o644)
    for stale in d.glob("pgbouncer-*.ini"):  # fewer processes than before
        idx = stale.stem.rsplit("-", 1)[-1]
        if idx.isdigit() and int(idx) >= cfg.processes:
            stale.unlink(missing_ok=True)
