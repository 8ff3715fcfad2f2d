"""sysbench data and the workloads that read it agree.

A database's sysbench dataset (datasets.json) is either sysbench's bundled one (`db generate
--scenario sysbench --tables N --table-size N`: oltp_common.lua's sbtest1..N) or a script's
own (`db generate --scenario sysbench --script PATH.lua --define k=v`: the script's `prepare`
with those options, recorded with the script's path, content hash and the defines).

A sysbench run gets, from the dataset, the options its script declares (sysbench refuses the
others): the bundled dataset's tables and table_size, or the defines a script's data was
prepared with, so a run needs no repeated --define. What cannot agree is refused before anything
is made: sysbench data of another script, a --define that contradicts the data, or a database
whose dataset is not sysbench's at all (a run would read whatever tables are left there).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.state.environment import Environment
from pgrig.provision.system.child_process import die_with_parent
from pgrig.record.documents import DatasetDoc
from pgrig.workloads import sysbench, sysbench_lua
from pgrig.workloads.sysbench_lua import ScriptFacts, option_key

Progress = sysbench.Progress


@dataclass
class RunOptions:
    """The Lua options a run passes, and what the run should warn about."""

    options: list[str]
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (code, message)


def run_options(
    binary: str,
    label: str,
    script: Path,
    defines: dict[str, str],
    dataset: DatasetDoc | None,
    where: tuple[str, str],
) -> RunOptions:
    """The run's --NAME=VALUE options; where: (environment, database) for the messages."""
    facts = sysbench_lua.describe(binary, script)
    sysbench_lua.check_defines(facts, label, defines)
    if not dataset:  # data made by hand (or none): the defines say it all
        return RunOptions(sysbench_lua.as_options(defines))
    if dataset.get("scenario") != "sysbench":
        raise PgrigError(_not_sysbench_data(label, dataset, where))
    warnings: list[tuple[str, str]] = []
    if dataset.get("script"):
        warnings += _same_script(label, facts, dataset, where)
        from_data = {str(k): str(v) for k, v in (dataset.get("defines") or {}).items()}
    else:  # the bundled prepare's sbtest tables: the options of the scripts that read them
        from_data = {
            "tables": str(dataset.get("tables") or sysbench.DEFAULT_TABLES),
            "table_size": str(dataset.get("table_size") or sysbench.DEFAULT_TABLE_SIZE),
        }
        from_data = {k: v for k, v in from_data.items() if facts.declares(k)}
    given = {option_key(k): (k, v) for k, v in defines.items()}
    for name, value in from_data.items():
        mine = given.get(option_key(name))
        if mine is not None and mine[1] != value:
            raise PgrigError(
                f"--define {mine[0]}={mine[1]}: database {where[1]!r} of {where[0]} holds "
                f"{describe_dataset(dataset)}; leave --define {mine[0]} out, or prepare the "
                "data again: "
                f"{generate_command(where, dataset, {name: mine[1]})}"
            )
    values = dict(from_data)
    for name, value in defines.items():
        if not any(option_key(name) == option_key(k) for k in from_data):
            values[name] = value
    return RunOptions(sysbench_lua.as_options(values), warnings)


def _same_script(
    label: str, facts: ScriptFacts, dataset: DatasetDoc, where: tuple[str, str]
) -> list[tuple[str, str]]:
    """The run's script must be the one that prepared the data: the same file, or a file of
    the same content (a copy, or the one a remote host's pgrig was given)."""
    recorded = Path(str(dataset.get("script")))
    same_file = recorded == facts.path
    same_content = dataset.get("script_sha256") == facts.sha256
    if same_content:
        return _modules_changed(facts, dataset, where)
    if same_file:  # edited since: it may still read the data it made
        return [
            (
                "script_changed",
                f"{facts.path.name} changed since it prepared the data of {where[0]}/{where[1]} "
                f"({describe_dataset(dataset)})",
            )
        ]
    # two files of one name would read "holds the data of x.lua, not the data of x.lua"
    which = (
        f" ({facts.path}: another file, of other content)"
        if recorded.name == facts.path.name
        else ""
    )
    # the workload to run is pasted after -w: quoted as a command's argument is
    run = shlex.quote(f"{sysbench.PREFIX}{recorded}")
    raise PgrigError(
        f"database {where[1]!r} of {where[0]} holds {describe_dataset(dataset)}, not the data "
        f"of {label}{which}: run {run}, or prepare this workload's data: "
        f"{generate_command(where, _data_of(facts.path), {})}"
    )


