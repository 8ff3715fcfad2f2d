"""`pgrig host provision`: make a host able to serve pgrig, with the playbook provision.yml.

    provision(host, pg_builds, check=False) -> Provisioning (what changed, what it has now)
    remote_pgrig(host) -> the pgrig command on a provisioned host
    provisioned(name) -> the record of the last provisioning (None: never provisioned)

Before Ansible runs, one SSH connection checks the host (host key, python3, root or sudo, free
space) so that each of these fails with its own line. The PostgreSQL builds come from pgrig's
cache on this machine (`pgrig pg install` fills it), pgbouncer from this machine's binary, and
pgrig itself as wheels (bundles.py): the host needs nothing but sshd and python3.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from typing_extensions import TypedDict

from pgrig.hosts import ansible, bundles, registry, ssh
from pgrig.hosts.registry import Host
from pgrig.hosts.remote import REMOTE_PGRIG
from pgrig.record.doc_read import read_document
from pgrig.record.json_values import JsonObject

REMOTE_HOME = "/var/lib/pgrig"


def _record_path(name: str) -> Path:
    return registry.state_dir(name) / "provisioned.json"


class Provisioning(TypedDict):
    """What one `host provision` did (`--json` prints it)."""

    host: str
    check: bool  # --check: nothing was changed, `changed` is what would be
    changed: list[str]  # the playbook's tasks (and items) that changed something
    pg: list[str]  # the PostgreSQL builds pushed
    pgbouncer: str  # its version
    pgrig: str  # the digest of the pgrig wheels
    python3: str | None  # the host's
    elapsed_s: float


class Provisioned(TypedDict, total=False):
    """The record of a host's provisioning (<state>/provisioned.json): a Provisioning, with
    every PostgreSQL build pushed so far, and when."""

    host: str
    check: bool
    changed: list[str]
    pg: list[str]  # every build pushed to the host, over all provisionings
    pgbouncer: str
    pgrig: str
    python3: str | None
    elapsed_s: float
    at: str  # ISO 8601, UTC


def provisioned(name: str) -> Provisioned | None:
    """The host's provisioning record, each key checked (record/doc_read.py): a key of the
    wrong type reads as missing. None: never provisioned."""
    f = _record_path(name)
    return read_document(Provisioned, json.loads(f.read_text())) if f.exists() else None


def remote_pgrig(host: Host) -> str:
    return REMOTE_PGRIG


async def _check_host(host: Host) -> tuple[ssh.HostInfo, int]:
    async with ssh.open_session(host) as s:
        info = await s.probe()
        ssh.require_usable(host, info)
        r = await s.run(["df", "-Pk", "/opt", "/var/lib", "/"])
    free = min(
        (int(line.split()[3]) * 1024 for line in r.stdout.splitlines()[1:] if line.split()),
        default=0,
    )
    return info, free


def provision(host: Host, pg_builds: list[Path], *, check: bool = False) -> Provisioning:
    started = time.monotonic()
    info, free = asyncio.run(_check_host(host))
    assert info.python3 and info.python3_path  # require_usable
    pg_tars = [bundles.pg_bundle(p) for p in pg_builds]
    bouncer_tar, bouncer_version = bundles.pgbouncer_bundle()
    wheels = bundles.pgrig_bundle(info.python3)
    # Unpacked: a build about its tar; the wheels about 5x theirs (their copy plus the venv).
    need = sum(t.stat().st_size for t in [*pg_tars, bouncer_tar]) + 5 * wheels.tar.stat().st_size
    if not check and free < need and provisioned(host.name) is None:
        raise ssh.DiskFull(
            f"host {host.name}: disk full ({free // 2**20} MiB free, provisioning needs about "
            f"{need // 2**20} MiB)"
        )
    extravars: JsonObject = {
        "pgrig_home": REMOTE_HOME,
        "pg_builds": [
            {"version": p.name, "bundle": str(t)} for p, t in zip(pg_builds, pg_tars, strict=True)
        ],
        "pgbouncer_version": bouncer_version,
        "pgbouncer_bundle": str(bouncer_tar),
        "pgrig_hash": wheels.digest,
        "pgrig_bundle": str(wheels.tar),
        "pgrig_wheel": wheels.pgrig_wheel,
        "pip_wheel": wheels.pip_wheel,
        "python3": info.python3_path,
    }
    result = ansible.run_playbook(
        host,
        "provision.yml",
        extravars,
        python3=info.python3_path,
        check=check,
        become=not info.root,
    )
    changed = result.changed
    doc: Provisioning = {
        "host": host.name,
        "check": check,
        "changed": changed,
        "pg": sorted({p.name for p in pg_builds}),
        "pgbouncer": bouncer_version,
        "pgrig": wheels.digest,
        "python3": info.python3,
        "elapsed_s": round(time.monotonic() - started, 2),
    }
    if not check:
        before = provisioned(host.name) or {}
        record = {
            **doc,
            "pg": sorted(set(before.get("pg", [])) | set(doc["pg"])),
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        f = _record_path(host.name)
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(record, indent=2) + "\n")
    return doc
