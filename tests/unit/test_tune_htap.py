"""`pgrig tune ENV --preset htap`: the preset (CH-benCHmark with one analytic stream, judged on
NOPM against the defaults and pgtune-mixed), its space, the NOPM objective for chbench, the
analytic queries per hour kept beside NOPM with every trial and shown on every surface (never
optimised), and `analytic_clients` in a study file's [run] table as on the command line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from study_fakes import FakeBackend

from pgrig import format
from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.errors import PgrigError
from pgrig.reports import markdown, publish
from pgrig.request import RunRequest, from_flags
from pgrig.request.tune import TuneRequest
from pgrig.study import plan, spec
from pgrig.tune import confirm, presets, space
from pgrig.tune import request as tune_request
from pgrig.tune.objective import beside_rows, objective
from pgrig.tune.runner import TunePlan, run_tune

GIB = 1024**3
# a real run's documents: `pgrig run lab --db ch -w chbench -c 2 --analytic-clients 2 -T 6`
CAPTURED = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "chbench.json").read_text()
)
QPH = "chbench.qph"


# --- the preset --------------------------------------------------------------------------------
def test_htap_preset_is_chbench_with_one_analytic_stream_judged_on_nopm() -> None:
    p = presets.get("htap")
    assert p.workload == ("chbench",) and p.analytic_clients == 1
    assert p.warehouses == presets.HTAP_WAREHOUSES == 4 and p.scale is None
    assert p.scale_factor is None
    assert p.objective == "nopm" and p.space == "htap" and p.reference == "pgtune-mixed"
    assert p.duration is not None and p.clients >= p.warehouses  # a timed window, every warehouse
    defaults = {"workload": None, "scale": None, "scale_factor": None, "warehouses": None,
                "analytic_clients": None, "objective": "tps", "trials": 20, "clients": 1,
                "threads": 1, "duration": "20s", "warmup": "0", "space": "default"}  # fmt: skip
    got = presets.resolve("htap", {"warehouses": 2, "clients": None}, defaults)
    assert got["workload"] == ["chbench"] and got["objective"] == "nopm"
    assert got["warehouses"] == 2  # a given flag wins
    assert got["analytic_clients"] == 1 and got["clients"] == p.clients
    assert got["space"] == "htap" and got["duration"] == p.duration
    # the presets before it bring no CH-benCHmark option
    for name in ("read-heavy", "mixed-reporting", "write-heavy-slow-disk", "analytics"):
        other = presets.get(name).values()
        assert other["warehouses"] is None and other["analytic_clients"] is None


def test_htap_space_on_a_2_core_24_gib_machine() -> None:
    s = space.class_space("htap", 18, 24 * GIB, 2, disk_free_bytes=100 * GIB)
    assert set(s.names) == set(space.CLASS_KNOBS["htap"])
    assert s.notes[0] == "space for htap workloads: 12 knobs"
    # the machine's bounds, as the other classes': 40% of RAM, RAM/32 per sort or hash, no
    # more workers per gather than cores, WAL up to 16 GB (a quarter of the free disk)
    assert s.knob("shared_buffers").high == 24 * 1024 * 2 // 5
    assert s.knob("work_mem").high == 768 and s.knob("hash_mem_multiplier").high == 8.0
    assert s.knob("max_parallel_workers_per_gather").high == 2
    assert s.knob("max_wal_size").high == 16 * 1024
    assert s.knob("checkpoint_completion_target").high == 0.95
    assert s.knob("wal_buffers").high == 64 and s.knob("parallel_setup_cost").log
    # a smaller disk bounds the WAL the transactions may keep
    small = space.class_space("htap", 18, 24 * GIB, 2, disk_free_bytes=4 * GIB)
    assert small.knob("max_wal_size").high == 1024
    assert "jit" not in space.without_jit(s).names


# --- the objective -----------------------------------------------------------------------------
def test_nopm_is_chbench_s_objective_and_the_queries_per_hour_are_beside_it() -> None:
    nopm = objective("nopm", "chbench")
    assert nopm.metric.key == "nopm" and nopm.direction == "maximize"
    assert [f.key for f in nopm.beside] == [QPH]
    assert objective("nopm", "tpcc").beside == ()  # no analytic side
    assert objective("tps", "chbench").beside == nopm.beside  # whatever is optimised
    with pytest.raises(PgrigError, match="--objective nopm needs --workload tpcc or chbench"):
        objective("nopm", "pgbench:tpcb")


def _chbench_run(qph: float | None, nopm: float = 3000.0, status: str = "ok") -> RunRecord:
    doc = copy.deepcopy(CAPTURED["extra"]["chbench"])
    doc["qph"] = qph
    return RunRecord(
        env_name="e1", workload="chbench", clients=2, threads=1, status=status,  # type: ignore[arg-type]
        nopm=nopm, extra={"chbench": doc},
    )  # fmt: skip


def test_the_figures_beside_are_read_from_a_real_run_and_medians_per_configuration() -> None:
    obj = objective("nopm", "chbench")
    rec = _chbench_run(CAPTURED["extra"]["chbench"]["qph"])
    assert obj.beside_values(rec) == {QPH: 7800.0}  # the captured run's own figure
    assert obj.value(rec) == 3000.0  # the objective stays NOPM
    assert obj.beside_values(_chbench_run(7800.0, status="failed")) == {QPH: None}
    assert obj.beside_values(_chbench_run(0.0)) == {QPH: 0.0}  # none completed: said as 0
    groups = {
        "baseline": [_chbench_run(1000.0), _chbench_run(3000.0), _chbench_run(2000.0)],
        "best": [_chbench_run(600.0), _chbench_run(None)],
        "pgtune-mixed": [],
    }
    [row] = beside_rows(obj, groups)
    assert row.medians == {"baseline": 2000.0, "best": 600.0, "pgtune-mixed": None}
    assert row.runs == {"baseline": 3, "best": 1, "pgtune-mixed": 0}
    assert row.text() == (
        "analytic queries per hour: baseline 2,000 (3 runs), best 600 (1 run), pgtune-mixed -"
    )


# --- the request -------------------------------------------------------------------------------
def _asked(**changes: Any) -> dict[str, Any]:
    asked = dict(
        env_name="nowhere", preset=None, workload=["chbench"], scale=None, scale_factor=None,
        warehouses=None, trials=2, budget=None, objective="nopm", space="default",
        allow_unsafe=False, duration="3s", warmup="0", clients=2, threads=1,
        analytic_clients=1, confirm_repeats=2, ablation_repeats=0, ablation_units=1,
        name="t", database=None, seed=0,
    )  # fmt: skip
    return asked | changes


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"analytic_clients": None}, "--analytic-clients is required with --workload chbench"),
        ({"workload": ["tpcc"]}, "--analytic-clients applies only to --workload chbench"),
        ({"analytic_clients": -1}, "--analytic-clients must be >= 0 (got -1)"),
        (
            {
                "workload": ["pgbench:tpcb"],
                "analytic_clients": None,
                "warehouses": 2,
                "objective": "tps",
            },
            "--warehouses generates TPC-C's data (CH-benCHmark's with its three tables): use it "
            "with --workload tpcc or chbench",
        ),
        ({"objective": "power"}, "--objective power needs --workload tpch:power"),
    ],
)
def test_tune_refuses_what_does_not_fit_chbench(
    pgrig_home: Path, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(PgrigError) as e:
        tune_request.build(from_flags(TuneRequest, **_asked(**changes)))
    assert str(e.value).startswith(message), str(e.value)


def test_tune_on_a_missing_environment_gets_past_the_chbench_checks(pgrig_home: Path) -> None:
    """The load, the objective and the data asked fit together: the environment is next."""
    with pytest.raises(PgrigError, match="nowhere"):
        tune_request.build(from_flags(TuneRequest, **_asked(warehouses=2)))


# --- a study file's [run] table ----------------------------------------------------------------
STUDY = """
[study]
name = "s"
[environment]
name = "e"
[dataset]
scenario = "chbench"
warehouses = 2
[run]
workload = "chbench"
clients = 2
analytic_clients = 1
duration = 5
[[iterations]]
name = "a"
"""


def test_a_study_file_s_run_table_takes_analytic_clients() -> None:
    study = spec.parse(STUDY, check_files=False)
    assert study.run.analytic_clients == 1
    built = plan.build(study)
    request = built.run_request(built.runs[0])
    assert request.workload == "chbench" and request.analytic_clients == 1


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("analytic_clients = 1\n", "", "run.analytic_clients: is required with workload chbench"),
        ('workload = "chbench"', 'workload = "tpcc"',
         "run.analytic_clients: applies only to workload chbench (got 'tpcc')"),
        ("analytic_clients = 1", "analytic_clients = -1", "run.analytic_clients: must be >= 0"),
        ("analytic_clients = 1", "analytic_clients = 0\nquery_timeout = 5",
         "run.query_timeout: bounds the analytic queries: analytic_clients 0 runs none"),
        ("[[iterations]]\nname = \"a\"\n",
         "[[iterations]]\nname = \"a\"\n[iterations.run]\nworkload = \"tpcc\"\n",
         "iterations[0].run.analytic_clients: applies only to workload chbench (got 'tpcc')"),
    ],
)  # fmt: skip
def test_a_study_file_s_analytic_clients_is_checked_as_the_flag(
    old: str, new: str, message: str
) -> None:
    assert old in STUDY
    with pytest.raises(spec.StudySpecError) as e:
        spec.parse(STUDY.replace(old, new), check_files=False)
    assert str(e.value).startswith(message), str(e.value)


# --- the runner over fakes: the trials carry the figure beside NOPM ---------------------------
class TuneFake(FakeBackend):
    def execute(self, spec: Any, archive: Any, console: Any, stop_if: Any = None) -> Any:
        return super().execute(spec, archive, console)


class ChbenchFake(TuneFake):
    """The study fake's runs as CH-benCHmark's: NOPM from its TPS, and the captured run's
    chbench document whose queries per hour fall as work_mem grows (what a trade looks like)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(decorate=self._chbench, **kwargs)

    @staticmethod
    def _chbench(rec: RunRecord, request: RunRequest) -> None:
        rec.nopm = rec.tps * 20 if rec.tps is not None else None
        doc = copy.deepcopy(CAPTURED["extra"]["chbench"])
        work_mem = str(rec.settings.get("work_mem", {}).get("setting") or "1MB")
        doc["qph"] = 7200.0 / int(work_mem.removesuffix("MB"))
        rec.extra["chbench"] = doc


