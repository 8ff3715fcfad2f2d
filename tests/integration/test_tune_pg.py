"""`pgrig tune` against real PostgreSQL 15 and real pgbench (scale 1, runs of 2-3 s).

One module-scoped sequence, because each step needs the previous one's state:
  1. a tune of 3 trials is interrupted with SIGINT in the middle of a trial -> exit 130, the
     environment has its own settings back, the aborted run is archived;
  2. the same command with --resume finishes it (confirmation: 2 interleaved repeats, then an
     ablation of 2 rounds with every changed knob in one unit) -> the trials are archived runs
     of the study, the report shows importances, verdicts with bounds and the ablation, `tune
     show` prints the recommendation, the settings are back again;
  3. a tune killed with SIGKILL leaves its settings; `pgrig tune ENV --restore` puts them back.
The space is a small file of harmless knobs (a restart-only one among them), so the guardrail
(p95 > 2x the baseline's) does not prune trials on a busy shared host.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import servers

pytestmark = pytest.mark.integration

pgrig = functools.partial(servers.pgrig, timeout=280)

SPACE = """
[knobs.shared_buffers]
choices = ["64MB", "256MB"]
[knobs.work_mem]
low = "1MB"
high = "64MB"
log = true
[knobs.random_page_cost]
low = 1.1
high = 4.0
[knobs.checkpoint_completion_target]
low = 0.5
high = 0.9
"""
KNOBS = ("shared_buffers", "work_mem", "random_page_cost", "checkpoint_completion_target")


def tune_argv(home: Path, name: str) -> list[str]:
    return [
        "pgrig", "tune", "lab", "--workload", "pgbench:tpcb", "--trials", "3",
        "--duration", "2s", "--clients", "2", "--confirm-repeats", "2",
        "--ablation-repeats", "2", "--ablation-units", "1",
        "--space", str(home / "space.toml"), "--name", name, "--format", "md",
    ]  # fmt: skip


def effective(keys: tuple[str, ...] = KNOBS) -> dict[str, str]:
    """What the running server says (SHOW), and the environment layer pgrig keeps."""
    import psycopg

    from pgrig.provision.state.environment import Environment

    env = Environment.load("lab")
    with psycopg.connect(env.conninfo("pgrig")) as conn:
        shown = {k: str(conn.execute(f"SHOW {k}").fetchone()[0]) for k in keys}  # type: ignore[index]
    return {**shown, "layer": json.dumps(env.settings, sort_keys=True)}


def wait_for_trial(study: str, timeout: float = 120) -> dict:
    """The first trial run of `study` that `pgrig runs list` shows as running."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        runs = servers.archived_runs(study=study)
        running = [r for r in runs if r["status"] == "running" and "trial" in r["study_point"]]
        if running:
            return running[0]
        time.sleep(0.3)
    raise AssertionError("no trial ran")


def lab_pgbench() -> list:
    """pgbench processes aimed at the lab's port (the host is shared with other tests)."""
    import psutil

    from pgrig.provision.state.environment import Environment

    port = str(Environment.load("lab").port)
    found = []
    for p in psutil.process_iter(["name"]):
        with contextlib.suppress(psutil.Error):
            if p.info["name"] == "pgbench" and p.environ().get("PGPORT") == port:
                found.append(p)
    return found


def wait_no_pgbench(timeout: float = 15) -> None:
    """pgbench of a killed tune runs out its seconds: wait for it (no orphan left behind)."""
    deadline = time.time() + timeout
    while lab_pgbench() and time.time() < deadline:
        time.sleep(0.3)
    assert not lab_pgbench(), "pgbench of the killed tune still runs"


@pytest.fixture(scope="module")
def lab() -> Iterator[Path]:
    with servers.pgbench_lab("pgrig-tune-test-") as _env:
        home = Path(os.environ["PGRIG_HOME"])
        (home / "space.toml").write_text(SPACE)
        yield home