def _modules_changed(
    facts: ScriptFacts, dataset: DatasetDoc, where: tuple[str, str]
) -> list[tuple[str, str]]:
    """The script is the one that prepared the data, but a module beside it may have been
    edited, added or removed since (data prepared before pgrig recorded modules: unknown)."""
    before = dataset.get("modules_sha256")
    if before is None or before == facts.modules:
        return []
    edited = sorted(
        n for n in facts.modules.keys() & before.keys() if facts.modules[n] != before[n]
    )
    added = sorted(facts.modules.keys() - before.keys())
    removed = sorted(before.keys() - facts.modules.keys())
    said = "; ".join(
        f"{', '.join(names)} {how}"
        for names, how in ((edited, "edited"), (added, "added"), (removed, "removed"))
        if names
    )
    return [
        (
            "script_changed",
            f"the modules beside {facts.path.name} changed since it prepared the data of "
            f"{where[0]}/{where[1]} ({describe_dataset(dataset)}): {said}",
        )
    ]


def _data_of(script: Path) -> DatasetDoc:
    """The dataset a script reads: its own, or the bundled oltp tests' sbtest tables."""
    return {} if script.parent == sysbench.BUNDLED_DIR else {"script": str(script)}


def _not_sysbench_data(label: str, dataset: DatasetDoc, where: tuple[str, str]) -> str:
    return (
        f"database {where[1]!r} of {where[0]} holds {describe_dataset(dataset)}, not sysbench "
        f"data: {label} would read whatever tables are left there. Generate sysbench data "
        "first: "
        + pgrig_command(
            "db",
            "generate",
            where[0],
            "--db",
            where[1],
            "--scenario",
            "sysbench",
            rest="[--tables N --table-size N | --script PATH.lua --define NAME=VALUE]",
        )
    )


def describe_dataset(dataset: DatasetDoc) -> str:
    """For people: "a pgbench dataset of scale 2, generated 2026-11-28T10:00:00+00:00"."""
    scenario = dataset.get("scenario")
    if scenario == "sysbench" and dataset.get("script"):
        defines = " ".join(f"{k}={v}" for k, v in (dataset.get("defines") or {}).items())
        name = dataset.get("script_name") or Path(str(dataset["script"])).name
        what = f"the data of {name} prepared with {defines or 'its default options'}"
    elif scenario == "sysbench":
        what = (
            f"sysbench's oltp data ({dataset.get('tables')} tables of "
            f"{dataset.get('table_size')} rows)"
        )
    elif scenario == "pgbench":
        what = f"a pgbench dataset of scale {dataset.get('scale')}"
    elif scenario == "tpcc":
        what = f"a tpcc dataset of {dataset.get('warehouses')} warehouses"
    else:
        what = f"a {scenario} dataset"
    when = dataset.get("generated_at")
    return f"{what}, generated {when}" if when else what


def generate_command(where: tuple[str, str], dataset: DatasetDoc, changed: dict[str, str]) -> str:
    """The `pgrig db generate` that makes the data a run asks for."""
    argv = ["pgrig", "db", "generate", where[0], "--db", where[1], "--scenario", "sysbench"]
    if dataset.get("script"):
        argv += ["--script", str(dataset["script"])]
        defines = {**{str(k): str(v) for k, v in (dataset.get("defines") or {}).items()}}
        for name, value in changed.items():
            defines = {k: v for k, v in defines.items() if option_key(k) != option_key(name)}
            defines[name] = value
        for name, value in defines.items():
            argv += ["--define", f"{name}={value}"]
    else:
        sizes = {
            "tables": str(dataset.get("tables") or sysbench.DEFAULT_TABLES),
            "table_size": str(dataset.get("table_size") or sysbench.DEFAULT_TABLE_SIZE),
        }
        sizes |= {option_key(k): v for k, v in changed.items()}
        argv += ["--tables", sizes["tables"], "--table-size", sizes["table_size"]]
    return pgrig_command(*argv[1:])


