"""`pgrig host`: check the machine under the benchmark, tune it, and put it back.

check    every host check (value, recommended, status, why); changes nothing
tune     the exact changes a profile makes (path, old -> new); --apply makes them, as root,
         after saving the previous values in the pgrig home
restore  puts every changed value back and removes the saved state
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pgrig.cli.common import JsonOpt, err_console, print_json, print_wide

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from rich.table import Table

app = typer.Typer(no_args_is_help=True)

OnOpt = Annotated[
    str | None,
    typer.Option("--on", help="On this host (`pgrig host add`); the values are recorded for it."),
]
_STYLE = {"ok": "green", "warn": "yellow", "unavailable": "dim", "changed": "green"}


@app.command("check")
def check_cmd(
    clients: Annotated[
        int | None,
        typer.Option("--clients", "-c", min=1, help="Planned clients (checked against ulimit -n)."),
    ] = None,
    server_cpus: Annotated[
        str | None,
        typer.Option(
            "--server-cpus", help="Planned server CPUs: a list (0-1) or a count (2cores)."
        ),
    ] = None,
    client_cpus: Annotated[
        str | None,
        typer.Option(
            "--client-cpus", help="Planned pgbench CPUs: a list (0-1) or a count (2cores)."
        ),
    ] = None,
    as_json: JsonOpt = False,
    on: OnOpt = None,
) -> None:
    """How the host is prepared for benchmarking: each check, what is recommended, and why."""
    from pgrig.machine.checks import Context, run_checks

    if on is not None:
        argv = ["host", "check", "--json"]
        for flag, value in (("--clients", clients), ("--server-cpus", server_cpus),
                            ("--client-cpus", client_cpus)):  # fmt: skip
            if value is not None:
                argv += [flag, str(value)]
        with err_console().status(f"checking host {on}…"):
            doc = _on_host(on, "check", argv)
        if as_json:
            print_json(doc)
        else:
            _print_checks(doc["checks"])
        return
    from pgrig.load.core import pinning

    pinned = pinning.placement(server_cpus, client_cpus).sides()
    ctx = Context(clients=clients, pinned=pinned, disks=_disks())
    with err_console().status("checking the host…"):
        checks = run_checks(ctx)
    if as_json:
        print_json({"checks": checks})
        return
    _print_checks(checks)


def _disks() -> list[tuple[str, Path]]:
    """The pgrig home and the data directory of every managed environment."""
    from pgrig import paths
    from pgrig.provision.state.environment import Environment

    envs = [e for e in Environment.all() if e.managed]
    return [("pgrig home", paths.home())] + [(f"data of {e.name}", e.datadir) for e in envs]


def _table(columns: list[str]) -> Table:
    from rich.table import Table
    from rich.text import Text

    t = Table(box=None, header_style="bold", pad_edge=False)
    for name in columns:
        t.add_column(Text(name), overflow="fold", ratio=3 if name == "why" else None)
    return t


def _print_checks(checks: list[dict[str, Any]]) -> None:
    from rich.text import Text

    t = _table(["check", "status", "value", "recommended", "why"])
    for c in checks:
        t.add_row(
            Text(c["name"]),
            Text(c["status"], style=_STYLE.get(c["status"], "")),
            Text(_show(c["value"])),
            Text(_show(c["recommended"])),
            Text(c["why"], style="dim"),
        )
    print_wide(t)
    counts = {s: sum(1 for c in checks if c["status"] == s) for s in ("ok", "warn", "unavailable")}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    err_console().print(
        f"{summary}; `pgrig host tune` shows what it would change", highlight=False, markup=False
    )


def _show(v: object) -> str:
    return "-" if v is None else str(v)


def _only(only: list[str] | None) -> list[str] | None:
    names = [n.strip() for item in only or [] for n in item.split(",") if n.strip()]
    return names or None


@app.command("tune")
def tune_cmd(
    apply: Annotated[
        bool, typer.Option("--apply", help="Make the changes (as root); without it, only show.")
    ] = False,
    profile: Annotated[
        str, typer.Option("--profile", help="pgrig (what `host check` recommends) or tuned-like.")
    ] = "pgrig",
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="Only these settings (check names, e.g. swappiness)."),
    ] = None,
    as_json: JsonOpt = False,
    on: OnOpt = None,
) -> None:
    """The exact changes of a profile (setting, files, old -> new); applied only with --apply."""
    from pgrig.machine import state, tune

    names = _only(only)
    if on is not None:
        argv = ["host", "tune", "--json", "--profile", profile] + (["--apply"] if apply else [])
        for n in names or []:
            argv += ["--only", n]
        doc = _on_host(on, "tune", argv)
        if as_json:
            print_json(doc)
        else:
            _print_remote_changes(on, doc.get("changes", []), doc.get("skipped", []), apply)
        return
    if apply:
        changes, skipped = tune.apply(profile, only=names)
    else:
        changes, skipped = tune.plan(profile, only=names)
    if as_json:
        print_json(
            {
                "profile": profile,
                "applied": apply,
                "changes": [c.as_dict() for c in changes],
                "skipped": [{"name": s.name, "reason": s.reason} for s in skipped],
                "state": str(state.state_path()),
            }
        )
        return
    _print_tune(profile, apply, changes, skipped, state.state_path())


def _print_tune(profile: str, apply: bool, changes: list, skipped: list, saved: Path) -> None:
    from rich.text import Text

    say = err_console()
    if not changes:
        say.print(f"nothing to change: the host matches profile {profile}", highlight=False)
    else:
        t = _table(["setting", "old", "new", "files", "result"])
        for c in changes:
            result = c.status if c.error is None else f"{c.status}: {c.error}"
            t.add_row(
                Text(c.setting),
                Text(_show(c.old)),
                Text(_show(c.new)),
                Text("\n".join(c.files)),
                Text(result, style=_STYLE.get(c.status, "red" if c.error else "")),
            )
        print_wide(t)
    for s in skipped:
        say.print(f"skipped {s.name}: {s.reason}", highlight=False, markup=False)
    if not apply:
        if changes:
            say.print("dry run: nothing changed (--apply makes these changes, as root)")
        return
    if any(c.status == "changed" for c in changes):
        say.print(
            f"previous values saved in {saved}: `pgrig host restore` puts them back",
            highlight=False,
            markup=False,
        )


@app.command("restore")
def restore_cmd(as_json: JsonOpt = False, on: OnOpt = None) -> None:
    """Put back every value `host tune --apply` changed, then remove the saved state."""
    from pgrig.machine import state, tune

    if on is not None:
        doc = _on_host(on, "restore", ["host", "restore", "--json"])
        if as_json:
            print_json(doc)
        else:
            for r in doc.get("restored", []):
                ok = "restored" if r.get("ok") else f"NOT restored ({r.get('error')})"
                err_console().print(f"{on}: {ok} {r.get('name')}", highlight=False, markup=False)
            if doc.get("note"):
                err_console().print(f"{on}: {doc['note']}", highlight=False, markup=False)
        if not doc.get("ok", True):
            sys.exit(1)
        return

    done, note = tune.restore()
    if as_json:
        print_json(
            {
                "restored": [vars(r) for r in done],
                "note": note,
                "ok": all(r.ok for r in done),
            }
        )
    else:
        say = err_console()
        if note:
            say.print(note, highlight=False, markup=False)
        for r in done:
            files = ", ".join(f"{f} = {v}" for f, v in r.files.items())
            line = f"restored {r.name}: {files}" if r.ok else f"NOT restored {r.name}: {r.error}"
            say.print(line, highlight=False, markup=False)
        if not all(r.ok for r in done):
            say.print(
                f"what was not restored stays saved in {state.state_path()}: "
                "`pgrig host restore` tries again",
                highlight=False,
                markup=False,
            )
    if not all(r.ok for r in done):
        sys.exit(1)


def _on_host(name: str, what: str, argv: list[str]) -> dict[str, Any]:
    from pgrig.hosts import remote

    return remote.run_recorded(name, what, argv)


def _print_remote_changes(
    on: str,
    changes: Sequence[Mapping[str, object]],
    skipped: Sequence[Mapping[str, object]],
    applied: bool,
) -> None:
    say = err_console()
    verb = "changed" if applied else "would change"
    for c in changes:
        what = f"{c.get('setting')}: {c.get('old')} -> {c.get('new')}"
        say.print(f"{on}: {verb} {c.get('name')} ({what})", highlight=False, markup=False)
    for sk in skipped:
        say.print(f"{on}: skipped {sk.get('name')}: {sk.get('reason')}", highlight=False)
    if not changes:
        say.print(f"{on}: nothing to change", highlight=False)


# The other machines (`host add/list/remove/import`): their own module.
def _register_hosts() -> None:
    from pgrig.cli import hosts

    hosts.register(app)


_register_hosts()
