"""`db generate` of an environment on another host is done by that host's pgrig
(provision/remote/environments.py): the files the command names here are copied there first.
A sysbench --script goes with every Lua file beside it into one upload directory (which that
pgrig puts on sysbench's Lua path, the script's own directory); the command names the copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig.provision.remote import environments as remote_env
from pgrig.provision.state.environment import Environment
from pgrig.workloads import sysbench_lua

LEDGER = Path(__file__).resolve().parents[2] / "examples" / "sysbench" / "ledger" / "ledger.lua"


def test_a_script_is_shipped_with_its_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    put: list[str] = []

    def put_temp(_host: object, local: Path) -> str:
        put.append(local.name)
        return f"/tmp/pgrig-upload-7/{local.name}"

    monkeypatch.setattr(remote_env.remote, "put_temp", put_temp)
    monkeypatch.setattr(remote_env, "host_of", lambda _env: object())
    env = Environment(name="far", kind="remote")
    argv = ["db", "generate", "far", "--scenario", "sysbench", "--script", str(LEDGER),
            "--define", "scale=2"]  # fmt: skip
    out = remote_env.db_argv_files(argv, env, sysbench_lua.shipped_files(LEDGER))
    assert sorted(put) == ["ledger.lua", "ledger_check.lua", "ledger_common.lua", "ledger_run.lua"]
    assert out == [
        "db", "generate", "far", "--scenario", "sysbench", "--script",
        "/tmp/pgrig-upload-7/ledger.lua", "--define", "scale=2",
    ]  # fmt: skip


def test_a_dataset_request_is_asked_again_with_its_own_flags() -> None:
    from pgrig.request import DatasetRequest, from_flags
    from pgrig.request.fields import as_flags

    request = from_flags(
        DatasetRequest, scenario="sysbench", database="ledger", script="a.lua",
        defines={"scale": "2", "tables": "3"}, jobs=2,
    )  # fmt: skip
    assert as_flags(request) == [
        "--scenario", "sysbench", "--db", "ledger", "--jobs", "2", "--script", "a.lua",
        "--define", "scale=2", "--define", "tables=3",
    ]  # fmt: skip
    tpcc = from_flags(DatasetRequest, scenario="tpcc", warehouses=2, partition=True)
    expected = ["--scenario", "tpcc", "--warehouses", "2", "--partition", "--jobs", "2"]
    assert as_flags(tpcc) == expected
