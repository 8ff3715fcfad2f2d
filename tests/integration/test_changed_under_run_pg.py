"""Issue 43, class 1: what `env set ... --force` changes under a running run is an event of that
run, on every surface (runs show text and --json), and comparisons involving the run give no
verdict. A real server and a real run of a few seconds; nothing timed."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration


def test_a_setting_forced_under_a_run_is_an_event_of_the_run(
    pg15: tuple[Path, str], pgrig_home: Path
) -> None:
    lab = servers.pgbench_env("forced")
    plain = servers.ok_run(lab, "-w", "pgbench:select-only", "-c", "1", "-T", "2")
    # long enough that the forced command (a pgrig start on a loaded host) comes under it
    argv = ["pgrig", "run", lab, "-w", "pgbench:select-only", "-c", "1", "-T", "10", "--json"]
    run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    running = servers.wait_for_running()
    forced = pgrig("env", "set", lab, "work_mem=8MB", "--force")
    assert f"run {running['id']} on {lab} is in progress" in forced.stderr
    assert servers.exit_code_within(run, 120) == 0
    out, _err = run.communicate()
    doc = json.loads(out)
    assert doc["id"] == running["id"] and doc["status"] == "ok"  # it ran: it is an event of it

    [event] = doc["changed_under_run"]
    assert event["command"] == "env set --force" and event["change"] == "settings work_mem=8MB"
    assert event["after_s"] >= 0
    [warning] = [w for w in doc["warnings"] if w["code"] == "changed_under_run"]
    assert "`pgrig env set --force`: settings work_mem=8MB" in warning["message"]
    assert "not comparable as it is" in warning["message"]
    shown = pgrig("runs", "show", str(doc["id"])).stdout
    assert "the environment was changed while this run ran" in " ".join(shown.split())
    # the run's end (its insights layer put back) kept the forced setting: the server runs it
    assert pgrig("env", "psql", lab, "-c", "SHOW work_mem").stdout.split()[2] == "8MB"

    compared = json.loads(pgrig("runs", "compare", str(plain.id), str(doc["id"]), "--json").stdout)
    tps = compared["comparisons"]["tps"]
    assert tps["verdict"] is None
    assert tps["reason"].startswith(f"run {doc['id']} (settings work_mem=8MB at ")
    assert tps["reason"].endswith("was changed while running: not comparable as is")

    # an unforced change is still refused under a run, and a change with no run under it is
    # no event of any later run
    pgrig("env", "set", lab, "work_mem=4MB", "--force")
    later = servers.ok_run(lab, "-w", "pgbench:select-only", "-c", "1", "-T", "1")
    assert not later.extra.get("changed_under_run")
    assert all(w["code"] != "changed_under_run" for w in later.warnings())


def test_a_setting_forced_under_a_tune_trial_prunes_it_and_its_undoing_is_said(
    pg15: tuple[Path, str], pgrig_home: Path
) -> None:
    """Issue 43 (F3): a `--force` change under a tune's trial is an event of that trial's run,
    the trial is pruned (not a measure of its settings), and the tune's putting back the
    environment's own settings, which undoes the change, is said, not silent."""
    lab = servers.pgbench_env("forcedtune")
    space = pgrig_home / "space.toml"
    space.write_text('[knobs.work_mem]\nlow = "1MB"\nhigh = "64MB"\n')
    argv = ["pgrig", "tune", lab, "--workload", "pgbench:select-only", "--clients", "1"]
    # one trial: pruned, the study has no best and nothing to confirm (the subject is the
    # pruning and the undoing, not a confirmation's four runs)
    argv += ["--duration", "10s", "--trials", "1", "--confirm-repeats", "2"]
    argv += ["--ablation-repeats", "0", "--space", str(space), "--name", "ft"]
    tune = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    trial = None
    while trial is None and time.time() < deadline:
        runs = servers.archived_runs(study="ft")
        trial = next(
            (r for r in runs if r["status"] == "running" and "trial" in r["study_point"]), None
        )
        time.sleep(0.2)
    assert trial is not None, "no trial ran"
    while not servers.pgbench_children(tune) and tune.poll() is None:
        time.sleep(0.05)  # the trial's load running (the baseline's has ended)
    forced = pgrig("env", "set", lab, "maintenance_work_mem=77MB", "--force")
    assert "`pgrig tune ft` changes forcedtune's settings for its runs" in forced.stderr
    # the trial's load lasts 10 s: a pgrig start on a loaded host ends well within it
    assert f"run {trial['id']} on forcedtune is in progress" in forced.stderr, forced.stderr
    rc = servers.exit_code_within(tune, 240)
    _out, err = tune.communicate()
    said = " ".join(err.split())
    assert rc == 1 and "no trial completed: its one trial was pruned (trial 1: " in said, err
    assert "was changed while running (settings maintenance_work_mem=77MB at " in said
    assert (
        "forcedtune: undone with its own settings: what was forced on it during the tune, "
        "settings maintenance_work_mem=77MB (`pgrig env set --force`)"
    ) in said
    trials = json.loads(pgrig("study", "show", "ft", "--json").stdout)["trials"]
    [pruned] = [t for t in trials if t["run_id"] == trial["id"]]
    assert pruned["state"] == "pruned" and "changed while running" in pruned["reason"]
    doc = json.loads(pgrig("runs", "show", str(trial["id"]), "--json").stdout)
    assert doc["changed_under_run"][0]["change"] == "settings maintenance_work_mem=77MB"


def test_a_run_failed_by_a_forced_restart_says_the_restart_first(
    pg15: tuple[Path, str], pgrig_home: Path
) -> None:
    """Issue 43 (F4): the restart cut the run's clients; its reason leads with the restart,
    not with the symptom ("terminating connection due to administrator command")."""
    lab = servers.pgbench_env("forcedrestart")
    argv = ["pgrig", "run", lab, "-w", "pgbench:select-only", "-c", "1", "-T", "30", "--json"]
    run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    servers.wait_for_measuring(run)
    pgrig("env", "restart", lab, "--force")
    assert servers.exit_code_within(run, 120) != 0
    out, err = run.communicate()
    doc = json.loads(out)
    assert doc["status"] == "failed"
    assert doc["error"].startswith(
        "changed under it with --force: `pgrig env restart --force` (server restarted) "
    )
    assert "; then pgbench" in doc["error"]
    assert f"run {doc['id']} failed: changed under it with --force" in " ".join(err.split())