@pytest.fixture(scope="module")
def interrupted(lab: Path) -> dict:
    """Step 1: SIGINT during a trial."""
    before = effective()
    proc = subprocess.Popen(tune_argv(lab, "t1"), stderr=subprocess.PIPE, text=True)
    try:
        wait_for_trial("t1")
        # The signal must land while the trial's pgbench runs: a trial is 2 s and `runs list`
        # may see it late on a busy host, so wait for its pgbench (the baseline's has ended).
        deadline = time.time() + 60
        while not lab_pgbench() and time.time() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    runs = json.loads(pgrig("runs", "list", "--json", "--study", "t1").stdout)
    return {"before": before, "after": effective(), "rc": proc.returncode, "stderr": stderr,
            "runs": runs}  # fmt: skip


@pytest.fixture(scope="module")
def resumed(lab: Path, interrupted: dict) -> dict:
    """Step 2: --resume finishes the study."""
    proc = pgrig(*tune_argv(lab, "t1")[1:], "--resume", check=False)
    report = lab / "reports" / "t1" / "t1.md"
    return {"proc": proc, "after": effective(), "report": report.read_text()}


def test_sigint_mid_trial_restores_the_settings(interrupted: dict) -> None:
    assert interrupted["rc"] == 130, interrupted["stderr"]
    assert "interrupted" in interrupted["stderr"] and "--resume" in interrupted["stderr"]
    assert interrupted["after"] == interrupted["before"]
    statuses = [(r["study_point"], r["status"]) for r in interrupted["runs"]]
    aborted = [point for point, status in statuses if status == "aborted"]
    assert len(aborted) == 1 and "trial" in aborted[0], statuses
    assert all(status in ("ok", "aborted") for _, status in statuses), statuses
    study = json.loads(pgrig("study", "show", "t1", "--json").stdout)
    assert study["status"] == "interrupted"


def test_resume_finishes_with_archived_trials(lab: Path, interrupted: dict, resumed: dict) -> None:
    proc = resumed["proc"]
    assert proc.returncode == 0, proc.stderr
    assert resumed["after"] == interrupted["before"]  # the environment's own settings again
    assert not (lab / "studies" / "lab.settings.json").exists()
    study = json.loads(pgrig("study", "show", "t1", "--json").stdout)
    assert study["status"] == "done"
    finished = [t for t in study["trials"] if t["state"] in ("complete", "pruned")]
    assert len(finished) == 3
    assert [t["state"] for t in study["trials"]].count("fail") == 1  # the interrupted one
    runs = json.loads(pgrig("runs", "list", "--json", "--study", "t1").stdout)
    by_id = {r["id"]: r for r in runs}
    for t in finished:  # every trial is an archived run of the study, with its settings
        rec = json.loads(pgrig("runs", "show", str(t["run_id"]), "--json").stdout)
        assert by_id[t["run_id"]]["study_point"] == f"trial-{t['number']:03d}"
        layer = rec["settings_layers"]["environment"]
        assert {k: layer[k] for k in KNOBS} == t["settings"]
    points = sorted(r["study_point"] for r in runs if r["study_point"].startswith("confirm-"))
    assert points == sorted(["confirm-baseline", "confirm-best", "confirm-pgtune-oltp"] * 2)


def test_report_shows_importances_and_verdicts_with_bounds(resumed: dict) -> None:
    text = resumed["report"]
    section = text.split("## Knob importances")[1].split("##")[0]
    study = json.loads(pgrig("study", "show", "t1", "--json").stdout)
    # which of the two the report shows follows from the trials' states, and says so exactly
    completed = [t for t in study["trials"] if t["state"] == "complete"]
    shares = [float(v) for v in re.findall(r"\| (\d+\.\d)% \|", section)]
    if len(completed) >= 3:
        assert shares and abs(sum(shares) - 100) < 0.5
        assert set(re.findall(r"\| (\w+) \| \d", section)) <= set(KNOBS)
        assert "completed trials (have" not in section
    else:  # a busy host made the guardrail prune trials: the report says how many are left
        assert f"needs 3+ completed trials (have {len(completed)})" in section
        assert not shares
    confirmation = text.split("## Confirmation")[1].split("##")[0]
    for question in ("best vs baseline", "best vs pgtune-oltp"):
        m = re.search(
            rf"\| {question} \| TPS \| x(\d\.\d{{3}}) \[(\d\.\d{{3}}), (\d\.\d{{3}})\] \| "
            r"(faster|slower|equivalent|inconclusive)",
            confirmation,
        )
        assert m, confirmation
        ratio, low, high = (float(g) for g in m.groups()[:3])
        assert low <= ratio <= high
    # the CLI prints the same verdicts as the report (one comparison engine)
    stderr = resumed["proc"].stderr
    for question in ("best vs baseline", "best vs pgtune-oltp"):
        line = next(ln for ln in stderr.splitlines() if ln.startswith(f"{question}: "))
        ratio_text = line.split(": ", 1)[1].split(" ", 3)
        assert " ".join(ratio_text[:3]) in confirmation


