"""The run request and the dataset request: every rule once, said in the surface's words."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from pydantic import ValidationError

import pgrig.request as request_package
from pgrig.errors import PgrigError
from pgrig.request import (
    LOAD_FIELDS,
    DatasetRequest,
    LoadParams,
    RunRequest,
    ScriptSpec,
    from_flags,
    load_values,
    problem_of,
    tpcc_mix_weights,
    validate_field,
)
from pgrig.request.values import (
    check_cpus,
    cpu_count,
    number_text,
    parse_cpu_list,
    parse_duration,
    setting_text,
)
from pgrig.request.vocabulary import NAME_MAX, valid_name


def flags_error(**kw: Any) -> str:
    kw.setdefault("env_name", "e")
    kw.setdefault("workload", "pgbench:select-only")
    if "transactions_per_client" not in kw:
        kw.setdefault("duration_s", 10)
    with pytest.raises(PgrigError) as e:
        from_flags(RunRequest, **kw)
    message = str(e.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"clients": 0, "threads": 0}, "--clients must be >= 1 (got 0)"),
        ({"threads": 0}, "--threads must be >= 1 (got 0)"),
        ({"clients": 2**40}, "--clients must be <= 2147483647 (got 1099511627776)"),
        ({"clients": 2, "threads": 4}, "--threads cannot exceed --clients (4 > 2): pgbench"),
        ({"duration_s": 0}, "--duration must be at least 1 s (got 0 s)"),
        ({"duration_s": 0.001}, "--duration must be at least 1 s (got 0.001 s)"),
        ({"duration_s": -5}, "--duration must be at least 1 s (got -5 s)"),
        ({"duration_s": None}, "--duration is required (how long to run"),
        (
            {"transactions_per_client": 5, "duration_s": 5},
            "--transactions cannot be combined with --duration: give one of them",
        ),
        ({"transactions_per_client": 0}, "--transactions must be >= 1 (got 0)"),
        ({"warmup_s": -1}, "--warmup must be >= 0 (got -1)"),
        ({"rate": 0}, "--rate must be > 0 (got 0)"),
        ({"rate": -1.5}, "--rate must be > 0 (got -1.5)"),
        ({"rate": float("inf")}, "--rate must be a finite number (got inf)"),
        ({"rate": 10, "latency_limit_ms": 0}, "--latency-limit must be > 0 (got 0)"),
        ({"latency_limit_ms": 5}, "--latency-limit needs --rate"),
        ({"protocol": "fast"}, "--protocol must be one of simple, extended, prepared (got 'fast')"),
        ({"max_tries": -1}, "--max-tries must be >= 0 (got -1)"),
        (
            {"max_tries": 0, "transactions_per_client": 5},
            "--max-tries 0 (unlimited retries) needs --duration or --latency-limit",
        ),
        ({"via": "carrier-pigeon"}, "--via must be one of direct, pooler, pgbouncer"),
        ({"connect": "udp"}, "--connect must be one of tcp, socket (got 'udp')"),
        ({"server_cpus": "a"}, "--server-cpus 'a' is not a CPU number or range"),
        ({"client_cpus": "0-99999999"}, "--client-cpus '0-99999999' is not a CPU number"),
        ({"client_cpus": "0cores"}, "--client-cpus must be a whole number of cores >= 1"),
        ({"defines": {"a b": "1"}}, "--define has an invalid variable name 'a b'"),
        ({"defines": {"a": ["x"]}}, "--define value of a: expected a string, number or boolean"),
        ({"tpcc_mix": "45,43,4,4,4"}, "--mix applies only to --workload tpcc"),
        ({"all_warehouses": True}, "--all-warehouses applies only to --workload tpcc"),
        ({"tpcc_stock_level": "hammerdb"}, "--stock-level applies only to --workload tpcc"),
        ({"workload": "tpcc", "defines": {"x": "1"}}, "--define does not apply to --workload tpcc"),
        ({"workload": "tpcc", "tpcc_mix": "1,2"}, "--mix needs 5 weights"),
        ({"workload": "tpcc", "tpcc_mix": "0,0,0,0,0"}, "--mix weights are all 0"),
        ({"workload": "tpcc", "tpcc_stock_level": "fast"}, "--stock-level must be one of"),
        ({"extra_pgbench_args": ["-T5"]}, "extra_pgbench_args must not contain '-T5': pgrig"),
        ({"extra_pgbench_args": ["--rate=5"]}, "extra_pgbench_args must not contain '--rate=5'"),
        ({"workload": ""}, "--workload must not be empty"),
        ({"database": ""}, "--db must not be empty"),
        (
            {"scripts": [ScriptSpec(name="a", builtin="select-only", weight=0)]},
            "--workload all script weights are 0",
        ),
    ],
)
def test_refusals_name_the_flag(kw: dict[str, Any], message: str) -> None:
    assert flags_error(**kw).startswith(message)


def test_a_valid_request_normalizes_what_it_is_given() -> None:
    r = from_flags(
        RunRequest,
        env_name="e",
        workload="tpcc",
        duration_s=10,
        via=" PooLer ",
        server_cpus="0, 1",
        tpcc_mix="45,43,4,4,4",
    )
    assert r.via == "pgbouncer" and r.server_cpus == "0,1"
    assert r.tpcc_mix == {
        "new_order": 45,
        "payment": 43,
        "order_status": 4,
        "delivery": 4,
        "stock_level": 4,
    }
    assert r.planned_seconds() == 10 and r.is_tpcc
    assert from_flags(RunRequest, env_name="e", workload="w", duration_s=5, max_tries=0)
    throttled = from_flags(
        RunRequest,
        env_name="e",
        workload="w",
        transactions_per_client=5,
        rate=9,
        latency_limit_ms=2,
    )
    assert throttled.max_tries == 1 and throttled.latency_limit_ms == 2


def test_a_request_is_frozen_and_strict() -> None:
    r = RunRequest(env_name="e", workload="w", duration_s=5)
    with pytest.raises(ValidationError):
        r.clients = 3  # type: ignore[misc]
    with pytest.raises(ValidationError):
        LoadParams.model_validate({"workload": "w", "duration": 5, "clients": "4"})


def test_study_keys_and_units() -> None:
    p = LoadParams.model_validate(
        {"workload": "w", "duration": "2min", "warmup": "500ms", "rate": 10, "latency_limit": "1s"}
    )
    assert (p.duration_s, p.warmup_s, p.latency_limit_ms) == (120, 0.5, 1000)
    assert (
        LoadParams.model_validate(
            {"workload": "w", "duration": 5, "rate": 1, "latency_limit": 10}
        ).latency_limit_ms
        == 10
    )  # a bare number is milliseconds, as for pgbench -L


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"duration": "500ms"}, "run.duration: must be at least 1 s (got 0.5 s)"),
        ({"duration": "soon"}, "run.duration: expected a duration like 15"),
        ({"duration": 5, "clients": "4"}, "run.clients: expected an integer (got '4')"),
        ({"duration": 5, "clients": 2, "threads": 4}, "run.threads: cannot exceed clients (4 > 2)"),
        ({"duration": 5, "latency_limit": 3}, "run.latency_limit: needs rate"),
        ({"duration": 5, "extra_pgbench_args": [1]}, "run.extra_pgbench_args[0]: expected a"),
        ({"duration": 5, "tpcc_mix": {"neworder": 1}}, "run.tpcc_mix: has an unknown TPC-C"),
        ({"duration": 5, "tpcc_mix": {"payment": 1}}, "run.tpcc_mix: applies only to workload"),
    ],
)
def test_problems_name_the_key_path(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as e:
        LoadParams.model_validate({"workload": "w", **data})
    assert problem_of(e.value, LoadParams).at("run", LoadParams).startswith(message)


def test_one_field_alone() -> None:
    assert validate_field(LoadParams, "via", "pooler") == "pgbouncer"
    assert validate_field(LoadParams, "clients", 8) == 8
    with pytest.raises(ValidationError) as e:
        validate_field(LoadParams, "clients", 0)
    assert problem_of(e.value, LoadParams).at("sweep.clients[1]", LoadParams) == (
        "sweep.clients[1]: must be >= 1 (got 0)"
    )


def test_load_values_cover_every_load_field() -> None:
    r = RunRequest(env_name="e", workload="w", duration_s=5, note="n")
    assert tuple(load_values(r)) == LOAD_FIELDS


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"name": "x"}, "must be either a builtin or a file"),
        ({"name": "x", "builtin": "select-only", "path": "/a.sql"}, "either a builtin or a file"),
        ({"name": "x", "builtin": "tpcc"}, "must be one of tpcb-like, simple-update, select-only"),
        ({"name": "x", "path": "/a@b.sql"}, "contains '@'"),
        ({"name": "x", "builtin": "select-only", "weight": -1}, "must be >= 0 (got -1)"),
    ],
)
def test_scripts(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as e:
        ScriptSpec(**kw)
    assert message in problem_of(e.value, ScriptSpec).at("script", ScriptSpec)


def test_tpcc_mix() -> None:
    assert tpcc_mix_weights({"payment": 1}) == {
        "new_order": 0,
        "payment": 1,
        "order_status": 0,
        "delivery": 0,
        "stock_level": 0,
    }
    for bad in ({"payment": True}, {"payment": 1.5}, "1,2,x,4,5", 7):
        with pytest.raises(ValueError):
            tpcc_mix_weights(bad)


def dataset_error(**kw: Any) -> str:
    with pytest.raises(PgrigError) as e:
        from_flags(DatasetRequest, **kw)
    return str(e.value)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"scale": 0}, "--scale must be >= 1 (got 0)"),
        ({"scale": -3}, "--scale must be >= 1 (got -3)"),
        ({"scenario": "tpcc", "warehouses": 0}, "--warehouses must be >= 1 (got 0)"),
        ({"scenario": "tpcc"}, "--warehouses is required for --scenario tpcc"),
        ({"scenario": "custom"}, "--sql is required for --scenario custom"),
        ({"database": "template1"}, "--db must not be template1: it is a template database"),
        ({"database": "template0"}, "--db must not be template0"),
        ({"database": "postgres"}, "--db must not be postgres: it is the maintenance database"),
        ({"scenario": "tpcc", "warehouses": 1, "scale": 2}, "--scale applies only to --scenario"),
        ({"partitions": 2, "scenario": "tickets"}, "--partitions applies only to --scenario pgb"),
        (
            {"partition": True},
            "--partition applies only to --scenario tpcc or chbench (got 'pgbench')",
        ),
        ({"rows": 10}, "--rows applies only to --scenario tickets (got 'pgbench')"),
        (
            {"jobs": 4},
            "--jobs applies only to --scenario tpcc or chbench or tickets or sysbench or tpch "
            "(got 'pgbench')",
        ),
        ({"sql": "a.sql"}, "--sql applies only to --scenario custom (got 'pgbench')"),
        (
            {"scenario": "tpcd"},
            "--scenario must be one of pgbench, tpcc, chbench, tickets, custom, sysbench",
        ),
    ],
)
def test_dataset_refusals(kw: dict[str, Any], message: str) -> None:
    assert dataset_error(**kw).startswith(message)


def test_dataset_defaults_are_explicit() -> None:
    assert DatasetRequest().scale == 1 and DatasetRequest().size_label() == "scale 1"
    tickets = DatasetRequest(scenario="tickets")
    assert (tickets.rows, tickets.jobs) == (5_000_000, 2)
    assert tickets.size_label() == "5,000,000 rows"
    tpcc = DatasetRequest(scenario="tpcc", warehouses=3)
    assert tpcc.jobs == 2 and tpcc.size_label() == "3 warehouses" and tpcc.scale is None
    assert DatasetRequest.model_validate({"scenario": "custom", "init": "/x/a.sql"}).sql == (
        "/x/a.sql"
    )


def test_values() -> None:
    assert parse_duration(15) == 15
    assert parse_duration("2min") == 120
    assert parse_duration("500ms") == 0.5
    assert parse_duration("1h") == 3600
    for bad in (True, "soon", None):
        with pytest.raises(ValueError, match="expected a duration"):
            parse_duration(bad)
    assert parse_cpu_list("0-3,6") == [0, 1, 2, 3, 6] and parse_cpu_list("2") == [2]
    assert check_cpus(" 5 , 1-2 ") == "5,1-2" and check_cpus(3) == "3"
    assert check_cpus("2Cores") == "2Cores" and cpu_count("2Cores") == 2 and cpu_count("2") is None
    for bad in ("0cores", "a", "3-1", "-1", "0-99999", True, ""):
        with pytest.raises(ValueError):
            check_cpus(bad)
    assert setting_text(True) == "on" and setting_text(1e300) == "1e+300"
    assert number_text(3.0) == "3" and number_text(2.5) == "2.5"


def test_names() -> None:
    assert valid_name("pg15-main.v2") and valid_name("a" * NAME_MAX)
    assert not valid_name("a" * (NAME_MAX + 1))
    assert not valid_name("-x") and not valid_name("a b") and not valid_name(3)
    assert valid_name("a" * 48, 48) and not valid_name("a" * 49, 48)


def test_the_vocabulary_does_not_load_pydantic() -> None:
    """`pgrig --help` and the provisioning commands need names, not models."""
    code = (
        "import sys; import pgrig.request.vocabulary, pgrig.request.values; "
        "print('pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert set(request_package.__all__) == set(request_package._EXPORTS)


@pytest.mark.parametrize(("server", "client", "shared"), [("0", "0", "0"), ("0-1", "1", "1")])
def test_overlapping_cpu_sides_are_refused(server: str, client: str, shared: str) -> None:
    from pgrig.request import RunRequest, from_flags

    with pytest.raises(PgrigError) as e:
        from_flags(
            RunRequest, env_name="e", workload="pgbench:tpcb", duration_s="5",
            server_cpus=server, client_cpus=client,
        )  # fmt: skip
    assert str(e.value).startswith(f"--client-cpus shares CPU {shared} with --server-cpus")
