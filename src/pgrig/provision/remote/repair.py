"""`pgrig env repair NAME` of an environment on another host, with its replicas on theirs.

The control machine first asks every host what its part needs (`env repair X --check --json`,
which changes nothing), so that a host that cannot be reached stops the repair before anything
is changed on any host. Then:

1. the primary's host repairs its own part (env.json, a removed data directory re-created
   empty, its own replicas cloned again), its output streamed here;
2. each replica on another host whose data directory is gone, or all of them when the primary
   was re-created (their data no longer matches it), is cloned again like a local replica:
   - the primary's host makes its slot afresh (`env replication NAME renew rN --address A`:
     the old slot dropped, its walsender ended first; its pg_hba line there). A re-created
     primary lost the role pgrig_replication and the lines with its data: the control machine
     then generates a new replication password, the primary gets only its SCRAM verifier (on
     stdin) and the replica hosts the password itself (on stdin, into their passfile);
   - the replica's host clones it again (`env repair NAME.rN --reclone --standby-of A:P --slot
     S --application-name rN`: pg_basebackup over the network into a staging directory that
     replaces the old one only when complete, primary_conninfo rewritten, started).

A failure or a signal at any point leaves every host usable: a replica being cloned keeps its
old state (the staging directory removed, pg_basebackup stopped: Ctrl-C or SIGTERM here is sent
on to the host's pgrig), the primary keeps a valid, inactive slot for it, and `env repair NAME`
again finishes the work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pgrig.errors import HostCommandFailed, PgrigError, first_line
from pgrig.format import pgrig_command
from pgrig.hosts import registry, remote
from pgrig.provision.state.environment import Environment

Say = Callable[[str], None]


def repair(env: Environment, *, force: bool, say: Say) -> list[str]:
    """Repair every host's part (the lock here first, then every host asked before anything
    changes); one line per thing done, none when there was nothing to repair."""
    from pgrig.provision.remote import environments as remote_env
    from pgrig.provision.remote import replicas as remote_replicas
    from pgrig.provision.state import env_lock

    env_lock.refuse_if_busy(env.dir, env.name, "env repair", force)
    primary = remote_env.host_of(env)
    plan = look(env)
    others = remote_replicas.on_other_hosts(env)
    done: list[str] = []
    if plan["primary"]["needed"]:
        argv = ["env", "repair", env.name] + (["--force"] if force else [])
        rc = remote.forward(primary, argv)
        if rc != 0:  # the replicas are left alone: their primary is not repaired
            raise HostCommandFailed(env.on or "", argv, rc)
        done.append(f"{env.name}: repaired on host {env.on} (see above)")
    try:
        remote_env.refresh(env)
    except PgrigError as e:
        say(f"the record here could not follow host {env.on}: {e}")
    rebuilt = bool(plan["primary"].get("rebuild"))
    todo = [r for r in others if rebuilt or plan["replicas"][r["name"]]["needed"]]
    password = verifier = None
    if rebuilt and todo:  # the role went with the old data directory: a new password
        from pgrig.provision.server import remote_access

        password = remote_access.generate_password()
        verifier = remote_access.scram_verifier(password)
    for rep in todo:
        state = plan["replicas"][rep["name"]]
        done.append(_reclone(env, rep, state, rebuilt, password, verifier, force, say))
    return done


def look(env: Environment) -> dict[str, Any]:
    """What each host's part needs (`env repair --check --json` on each host, which changes
    nothing), asked before anything changes anywhere: {"name", "primary", "replicas"}."""
    from pgrig.provision.remote import environments as remote_env
    from pgrig.provision.remote import replicas as remote_replicas

    others = remote_replicas.on_other_hosts(env)

    try:
        primary = remote.run_json(
            remote_env.host_of(env), ["env", "repair", env.name, "--check", "--json"]
        )
    except PgrigError as e:
        raise PgrigError(
            f"{env.name}: {first_line(e)} (nothing was repaired on any host)"
        ) from None
    states: dict[str, Any] = {}
    for rep in others:
        try:
            host = registry.get(str(rep["on"]))
            states[str(rep["name"])] = remote.run_json(
                host, ["env", "repair", str(rep["env"]), "--check", "--json"]
            )
        except PgrigError as e:
            why = first_line(e)
            hint = ""
            if "does not exist" in why:
                hint = (
                    f"; its environment is gone from that host: "
                    f"`{pgrig_command('env', 'destroy', env.name)}` "
                    "and create it again"
                )
            raise PgrigError(
                f"replica {rep['name']} on host {rep['on']}: {why} (nothing was repaired on any "
                f"host{hint}; run "
                f"`{pgrig_command('env', 'repair', env.name)}` again when it answers)"
            ) from None
    return {"name": env.name, "primary": primary, "replicas": states}


def plan_lines(env: Environment, plan: dict[str, Any]) -> list[str]:
    """What `look` found, one line per host's part."""
    lines = [f"{env.name} on host {env.on}: {needs_text(plan['primary'])}"]
    rebuilt = bool(plan["primary"].get("rebuild"))
    for rep in env.replicas:
        state = plan["replicas"].get(rep["name"])
        if state is None:
            continue
        what = needs_text(state)
        if rebuilt and not state.get("needed"):
            what = (
                "would clone it again from the re-created primary, with a new replication password"
            )
        lines.append(f"replica {rep['name']} on host {rep['on']} ({rep['env']}): {what}")
    return lines