# --- the script's own commands ---------------------------------------------------------------


def checked_script(script: Path, defines: dict[str, str]) -> tuple[str, Path, ScriptFacts]:
    """(label, path, declarations) of a script that can prepare data with these defines;
    refused otherwise (before any database or record is made)."""
    binary = sysbench.binary()
    label, path = sysbench.script_path(f"{sysbench.PREFIX}{script}")
    facts = sysbench_lua.describe(binary, path)
    sysbench_lua.check_defines(facts, label, defines)
    if "prepare" not in facts.commands:
        raise PgrigError(
            f"{label} declares no prepare command (its commands: {_commands(facts)}): pgrig "
            "cannot make its data"
        )
    return label, path, facts


def same_script(dataset: DatasetDoc | None, path: Path, sha256: str) -> bool:
    """Whether the dataset is (or was being) prepared by this script: the same file or the
    same content."""
    if not dataset or dataset.get("scenario") != "sysbench" or not dataset.get("script"):
        return False
    return Path(str(dataset["script"])) == path or dataset.get("script_sha256") == sha256


def cleanup_defines(
    env: Environment,
    dbname: str,
    script: Path,
    previous: DatasetDoc | None,
) -> dict[str, str] | None:
    """Before a script prepares data in a database that already holds tables: the options
    its cleanup must get to drop them (those the same script prepared them with: generating
    again with tables=1 after tables=4 drops all four), or a refusal when the tables are not
    this script's. A script's prepare creates its tables beside whatever is there, and some
    count every table of the database (sysbench-tpcc's prepare waits until it sees exactly
    its own 9 per table set, and would never end). None: nothing there."""
    from pgrig.workloads import database

    path = script.expanduser().resolve()
    with database.connect(env, "postgres") as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone():
            return None
    with database.connect(env, dbname) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_catalog.pg_tables "
            "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchone()
    tables = int(row[0]) if row else 0
    if tables == 0:
        return None
    if same_script(previous, path, sysbench_lua.sha256_of(path)):
        assert previous is not None
        return {str(k): str(v) for k, v in (previous.get("defines") or {}).items()}
    held = describe_dataset(previous) if previous else "tables of no dataset pgrig recorded"
    raise PgrigError(
        f"database {dbname!r} of {env.name} holds {tables} table{'s' if tables != 1 else ''} "
        f"({held}): the prepare of {path.name} would add its tables beside them, and a script "
        "may count or read every table there (the prepare of sysbench-tpcc then never ends). "
        "Prepare its data into a database of its own: "
        + pgrig_command(
            "db",
            "generate",
            env.name,
            "--db",
            "NAME",  # a placeholder shlex leaves as written, where the command always had it
            "--scenario",
            "sysbench",
            "--script",
            path,
            rest="[--define NAME=VALUE]",
        )
    )


def prepare(
    env: Environment,
    dbname: str,
    script: Path,
    defines: dict[str, str],
    jobs: int,
    progress: Progress | None = None,
    old_defines: dict[str, str] | None = None,
) -> DatasetDoc:
    """The script's `prepare` with the defines as its options (its `cleanup` first, where it
    declares one, so that generating again replaces the data; with old_defines, the options
    the data there was prepared with: cleanup_defines)."""
    from pgrig.workloads import database

    binary = sysbench.binary()
    label, path, facts = checked_script(script, defines)
    database.ensure_database(env, dbname)
    start = time.monotonic()
    if "cleanup" in facts.commands:
        if progress:
            progress(0, 2, "cleanup")
        # its failure is no matter: before a first prepare there is nothing to drop
        for options in [old_defines, defines] if old_defines is not None else [defines]:
            _command(env, dbname, binary, path, options, "cleanup", 1)
    if progress:
        progress(1, 2, "prepare")
    proc = _command(env, dbname, binary, path, defines, "prepare", jobs)
    if proc.returncode != 0:
        raise PgrigError(f"{label} prepare failed: {_failure(proc)}")
    seconds = time.monotonic() - start
    with database.connect(env, dbname) as conn:
        conn.execute("ANALYZE")
    if progress:
        progress(2, 2, "done")
    return {
        "scenario": "sysbench",
        "script": str(path),
        "script_name": label,
        "script_sha256": facts.sha256,
        "modules_sha256": dict(facts.modules),
        "defines": dict(defines),
        "commands": sorted(facts.commands),
        "jobs": jobs,
        "sysbench_version": sysbench.version(binary),
        "seconds": round(seconds, 3),
        "size_bytes": database.database_size(env, dbname),
    }


