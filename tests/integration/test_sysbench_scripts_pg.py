"""A multi-file sysbench workload through pgrig alone, against a real PostgreSQL 15 and
Debian's sysbench 1.0.20: examples/sysbench/ledger (a main script requiring sibling modules,
its own options, prepare/run/check/cleanup commands, the shape of Percona-Lab's
sysbench-tpcc) prepared by `db generate --script`, run twice with no repeated --define,
checked by `db check`, compared; and the data/workload disagreements refused before anything
is archived (issue 30, class 6)."""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pgrig.archive.store import Archive
from pgrig.provision.state.environment import Environment
from pgrig.workloads import datasets, sysbench_lua
from tests.integration.servers import pgrig, scratch_home

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sysbench" / "ledger"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    if shutil.which("sysbench") is None:
        pytest.skip("sysbench is not installed (scripts/setup.sh installs it)")
    # a copy, run from another directory: sysbench finds the modules only by the Lua path
    workload = tmp_path_factory.mktemp("ledger") / "ledger"
    shutil.copytree(EXAMPLE, workload)
    with scratch_home("pgrig-sbscript-"):
        pgrig("env", "create", "sbs", "--pg", "15")
        yield "sbs", workload / "ledger.lua"


def test_prepare_run_check_compare(lab: tuple[str, Path]) -> None:
    env, script = lab
    out = pgrig("db", "generate", env, "--scenario", "sysbench", "--script", str(script),
                "--define", "scale=1", "--define", "tables=2", "--jobs", "2", "--json")  # fmt: skip
    info = json.loads(out.stdout)
    assert info["script"] == str(script) and info["defines"] == {"scale": "1", "tables": "2"}
    assert info["script_name"] == "sysbench:ledger.lua" and len(info["script_sha256"]) == 64
    assert info["size_bytes"] > 0 and "check" in info["commands"]
    conn_env = Environment.load(env)
    with psycopg.connect(conn_env.conninfo("pgrig")) as conn:
        assert conn.execute("SELECT count(*) FROM accounts2").fetchone() == (1000,)

    ids = []
    for more in ([], ["--define", "read_pct=80"]):  # the dataset's scale and tables: the run's
        out = pgrig("run", env, "-w", f"sysbench:{script}", "-c", "2", "-T", "2",
                    "--warmup", "1", *more, "--json", cwd=Path("/tmp"))  # fmt: skip
        doc = json.loads(out.stdout)
        assert doc["status"] == "ok", doc["error"]
        assert doc["transactions"] > 0
        ids.append(doc["id"])
    rec = Archive(None).get_run(ids[0])
    assert rec is not None and rec.command is not None
    assert "--scale=1 --tables=2 run" in rec.command
    assert rec.scenario == "sysbench" and rec.extra["dataset"]["script"] == str(script)
    shown = pgrig("runs", "show", str(ids[0])).stdout
    assert "sysbench (prepared by ledger.lua with scale=1 tables=2)" in shown

    checked = pgrig("db", "check", env)
    assert "sysbench:ledger.lua check passed on sbs/pgrig" in checked.stdout
    assert "set 2: 1000 accounts" in checked.stdout and "balances consistent" in checked.stdout
    doc = json.loads(pgrig("db", "check", env, "--json").stdout)
    assert doc["passed"] is True and doc["script"] == "sysbench:ledger.lua"

    compared = json.loads(pgrig("runs", "compare", str(ids[0]), str(ids[1]), "--json").stdout)
    assert compared["verdict"]["metric"] == "tps" and compared["verdict"]["ratio"] > 0
    # what the two runs share (the data the script prepared) and what differs (its option)
    prepared = "ledger.lua scale=1 tables=2"
    assert compared["context"]["script_data"] == {"a": prepared, "b": prepared}
    assert compared["context"]["defines"] == {"a": None, "b": "read_pct=80"}
    lines = pgrig("runs", "compare", str(ids[0]), str(ids[1])).stdout.splitlines()
    at = lines.index("workload options")
    assert lines[at + 1].endswith("(ok): -") and lines[at + 2].endswith("(ok): read_pct=80")

    # money made out of nothing: the script's own check fails, and so does `db check`
    with psycopg.connect(conn_env.conninfo("pgrig"), autocommit=True) as conn:
        conn.execute("UPDATE accounts1 SET balance = balance + 7 WHERE id = 1")
    bad = pgrig("db", "check", env, check=False)
    assert bad.returncode == 1 and "check FAILED" in bad.stdout
    assert "set 1: accounts hold 1000007, expected 1000000" in bad.stdout + bad.stderr

    # generated again with fewer table sets: the old data's cleanup drops all of it
    pgrig("db", "generate", env, "--scenario", "sysbench", "--script", str(script),
          "--define", "tables=1")  # fmt: skip
    with psycopg.connect(conn_env.conninfo("pgrig")) as conn:
        left = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                            "ORDER BY 1").fetchall()  # fmt: skip
    assert [t for (t,) in left] == ["accounts1", "branches1", "transfers1"]


