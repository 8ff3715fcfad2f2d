"""The tickets scenario on a real PostgreSQL 15: shape, name tables, sequence, both scripts."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from pgrig.archive.store import Archive
from pgrig.errors import PgrigError
from pgrig.load.core.runner import execute
from pgrig.provision.state.environment import Environment
from pgrig.request import RunRequest
from pgrig.workloads import datasets, specs, tickets

pytestmark = pytest.mark.integration


def test_generate_and_run_tickets(managed_env: Environment, pgrig_home: Path) -> None:
    env = managed_env
    info = tickets.generate(env, "pgrig", rows=100_000)
    datasets.record(env, "pgrig", info)
    assert info["scenario"] == "tickets" and info["rows"] == 100_000 and info["size_bytes"] > 0
    with psycopg.connect(env.conninfo("pgrig")) as conn:
        q = conn.execute
        assert q("SELECT count(*), min(id), max(id) FROM book.tickets").fetchone() == (
            100_000, 1, 100_000,
        )  # fmt: skip
        assert q("SELECT count(DISTINCT fam) FROM book.fam").fetchone() == (110,)
        assert q("SELECT count(DISTINCT nam) FROM book.nam").fetchone() == (110,)
        assert q("SELECT count(*) FROM book.tickets WHERE fio IS NULL").fetchone() == (0,)
        phone = q("SELECT contact->>'phone' FROM book.tickets WHERE id = 1").fetchone()[0]
        assert phone.startswith("+7") and len(phone) == 12
        pk = q(
            "SELECT 1 FROM pg_constraint WHERE conrelid = 'book.tickets'::regclass "
            "AND contype = 'p'"
        ).fetchone()
        assert pk is not None

    archive = Archive(None)
    for workload in ("tickets:read", "tickets:write"):
        spec = RunRequest(
            env_name=env.name,
            workload=workload,
            scripts=specs.parse_workloads([workload]),
            clients=4,
            threads=2,
            duration_s=2,
            scenario="tickets",
        )
        rec = execute(spec, archive=archive, live=False)
        assert rec.status == "ok" and rec.transactions and rec.failed == 0
        assert rec.defines is not None and rec.defines["rows"] == "100000"
    with psycopg.connect(env.conninfo("pgrig")) as conn:
        new = conn.execute(
            "SELECT count(*), min(id) FROM book.tickets WHERE id > 100000"
        ).fetchone()
        assert new[0] > 0 and new[1] == 100_001  # writes continue after the generated ids
        bad = conn.execute(
            "SELECT count(*) FROM book.tickets WHERE id > 100000 AND (fio IS NULL "
            "OR contact->>'phone' NOT LIKE '+7%')"
        ).fetchone()
        assert bad == (0,)


def test_tickets_workload_needs_tickets_data(managed_env: Environment, pgrig_home: Path) -> None:
    spec = RunRequest(
        env_name=managed_env.name,
        workload="tickets:read",
        scripts=specs.parse_workloads(["tickets:read"]),
        clients=1,
        duration_s=1,
    )
    with pytest.raises(PgrigError, match="holds no tickets data"):
        execute(spec, archive=Archive(None), live=False)
    assert Archive(None).count_runs() == 0  # refused before anything was archived
