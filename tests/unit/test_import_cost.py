"""What a command imports is CPU every start pays (the tests start pgrig thousands of times,
users script it): heavy libraries stay out of the paths that do not use them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _loaded_after(modules: str, wanted: str) -> bool:
    code = f"import sys, {modules}; print({wanted!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


def test_runs_and_comparisons_do_not_import_scipy_stats() -> None:
    """The run's path (drivers, the runner, the bounds, drift) and the comparison's must not
    pay scipy.stats' import, about a second of CPU (analysis/student_t uses scipy.special,
    a tenth of it; analysis/quantile_bounds computes the binomial's quantiles itself)."""
    modules = (
        "pgrig.load.core.runner, pgrig.load.engines.engine_choice,"
        " pgrig.load.engines.pgbench_driver, pgrig.load.engines.sysbench_driver,"
        " pgrig.cli.run, pgrig.analysis.compare,"
        " pgrig.analysis.series, pgrig.cli.runs"
    )
    assert not _loaded_after(modules, "scipy.stats")


def test_environment_commands_import_asyncssh_only_to_reach_a_host() -> None:
    """Every env command can forward to a host, most environments are here: asyncssh (0.4
    CPU-s and three ldconfig/gcc runs) is imported by the first connection, not before."""
    modules = (
        "pgrig.cli.env, pgrig.cli.db, pgrig.provision.operations.lifecycle,"
        " pgrig.provision.remote.environments, pgrig.hosts.ssh, pgrig.hosts.remote"
    )
    assert not _loaded_after(modules, "asyncssh")
    code = "from pgrig.hosts import ssh; print(ssh.asyncssh.SSHClientConnection.__module__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "asyncssh.connection"


def test_a_command_builds_only_its_own_group(tmp_path: Path) -> None:
    """`pgrig env list` imports and builds the env group, not run, tune, study or serve
    (cli/app._register), and prints what it always printed."""
    code = (
        "import sys\nfrom pgrig.cli import app\ntry:\n    app.main()\nfinally:\n"
        "    print(sorted(m for m in sys.modules if m.startswith('pgrig.cli.')), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "env", "list", "--json"], capture_output=True, text=True,
        env={**os.environ, "PGRIG_HOME": str(tmp_path)}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "['pgrig.cli.app', 'pgrig.cli.common', 'pgrig.cli.env']"
    assert done.stdout.strip() == "[]"


def test_a_run_loads_numpy_and_polars_when_its_load_starts() -> None:
    """The txlog parser (polars, ~0.1 CPU-s, and its thread pools) and the results (numpy)
    come with measure_here, imported when the load starts: a run refused before it (a bad
    workload, missing data, a busy environment) does not pay them."""
    modules = "pgrig.cli.run, pgrig.load.core.runner, pgrig.load.core.repeats"
    assert not _loaded_after(modules, "polars")
    assert not _loaded_after(modules, "numpy")


def test_the_runs_list_does_not_import_the_comparison() -> None:
    """`pgrig runs list` shows each run's CPUs (record/host_docs.host_cpus), not verdicts:
    neither numpy nor the comparison's modules."""
    modules = "pgrig.cli.runs, pgrig.views.runs_list"
    assert not _loaded_after(modules, "numpy")
    assert not _loaded_after(modules, "pgrig.views.compare")


def test_every_start_cleans_up_without_the_archive() -> None:
    """Every command first removes dead runs' work directories (load/engines/work_dirs.py):
    that must not import the archive's spool and records, or SQLAlchemy."""
    modules = "pgrig.cli.app, pgrig.load.engines.work_dirs"
    assert not _loaded_after(modules, "pgrig.archive.spool")
    assert not _loaded_after(modules, "sqlalchemy")