def test_disagreements_refused_before_anything_is_archived(lab: tuple[str, Path]) -> None:
    env, script = lab
    pgrig("db", "generate", env, "--db", "other", "--scenario", "sysbench", "--script",
          str(script), "--define", "tables=1")  # fmt: skip
    before = Archive(None).count_runs()
    bad = pgrig("run", env, "--db", "other", "-w", f"sysbench:{script}", "-T", "1",
                "--define", "tables=3", check=False)  # fmt: skip
    assert bad.returncode != 0
    assert "--define tables=3: database 'other' of sbs holds the data of sysbench:ledger.lua" in (
        bad.stderr
    )
    bad = pgrig("run", env, "--db", "other", "-w", "sysbench:oltp_read_only", "-T", "1",
                check=False)  # fmt: skip
    assert bad.returncode != 0 and "not the data of sysbench:oltp_read_only" in bad.stderr
    bad = pgrig("run", env, "--db", "other", "-w", f"sysbench:{script}", "-T", "1",
                "--define", "nosuch=1", check=False)  # fmt: skip
    assert "declares no option nosuch (its options: read_pct, scale, tables)" in bad.stderr

    # issue 30, class 6: sysbench data, then pgbench data in the same database; an oltp run
    # read the sbtest tables left there and was archived as sysbench at pgbench's scale
    pgrig("db", "generate", env, "--db", "mixed", "--scenario", "sysbench", "--tables", "1",
          "--table-size", "500")  # fmt: skip
    pgrig("db", "generate", env, "--db", "mixed", "--scale", "2")
    bad = pgrig("run", env, "--db", "mixed", "-w", "sysbench:oltp_read_only", "-T", "1",
                check=False)  # fmt: skip
    assert bad.returncode != 0
    assert "database 'mixed' of sbs holds a pgbench dataset of scale 2" in bad.stderr
    assert "pgrig db generate sbs --db mixed --scenario sysbench" in bad.stderr
    assert Archive(None).count_runs() == before

    # a script's data beside another dataset's tables: refused, nothing touched
    bad = pgrig("db", "generate", env, "--db", "mixed", "--scenario", "sysbench", "--script",
                str(script), check=False)  # fmt: skip
    assert bad.returncode != 0
    assert "database 'mixed' of sbs holds 5 tables (a pgbench dataset of scale 2" in bad.stderr
    assert "the prepare of ledger.lua would add its tables beside them" in bad.stderr
    assert "--db NAME --scenario sysbench --script" in bad.stderr
    kept = datasets.get(Environment.load(env), "mixed")
    assert kept is not None and kept["scenario"] == "pgbench" and kept["scale"] == 2

    # a check where the data has none: said so
    bad = pgrig("db", "check", env, "--db", "mixed", check=False)
    assert bad.returncode != 0 and "no consistency check for the pgbench dataset" in bad.stderr


