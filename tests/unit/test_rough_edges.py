"""Issue 25 without servers: tune space files refused like any invalid input, the run lock a
study holds for its whole duration (its own runs nest in it), shipped profiles kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import PgrigError
from pgrig.provision.state import env_lock
from pgrig.provision.state.env_lock import EnvBusy, EnvLock
from pgrig.tune import space


# --- tune --space (must-fix 7) -------------------------------------------------------------------
def _file(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "space.toml"
    f.write_text(text)
    return f


def _refuse(bad: set[str]) -> space.Validator:
    def check(settings: dict[str, str]) -> None:
        for name, value in settings.items():
            if value in bad:
                raise PgrigError(f"invalid value for parameter {name!r}: {value!r}")

    return check


def test_an_invalid_choice_of_a_space_file_is_refused_with_its_key_path(tmp_path: Path) -> None:
    s = space.load_space(_file(tmp_path, '[knobs.wal_compression]\nchoices = ["off", "bogus"]\n'))
    with pytest.raises(PgrigError) as e:
        space.check_space(s, _refuse({"bogus"}))
    assert str(e.value).startswith(f"--space {tmp_path / 'space.toml'}: ")
    assert "knobs.wal_compression.choices[1]: invalid value" in str(e.value)


def test_an_invalid_range_end_of_a_space_file_names_its_key(tmp_path: Path) -> None:
    text = '[knobs.work_mem]\nlow = 1\nhigh = 64\nunit = "MB"\n'
    text += "[knobs.commit_delay]\nlow = 0\nhigh = 9\n"
    s = space.load_space(_file(tmp_path, text))
    with pytest.raises(PgrigError, match=r"knobs\.work_mem\.high: invalid value"):
        space.check_space(s, _refuse({"64MB"}))


def test_a_space_left_empty_is_refused() -> None:
    pgrig_own = space.Space([space.Knob("wal_compression", choices=("zstd", "lz4"))])
    with pytest.raises(PgrigError, match="no knob is left to search"):
        space.check_space(pgrig_own, _refuse({"zstd", "lz4"}))
    # the default space (pgrig's own) still drops what this build lacks, with a note
    kept = space.check_space(
        space.Space(
            [space.Knob("wal_compression", choices=("off", "lz4", "zstd")), space.Knob("x", 1, 2)]
        ),
        _refuse({"zstd"}),
    )
    assert kept.knob("wal_compression").choices == ("off", "lz4")
    assert any("zstd left out" in n for n in kept.notes)


def test_allow_unsafe_with_a_file_without_durability_knobs_says_so(tmp_path: Path) -> None:
    s = space.load_space(
        _file(tmp_path, "[knobs.work_mem]\nlow = 1\nhigh = 4\n"), allow_unsafe=True
    )
    assert s.notes and "nothing unsafe is searched" in s.notes[-1]
    assert not s.unsafe_names


# --- the run lock a study holds (rough edge: tune/study hold the environment) --------------
def test_a_lock_held_by_this_process_nests_and_others_are_refused(tmp_path: Path) -> None:
    outer = EnvLock(tmp_path, "lab").acquire("study run s1")
    try:
        inner = EnvLock(tmp_path, "lab").acquire()  # a run of the study
        inner.describe(7)
        info = env_lock.holder(tmp_path)
        assert info is not None and info["run_id"] == 7 and info["within"] == "study run s1"
        assert "run 7 of `pgrig study run s1`" in env_lock.busy_message("lab", info, "run")
        inner.release()
        assert env_lock.holder(tmp_path) is not None  # the study still holds it
        env_lock.refuse_if_busy(tmp_path, "lab", "db generate")  # its own dataset step
    finally:
        outer.release()
    assert env_lock.holder(tmp_path) is None


def test_a_lock_of_another_process_is_refused(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys,time,pathlib;from pgrig.provision.state.env_lock import EnvLock;"
        f"EnvLock(pathlib.Path({str(tmp_path)!r}),'lab').acquire('tune t1');"
        "print('held',flush=True);time.sleep(30)"
    )
    other = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "held"
        with pytest.raises(EnvBusy, match="`pgrig tune t1` is in progress"):
            EnvLock(tmp_path, "lab").acquire()
        with pytest.raises(EnvBusy):
            env_lock.refuse_if_busy(tmp_path, "lab", "db generate")
    finally:
        other.kill()
        other.wait()


# --- runs compare: a group is repeats of one configuration (must-fix 13) --------------------------
def _stored(archive: Any, tps: list[float], seed: int, **attrs: Any) -> list[int]:
    from study_fakes import make_record

    ids = []
    for i, v in enumerate(tps):
        rec = make_record(tps=v, seconds=20, warmup=2, seed=seed + i)
        for k, value in attrs.items():
            setattr(rec, k, value[i] if isinstance(value, list) else value)
        archive.finish_run(rec)
        ids.append(rec.id)
    return ids


def _all_surfaces(archive: Any, url: str, client: Any, tmp_path: Path, a: list[int], b: list[int]):
    """(CLI JSON verdict, CLI text, Markdown report, web page) of the comparison A vs B."""
    import json

    from typer.testing import CliRunner

    from pgrig.cli.runs import app as runs_app
    from pgrig.reports import publish
    from pgrig.web import compare_page

    ga, gb = ",".join(map(str, a)), ",".join(map(str, b))
    doc = json.loads(
        CliRunner().invoke(runs_app, ["compare", ga, gb, "--json", "--archive", url]).stdout
    )
    text = CliRunner().invoke(runs_app, ["compare", ga, gb, "--archive", url]).stdout
    (md,) = publish.compare_report(archive, [a, b], ["md"], tmp_path)
    web = client.get(compare_page.compare_url([a, b])).text
    return doc["verdict"], " ".join(text.split()), md.read_text(), web


def test_a_group_mixing_server_versions_gets_no_verdict_on_any_surface(
    archive: Any, url: str, client: Any, tmp_path: Path
) -> None:
    a = _stored(archive, [1000, 1010, 990], 1, server_version=["15.10", "18.1", "15.10"])
    b = _stored(archive, [1300, 1310, 1290], 20, server_version="15.10")
    verdict, text, md, web = _all_surfaces(archive, url, client, tmp_path, a, b)
    assert verdict["verdict"] is None
    assert "server version 15.10 (runs 1, 3) / 18.1 (run 2)" in verdict["reason"]
    assert "not repeats of one configuration" in text and "faster" not in text
    import compare_surfaces as surfaces

    said = f"no verdict: {verdict['reason']}"
    assert surfaces.from_markdown(md, "runs " + ",".join(map(str, b)))[1] == said
    assert surfaces.from_web(web)[1] == said


def test_a_group_mixing_workloads_or_settings_gets_no_verdict() -> None:
    from study_fakes import make_record

    from pgrig.analysis.compare import compare_runs

    def runs(first: int, tps: list[float], **attrs: Any) -> list[Any]:
        out = []
        for i, v in enumerate(tps):
            r = make_record(tps=v, seed=first + i)
            r.id = first + i
            for k, value in attrs.items():
                setattr(r, k, value[i])
            out.append(r)
        return out

    base = runs(1, [1000, 1010, 990])
    mixed = runs(10, [1300, 1310, 1290], workload=["pgbench:tpcb-like", "tpcc", "tpcc"])
    c = compare_runs(base, mixed)
    assert c.verdict is None and "workload pgbench:tpcb-like (run 10) / tpcc (runs 11, 12)" in (
        c.reason or ""
    )
    layers = [{"environment": {"work_mem": v}} for v in ("4MB", "4MB", "64MB")]
    c = compare_runs(base, runs(10, [1300, 1310, 1290], settings_layers=layers))
    assert c.verdict is None and "setting work_mem 4MB (runs 10, 11) / 64MB (run 12)" in (
        c.reason or ""
    )


def test_two_different_workloads_are_said_above_the_verdict(
    archive: Any, url: str, client: Any, tmp_path: Path
) -> None:
    a = _stored(archive, [1000, 1010, 990], 1, workload="pgbench:tpcb-like")
    b = _stored(archive, [1300, 1310, 1290], 20, workload="pgbench:select-only")
    verdict, text, md, web = _all_surfaces(archive, url, client, tmp_path, a, b)
    caveat = "different workloads: A runs pgbench:tpcb-like, B runs pgbench:select-only"
    assert verdict["caveat"] == caveat and verdict["description"].startswith(caveat)
    assert f"verdict on TPS: {caveat}" in text
    assert caveat in md and caveat in web


# --- overlapping --server-cpus / --client-cpus (must-fix 9) --------------------------------
@pytest.mark.parametrize(("server", "client", "shared"), [("0", "0", "0"), ("0-1", "1", "1")])
def test_overlapping_cpu_sides_are_refused(server: str, client: str, shared: str) -> None:
    from pgrig.request import RunRequest, from_flags

    with pytest.raises(PgrigError) as e:
        from_flags(
            RunRequest, env_name="e", workload="pgbench:tpcb", duration_s="5",
            server_cpus=server, client_cpus=client,
        )  # fmt: skip
    assert str(e.value).startswith(f"--client-cpus shares CPU {shared} with --server-cpus")


def test_overlapping_cpu_sides_in_a_study_file_name_the_key(tmp_path: Path) -> None:
    from pgrig.study.spec import StudySpecError, load

    f = tmp_path / "s.toml"
    f.write_text(
        '[study]\nname = "s"\n[environment]\nversion = "15"\n'
        '[dataset]\nscenario = "pgbench"\nscale = 1\n'
        '[run]\nworkload = "pgbench:tpcb"\nduration = 5\nserver_cpus = "0-1"\nclient_cpus = "1"\n'
        "[sweep]\nclients = [1, 2]\n"
    )
    with pytest.raises(StudySpecError, match=r"run\.client_cpus: shares CPU 1 with server_cpus"):
        load(f)


def test_the_sibling_check_names_a_cpu_given_to_both_sides(tmp_path: Path) -> None:
    from host_fakes import make_machine

    from pgrig.machine.checks import Context, run_checks

    fs = make_machine(tmp_path / "m", None)
    ctx = Context(
        fs=fs, disks=[("home", tmp_path)], sample_s=0, pinned={"server": [0, 1], "client": [1]}
    )
    c = {found["name"]: found for found in run_checks(ctx)}
    assert c["smt_siblings"]["status"] == "warn"
    assert c["smt_siblings"]["value"] == "server 0-1, client 1: CPU 1 on both sides"


# --- profiles: shipped names kept, a damaged user file reported alone (must-fix 10, rough) -------
@pytest.mark.parametrize("name", ["default", "pgtune-oltp"])
def test_saving_a_profile_under_a_shipped_name_is_refused(pgrig_home: Path, name: str) -> None:
    from pgrig.provision.settings import profiles

    for force in (False, True):
        with pytest.raises(PgrigError, match=f"profile {name} is shipped with pgrig"):
            profiles.save_profile(name, {"work_mem": "64MB"}, "tuned", [], force=force)
    assert not (pgrig_home / "profiles" / f"{name}.toml").exists()
    assert profiles.resolve_profile("default", 15)[0] == {}


def test_a_damaged_user_profile_is_reported_and_the_others_work(pgrig_home: Path) -> None:
    from typer.testing import CliRunner

    from pgrig.cli.profile import app
    from pgrig.provision.settings import profiles

    (pgrig_home / "profiles").mkdir()
    (pgrig_home / "profiles" / "broken.toml").write_text("kind = fixed\n")
    (pgrig_home / "profiles" / "mine.toml").write_text('[settings]\nwork_mem = "8MB"\n')
    assert profiles.resolve_profile("mine", 15)[0] == {"work_mem": "8MB"}
    assert profiles.resolve_profile("pgtune-oltp", 15, ram_bytes=2**33, cpus=2)[0]
    listed = CliRunner().invoke(app, ["list", "--json"])
    assert listed.exit_code == 0, listed.output
    import json

    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert "broken.toml: cannot read" in rows["broken"]["damaged"] and "mine" in rows
    with pytest.raises(PgrigError, match=r"broken\.toml: cannot read"):
        profiles.resolve_profile("broken", 15)


# --- connection strings built by psycopg's helper (must-fix 11) ------------------------------
@pytest.mark.parametrize("db", ["a b", 'x"y', "a;b=c", "it's", "postgresql://evil"])
def test_a_database_name_stays_one_value_in_every_connection_string(db: str) -> None:
    from psycopg.conninfo import conninfo_to_dict

    from pgrig.provision.state.environment import Environment, dbname_arg

    env = Environment(name="e", kind="managed", host="127.0.0.1", port=5432, user="postgres")
    assert conninfo_to_dict(env.conninfo(db))["dbname"] == db
    assert env.libpq_env(db)["PGDATABASE"] == db
    arg = dbname_arg(db)  # pgbench/psql read a positional name holding '=' as a conninfo
    assert arg == db or conninfo_to_dict(arg) == {"dbname": db}


# --- study reports and tuning studies (rough edges) -----------------------------------------
def test_the_markdown_study_report_renders_the_host(archive: Any, tmp_path: Path) -> None:
    import sample_data

    from pgrig.reports import publish

    sample_data.iteration_study(archive)
    (md,) = publish.study_report(archive, "tune-pg15", ["md"], tmp_path)
    line = next(ln for ln in md.read_text().splitlines() if "host" in ln.lower() and "CPUs" in ln)
    assert "{" not in line and "'" not in line and "checks" not in line, line
    assert "RAM " in line and " GiB" in line


def test_a_tuning_studys_best_run_is_not_deleted_without_force(archive: Any, url: str) -> None:
    from study_fakes import make_record
    from typer.testing import CliRunner

    from pgrig.archive.records import StudyRecord
    from pgrig.cli.runs import app as runs_app

    rec = make_record(tps=1000.0)
    archive.finish_run(rec)
    archive.create_study(StudyRecord(name="tune-lab", kind="tune", spec="{}"))
    archive.update_study_extra("tune-lab", {"best": {"trial": 3, "run_id": rec.id}})
    refused = CliRunner().invoke(runs_app, ["delete", str(rec.id), "--yes", "--archive", url])
    assert refused.exit_code != 0
    assert "the best trial's run of tuning study 'tune-lab'" in str(refused.exception or "")
    archive.get_run(rec.id)  # still there
    done = CliRunner().invoke(
        runs_app, ["delete", str(rec.id), "--yes", "--force", "--archive", url]
    )
    assert done.exit_code == 0, done.output


# --- damaged and incomplete environments (rough edges) ----------------------------------------
def _env_json(home: Path, name: str, doc: Any) -> None:
    import json

    (home / "envs" / name).mkdir(parents=True)
    (home / "envs" / name / "env.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))


def test_env_list_shows_damaged_and_incomplete_environments(pgrig_home: Path) -> None:
    import json

    from typer.testing import CliRunner

    from pgrig.cli.env import app

    _env_json(pgrig_home, "typed", {"name": "typed", "port": "5432"})
    _env_json(pgrig_home, "broken", "{not json")
    (pgrig_home / "envs" / "halfway").mkdir()  # kill -9 during env create
    listed = CliRunner().invoke(app, ["list", "--json"])
    assert listed.exit_code == 0, listed.output
    status = {r["name"]: r["status"] for r in json.loads(listed.stdout)}
    assert (
        status["typed"] == "damaged: env.json: port: input should be a valid integer (got '5432')"
    )
    assert status["broken"].startswith("damaged: env.json: ")
    assert status["halfway"].startswith("damaged: incomplete")
    shown = CliRunner().invoke(app, ["show", "typed"])
    assert shown.exit_code != 0 and "port: input should be a valid integer" in str(shown.exception)


def test_an_interrupted_env_create_is_named_the_same_way_everywhere(pgrig_home: Path) -> None:
    from typer.testing import CliRunner

    from pgrig.cli.env import app

    (pgrig_home / "envs" / "halfway").mkdir(parents=True)
    for argv in (["show", "halfway"], ["create", "halfway", "--pg", "15"]):
        res = CliRunner().invoke(app, argv)
        assert res.exit_code != 0
        said = str(res.exception)
        assert "'halfway' is incomplete" in said and "does not exist" not in said, said
    res = CliRunner().invoke(app, ["destroy", "halfway", "--yes"])
    assert res.exit_code == 0, res.output
    assert not (pgrig_home / "envs" / "halfway").exists()
