"""A series groups the warnings of its runs, never showing one run's figure for another
(issue 30, class 3: "runs 9, 13, 43: ... 86%" where 13 was 71% and 43 was 102%)."""

from __future__ import annotations

from pgrig.archive.records import RunRecord
from pgrig.metrics.cpu_share import busy_host_warning
from pgrig.track import figures


def _run(run_id: int, core: float) -> RunRecord:
    rec = RunRecord(env_name="trk-s-18.6", workload="pgbench:select-only", clients=1, threads=1)
    rec.id = run_id
    share = {"other_cpu_pct_core": core, "other_cpu_pct_host": core / 2, "cpus": 2.0,
             "server_cpu_pct_core": 50.0}  # fmt: skip
    message = busy_host_warning(share)
    assert message is not None
    rec.add_warning("busy_host", message)
    return rec


def test_each_run_keeps_its_own_figure() -> None:
    lines = figures._warnings([_run(9, 86), _run(13, 71), _run(43, 102)])
    assert len(lines) == 3
    assert lines[0].startswith("run 9: ") and "used 86% of one core" in lines[0]
    assert lines[1].startswith("run 13: ") and "used 71% of one core" in lines[1]
    assert lines[2].startswith("run 43: ") and "used 102% of one core" in lines[2]


def test_the_same_message_is_one_line_naming_its_runs() -> None:
    lines = figures._warnings([_run(9, 86), _run(13, 86)])
    assert len(lines) == 1 and lines[0].startswith("runs 9, 13: ")


def test_a_versions_settings_are_what_each_run_had_not_the_last_runs() -> None:
    def run(run_id: int, sync: str | None) -> RunRecord:
        rec = RunRecord(env_name="trk-s-18.6", workload="pgbench:select-only", clients=1,
                        threads=1)  # fmt: skip
        rec.id = run_id
        conf = "configuration file"
        rec.settings = {"work_mem": {"setting": "8192", "boot_val": "4096", "source": conf}}
        if sync is not None:
            rec.settings["synchronous_commit"] = {"setting": sync, "boot_val": "on",
                                                  "source": conf}  # fmt: skip
        return rec

    got = figures.settings_of([run(3, None), run(5, None), run(7, "off")])
    assert got["work_mem"] == "8192"  # every run had it
    assert got["synchronous_commit"] == "(default) (runs 3, 5) / off (run 7)"