def test_ablation_and_tune_show(resumed: dict) -> None:
    """The ablation ran interleaved with the best; `tune show` prints an env set line and one
    comment per setting of the best."""
    runs = json.loads(pgrig("runs", "list", "--json", "--study", "t1").stdout)
    ablated = [r["study_point"] for r in runs if r["study_point"].startswith("ablate-")]
    if ablated:  # the best may equal the environment's own values: then nothing to ablate
        assert sorted(ablated) == sorted(["ablate-best", "ablate-the rest"] * 2)
        assert "## Ablation" in resumed["report"]
    out = pgrig("tune", "show", "t1").stdout
    study = json.loads(pgrig("study", "show", "t1", "--json").stdout)
    best = study["best"]["settings"]
    assert "pgrig env set lab " + " ".join(f"{k}={v}" for k, v in best.items()) in out
    conf = out.split("# postgresql.conf\n", 1)[1].strip().splitlines()
    assert [line.split(" = ")[0] for line in conf[1::2]] == list(best)
    assert all(c.startswith(("# ablation", "# search importance", "# not measured"))
               for c in conf[::2])  # fmt: skip


def test_preset_brings_its_workload_clients_and_data(lab: Path, resumed: dict) -> None:
    """--preset read-heavy with tiny overrides: select-only on 8 clients over the data it
    asked for (generated, since the lab holds scale 1)."""
    proc = pgrig(
        "tune", "lab", "--preset", "read-heavy", "--scale", "2", "--trials", "1",
        "--duration", "1s", "--warmup", "0", "--confirm-repeats", "2",
        "--ablation-repeats", "0", "--name", "p1", check=False,
    )  # fmt: skip
    assert "generating pgbench data (scale 2)" in proc.stderr, proc.stderr
    assert "space for read workloads" in proc.stderr
    runs = json.loads(pgrig("runs", "list", "--json", "--study", "p1").stdout)
    baseline = next(r for r in runs if r["study_point"] == "baseline")
    rec = json.loads(pgrig("runs", "show", str(baseline["id"]), "--json").stdout)
    assert rec["workload"] == "pgbench:select-only" and rec["clients"] == 8
    assert rec["scale"] == 2
    unknown = pgrig("tune", "lab", "--preset", "fast", check=False)
    assert unknown.returncode != 0 and "read-heavy" in unknown.stderr


def test_kill_9_is_undone_by_restore(lab: Path, resumed: dict) -> None:
    before = effective()
    proc = subprocess.Popen(tune_argv(lab, "t2"), stderr=subprocess.DEVNULL)
    try:
        wait_for_trial("t2")
        proc.kill()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_no_pgbench()
    assert (lab / "studies" / "lab.settings.json").exists()  # what to put back
    assert effective()["layer"] != before["layer"]
    out = pgrig("tune", "lab", "--restore")
    assert "its own settings are back" in out.stderr
    assert effective() == before
    assert "nothing to restore" in pgrig("tune", "lab", "--restore").stderr


# --- the knob space against the real parsers of 15 and 18 ------------------------------------
@pytest.mark.parametrize("major", ["15", "18"])
def test_default_space_passes_the_real_parser(
    major: str, pgrig_home: Path, request: pytest.FixtureRequest
) -> None:
    from pgrig.tune import space

    bindir, version = request.getfixturevalue(f"pg{major}")
    s = space.for_server(bindir, version, "default", True, disk_path=pgrig_home)
    assert ("io_method" in s.names) == (major == "18")
    assert {"shared_buffers", "wal_buffers"} <= set(s.restart_names)  # the catalogue says so
    assert (major == "18") == ("io_method" in s.restart_names)
    assert set(space.UNSAFE) <= set(s.names)
    assert "lz4" in s.knob("wal_compression").choices  # both builds have lz4
    assert s.knob("wal_sync_method").choices == space.WAL_SYNC_METHODS  # all valid on Linux
    assert "wal_sync_method" not in s.restart_names  # a reload applies it


