"""The Environment record: a PostgreSQL server pgrig manages (or only points at).

Persisted as <home>/envs/<name>/env.json. Managed environments own a data directory and a
binary directory; external ones ("env add --dsn") only have a DSN without password (the
password comes from PGPASSWORD or ~/.pgpass at run time and is never stored).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from pgrig import paths, safe_write
from pgrig.errors import NotFound, PgrigError, first_line
from pgrig.format import pgrig_command
from pgrig.request.vocabulary import NAME_MAX, valid_name

DEFAULT_DATABASE = "pgrig"


class DamagedEnvironment(PgrigError):
    """env.json unreadable or the data directory gone: the message says how to repair."""

    reason: str = ""  # what is wrong, alone (for `env list` and `env repair`)


@dataclass
class Environment:
    name: str
    kind: Literal["managed", "external", "remote"] = "managed"
    major: int | None = None
    version: str | None = None  # exact server version, e.g. "18.6"
    bindir: str | None = None
    host: str = "127.0.0.1"
    port: int | None = None
    user: str = "postgres"  # database superuser
    os_user: str | None = None  # OS account running the server
    profile: str = "default"
    profile_settings: dict[str, str] = field(default_factory=dict)  # computed at create time
    settings: dict[str, str] = field(default_factory=dict)  # environment layer (--set)
    dsn: str | None = None  # external only, password stripped
    created_at: str | None = None
    pooler: dict[str, object] | None = None
    insights: bool = True  # the insights layer (provision/insights_layer.py) is applied
    # streaming replicas (provision/replicas.py): [{"name", "port", "slot"}], and the sync mode
    replicas: list[dict[str, Any]] = field(default_factory=list)
    sync: str = "off"
    # pgrig-managed WAL archiving for backups (provision/pgbackrest.py): {"stanza", ...}
    archiving: dict[str, Any] | None = None
    # a member server of another environment (a replica, a scratch restore): its own
    # directory; such an Environment is built in memory and never saved
    member_dir: str | None = None
    # another address the server listens on, beside 127.0.0.1 (for load from other hosts:
    # scram-sha-256 with a password pgrig generated; `env create --listen`)
    listen: str | None = None
    # kind "remote": the record, on the control machine, of an environment that the pgrig of
    # host `on` manages (hosts/, provision/remote/); host/port reach its server, with the
    # password in the passfile <dir>/pgpass (0600), never in env.json
    on: str | None = None
    # a replica of a primary on another host (provision/standby.py): {"host", "port", "slot",
    # "application_name"}; its replication password is in <dir>/replication-pgpass (0600)
    standby_of: dict[str, Any] | None = None
    # on a primary: its replicas on other hosts (provision/replication_access.py): [{"name",
    # "host", "slot"}], each allowed by one pg_hba line for its address
    standbys: list[dict[str, Any]] = field(default_factory=list)
    # block I/O caps of the server (request/disk_limit.py: riops, wiops, rbps, wbps), put in
    # force by the kernel's throttle at every start (provision/server/disk_throttle.py)
    disk_limit: dict[str, int] | None = None

    # --- locations -------------------------------------------------------------------------
    @property
    def dir(self) -> Path:
        if self.member_dir:
            return Path(self.member_dir)
        return paths.envs_dir() / self.name

    @property
    def datadir(self) -> Path:
        return self.dir / "data"

    @property
    def socket_dir(self) -> Path:
        return self.dir / "run"

    @property
    def logfile(self) -> Path:
        return self.dir / "server.log"

    @property
    def managed(self) -> bool:
        return self.kind == "managed"

    @property
    def default_database(self) -> str:
        """The database a command uses when none is given: the one an external environment's
        DSN names (`env add NAME --dsn .../somedb`), else pgrig's own."""
        if self.kind == "external" and self.dsn:
            from psycopg.conninfo import conninfo_to_dict

            named = conninfo_to_dict(self.dsn).get("dbname")
            if named:
                return str(named)
        return DEFAULT_DATABASE

    def binary(self, name: str) -> str:
        """Path of a PostgreSQL program for this environment's version (pgbench, psql, ...)."""
        if self.bindir:
            return str(Path(self.bindir) / name)
        return name  # external environment: whatever is on PATH

    # --- connections -----------------------------------------------------------------------
    def conninfo(self, dbname: str | None = None) -> str:
        """A libpq conninfo string for psycopg (no password inside)."""
        if self.kind == "external" and self.dsn:
            from psycopg.conninfo import conninfo_to_dict, make_conninfo

            params = conninfo_to_dict(self.dsn)
            if dbname:
                params["dbname"] = dbname
            params.setdefault("connect_timeout", 5)
            return make_conninfo("", **params)
        from psycopg.conninfo import make_conninfo

        # quoted by libpq's rules: a database named 'a b', 'x"y' or 'a;b' stays one value
        parts: dict[str, Any] = {
            "host": self.host, "port": self.port, "user": self.user,
            "dbname": dbname or "postgres", "connect_timeout": 5, "application_name": "pgrig",
        }  # fmt: skip
        if self.kind == "remote" and self.passfile.exists():
            parts["passfile"] = str(self.passfile)
        if self.kind == "remote":  # a host cut off mid-run fails pgrig's queries in seconds
            parts.update(DEAD_PEER)
        return make_conninfo("", **parts)

    @property
    def passfile(self) -> Path:
        """The libpq password file of a remote environment (0600), on the control machine."""
        return self.dir / "pgpass"

    def libpq_env(self, dbname: str | None = None) -> dict[str, str]:
        """PG* variables for client programs (pgbench, psql) so no DSN shows in `ps`."""
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(self.conninfo(dbname))
        mapping = {
            "host": "PGHOST",
            "port": "PGPORT",
            "user": "PGUSER",
            "dbname": "PGDATABASE",
            "sslmode": "PGSSLMODE",
            "connect_timeout": "PGCONNECT_TIMEOUT",
            "password": "PGPASSWORD",
            "passfile": "PGPASSFILE",  # a remote environment's (kind "remote")
        }
        env = {}
        for key, var in mapping.items():
            if params.get(key) is not None:
                env[var] = str(params[key])
        return env

    def client_process_env(self, dbname: str | None = None) -> dict[str, str]:
        """The environment for a client program (pgbench, psql) aimed at this server."""
        return {**without_libpq_vars(), **self.libpq_env(dbname)}

    def masked_target(self) -> str:
        """What may be shown or archived: a DSN with any password masked."""
        if self.kind == "external" and self.dsn:
            return mask_dsn(self.dsn)
        return f"postgresql://{self.user}@{self.host}:{self.port}/"

    # --- persistence -----------------------------------------------------------------------
    def save(self) -> None:
        if self.member_dir:
            raise PgrigError(f"{self.name} is a member of another environment: not saved alone")
        self.dir.mkdir(parents=True, exist_ok=True)
        safe_write.write_text(
            self.dir / "env.json", json.dumps(asdict(self), indent=2, sort_keys=True)
        )

    @classmethod
    def load(cls, name: str) -> Environment:
        f = paths.envs_dir() / name / "env.json"
        if not f.exists():
            if f.parent.is_dir():  # the directory comes first, env.json last, in env create
                incomplete = DamagedEnvironment(incomplete_message(name))
                incomplete.reason = "incomplete: no env.json (env create unfinished or killed)"
                raise incomplete
            raise NotFound(f"environment {name!r} does not exist (see `pgrig env list`)")
        try:
            doc = json.loads(f.read_text())
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            _check_document(doc, name)
            return cls(**doc)
        except OSError as e:
            raise DamagedEnvironment(f"cannot read {f}: {e.strerror}") from None
        except (ValueError, TypeError) as e:
            reason = first_line(e)
            damaged = DamagedEnvironment(
                f"environment {name!r} is damaged: {f} is not valid ({reason}); "
                f"`{pgrig_command('env', 'repair', name)}` rebuilds it from the data directory, "
                f"`{pgrig_command('env', 'destroy', name, '--yes')}` removes it"
            )
            damaged.reason = f"env.json: {reason}"
            raise damaged from None

    def current(self) -> Environment:
        """This environment as env.json says now: a run holds the object it read at its start,
        and a command forced under it (`env set work_mem=16MB --force`) changed the file, so
        what the run writes to pgrig.conf (its run layer taken off, the insights layer's
        run-time values) is rendered from this, not from the start's copy, which would undo
        the forced change behind `env show`'s back. Itself when the file cannot be read."""
        if self.member_dir:
            return self
        try:
            now = type(self).load(self.name)
        except (PgrigError, ValueError, TypeError):
            return self
        return now if now.dir == self.dir else self

    def check_intact(self) -> None:
        """A managed environment whose data directory is gone cannot run: say how to repair."""
        if self.managed and not (self.datadir / "PG_VERSION").is_file() and self.standby_of:
            raise DamagedEnvironment(
                f"environment {self.name!r} is damaged: its data directory {self.datadir} is "
                f"missing or incomplete; it is a replica of {self.standby_of.get('host')}:"
                f"{self.standby_of.get('port')}: `pgrig env repair` of its primary's "
                "environment on the control machine clones it again"
            )
        if self.managed and not (self.datadir / "PG_VERSION").is_file():
            raise DamagedEnvironment(
                f"environment {self.name!r} is damaged: its data directory {self.datadir} is "
                f"missing or incomplete; "
                f"`{pgrig_command('env', 'repair', self.name)}` re-creates it empty "
                f"(then `{pgrig_command('db', 'generate', self.name, rest='...')}`), "
                f"`{pgrig_command('env', 'destroy', self.name, '--yes')}` removes the environment"
            )

    @classmethod
    def damaged(cls) -> dict[str, str]:
        """Environments whose directory is there but that cannot be loaded: name -> why."""
        out: dict[str, str] = {}
        root = paths.envs_dir()
        if root.is_dir():
            for d in sorted(p for p in root.iterdir() if p.is_dir() and valid_name(p.name)):
                try:
                    cls.load(d.name)
                except DamagedEnvironment as e:
                    out[d.name] = e.reason or str(e)
                except PgrigError as e:
                    out[d.name] = str(e)
        return out

    @classmethod
    def all(cls) -> list[Environment]:
        """Every environment whose env.json loads (a damaged one is skipped here: listing and
        port choice must not fail because of it; `pgrig env show NAME` names the problem)."""
        out = []
        root = paths.envs_dir()
        if root.is_dir():
            for f in sorted(root.glob("*/env.json")):
                try:
                    out.append(cls.load(f.parent.name))
                except (PgrigError, ValueError, TypeError):
                    continue
        return out