def test_a_script_without_check_says_so(lab: tuple[str, Path], tmp_path: Path) -> None:
    env, _script = lab
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "sysbench" / "no_check"
    shutil.copytree(fixture, tmp_path / "no_check")
    pgrig("db", "generate", env, "--db", "plain", "--scenario", "sysbench", "--script",
          str(tmp_path / "no_check" / "reader.lua"))  # fmt: skip
    bad = pgrig("db", "check", env, "--db", "plain", check=False)
    assert bad.returncode != 0
    assert "sysbench:reader.lua declares no check command (its commands: prepare, run)" in (
        bad.stderr
    )


def test_a_module_edited_after_the_prepare_is_warned(lab: tuple[str, Path], tmp_path: Path) -> None:
    """Issue 43, pass 3: a module beside the script edited after `db generate` ran with no
    script_changed warning (only the script's own SHA-256 was kept with the data)."""
    env, _script = lab
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "sysbench" / "no_check"
    shutil.copytree(fixture, tmp_path / "edited")
    script = tmp_path / "edited" / "reader.lua"
    pgrig("db", "generate", env, "--db", "edited", "--scenario", "sysbench", "--script",
          str(script))  # fmt: skip
    common = tmp_path / "edited" / "reader_common.lua"
    common.write_text(common.read_text() + "\n-- edited after the prepare\n")
    run = json.loads(
        pgrig("run", env, "--db", "edited", "-w", f"sysbench:{script}", "-T", "1", "--json").stdout
    )
    [said] = [w["message"] for w in run["warnings"] if w["code"] == "script_changed"]
    assert said.startswith(
        f"the modules beside reader.lua changed since it prepared the data of {env}/edited"
    )
    assert said.endswith(": reader_common.lua edited")


ROOT = EXAMPLE.parents[2]


def documented_commands() -> list[list[str]]:
    """The commands of docs/sysbench.md's block that uses examples/sysbench/ledger."""
    page = (ROOT / "docs" / "sysbench.md").read_text()
    blocks = [b.split("```", 1)[0] for b in page.split("```sh\n")[1:]]
    (block,) = [  # the load hosts' block: tests/integration/test_load_hosts_rig.py
        b for b in blocks if "examples/sysbench/ledger/ledger.lua" in b and "--load-from" not in b
    ]
    return [shlex.split(line) for line in block.splitlines() if line.strip()]


def test_the_documented_commands_run(lab: tuple[str, Path]) -> None:
    env, _script = lab
    commands = documented_commands()
    assert [argv[:3] for argv in commands] == [
        ["pgrig", "db", "generate"], ["pgrig", "run", "lab"], ["pgrig", "run", "lab"],
        ["pgrig", "db", "check"],
    ]  # fmt: skip
    outputs = []
    for argv in commands:
        args = [env if a == "lab" else a for a in argv[1:]]
        outputs.append(pgrig(*args, cwd=ROOT).stdout)
    assert "sysbench:ledger.lua check passed on sbs/ledger" in outputs[-1]


# The one command of the sysbench-tpcc block that needs the internet; the tests put a stand-in
# of the same shape (tests/fixtures/sysbench/tpcc_shape) where it would put the scripts.
CLONE = ["git", "clone", "https://github.com/Percona-Lab/sysbench-tpcc"]
TPCC_SHAPE = ROOT / "tests" / "fixtures" / "sysbench" / "tpcc_shape"


def tpcc_commands(page: Path) -> list[list[str]]:
    """The commands of a page's sysbench-tpcc block, as a shell reads them (comments out)."""
    blocks = [b.split("```", 1)[0] for b in page.read_text().split("```sh\n")[1:]]
    (block,) = [b for b in blocks if "sysbench-tpcc/tpcc.lua" in b]
    lines = block.replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True) for line in lines if line.strip()]


