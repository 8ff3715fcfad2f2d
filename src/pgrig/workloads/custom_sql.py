"""`pgrig db generate --sql schema.sql`: run a user's schema/data script with psql."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.provision.state.environment import Environment, dbname_arg
from pgrig.provision.system.child_process import die_with_parent
from pgrig.record.documents import DatasetDoc
from pgrig.workloads import database


def generate(env: Environment, dbname: str, sql_file: Path) -> DatasetDoc:
    if not sql_file.is_file():
        raise PgrigError(f"SQL file not found: {sql_file}")
    database.ensure_database(env, dbname)
    argv = [
        env.binary("psql"),
        "-X",
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        "-f",
        str(sql_file),
        dbname_arg(dbname),
    ]
    start = time.monotonic()
    proc = subprocess.run(
        argv, env=env.client_process_env(dbname), capture_output=True, text=True, check=False,
        preexec_fn=die_with_parent,  # never outlives a killed pgrig
    )  # fmt: skip
    if proc.returncode != 0:
        msg = proc.stderr.strip().splitlines()
        raise PgrigError(f"{sql_file.name}: {msg[-1] if msg else 'psql failed'}")
    return {
        "scenario": "custom",
        "sql": str(sql_file.resolve()),
        "seconds": round(time.monotonic() - start, 3),
        "size_bytes": database.database_size(env, dbname),
    }