# A server that becomes unreachable mid-run (its host cut off, a partition) sends no RST: a
# client waiting on it blocks until the kernel gives up (minutes). Over the network pgbench's
# connections say how long a silent peer is tolerated: sent data unacknowledged for
# tcp_user_timeout ms, or an idle connection whose keepalive probes go unanswered
# (idle + interval x count s), ends the connection with an error, so pgbench ends in seconds.
# Healthy peers acknowledge in milliseconds (their kernel does, however busy the server is).
DEAD_PEER = {
    "keepalives": 1,
    "keepalives_idle": 2,
    "keepalives_interval": 1,
    "keepalives_count": 3,
    "tcp_user_timeout": 5000,
}


def over_network(host: str | None) -> bool:
    """Whether libpq reaches `host` (PGHOST) over a network (not a Unix socket, not loopback)."""
    if not host or host.startswith("/") or host.startswith("@"):
        return False
    return host not in ("localhost", "::1") and not host.startswith("127.")


def dbname_arg(dbname: str) -> str:
    """A database name as a client program's positional argument: libpq reads one holding '='
    or starting with a URI scheme as a connection string, so such a name goes in quoted form
    (dbname='a=b'), built by psycopg's conninfo helper, never by hand."""
    if "=" not in dbname and not dbname.startswith(("postgres://", "postgresql://")):
        return dbname
    from psycopg.conninfo import make_conninfo

    return make_conninfo("", dbname=dbname)


