"""pgrig profile commands: list the profiles, show what one would set on a given machine and why."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich.markup import escape
from rich.table import Table

from pgrig.cli.common import ArchiveOpt, out_console, print_json
from pgrig.provision.settings import profiles

app = typer.Typer(no_args_is_help=True)

DEFAULT_MAJOR = 18


@app.command("list")
def list_cmd(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List shipped and user profiles (user ones live in <home>/profiles/*.toml)."""
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
    checked = _check_values(r.settings, pg)
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


def _check_values(settings: dict[str, str], major: int) -> str:
    """Every value through the real parser of an installed PostgreSQL `major`, as env create
    would; a value it refuses is an error naming the setting. Returns what was checked."""
    from pgrig.errors import PgrigError
    from pgrig.provision.server import binaries
    from pgrig.provision.settings import catalog, validator

    if not settings:
        return "nothing to check"
    try:
        bindir, version = binaries.find_bindir(major)
    except PgrigError:
        return f"values not checked: PostgreSQL {major} is not installed (pgrig pg install {major})"
    cat = catalog.load_catalog(bindir, version)
    norm = validator.normalize(settings)
    try:
        validator.validate(bindir, major, cat, norm)
    except PgrigError as e:
        raise PgrigError(f"profile values refused by PostgreSQL {version}: {e}") from None
    return f"values checked by PostgreSQL {version}'s own parser"


@app.command("save")
def save_cmd(
    name: str = typer.Argument(..., help="Name of the new profile."),
    from_study: str = typer.Option(..., "--from-study", help="A tuning study (`pgrig tune`)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing user profile."),
    archive: ArchiveOpt = None,
) -> None:
    """Save the best configuration of a tuning study as a profile (<home>/profiles/NAME.toml)."""
    from pgrig.archive.store import Archive
    from pgrig.errors import PgrigError

    rec = Archive(archive).get_study(from_study)
    best = rec.extra.get("best") if rec.kind == "tune" else None
    if rec.kind != "tune":
        raise PgrigError(f"--from-study {from_study}: a {rec.kind} study, not a tuning study")
    if not best:
        raise PgrigError(f"--from-study {from_study}: no trial completed, there is no best")
    notes = [
        f"best trial {best['trial'] + 1} (run {best.get('run_id')}) of tuning study {from_study}",
        "the environment's own settings (env --set) are not part of it",
    ] + [n for n in rec.extra.get("notes") or [] if n.startswith("UNSAFE")]
    path = profiles.save_profile(
        name, dict(best["settings"]), f"tuned by pgrig tune ({from_study})", notes, force
    )
    out_console().print(f"profile {escape(name)} saved: {path}", highlight=False, soft_wrap=True)
