"""The tickets scenario's scripts, workload parsing and chunking (no server)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.workloads import specs, tickets
from pgrig.workloads.tickets.generate import chunks, load_sql


def test_workloads_resolve_to_shipped_scripts() -> None:
    scripts = specs.parse_workloads(["tickets:read@9,tickets:write@1"])
    assert [(s.name, s.weight) for s in scripts] == [("tickets:read", 9), ("tickets:write", 1)]
    for s in scripts:
        assert s.builtin is None and s.path and Path(s.path).is_file()
    assert specs.scenario_of(scripts, ["tickets:read@9,tickets:write@1"]) == "tickets"
    mixed = specs.parse_workloads(["tickets:read", "pgbench:select-only"])
    assert specs.scenario_of(mixed, ["tickets:read", "pgbench:select-only"]) == "custom"


def test_unknown_tickets_workload() -> None:
    with pytest.raises(PgrigError, match=r"unknown tickets workload 'update' \(choose from"):
        specs.parse_workloads(["tickets:update"])


def test_scripts_are_the_seeds() -> None:
    read = tickets.WORKLOADS["read"].read_text()
    assert "\\set r random(1, :rows)" in read
    assert "FROM book.tickets WHERE id = :r;" in read
    write = tickets.WORKLOADS["write"].read_text()
    assert "INSERT INTO book.tickets (fkRide, fio, contact, fkSeat)" in write
    assert "(array(SELECT fam FROM book.fam))[ceil(random()*110)]" in write
    assert '\'{"phone":"+7\'' in write


def test_defines_need_tickets_data() -> None:
    assert tickets.defines({"scenario": "tickets", "rows": 5000}, "e", "db") == {"rows": "5000"}
    with pytest.raises(
        PgrigError, match=r"database 'db' of e holds no tickets data: run `pgrig db"
    ):
        tickets.defines({"scenario": "pgbench", "scale": 1}, "e", "db")
    # the database the run named, quoted for a paste (it was left out: the suggestion made
    # the default database)
    with pytest.raises(PgrigError) as e:
        tickets.defines(None, "e", "my db")
    assert "run `pgrig db generate e --db 'my db' --scenario tickets --rows N` first" in str(
        e.value
    )
    with pytest.raises(PgrigError, match="holds no tickets data"):
        tickets.defines(None, "e", "db")


def test_chunks_cover_every_id_once() -> None:
    spans = chunks(1_000_001, 250_000)
    assert spans[0] == (1, 250_000) and spans[-1] == (1_000_001, 1_000_001)
    assert sum(hi - lo + 1 for lo, hi in spans) == 1_000_001
    assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(spans))
    assert chunks(5, 250_000) == [(1, 5)]


def test_load_sql_is_server_side() -> None:
    text = load_sql(11, 20)
    assert "generate_series(11::bigint, 20::bigint)" in text
    assert "{" not in text.replace("jsonb_build_object", "")  # every placeholder filled


def test_rows_must_be_positive() -> None:
    from pgrig.provision.state.environment import Environment

    with pytest.raises(PgrigError, match=r"--rows must be >= 1 \(got 0\)"):
        tickets.generate(Environment(name="x"), "db", rows=0)