def incomplete_message(name: str) -> str:
    return (
        f"environment {name!r} is incomplete: its directory exists without env.json (an "
        f"`env create` still running, or killed before it finished); "
        f"`{pgrig_command('env', 'destroy', name, '--yes')}` removes what it left, then create "
        "it again"
    )


@functools.cache
def _document_model() -> type[BaseModel]:
    """env.json's shape, from the dataclass: every field with its type, strictly (a port
    "5432" or settings as a list is damage, not something to guess around)."""
    hints = typing.get_type_hints(Environment)
    spec: dict[str, Any] = {}
    for f in dataclasses.fields(Environment):
        if f.default is not dataclasses.MISSING:
            spec[f.name] = (hints[f.name], f.default)
        elif f.default_factory is not dataclasses.MISSING:
            spec[f.name] = (hints[f.name], Field(default_factory=f.default_factory))
        else:
            spec[f.name] = (hints[f.name], ...)
    config = ConfigDict(strict=True, extra="forbid")
    return create_model("EnvironmentDocument", __config__=config, **spec)


def _check_document(doc: dict[str, Any], name: str) -> None:
    """Raise ValueError naming the first key of env.json that is missing, unknown or of the
    wrong type, or a name that is not its directory's."""
    try:
        _document_model().model_validate(doc)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "document"
        got = f" (got {err['input']!r})" if err["type"] != "missing" else ""
        raise ValueError(f"{where}: {err['msg'].lower()}{got}"[:300]) from None
    if doc["name"] != name:
        raise ValueError(f"name: {doc['name']!r} is not its directory's name {name!r}")