@dataclass
class CheckResult:
    script: str
    passed: bool
    output: list[str]
    seconds: float


def check(env: Environment, dbname: str, dataset: DatasetDoc | None) -> CheckResult:
    """The script's `check` command against the data it prepared, with the same options; it
    fails when sysbench exits non-zero (a Lua error) or a line says FAILED."""
    where = (env.name, dbname)
    if not dataset or dataset.get("scenario") != "sysbench":
        raise PgrigError(
            f"database {dbname!r} of {env.name} holds no sysbench dataset"
            + (f" ({describe_dataset(dataset)})" if dataset else "")
            + ": nothing to check with a sysbench script ("
            + pgrig_command(
                "db",
                "generate",
                env.name,
                "--db",
                dbname,
                "--scenario",
                "sysbench",
                rest="--script PATH.lua",
            )
            + ")"
        )
    binary = sysbench.binary()
    if not dataset.get("script"):
        facts = sysbench_lua.describe(binary, sysbench.BUNDLED_DIR / "oltp_read_write.lua")
        raise PgrigError(
            f"the data of {where[0]}/{where[1]} is sysbench's bundled oltp data, and its "
            f"scripts declare no check command (their commands: {_commands(facts)})"
        )
    path = Path(str(dataset["script"]))
    if not path.is_file():
        raise PgrigError(
            f"the script that prepared {where[0]}/{where[1]} is gone ({path}): "
            f"prepare the data again ({generate_command(where, dataset, {})})"
        )
    facts = sysbench_lua.describe(binary, path)
    label = str(dataset.get("script_name") or f"{sysbench.PREFIX}{path.name}")
    if "check" not in facts.commands:
        raise PgrigError(
            f"{label} declares no check command (its commands: {_commands(facts)}): "
            "nothing to check its data with"
        )
    defines = {str(k): str(v) for k, v in (dataset.get("defines") or {}).items()}
    start = time.monotonic()
    proc = _command(env, dbname, binary, path, defines, "check", 1)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if not _banner(ln)]
    return CheckResult(
        label, passed(proc.returncode, lines), lines, round(time.monotonic() - start, 3)
    )


# sysbench-tpcc's check prints "Check 2, warehouse: 1 FAILED!!!" and exits 0
_SAID_FAILED = re.compile(r"\bFAILED\b")


def passed(returncode: int, lines: list[str]) -> bool:
    """A check passes when sysbench exits 0 and no line of the script's says FAILED (scripts
    that print their verdicts and do not raise an error)."""
    return returncode == 0 and not any(_SAID_FAILED.search(line) for line in lines)


def _command(
    env: Environment,
    dbname: str,
    binary: str,
    script: Path,
    defines: dict[str, str],
    command: str,
    threads: int,
) -> subprocess.CompletedProcess[str]:
    argv = [
        binary, str(script), *sysbench.DRIVER_ARGS, f"--threads={threads}",
        *sysbench_lua.as_options(defines), command,
    ]  # fmt: skip
    return subprocess.run(
        argv, env=sysbench_lua.process_env(script, env.client_process_env(dbname)),
        capture_output=True, text=True, check=False,
        preexec_fn=die_with_parent,  # a killed pgrig leaves no prepare loading on
    )  # fmt: skip


def _failure(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    fatal = [ln for ln in lines if "FATAL" in ln or "error" in ln.lower()]
    return (fatal or lines or [f"exit {proc.returncode}"])[-1]


def _banner(line: str) -> bool:
    return (line.startswith("sysbench ") and "LuaJIT" in line) or not line.strip()


def _commands(facts: ScriptFacts) -> str:
    return ", ".join(sorted(facts.commands)) or "none"
