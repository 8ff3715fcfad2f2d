"""What a run checks before anything is archived: where its client connects, its scripts, its data.

Each script file is executed once (`pgbench -n -t 1 -c 1`) against the target: pgbench parses
meta-commands before connecting and the server parses the SQL, so both kinds of mistakes surface
with pgbench's own message. The cost is one transaction per script file.

pgbench's builtin scripts and sysbench's oltp_* tests read the tables `pgrig db generate`
makes: a database without them is refused with the command that makes them (one catalogue
query), instead of a run archived as failed on pgbench's or sysbench's first statement.
"""

from __future__ import annotations

import subprocess

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.state.environment import (
    DEFAULT_DATABASE,
    Environment,
    dbname_arg,
    require_managed,
)
from pgrig.record.documents import DatasetDoc
from pgrig.request import RunRequest

# What `pgbench -i` makes (every builtin reads pgbench_branches' count first) and the first
# table of sysbench's prepare (oltp_common.lua: sbtest1..N).
PGBENCH_TABLES = ("pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history")
SYSBENCH_TABLES = ("sbtest1",)


def check_tables(env: Environment, spec: RunRequest, dbname: str) -> None:
    from pgrig.workloads import database, sysbench

    needed: tuple[str, ...] = ()
    if spec.is_sysbench:
        test = spec.workload.strip().removeprefix(sysbench.PREFIX)
        if test in sysbench.OLTP_TESTS:  # a Lua script of the user's reads its own tables
            needed, scenario = SYSBENCH_TABLES, "sysbench"
    elif spec.scripts and any(s.builtin for s in spec.scripts):
        needed, scenario = PGBENCH_TABLES, "pgbench"
    if not needed:
        return  # a script file runs once (check_scripts); TPC-C checks its own dataset
    query = "SELECT t FROM unnest(%s::text[]) AS t WHERE to_regclass(t) IS NOT NULL"
    with database.connect(env, dbname) as conn:
        found = {row[0] for row in conn.execute(query, (list(needed),)).fetchall()}
    missing = [t for t in needed if t not in found]
    if missing:
        raise PgrigError(
            f"database {dbname!r} of {env.name} has no {', '.join(missing)}: generate the "
            f"{scenario} data first ("
            + pgrig_command("db", "generate", env.name, "--db", dbname, "--scenario", scenario)
            + " ...)"
        )


def check_sysbench_data(spec: RunRequest, dbname: str, dataset: DatasetDoc) -> None:
    """A sysbench workload and the database's dataset agree (workloads/sysbench_dataset.py):
    refused here, before the run's settings or its archive row are made."""
    if not spec.is_sysbench:
        return
    from pgrig.workloads import sysbench, sysbench_dataset

    label, script = sysbench.script_path(spec.workload)
    sysbench_dataset.run_options(
        sysbench.binary(), label, script, spec.defines, dataset or None, (spec.env_name, dbname)
    )


def check_scripts(env: Environment, spec: RunRequest) -> None:
    files = [s for s in spec.scripts if s.path]
    if not files or spec.is_tpcc or spec.is_sysbench:
        return  # sysbench: a broken Lua script fails the run with sysbench's own message
    dbname = spec.database or DEFAULT_DATABASE
    for script in files:
        argv = [env.binary("pgbench"), "-n", "-t", "1", "-c", "1", "-M", spec.protocol]
        for key, value in spec.defines.items():
            argv += ["-D", f"{key}={value}"]
        argv += ["-f", script.path or "", dbname_arg(dbname)]
        proc = subprocess.run(
            argv,
            env=env.client_process_env(dbname),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if proc.returncode != 0:
            message = _pgbench_message(proc.stderr) or f"pgbench exited {proc.returncode}"
            raise PgrigError(f"script {script.name} fails: {message}")


def _pgbench_message(stderr: str) -> str:
    """pgbench's own error line(s), without the generic trailer."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    keep = [
        ln
        for ln in lines
        if not ln.startswith("pgbench: error: Run was aborted")
        and "the above results are incomplete" not in ln
        and not ln.startswith("pgbench: hint")
    ]
    errors = [ln for ln in keep if "error" in ln.lower() or "syntax" in ln.lower()]
    picked = errors or keep
    return " | ".join(picked[:3])


def check_connection(spec: RunRequest, env: Environment) -> str:
    """Everything about where pgbench connects that can fail, checked before anything starts:
    via/connect, max_connections (direct) or the pooler's limits, CPU lists, open files.
    Starts the pooler when it is down. Returns the normalized via ("direct", "pgbouncer")."""
    from pgrig.load.core import pinning, run_steps
    from pgrig.load.engines import command as pgbench_command
    from pgrig.provision import pooler

    run_steps.placement(spec)  # CPU lists and counts checked against this machine
    if spec.target_role != "primary":
        from pgrig.load.core import topology

        major = pgbench_command.pgbench_major(env.binary("pgbench"))
        topology.check_target(env, spec, major)
    if spec.server_cpus:
        require_managed(env, "pin its server to CPUs (--server-cpus)")
    via = pooler.check_run(
        env,
        clients=spec.clients,
        via=spec.via,
        connect=spec.connect,
        protocol=spec.protocol,
        run_settings=spec.settings,
    )
    pinning.raise_nofile(pinning.nofile_for_clients(spec.clients))
    if via != "direct":
        pooler.start(env)  # no-op when running
    return via
