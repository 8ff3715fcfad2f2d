"""Replicas on other hosts: `pgrig env create lab --on db1 --replica-on db2 [--replica-on db3]
[--replicas N] [--sync MODE]`, and every env command on such an environment afterwards.

The control machine drives three pgrigs, each doing its own host's part:
- the primary's (db1): `env replication lab allow rN --address ADDRESS` (a role
  pgrig_replication whose SCRAM verifier comes on stdin, one pg_hba line for that address
  only, a slot pgrig_rN: provision/replication_access.py);
- each replica host's (db2): `env create lab.rN --standby-of DB1:PORT --slot pgrig_rN
  --application-name rN --listen DB2 --password-stdin`: pg_basebackup over the rig network,
  the replication password on stdin, into a 0600 passfile there (provision/standby.py);
- the record here (<home>/envs/lab/env.json, kind "remote") lists each replica with its host,
  address, port, slot and its environment's name on that host; the passfile here gets a line
  for each replica (the superuser's password is the primary's: replicated).

Replicas of `--on db1 --replicas N` without --replica-on are the primary host's own
(provision/replicas.py there), recorded here with db1's address so runs reach them.

Everything is checked before anything is made (hosts known, by IP address, provisioned with
that PostgreSQL, reachable); a failure later removes what was made on every host.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pgrig.errors import PgrigError
from pgrig.hosts import registry, remote, ssh
from pgrig.hosts.registry import Host
from pgrig.provision.server import remote_access, replicas
from pgrig.provision.state.environment import Environment, check_name

if TYPE_CHECKING:
    from pgrig.request.environment import EnvironmentRequest

Say = Callable[[str], None]
# what a hot standby needs at least as high as its primary's: copied from the primary
HOT_STANDBY_SETTINGS = (
    "max_connections",
    "max_worker_processes",
    "max_wal_senders",
    "max_prepared_transactions",
    "max_locks_per_transaction",
)


def plan(count: int, hosts: list[str]) -> list[tuple[str, str]]:
    """(replica name, host name) for each replica: the hosts in turn (--replicas 0: one on
    each; the request's rules hold the counts and hosts: request/environment.check_topology)."""
    if not hosts:
        return []
    n = count or len(hosts)
    return [(f"r{i + 1}", hosts[i % len(hosts)]) for i in range(n)]


def standby_env_name(env_name: str, replica: str) -> str:
    name = f"{env_name}.{replica}"
    check_name(name)
    return name


def check_hosts(names: list[str], pg: str, check_provisioned: Callable[[Host, str], None]) -> None:
    """Every replica host known by IP address, provisioned with `pg`, reachable now."""
    for name in dict.fromkeys(names):
        host = registry.get(name)
        try:
            ipaddress.ip_address(host.address)
        except ValueError:
            raise PgrigError(
                f"replica host {name}: its address {host.address!r} must be an IP address "
                "(the replica listens on it and the primary allows only it)"
            ) from None
        check_provisioned(host, pg)
        try:
            ssh.probe(host)
        except PgrigError as e:
            raise PgrigError(f"replica host {name}: {e} (nothing was created)") from None


def hot_standby_sets(shown: dict[str, Any]) -> list[str]:
    """`--set` arguments giving a replica the primary's values of HOT_STANDBY_SETTINGS."""
    effective = shown.get("effective") or {}
    out = []
    for name in HOT_STANDBY_SETTINGS:
        got = effective.get(name)
        if isinstance(got, dict) and got.get("value") is not None and got.get("layer") != "base":
            out.append(f"{name}={got['value']}")
    return out


def add(
    env: Environment,
    layout: list[tuple[str, str]],
    request: EnvironmentRequest,
    *,
    superuser_password: str,
    say: Say,
) -> None:
    """Create the replicas of `layout`, each with the primary's version, profile, settings and
    insights as `request` asked (each recorded before it is made, so that a failure anywhere
    lets `rollback` find everything)."""
    primary = registry.get(env.on or "")
    shown = remote.run_json(primary, ["env", "show", env.name, "--json"])
    follow = hot_standby_sets(shown)
    password = remote_access.generate_password()  # pgrig_replication's; kept on replica hosts
    verifier = remote_access.scram_verifier(password)
    for name, host_name in layout:
        host = registry.get(host_name)
        on_host = standby_env_name(env.name, name)
        rep: dict[str, Any] = {"name": name, "on": host_name, "host": host.address,
                               "port": None, "slot": f"{replicas.SLOT_PREFIX}{name}",
                               "env": on_host}  # fmt: skip
        env.replicas.append(rep)
        env.save()
        say(f"replica {name} on host {host_name}: allowed by the primary ({host.address} only)")
        allowed = remote.run_json(
            primary,
            ["env", "replication", env.name, "allow", name, "--address", host.address, "--json"],
            input=verifier + "\n",
        )
        argv = ["env", "create", on_host, "--pg", request.pg, "--profile", request.profile]
        argv += request.settings_args()
        for s in follow:
            argv += ["--set", s]
        if not request.insights:
            argv.append("--no-insights")
        argv += ["--listen", host.address, "--standby-of", f"{allowed['host']}:{allowed['port']}"]
        argv += ["--slot", str(allowed["slot"]), "--application-name", name, "--password-stdin"]
        rc = remote.forward(host, argv, stdin=(password + "\n").encode())
        if rc != 0:
            raise PgrigError(f"replica {name} on host {host_name} was not created (see above)")
        got = remote.run_json(host, ["env", "show", on_host, "--json"])
        rep["port"] = int(got["port"])
        env.save()
        remote_access.add_passfile_line(
            env.passfile, host.address, rep["port"], env.user, superuser_password
        )
        say(f"replica {name} on host {host_name}: {host.address}:{rep['port']}")


def primary_host_replicas(env: Environment, shown: dict[str, Any]) -> list[dict[str, Any]]:
    """The replicas the primary's host runs itself (`--on db1 --replicas N`), from its `env show
    --json`, as this machine reaches them (db1's address; their pg_hba.conf is the primary's)."""
    return [
        {"name": m["name"], "on": env.on, "host": env.host, "port": int(m["port"]),
         "slot": m["slot"]}
        for m in shown.get("topology") or []
        if m.get("role") == "replica" and m.get("datadir")  # a standby elsewhere has none
    ]  # fmt: skip


def on_other_hosts(env: Environment) -> list[dict[str, Any]]:
    """The replicas that are environments of their own on another host's pgrig."""
    return [r for r in env.replicas if r.get("env")]


def remove(env: Environment, *, force: bool) -> list[str]:
    """Destroy every replica on its host (the primary's slots go with the primary); returns
    one line per replica that could not be reached. The record keeps those."""
    problems = []
    kept = []
    for rep in env.replicas:
        if not rep.get("env"):
            kept.append(rep)
            continue
        try:
            host = registry.get(str(rep["on"]))
            r = remote.run(host, ["env", "destroy", str(rep["env"]), "--yes", "--force"])
            gone = r.rc == 0 or "does not exist" in r.stderr
            if not gone:
                raise PgrigError((r.stderr.strip().splitlines() or [f"exit {r.rc}"])[-1])
        except PgrigError as e:
            problems.append(f"replica {rep['name']} on host {rep['on']}: {e}")
            if not force:
                kept.append(rep)
    env.replicas = kept
    return problems


def rollback(env: Environment) -> None:
    """After a failed create: every replica made on another host, whatever it got to."""
    with contextlib.suppress(Exception):
        remove(env, force=True)


def fan_out(env: Environment, argv: Callable[[str], list[str]], say: Say) -> int:
    """Run `argv(name on that host)` on every replica host (env start/stop/restart/set): the
    worst exit status; an unreachable host is said, the others still done."""
    worst = 0
    for rep in on_other_hosts(env):
        try:
            host = registry.get(str(rep["on"]))
            rc = remote.forward(host, argv(str(rep["env"])))
        except PgrigError as e:
            say(f"replica {rep['name']} on host {rep['on']}: {e}")
            rc = 1
        worst = max(worst, rc)
    return worst