# The libpq variables that say where a client connects (not how it authenticates).
LIBPQ_TARGET_VARS = frozenset(
    {"PGHOST", "PGHOSTADDR", "PGPORT", "PGUSER", "PGDATABASE", "PGSERVICE", "PGOPTIONS"}
)


def without_libpq_vars(only: frozenset[str] | None = None) -> dict[str, str]:
    """The caller's environment without its PG* variables, so only the target's settings apply;
    with `only`, without those (psql keeps the user's PGPASSWORD, PGSSLMODE...)."""
    if only is not None:
        return {k: v for k, v in os.environ.items() if k not in only}
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def check_name(name: str) -> None:
    if not valid_name(name):
        raise PgrigError(
            f"invalid environment name {name!r}: use letters, digits, '_', '.', '-' "
            f"(max {NAME_MAX})"
        )


# Words a command reads in an environment's place: `pgrig tune show NAME` prints a study, so an
# environment named "show" could never be tuned by name. New environments may not take them;
# one made before keeps working everywhere else (destroy, show, run).
RESERVED_NAMES = {"show": "`pgrig tune show NAME` reads it as its subcommand"}


def check_new_name(name: str) -> None:
    """A name a new environment may take: valid, and not a command's word (RESERVED_NAMES)."""
    check_name(name)
    if name in RESERVED_NAMES:
        raise PgrigError(
            f"environment name {name!r} is reserved: {RESERVED_NAMES[name]}; choose another name"
        )


class NotManaged(PgrigError):
    """Something pgrig does only to a server it runs here, asked of one it does not run."""


def managed_problem(env: Environment, what: str) -> str | None:
    """Why pgrig cannot `what` ("start it", "tune it ...") on `env`: None when pgrig runs its
    server here (a managed environment). The one wording of this refusal, wherever it is made:
    `environment 'ext' is external: pgrig cannot start it (that needs a managed environment,
    one pgrig runs on this machine)`."""
    if env.managed:
        return None
    kind = f"on host {env.on}" if env.kind == "remote" and env.on else env.kind
    return (
        f"environment {env.name!r} is {kind}: pgrig cannot {what} (that needs a managed "
        "environment, one pgrig runs on this machine)"
    )


def require_managed(env: Environment, what: str) -> None:
    """Refuse `what` on an environment whose server pgrig does not run here (managed_problem)."""
    problem = managed_problem(env, what)
    if problem is not None:
        raise NotManaged(problem)


def mask_dsn(dsn: str) -> str:
    """Replace any password in a URL or key=value DSN with ***."""
    dsn = re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1***", dsn, flags=re.I)


def strip_password(dsn: str) -> str:
    """The DSN without any password, for storage."""
    dsn = re.sub(r"(://[^:/@]+):[^@]*@", r"\1@", dsn)
    dsn = re.sub(r"\s*password\s*=\s*('[^']*'|\S+)", "", dsn, flags=re.I)
    dsn = re.sub(r"([?&])password=[^&]*&?", r"\1", dsn)
    return dsn.rstrip("?&")
