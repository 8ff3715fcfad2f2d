"""Plans: points in order, cumulative settings, changes, origins for error messages."""

from __future__ import annotations

from study_fakes import iterations_toml, study_toml

from pgrig.study import plan as planning
from pgrig.study.spec import parse

HEAD = study_toml("p", repeats=2, environment={"settings": {"max_connections": 50}}, warmup=1)

ITERATIONS = HEAD + iterations_toml(
    {
        "name": "start",
        "settings": {"shared_buffers": "128MB", "work_mem": "4MB"},
        "actions": ["restart"],
    },
    {"name": "bigger", "settings": {"shared_buffers": "1GB"}, "run": {"clients": 8}},
    {"name": "work_mem back", "reset": ["work_mem"]},
)


def test_iteration_settings_are_cumulative() -> None:
    p = planning.build(parse(ITERATIONS))
    a, b, c = p.points
    assert a.settings == {"max_connections": "50", "shared_buffers": "128MB", "work_mem": "4MB"}
    assert b.settings == {"max_connections": "50", "shared_buffers": "1GB", "work_mem": "4MB"}
    assert c.settings == {"max_connections": "50", "shared_buffers": "1GB"}
    assert b.changes == {"shared_buffers": "1GB"}
    assert c.changes == {"work_mem": None}
    assert a.actions == ("restart",) and b.actions == ()
    assert [pt.key for pt in p.points] == ["iter-00", "iter-01", "iter-02"]


def test_run_overrides_are_sticky() -> None:
    p = planning.build(parse(ITERATIONS))
    assert [pt.run.clients for pt in p.points] == [4, 8, 8]


def test_origins_point_at_the_file() -> None:
    p = planning.build(parse(ITERATIONS))
    c = p.points[2]
    assert c.origins == {
        "max_connections": "environment.settings.max_connections",
        "shared_buffers": "iterations[1].settings.shared_buffers",
    }


def test_sequential_and_interleaved_order() -> None:
    seq = planning.build(parse(ITERATIONS))
    assert [(r.point.key, r.repeat) for r in seq.runs][:3] == [
        ("iter-00", 0),
        ("iter-00", 1),
        ("iter-01", 0),
    ]
    text = ITERATIONS.replace("repeats = 2", 'repeats = 12\norder = "interleaved"')
    inter = planning.build(parse(text))
    rounds = [[r.point.key for r in inter.runs[i : i + 3]] for i in range(0, len(inter.runs), 3)]
    assert len(rounds) == 12
    for k, keys in enumerate(rounds):  # every round runs each point once, repeat k
        assert sorted(keys) == ["iter-00", "iter-01", "iter-02"]
        assert {r.repeat for r in inter.runs[3 * k : 3 * k + 3]} == {k}
    # no fixed order: the first point does not always follow the same other (carry-over)
    before_first = {keys[keys.index("iter-00") - 1] for keys in rounds if keys[0] != "iter-00"}
    assert len(before_first) == 2 and len({tuple(keys) for keys in rounds}) > 2
    # the same plan again (a resumed study), another plan for another study
    again = planning.build(parse(text))
    assert [(r.point.key, r.repeat) for r in again.runs] == [
        (r.point.key, r.repeat) for r in inter.runs
    ]
    other = planning.build(parse(text.replace('name = "p"', 'name = "q"')))
    assert [r.point.key for r in other.runs] != [r.point.key for r in inter.runs]


def test_run_request() -> None:
    p = planning.build(parse(ITERATIONS))
    spec = p.run_request(p.runs[3])
    assert spec.env_name == "p-pg15"
    assert spec.study == "p" and spec.study_point == "iter-01" and spec.repeat == 1
    assert spec.clients == 8 and spec.duration_s == 5 and spec.warmup_s == 1
    assert spec.scenario == "pgbench" and spec.tags["study"] == "p"
    assert spec.settings == {}  # the study sets the environment layer, not a per-run one


def test_estimate() -> None:
    p = planning.build(parse(ITERATIONS))
    per_run = 5 + 1 + planning.RUN_OVERHEAD_S
    assert p.estimated_seconds() == 6 * per_run + 3 * planning.POINT_OVERHEAD_S
    tx = parse(ITERATIONS.replace("duration = 5", "transactions = 100"))
    assert planning.build(tx).estimated_seconds() is None


SWEEP = (
    HEAD
    + """
[sweep]
workload = ["pgbench:select-only", "pgbench:tpcb-like"]
clients = [1, 4]
settings.work_mem = ["4MB", "64MB"]
"""
)


def test_sweep_points() -> None:
    p = planning.build(parse(SWEEP))
    assert len(p.points) == 8 and len(p.runs) == 16
    first = p.points[0]
    assert first.coords == {
        "workload": "pgbench:select-only",
        "clients": 1,
        "settings.work_mem": "4MB",
    }
    assert first.key == "workload=pgbench:select-only,clients=1,work_mem=4MB"
    assert first.run.threads == 1  # capped to the swept clients
    assert p.points[2].run.threads == 2
    assert first.settings == {"max_connections": "50", "work_mem": "4MB"}
    assert p.points[1].changes == {"work_mem": "64MB"}
    assert p.points[1].origins["work_mem"] == "sweep.settings.work_mem[1]"
    s = parse(SWEEP).sweep
    assert first.series_label(s.series) == "workload=pgbench:select-only, work_mem=4MB"


def test_version_sweep_switches_environments() -> None:
    p = planning.build(parse(HEAD + "\n[sweep]\nversion = [15, 18]\nclients = [1, 2]\n"))
    assert [pt.env_key for pt in p.points] == ["pg15", "pg15", "pg18", "pg18"]
    assert p.run_request(p.runs[-1]).env_name == "p-pg18"


def test_display_value() -> None:
    assert planning.display_value("/a/b/read.sql@2,/c/write.sql") == "read.sql@2,write.sql"
    assert planning.display_value(2.50) == "2.5"


def test_pinning_reaches_the_run_request() -> None:
    p = planning.build(parse(HEAD + '\n[sweep]\nserver_cpus = ["0", "0-1"]\nclients = [2]\n'))
    assert [p.run_request(r).server_cpus for r in p.runs[::2]] == ["0", "0-1"]
    assert p.points[0].key == "server_cpus=0,clients=2"
