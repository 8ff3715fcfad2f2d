"""`pgrig host add/list/remove/import`: the other machines pgrig works on (over SSH).

add      NAME --ssh USER@ADDRESS[:PORT] [--identity FILE] [--known-hosts FILE]
         [--accept-new-host-key] [--no-probe]: connects once (host key verified, python3 and
         root or sudo checked) before recording the host
list     the hosts, their targets and host-key fingerprints ([--json])
remove   NAME
import   INVENTORY: every host of an Ansible INI or YAML inventory
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pgrig.cli.common import JsonOpt, err_console, print_json, print_wide
from pgrig.errors import PgrigError


def register(app: typer.Typer) -> None:
    app.command("add")(add_cmd)
    app.command("list")(list_cmd)
    app.command("remove")(remove_cmd)
    app.command("import")(import_cmd)
    app.command("provision")(provision_cmd)


def add_cmd(
    name: Annotated[str, typer.Argument(help="The host's name in pgrig (db1, c1, ...).")],
    ssh_target: Annotated[
        str, typer.Option("--ssh", help="USER@ADDRESS[:PORT] (key authentication only).")
    ],
    identity: Annotated[
        Path | None, typer.Option("--identity", help="Private key file (its path is stored).")
    ] = None,
    known_hosts: Annotated[
        Path | None,
        typer.Option("--known-hosts", help="known_hosts file (default ~/.ssh/known_hosts)."),
    ] = None,
    accept_new_host_key: Annotated[
        bool,
        typer.Option(
            "--accept-new-host-key",
            help="Record the host's key when known_hosts has none for it (a changed key is "
            "refused all the same).",
        ),
    ] = False,
    no_probe: Annotated[
        bool, typer.Option("--no-probe", help="Record the host without connecting to it.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Add a host reached over SSH."""
    from pgrig.hosts import registry, ssh

    user, address, port = registry.parse_ssh_target(ssh_target)
    host = registry.Host(
        name=name,
        user=user,
        address=address,
        port=port,
        identity=str(identity.expanduser().resolve()) if identity else None,
        known_hosts=str(known_hosts.expanduser().resolve()) if known_hosts else None,
    )
    if registry.exists(name):
        raise PgrigError(f"host {name!r} exists already (`pgrig host remove` it first)")
    info = None
    if not no_probe:
        with err_console().status(f"connecting to {host.target}…"):
            info = ssh.probe(host, accept_new_host_key=accept_new_host_key)
        ssh.require_usable(host, info)
    registry.add(host)
    doc = {**host.to_json(), "probe": info.to_json() if info else None}
    if as_json:
        print_json(doc)
        return
    what = f": {info.os_release}, python {info.python3}" if info else " (not probed)"
    err_console().print(f"host {name} added ({host.target}{what})", highlight=False)


def list_cmd(as_json: JsonOpt = False) -> None:
    """The hosts pgrig knows."""
    from pgrig.hosts import registry, ssh

    hosts = registry.all_hosts()
    rows: list[dict[str, Any]] = [
        {**h.to_json(), "host_key": ssh.fingerprint_line(h)} for h in hosts
    ]
    if as_json:
        print_json({"hosts": rows})
        return
    if not rows:
        err_console().print("no hosts (this machine is implicit); add one with `pgrig host add`")
        return
    from rich.table import Table

    t = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("name", "ssh", "identity", "known_hosts", "host key"):
        t.add_column(col, overflow="fold")
    for h, row in zip(hosts, rows, strict=True):
        t.add_row(
            h.name,
            h.target,
            h.identity or "(agent / ~/.ssh)",
            str(h.known_hosts_path),
            row["host_key"],
        )
    print_wide(t)


def remove_cmd(name: Annotated[str, typer.Argument(help="The host's name.")]) -> None:
    """Forget a host (nothing on the host is touched)."""
    from pgrig.hosts import registry

    registry.remove(name)
    err_console().print(f"host {name} removed")


def import_cmd(
    inventory: Annotated[Path, typer.Argument(help="An Ansible inventory, INI or YAML.")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite hosts that exist already.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Add every host of an Ansible inventory (no connection is made: `host check --on` does)."""
    from pgrig.hosts import inventory as inv
    from pgrig.hosts import registry

    hosts = inv.read(inventory)
    clashes = [h.name for h in hosts if registry.exists(h.name)]
    if clashes and not replace:
        raise PgrigError(
            f"hosts exist already: {', '.join(clashes)} (pass --replace to overwrite them)"
        )
    for h in hosts:
        registry.add(h, replace=replace)
    if as_json:
        print_json({"hosts": [h.to_json() for h in hosts]})
        return
    for h in hosts:
        err_console().print(f"host {h.name} added ({h.target})", highlight=False)


def provision_cmd(
    name: Annotated[str, typer.Argument(help="The host's name.")],
    pg: Annotated[
        list[str] | None,
        typer.Option("--pg", help="PostgreSQL version(s) to install there (18, 18.6): repeatable."),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Show what would change; change nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Install on a host what pgrig needs (Ansible): PostgreSQL, pgbench, psql, pgbouncer,
    the OS user, directories and pgrig itself, all pushed from this machine."""
    from pgrig.hosts import provisioning, registry
    from pgrig.provision.server import binaries

    host = registry.get(name)
    builds = [binaries.pushable_build(spec, name) for spec in pg or ["18"]]
    say = err_console()
    with say.status(f"provisioning {name}{' (check only)' if check else ''}…"):
        doc = provisioning.provision(host, builds, check=check)
    if as_json:
        print_json(doc)
        return
    verb = "would change" if check else "changed"
    if doc["changed"]:
        say.print(f"host {name}: {verb}:", highlight=False)
        for c in doc["changed"]:
            say.print(f"  {c}", highlight=False, markup=False)
    else:
        say.print(f"host {name}: nothing to change", highlight=False)
    say.print(
        f"host {name}: PostgreSQL {', '.join(doc['pg'])}, pgbouncer {doc['pgbouncer']}, "
        f"pgrig {doc['pgrig']} ({doc['elapsed_s']} s)",
        highlight=False,
    )
