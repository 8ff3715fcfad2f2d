"""What a run on an environment with replicas says about its settings and its replicas (issue
30): the layer that set a setting (classes 5), the sync mode the run had, a replica's lag
only where it was measured (class 3)."""

from __future__ import annotations

from typing import Any

from pgrig.analysis.compare import group_differences
from pgrig.archive.records import RunRecord
from pgrig.provision.settings.config import LAYERS
from pgrig.views import backup_figures
from pgrig.views.settings import LAYER_ORDER, layer_of, non_default_rows


def _run(run_settings: dict[str, str], lag: dict[str, Any] | None = None, **kw: Any) -> RunRecord:
    rec = RunRecord(env_name="lab", workload="pgbench:select-only", clients=2, threads=1, **kw)
    rec.settings_layers = {
        "insights": {"track_io_timing": "on"},
        "topology": {"synchronous_commit": "on",
                     "synchronous_standby_names": "ANY 1 (r1, r2)"},
        "profile": {"__name__": "default"},
        "environment": {},
        "run": dict(run_settings),
    }  # fmt: skip
    effective = run_settings.get("synchronous_commit", "on")
    rec.settings = {
        "synchronous_commit": {"setting": effective, "boot_val": "on",
                               "source": "configuration file"},
        "synchronous_standby_names": {"setting": "ANY 1 (r1, r2)", "boot_val": "",
                                      "source": "configuration file"},
    }  # fmt: skip
    rec.extra["topology"] = {
        "sync": "on",
        "replicas": [{"name": "r1", "port": 5434}, {"name": "r2", "port": 5435}],
        "lag": lag
        or {
            "r1": {"max_lag_bytes": 552, "samples_not_streaming": 0, "samples": 3},
            "r2": {"max_lag_bytes": 552, "samples_not_streaming": 0, "samples": 3},
        },
    }
    return rec


def test_the_layer_order_is_the_one_pgrig_conf_merges() -> None:
    assert [k for k in LAYER_ORDER if k in LAYERS] == list(LAYERS)


def test_a_run_setting_over_the_topology_is_the_run_layers() -> None:
    rec = _run({"synchronous_commit": "local"})
    assert layer_of(rec.settings_layers, "synchronous_commit") == "run"
    rows = {r.name: r for r in non_default_rows(rec)}
    assert rows["synchronous_commit"].value == "local"
    assert rows["synchronous_commit"].layer == "run"
    assert rows["synchronous_standby_names"].layer == "topology"


def test_the_sync_mode_row_is_the_one_the_run_had() -> None:
    rows = dict(backup_figures.topology_rows(_run({"synchronous_commit": "local"})))
    assert rows["sync mode"].startswith("local (synchronous_commit from layer run;")
    assert "the topology's mode is on" in rows["sync mode"]
    assert dict(backup_figures.topology_rows(_run({})))["sync mode"] == "on"


def test_runs_with_and_without_sync_replication_differ_in_their_configuration() -> None:
    a, b = _run({"work_mem": "4MB"}, id=1), _run({"work_mem": "4MB"}, id=2)
    b.settings_layers["topology"] = {}  # sync off: the topology sets nothing
    assert any(d.startswith("setting synchronous_commit") for d in group_differences([a, b]))


def test_a_replica_that_was_not_streaming_has_no_lag_to_show() -> None:
    rec = _run({}, lag={
        "r1": {"max_lag_bytes": 29640, "samples_not_streaming": 0, "samples": 3},
        "r2": {"max_lag_bytes": None, "samples_not_streaming": 3, "samples": 3},
    })  # fmt: skip
    rows = dict(backup_figures.topology_rows(rec))
    assert rows["replica r1"] == "max replay lag 28.9 KiB"
    assert rows["replica r2"] == "max replay lag unknown: not streaming in 3 of 3 samples"
    assert backup_figures.max_lag_bytes(rec) is None  # the compare figure: not measured


def test_a_replica_killed_mid_run_shows_its_lag_while_streaming_only() -> None:
    rec = _run({}, lag={
        "r1": {"max_lag_bytes": 0, "samples_not_streaming": 0, "samples": 6},
        "r2": {"max_lag_bytes": 0, "samples_not_streaming": 4, "samples": 6},
    })  # fmt: skip
    text = dict(backup_figures.topology_rows(rec))["replica r2"]
    assert text.startswith("max replay lag 0 B while streaming;")
    assert "not streaming in 4 of 6 samples (lag unknown)" in text
    assert backup_figures.max_lag_bytes(rec) is None
