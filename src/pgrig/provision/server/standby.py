"""A replica of a primary on another host: `env create NAME --standby-of HOST:PORT --slot S
--application-name rN --password-stdin` (what the control machine asks a replica host's pgrig
to do for `env create --on db1 --replica-on db2`).

The clone is `pg_basebackup -R -S SLOT` over the network as the role pgrig_replication (the
primary allowed this host's address only: provision/replication_access.py). Its password comes
on stdin and goes into one libpq passfile, <env>/replication-pgpass (0600, the server user's),
that pg_basebackup and then the walreceiver read (`passfile=` in primary_conninfo): it is never
in argv, in postgresql.auto.conf, in a log or in env.json. The replica gets its own pgrig.conf
(port, socket, the same layers as the primary: a hot standby needs max_connections & co at least
as high) and is started like any managed server; env start/stop/set/destroy then work on it as
on any environment of this host.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgrig.errors import PgrigError
from pgrig.provision.server import postmaster
from pgrig.provision.settings import config
from pgrig.provision.state.environment import Environment
from pgrig.provision.system import osuser
from pgrig.request.values import ascii_digits

PASSFILE = "replication-pgpass"
ROLE = "pgrig_replication"  # provision/replication_access.py makes it on the primary


@dataclass(frozen=True)
class Source:
    host: str
    port: int
    slot: str
    application_name: str

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "slot": self.slot,
                "application_name": self.application_name}  # fmt: skip


def parse(standby_of: str, slot: str | None, application_name: str | None) -> Source:
    """--standby-of HOST:PORT with --slot and --application-name, checked."""
    host, sep, port = standby_of.rpartition(":")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise PgrigError(f"--standby-of {standby_of!r}: expected ADDRESS:PORT") from None
    if not sep or not ascii_digits(port) or not 0 < int(port) < 65536:
        raise PgrigError(f"--standby-of {standby_of!r}: expected ADDRESS:PORT")
    # ASCII as PostgreSQL's own check of a slot name (str.isalnum also takes "é" and "٣")
    if not (slot and slot.isascii() and slot.replace("_", "").isalnum() and slot == slot.lower()):
        raise PgrigError("--standby-of needs --slot NAME (a replication slot of the primary)")
    if not (application_name and application_name.isascii() and application_name.isalnum()):
        raise PgrigError("--standby-of needs --application-name (the replica's name, r1 ...)")
    return Source(host, int(port), slot, application_name)


def passfile(env: Environment) -> str:
    return str(env.dir / PASSFILE)


def conninfo(env: Environment, source: Source) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(
        "", host=source.host, port=source.port, user=ROLE,
        application_name=source.application_name, passfile=passfile(env),
        connect_timeout=10,
    )  # fmt: skip


def write_passfile(env: Environment, source: Source, password: str) -> None:
    from pgrig.provision.server import remote_access

    f = env.dir / PASSFILE
    remote_access.write_passfile(f, source.host, source.port, ROLE, password)
    osuser.give_to_server(f, 0o600)  # the walreceiver (the server user) reads it


def build(env: Environment, source: Source, password: str, say: Callable[[str], None]) -> None:
    """Clone the primary into env.datadir and start the replica (the caller removes the whole
    environment directory when this fails)."""
    if not password:
        raise PgrigError("--standby-of needs the replication password on stdin (--password-stdin)")
    env.dir.chmod(0o755)
    write_passfile(env, source, password)
    env.datadir.mkdir()
    osuser.give_to_server(env.datadir, 0o700)
    say(f"pg_basebackup from {source.host}:{source.port} (slot {source.slot})")
    primary = conninfo(env, source)
    failed = base_backup(env, env.datadir, primary, source.slot, create_slot=False)
    if failed is not None:
        raise PgrigError(f"pg_basebackup from {source.host}:{source.port} failed: {failed}")
    plain_conninfo(env.datadir, primary, source.slot)
    config.write_conf(env, run={})
    env.save()  # before starting: a concurrent create then sees this port as taken
    say("starting replica")
    postmaster.start(env)


def base_backup(
    env: Environment, datadir: Path, primary: str, slot: str, *, create_slot: bool
) -> str | None:
    """pg_basebackup of the primary at conninfo `primary` into `datadir`, streaming through
    replication slot `slot` (created first when `create_slot`), with -R's standby settings.
    None when it worked, else why not (its last line of output)."""
    proc = osuser.run_as_server(
        [
            env.binary("pg_basebackup"),
            "-D", str(datadir),
            "-d", primary,
            "-R", *(["-C"] if create_slot else []), "-S", slot,
            "-X", "stream",
            "-c", "fast",
            "-w",
            "--no-sync",
        ],
        timeout=600,
    )  # fmt: skip
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        return lines[-1] if lines else str(proc.returncode)
    (datadir / "postmaster.pid").unlink(missing_ok=True)
    return None


def plain_conninfo(datadir: Path, primary: str, slot: str | None = None) -> None:
    """primary_conninfo as pgrig connects, not as -R wrote it: -R spells out every option of
    pg_basebackup's libpq (sslnegotiation, ...), which an older libpq loaded by the server's
    walreceiver rejects ("invalid connection option"), and the standby never connects. With
    `slot`, primary_slot_name is written again too."""
    auto = datadir / "postgresql.auto.conf"
    keys = ("primary_conninfo", "primary_slot_name") if slot else ("primary_conninfo",)
    kept = [ln for ln in auto.read_text().splitlines() if not ln.strip().startswith(keys)]
    kept.append(f"primary_conninfo = {config.quote(primary)}")
    if slot:
        kept.append(f"primary_slot_name = {config.quote(slot)}")
    st = auto.stat()
    auto.write_text("\n".join(kept) + "\n")
    if osuser.is_root():
        os.chown(auto, st.st_uid, st.st_gid)