def _plan(trials: int = 4) -> TunePlan:
    load = RunRequest(
        env_name="e1", workload="chbench", clients=2, duration_s=20.0, analytic_clients=1
    )
    return TunePlan(
        name="t", load=load, objective=objective("nopm", "chbench"),
        space=space.Space([space.Knob("shared_buffers", choices=("128MB", "1GB")),
                           space.Knob("work_mem", 1, 64, "MB", log=True)]),
        trials=trials, confirm_repeats=2, pgtune_settings={"shared_buffers": "1GB"},
        reference="pgtune-mixed",
    )  # fmt: skip


def test_every_trial_carries_nopm_and_the_queries_per_hour_on_every_surface(
    archive: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    from pgrig.cli import tune as tune_cli

    result = run_tune(_plan(), archive=archive, backend=ChbenchFake(running={"e1"}))  # type: ignore[arg-type]
    assert result.status == "done"
    x = archive.get_study("t").extra
    runs = {r.id: archive.get_run(r.id) for r in archive.study_runs("t") if r.id is not None}
    assert x["objective"] == "nopm" and len(x["trials"]) == 4
    for trial in x["trials"]:
        rec = runs[trial["run_id"]]
        assert trial["value"] == pytest.approx(rec.nopm)  # the objective: NOPM
        assert trial["beside"] == {QPH: rec.extra["chbench"]["qph"]}  # beside it
    best = x["best"]
    assert best["beside"] == next(t["beside"] for t in x["trials"] if t["number"] == best["trial"])

    tune_cli.show_study(archive, "t", as_json=True)
    doc = json.loads(capsys.readouterr().out)
    assert [t["beside"] for t in doc["trials"]] == [t["beside"] for t in x["trials"]]
    [row] = doc["beside"]
    assert row["key"] == QPH and row["label"] == "analytic queries per hour"
    assert set(row["medians"]) == set(confirm.configs("pgtune-mixed"))
    assert row["runs"] == {"baseline": 2, "best": 2, "pgtune-mixed": 2}

    tune_cli.show_study(archive, "t", as_json=False)
    out, err = capsys.readouterr()
    assert "analytic queries per hour" in out  # the trial table's column
    assert "beside the objective, not optimised: analytic queries per hour" in err
    assert "  confirmation medians: baseline " in err  # the summary under the table
    first = x["trials"][0]
    assert f" {format.number(first['beside'][QPH], 0)} " in out  # its column

    tune_cli.show_recommendation(archive, "t")
    text = capsys.readouterr().out
    assert "# beside the objective, not optimised: analytic queries per hour" in text
    assert "#   confirmation medians: baseline " in text and "pgtune-mixed " in text
    assert "# best vs pgtune-mixed: " in text

    md = " ".join(markdown.render(publish.study_document(archive, "t"), "t").split())
    assert "analytic queries per hour: reported beside NOPM as evidence" in md
    assert "| analytic queries per hour |" in md  # the trials' column and the evidence row


def test_a_tpcc_study_shows_nothing_beside(
    archive: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    from pgrig.cli import tune as tune_cli

    p = _plan(trials=2)
    load = RunRequest(env_name="e1", workload="tpcc", clients=2, duration_s=20.0)
    p = TunePlan(**{**p.__dict__, "load": load, "objective": objective("nopm", "tpcc")})
    backend = TuneFake(running={"e1"}, decorate=lambda r, _q: setattr(r, "nopm", r.tps))
    run_tune(p, archive=archive, backend=backend)  # type: ignore[arg-type]
    assert all("beside" not in t for t in archive.get_study("t").extra["trials"])
    tune_cli.show_study(archive, "t", as_json=True)
    assert "beside" not in json.loads(capsys.readouterr().out)
    tune_cli.show_recommendation(archive, "t")
    assert "beside the objective" not in capsys.readouterr().out