def test_the_sysbench_tpcc_commands_run(lab: tuple[str, Path], tmp_path: Path) -> None:
    """The README's and docs/sysbench.md's sysbench-tpcc commands, as typed, in a directory
    where `git clone` put the scripts (the stand-in: the same options, commands and modules)."""
    env, _script = lab
    commands = tpcc_commands(ROOT / "docs" / "sysbench.md")
    assert tpcc_commands(ROOT / "README.md") == commands
    assert commands[0] == CLONE  # its directory: the repository's name, as git makes it
    shutil.copytree(TPCC_SHAPE, tmp_path / "sysbench-tpcc")
    rest = commands[1:]
    assert [argv[:3] for argv in rest] == [
        ["pgrig", "db", "generate"], ["pgrig", "run", "lab"], ["pgrig", "db", "check"],
    ]  # fmt: skip
    outputs = [pgrig(*[env if a == "lab" else a for a in argv[1:]], cwd=tmp_path).stdout
               for argv in rest]  # fmt: skip
    assert "sysbench:tpcc.lua check passed on sbs/tpcc" in outputs[-1]
    assert "Check 2, warehouse: 1 PASSED" in outputs[-1]
    facts = sysbench_lua.describe("sysbench", tmp_path / "sysbench-tpcc" / "tpcc.lua")
    assert {"scale", "tables", "use_fk", "trx_level", "force_pk", "report_csv"} <= set(
        facts.options
    )
    assert {"prepare", "check", "cleanup", "run"} <= facts.commands


def test_a_script_run_from_a_load_host(lab: tuple[str, Path]) -> None:
    """--load-from localhost: the agent of a load host as a child process (the same code path as
    over SSH: tests/integration/test_load_hosts_rig.py): the script and its modules shipped into
    the agent's directory, the dataset's options, the figures of its sysbench."""
    env, script = lab
    pgrig("db", "generate", env, "--db", "hosted", "--scenario", "sysbench", "--script",
          str(script), "--define", "tables=1")  # fmt: skip
    out = pgrig("run", env, "--db", "hosted", "-w", f"sysbench:{script}", "-c", "2", "-T", "2",
                "--warmup", "1", "--load-from", "localhost", "--json")  # fmt: skip
    doc = json.loads(out.stdout)
    assert doc["status"] == "ok", doc["error"]
    rec = Archive(None).get_run(doc["id"])
    assert rec is not None and rec.command is not None
    assert rec.command.startswith("localhost: ") and " @WORK@/lua/ledger.lua " in rec.command
    assert rec.command.endswith("--tables=1 run")
    host = rec.extra["load"]["hosts"]["localhost"]
    assert host["exit_code"] == 0 and host["generator"]["transactions"] >= doc["transactions"] > 0
    assert "sysbench.stdout" in rec.artifacts
    assert rec.extra["latency_basis"]["check"]["agrees"] is True


def test_a_study_prepares_and_runs_a_script(lab: tuple[str, Path], tmp_path: Path) -> None:
    """A study's [dataset] script and defines (relative to the study file): the script's own
    prepare, recorded as `db generate --script` records it; the runs take its options."""
    env, script = lab
    shutil.copytree(script.parent, tmp_path / "ledger")
    study = tmp_path / "ledger-study.toml"
    study.write_text(
        f"""
[study]
name = "ledger-study"
repeats = 1

[environment]
name = "{env}"
create = false

[dataset]
scenario = "sysbench"
database = "studied"
script = "ledger/ledger.lua"
defines = {{ scale = 1, tables = 2 }}

[run]
workload = "sysbench:ledger/ledger.lua"
clients = 2
duration = "2s"
warmup = "1s"

[[iterations]]
name = "as prepared"
"""
    )
    pgrig("study", "run", str(study), cwd=Path("/"))
    recorded = datasets.get(Environment.load(env), "studied")
    assert recorded is not None and recorded["script"] == str(tmp_path / "ledger" / "ledger.lua")
    assert recorded["defines"] == {"scale": "1", "tables": "2"}
    archive = Archive(None)
    [run_id] = [r.id for r in archive.list_runs() if r.study == "ledger-study"]
    run = archive.get_run(run_id) if run_id is not None else None
    assert run is not None and run.status == "ok" and run.command is not None
    assert run.command.endswith("--scale=1 --tables=2 run")