def _reclone(
    env: Environment,
    rep: dict[str, Any],
    state: dict[str, Any],
    rebuilt: bool,
    password: str | None,
    verifier: str | None,
    force: bool,
    say: Say,
) -> str:
    """One replica on another host repaired: when its data is gone (or its primary was
    re-created), a fresh slot on the primary, then a new clone on its host (streamed); else
    only what its host repairs itself (env.json, an interrupted repair's leftovers). Its port
    in the record here after."""
    from pgrig.provision.remote import environments as remote_env

    name, on = str(rep["name"]), str(rep["on"])
    host = registry.get(on)
    reclone = bool(rebuilt or state.get("reclone"))
    source = f"{env.host}:{env.port}"
    slot = str(rep.get("slot") or f"pgrig_{name}")
    if reclone:
        why = "its primary was re-created" if rebuilt else "its data directory is gone"
        say(f"replica {name} on host {on}: {why}: a new slot on the primary, then a new clone")
        try:
            allowed = remote.run_json(
                remote_env.host_of(env),
                ["env", "replication", env.name, "renew", name, "--address", host.address,
                 "--json"],
                input=(verifier or "") + "\n",
            )  # fmt: skip
        except PgrigError as e:
            raise PgrigError(
                f"replica {name}: its slot could not be made afresh on the primary: "
                f"{first_line(e)} (the replica is as it was)"
            ) from None
        source, slot = f"{allowed['host']}:{allowed['port']}", str(allowed["slot"])
    argv = ["env", "repair", str(rep["env"])] + (["--reclone"] if reclone else [])
    argv += ["--standby-of", source, "--slot", slot, "--application-name", name]
    argv += (["--password-stdin"] if password else []) + (["--force"] if force else [])
    rc = remote.forward(host, argv, stdin=(password + "\n").encode() if password else None)
    if rc != 0:
        raise PgrigError(
            f"replica {name} on host {on} was not repaired (see above); "
            f"`{pgrig_command('env', 'repair', env.name)}` again finishes the work (and removes "
            "what an interrupted clone left)"
        )
    try:
        shown = remote.run_json(host, ["env", "show", str(rep["env"]), "--json"])
        rep["port"] = int(shown.get("port") or rep.get("port") or 0)
        env.save()
    except PgrigError as e:
        say(f"replica {name}: the record here could not follow host {on}: {e}")
    if reclone:
        return f"replica {name} on host {on}: cloned again from the primary"
    return f"replica {name} on host {on}: repaired there ({needs_text(state, done=True)})"


def needs_text(doc: dict[str, Any], *, done: bool = False) -> str:
    """What `env repair --check --json` found, in words: what a repair would do (nothing is
    done by --check), or with `done` what the repair did."""
    if done:
        rebuild, new, clone, again, removed = (
            "env.json rebuilt", "a new, empty cluster made", "cloned again from its primary",
            "replicas cloned again", "an interrupted repair's leftovers removed",
        )  # fmt: skip
    else:
        rebuild, new, clone, again, removed = (
            "would rebuild env.json", "would make a new, empty cluster",
            "would clone it again from its primary", "would clone replicas again",
            "would remove an interrupted repair's leftovers",
        )  # fmt: skip
    parts = []
    if doc.get("env_json"):
        parts.append(f"{rebuild} ({doc['env_json']})")
    if doc.get("rebuild"):
        parts.append(f"its data directory is gone: {new}")
    if doc.get("reclone"):
        parts.append(f"its data directory is gone: {clone}")
    if doc.get("replicas"):
        parts.append(f"{again}: " + ", ".join(doc["replicas"]))
    if doc.get("leftovers"):
        parts.append(f"{removed}: " + ", ".join(doc["leftovers"]))
    if doc.get("disk_limit"):  # the fault `env show` flags, and the remedy
        parts.append(str(doc["disk_limit"]))
    for extra in doc.get("notes") or []:  # what --check found that a repair leaves alone
        parts.append(str(extra))
    return "; ".join(parts) or "nothing to repair"