def test_space_file_values_go_through_the_parser(pg15: tuple[Path, str], tmp_path: Path) -> None:
    from pgrig.errors import PgrigError
    from pgrig.tune import space

    f = tmp_path / "space.toml"
    f.write_text("[knobs.commit_siblings]\nlow = 1\nhigh = 5000\n")
    # a space file's value is named by its key path (issue 25)
    with pytest.raises(
        PgrigError,
        match=r"^--space .*space\.toml: knobs\.commit_siblings\.high: commit_siblings=5000 is "
        "outside the valid",
    ):
        space.for_server(pg15[0], pg15[1], str(f), False, disk_path=tmp_path)
    f.write_text("[knobs.io_workers]\nlow = 1\nhigh = 4\n")
    with pytest.raises(PgrigError, match=r"io_workers does not exist in PostgreSQL 15"):
        space.for_server(pg15[0], pg15[1], str(f), False, disk_path=tmp_path)


def test_a_text_setting_in_a_space_file_is_refused(pg15: tuple[Path, str], tmp_path: Path) -> None:
    """Issue 43: the catalogue's type decides (a STRING setting has nothing to search)."""
    from pgrig.errors import PgrigError
    from pgrig.tune import space

    f = tmp_path / "space.toml"
    f.write_text('[knobs.search_path]\nchoices = ["public", "pg_catalog"]\n')
    with pytest.raises(PgrigError, match=r"knobs\.search_path: search_path is a text setting"):
        space.for_server(pg15[0], pg15[1], str(f), False, disk_path=tmp_path)


def test_space_file_times_are_read_as_times(pg15: tuple[Path, str], tmp_path: Path) -> None:
    """Issue 43 (F6): a time setting's range in time units, through the real parser; the
    wrong kind is refused naming the key path, whether or not the catalogue has its units."""
    from pgrig.errors import PgrigError
    from pgrig.tune import space

    f = tmp_path / "space.toml"
    f.write_text('[knobs.checkpoint_timeout]\nlow = "30s"\nhigh = "15min"\n')
    s = space.for_server(pg15[0], pg15[1], str(f), False, disk_path=tmp_path)
    assert s.knob("checkpoint_timeout").ends() == ["30s", "900s"]
    f.write_text('[knobs.checkpoint_timeout]\nlow = "30MB"\nhigh = "64MB"\n')
    with pytest.raises(PgrigError, match=r"knobs\.checkpoint_timeout\.low: "):
        space.for_server(pg15[0], pg15[1], str(f), False, disk_path=tmp_path)


def test_guardrail_stops_a_real_run_early(lab: Path) -> None:
    """The run orchestrator's stop_if: pgbench is stopped, the run archived aborted with why."""
    from pgrig.archive.store import Archive
    from pgrig.load.core.runner import execute
    from pgrig.request import RunRequest
    from pgrig.tune.guardrails import Guardrails

    # a limit every second exceeds: 1 microsecond, twice the "baseline's" 0.5 us
    stop_if = Guardrails(baseline_p95_ms=0.0005).early_stop(seconds=2)
    request = RunRequest(env_name="lab", workload="pgbench:select-only", duration_s=30.0)
    t0 = time.monotonic()
    with Archive() as archive:
        rec = execute(request, archive=archive, live=False, stop_if=stop_if)
        stored = archive.get_run(rec.id or 0)
    assert time.monotonic() - t0 < 20  # not the 30 s asked for
    assert stored.status == "aborted"
    assert stored.error == (
        "stopped early: p95 above 0.00 ms (2 x the baseline's) for 2 seconds in a row"
    )
    assert Guardrails(0.0005).judge(stored).pruned
    wait_no_pgbench()
