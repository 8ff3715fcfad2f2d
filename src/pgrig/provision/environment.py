"""The Environment record: a PostgreSQL server pgrig manages (or only points at).

Persisted as <home>/envs/<name>/env.json. Managed environments own a data directory and a
binary directory; external ones ("env add --dsn") only have a DSN without password (the
password comes from PGPASSWORD or ~/.pgpass at run time and is never stored).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from pgrig import paths
from pgrig.errors import NotFound, PgrigError
from pgrig.request.vocabulary import NAME_MAX, valid_name

DEFAULT_DATABASE = "pgrig"


class DamagedEnvironment(PgrigError):
    """env.json unreadable or the data directory gone: the message says how to repair."""


@dataclass
class Environment:
    name: str
    kind: Literal["managed", "external"] = "managed"
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

    # --- locations -------------------------------------------------------------------------
    @property
    def dir(self) -> Path:
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
        return (
            f"host={self.host} port={self.port} user={self.user} "
            f"dbname={dbname or 'postgres'} connect_timeout=5 application_name=pgrig"
        )

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
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / "env.json.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=2, sort_keys=True))
        os.replace(tmp, self.dir / "env.json")

    @classmethod
    def load(cls, name: str) -> Environment:
        f = paths.envs_dir() / name / "env.json"
        if not f.exists():
            raise NotFound(f"environment {name!r} does not exist (see `pgrig env list`)")
        try:
            doc = json.loads(f.read_text())
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            return cls(**doc)
        except OSError as e:
            raise DamagedEnvironment(f"cannot read {f}: {e.strerror}") from None
        except (ValueError, TypeError) as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise DamagedEnvironment(
                f"environment {name!r} is damaged: {f} is not valid ({reason}); "
                f"`pgrig env repair {name}` rebuilds it from the data directory, "
                f"`pgrig env destroy {name} --yes` removes it"
            ) from None

    def check_intact(self) -> None:
        """A managed environment whose data directory is gone cannot run: say how to repair."""
        if self.managed and not (self.datadir / "PG_VERSION").is_file():
            raise DamagedEnvironment(
                f"environment {self.name!r} is damaged: its data directory {self.datadir} is "
                f"missing or incomplete; `pgrig env repair {self.name}` re-creates it empty "
                f"(then `pgrig db generate {self.name} ...`), "
                f"`pgrig env destroy {self.name} --yes` removes the environment"
            )

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


def without_libpq_vars() -> dict[str, str]:
    """The caller's environment without PG* variables, so only the target's settings apply."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def check_name(name: str) -> None:
    if not valid_name(name):
        raise PgrigError(
            f"invalid environment name {name!r}: use letters, digits, '_', '.', '-' "
            f"(max {NAME_MAX})"
        )


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
