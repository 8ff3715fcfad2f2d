"""Datasets: generating one (`pgrig db generate` and studies alike), and what data each
database of an environment holds (<env dir>/datasets.json).

The record is read by the runner so every run records its scenario, scale and the generation
cost next to its results, and by studies to skip generating data that is already there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pgrig import safe_write
from pgrig.errors import Interrupted, PgrigError, is_interruption
from pgrig.format import pgrig_command
from pgrig.provision.state.environment import Environment
from pgrig.record.doc_read import read_document
from pgrig.record.documents import DatasetDoc
from pgrig.request import DatasetRequest

Progress = Callable[[float, float, str], None]  # (done, total, phase)


def generate(
    env: Environment, request: DatasetRequest, progress: Progress | None = None
) -> DatasetDoc:
    """Generate the requested data (replacing what the scenario's tables held) and record it.

    The database's record is marked incomplete before anything is loaded and complete once
    everything is (a killed or failed generate leaves it incomplete: runs refuse it). A
    database this call created is dropped again if the generation fails."""
    from pgrig.workloads import database

    dbname = request.database or env.default_database
    _check_room(env, request)
    marker: DatasetDoc = {"scenario": request.scenario, "complete": False,
                          "command": _again(env, dbname, request)}  # fmt: skip
    old_defines = None
    if request.scenario == "sysbench" and request.script is not None:
        from pgrig.workloads import sysbench_dataset

        _label, path, facts = sysbench_dataset.checked_script(Path(request.script), request.defines)
        old_defines = sysbench_dataset.cleanup_defines(env, dbname, path, get(env, dbname))
        # a prepare that fails or is killed leaves tables: its script may clean them up later
        marker |= {"script": str(path), "script_sha256": facts.sha256,
                   "defines": dict(request.defines)}  # fmt: skip
    created = database.ensure_database(env, dbname)
    record(env, dbname, {**marker, "pid": os.getpid()})
    try:
        info = _generate(env, dbname, request, progress, old_defines)
    except BaseException as e:
        dropped = False
        if created:  # nothing of it was there before: nothing of it stays
            with contextlib.suppress(Exception):
                database.drop_database(env, dbname)
                forget(env, dbname)
                dropped = True
        if is_interruption(e):
            raise GenerateInterrupted(
                interrupted_text(
                    env.name, dbname, request.scenario, created, dropped, marker["command"]
                )
            ) from None
        raise
    record(env, dbname, {**info, "complete": True})
    return info


class GenerateInterrupted(Interrupted):
    """Ctrl-C or a signal stopped a generate; the message says what was left or cleaned."""


def interrupted_text(
    env: str, dbname: str, scenario: str, created: bool, dropped: bool, again: str
) -> str:
    """What an interrupted generate left: the database it made dropped again, or the data
    of a database that was there, recorded incomplete (runs refuse it); `again` is the
    generate that was asked, to run again."""
    what = f"generating {scenario} data in {env}/{dbname} was interrupted"
    if created and dropped:
        return f"{what}; database {dbname}, made by this generate, was dropped again"
    if created:
        ident = '"' + dbname.replace('"', '""') + '"'  # as SQL names it
        drop = pgrig_command("env", "psql", env, "--", "-c", f"DROP DATABASE {ident}")
        return (
            f"{what}; database {dbname}, made by this generate, could not be dropped: "
            f"generate again, or drop it ({drop})"
        )
    return (
        f"{what}; its {scenario} tables are partly loaded and recorded incomplete (runs refuse "
        f"them): generate again ({again})"
    )


def _check_room(env: Environment, request: DatasetRequest) -> None:
    """pgbench and TPC-H data that cannot fit on the data directory's file system is refused
    before anything is dropped or loaded (a load that fills the disk stops the server)."""
    if request.scenario not in ("pgbench", "tpch") or not env.managed or not env.datadir.is_dir():
        return  # the other scenarios' sizes are not measured; an external server's disk unseen
    from pgrig.format import size

    if request.scenario == "tpch":
        from pgrig.workloads.tpch import BYTES_PER_SF

        flag, scale, per, unit = "--scale-factor", request.scale_factor or 1, BYTES_PER_SF, "SF"
    else:
        from pgrig.workloads.pgbench_data import BYTES_PER_SCALE

        flag, scale, per, unit = "--scale", request.scale or 1, BYTES_PER_SCALE, "scale unit"
    free = shutil.disk_usage(env.datadir).free
    if scale * per > free:
        raise PgrigError(
            f"{flag} {_as_given(scale)} needs about {size(int(scale * per))} (about "
            f"{size(per)} per {unit}, tables and keys); the file system of "
            f"{env.datadir} has {size(free)} free"
        )


def _as_given(scale: float) -> str:
    """A scale as the user typed it: 99999999, not the 1e+08 of :g (a float SF: 0.01)."""
    return str(scale) if isinstance(scale, int) else f"{scale:g}"


def _generate(
    env: Environment,
    dbname: str,
    request: DatasetRequest,
    progress: Progress | None,
    old_defines: dict[str, str] | None = None,
) -> DatasetDoc:
    if request.scenario == "pgbench":
        from pgrig.workloads import pgbench_data

        info = pgbench_data.generate(env, dbname, request.scale or 1, request.partitions, progress)
    elif request.scenario in ("tpcc", "chbench"):  # CH-benCHmark: TPC-C's load, then its own
        from pgrig.workloads import chbench, database, tpcc

        database.ensure_database(env, dbname)
        load = tpcc.generate if request.scenario == "tpcc" else chbench.generate
        info = load(
            env.conninfo(dbname),
            warehouses=request.warehouses or 1,
            jobs=request.jobs or 2,
            partition=request.partition,
            progress=progress,
        )
        info = {"scenario": request.scenario, **info}
    elif request.scenario == "tpch":
        from pgrig.workloads import tpch

        info = tpch.generate(
            env.conninfo(dbname), request.scale_factor or 1.0, request.jobs or 2, progress
        )
        info = {"scenario": "tpch", **info}
    elif request.scenario == "tickets":
        from pgrig.workloads import tickets

        info = tickets.generate(
            env, dbname, rows=request.rows or tickets.DEFAULT_ROWS, jobs=request.jobs or 2,
            progress=progress,
        )  # fmt: skip
    elif request.scenario == "sysbench" and request.script is not None:
        from pgrig.workloads import sysbench_dataset

        info = sysbench_dataset.prepare(
            env, dbname, Path(request.script), request.defines, request.jobs or 1, progress,
            old_defines=old_defines,
        )  # fmt: skip
    elif request.scenario == "sysbench":
        from pgrig.workloads import sysbench

        info = sysbench.generate(
            env, dbname, request.tables or 1, request.table_size or 10_000, progress,
            jobs=request.jobs or 1,
        )  # fmt: skip
    else:
        from pgrig.workloads import custom_sql

        info = custom_sql.generate(env, dbname, Path(request.sql or ""))
    return info


def matches(info: DatasetDoc | None, request: DatasetRequest) -> bool:
    """Whether a recorded dataset is the requested one (then a study need not generate it)."""
    if not info or info.get("scenario") != request.scenario or not is_complete(info):
        return False
    if request.scenario == "pgbench":
        return info.get("scale") == request.scale and info.get("partitions") == request.partitions
    if request.scenario in ("tpcc", "chbench"):
        return info.get("warehouses") == request.warehouses
    if request.scenario == "tickets":
        return info.get("rows") == request.rows
    if request.scenario == "tpch":
        return info.get("scale_factor") == request.scale_factor
    if request.scenario == "sysbench" and request.script is not None:
        from pgrig.workloads import sysbench_lua

        script = Path(request.script).expanduser().resolve()
        same = info.get("script") == str(script) or (
            script.is_file() and info.get("script_sha256") == sysbench_lua.sha256_of(script)
        )
        return same and info.get("defines") == request.defines
    if request.scenario == "sysbench":
        return (
            not info.get("script")
            and info.get("tables") == request.tables
            and info.get("table_size") == request.table_size
        )
    return info.get("sql") == str(Path(request.sql or "").resolve())


def _file(env: Environment) -> Path:
    return env.dir / "datasets.json"


def load_all(env: Environment) -> dict[str, DatasetDoc]:
    """Every database's dataset. An environment on another host (`env create --on`) has its
    datasets recorded there, by the host's pgrig that generated them: they are read through it
    (`env show --json`), newest record per database winning over one kept here."""
    local = _load_local(env)
    if env.kind != "remote" or not env.on:
        return local
    return merged(local, _on_host(env))


def _load_local(env: Environment) -> dict[str, DatasetDoc]:
    f = _file(env)
    if not f.exists():
        return {}
    return _checked(json.loads(f.read_text()))


def _checked(raw: object) -> dict[str, DatasetDoc]:
    """Each database's record as its declared document (record/doc_read.py), once, where it
    is read: a value that is no record (a damaged file) is left out."""
    if not isinstance(raw, dict):
        return {}
    return {str(k): read_document(DatasetDoc, v) for k, v in raw.items() if isinstance(v, dict)}


def _on_host(env: Environment) -> dict[str, DatasetDoc]:
    """The datasets the host's pgrig recorded (empty when it cannot tell: an older pgrig there,
    or the host unreachable, which the run's own connection then reports)."""
    from pgrig.hosts import registry, remote

    try:
        shown = remote.run_json(registry.get(str(env.on)), ["env", "show", env.name, "--json"])
    except PgrigError:
        return {}
    return _checked(shown.get("datasets") if isinstance(shown, dict) else None)


def merged(here: dict[str, DatasetDoc], there: dict[str, DatasetDoc]) -> dict[str, DatasetDoc]:
    """Per database, the most recently generated record of the two (ISO UTC times compare as
    text); a record without a time loses to one with."""
    out = dict(here)
    for db, info in there.items():
        mine = out.get(db)
        if mine is None or str(info.get("generated_at") or "") >= str(
            mine.get("generated_at") or ""
        ):
            out[db] = info
    return out


def get(env: Environment, dbname: str) -> DatasetDoc | None:
    return load_all(env).get(dbname)


def is_complete(info: DatasetDoc) -> bool:
    """Whether a recorded dataset finished loading (records older than the mark did)."""
    return info.get("complete", True) is not False


def _again(env: Environment, dbname: str, request: DatasetRequest) -> str:
    """The `pgrig db generate` of `request`, pasted from any directory: its database named,
    its files absolute."""
    from pgrig.request.fields import as_flags

    files = {
        k: str(Path(v).expanduser().resolve())
        for k in ("script", "sql")
        if isinstance(v := getattr(request, k), str)
    }
    asked = request.model_copy(update={"database": dbname, **files})
    return pgrig_command("db", "generate", env.name, *as_flags(asked))


def usable(env: Environment, dbname: str) -> DatasetDoc | None:
    """The dataset a run may use (None: not generated by pgrig); a partial one is refused,
    naming the command that makes it (as it was asked, when the record keeps it)."""

    info = get(env, dbname)
    if info is not None and not is_complete(info):
        again = info.get("command") or pgrig_command(
            "db", "generate", env.name, "--db", dbname, rest="..."
        )
        raise PgrigError(
            f"database {dbname!r} of {env.name} holds an incomplete {info.get('scenario')} "
            f"dataset (its `pgrig db generate` failed or was killed, at "
            f"{info.get('generated_at')}): run `{again}` again"
        )
    return info


def forget(env: Environment, dbname: str) -> None:
    data = _load_local(env)
    if data.pop(dbname, None) is not None:
        _write(env, data)


def record(env: Environment, dbname: str, info: DatasetDoc) -> None:
    data = _load_local(env)
    data[dbname] = {**info, "generated_at": datetime.now(UTC).isoformat(timespec="seconds")}
    _write(env, data)


def _write(env: Environment, data: dict[str, DatasetDoc]) -> None:
    env.dir.mkdir(parents=True, exist_ok=True)
    safe_write.write_text(_file(env), json.dumps(data, indent=2, sort_keys=True))
