"""pgrig profile commands: list the profiles, show what one would set on a given machine and why."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich.markup import escape
from rich.table import Table

from pgrig.cli.common import ArchiveOpt, out_console, print_json

app = typer.Typer(no_args_is_help=True)

DEFAULT_MAJOR = 18


@app.command("list")
def list_cmd(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List shipped and user profiles (user ones live in <home>/profiles/*.toml)."""
    from pgrig.provision.settings import profiles  # lazy: its model costs every command ~80 ms

    infos = profiles.list_profiles()
    damaged = profiles.damaged_profiles()
    if as_json:
        listed = [asdict(i) for i in infos]
        listed += [
            {"name": n, "kind": None, "source": "user", "damaged": e} for n, e in damaged.items()
        ]
        print_json(sorted(listed, key=lambda d: str(d["name"])))
        return
    table = Table("name", "kind", "source", "description")
    for i in infos:
        kind = f"{i.kind} ({i.workload})" if i.workload else i.kind
        desc = escape(i.description)
        if i.warning:
            desc += " [bold red](unsafe / special: see show)[/bold red]"
        table.add_row(escape(i.name), kind, i.source, desc)
    for name, problem in damaged.items():
        table.add_row(escape(name), "[red]damaged[/red]", "user", escape(problem))
    out_console().print(table)


@app.command("show")
def show_cmd(
    name: str = typer.Argument(..., help="Profile name (see `pgrig profile list`)."),
    ram: str | None = typer.Option(None, "--ram", help="RAM, e.g. 16GB (default: this host)."),
    cpus: int | None = typer.Option(None, "--cpus", help="CPU count (default: this host)."),
    storage: str = typer.Option("ssd", "--storage", help="ssd, hdd, san or nvme."),
    pg: int = typer.Option(DEFAULT_MAJOR, "--pg", help="PostgreSQL major version."),
    connections: int | None = typer.Option(
        None, "--connections", help="max_connections (default: the profile's own)."
    ),
    io_uring: bool = typer.Option(
        False, "--io-uring", help="The server build supports io_method=io_uring (18+)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Show the settings a profile would apply, the rule behind each, and what it skips."""
    from pgrig.provision.settings import profiles

    ram_bytes = profiles.parse_size(ram) if ram is not None else None
    r = profiles.explain_profile(
        name,
        pg,
        ram_bytes=ram_bytes,
        cpus=cpus,
        storage=storage,
        max_connections=connections,
        io_uring=io_uring,
    )
    from pgrig.provision import profile_check

    checked = profile_check.check_values(r.settings, pg)
    if as_json:
        print_json(
            {
                "checked": checked,
                "profile": r.name,
                "kind": r.kind,
                "major": r.major,
                "inputs": r.inputs,
                "settings": r.settings,
                "rules": r.rules,
                "skipped": r.skipped,
                "notes": r.notes,
                "warning": r.warning,
            }
        )
        return
    con = out_console()
    gib = r.inputs["ram_bytes"] / 1024**3
    con.print(
        f"[bold]{escape(r.name)}[/bold] ({r.kind}) for PostgreSQL {r.major}, "
        f"RAM {gib:.1f} GiB, {r.inputs['cpus']} CPUs, storage {r.inputs['storage']}",
        highlight=False,
    )
    if r.warning:
        con.print(f"[bold red]WARNING: {escape(r.warning)}[/bold red]")
    if r.settings:
        table = Table("setting", "value", "rule")
        for key, value in r.settings.items():
            table.add_row(key, escape(value), escape(r.rules.get(key, "")))
        con.print(table)
    for note in r.notes:
        if note.startswith("WARNING:"):
            continue  # already shown above, in red
        con.print(f"- {escape(note)}", highlight=False)
    con.print(f"- {escape(checked)}", highlight=False)


@app.command("save")
def save_cmd(
    name: str = typer.Argument(..., help="Name of the new profile."),
    from_study: str = typer.Option(..., "--from-study", help="A tuning study (`pgrig tune`)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing user profile."),
    archive: ArchiveOpt = None,
) -> None:
    """Save the best configuration of a tuning study as a profile (<home>/profiles/NAME.toml)."""
    from pgrig.archive.store import Archive
    from pgrig.provision.settings import profiles
    from pgrig.tune import saved_profile

    settings, description, notes = saved_profile.from_study(Archive(archive), from_study)
    path = profiles.save_profile(name, settings, description, notes, force)
    out_console().print(f"profile {escape(name)} saved: {path}", highlight=False, soft_wrap=True)
