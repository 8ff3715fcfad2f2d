"""1,000 clients on tickets:read, through pgbouncer and direct, about 10 s each: no connection
errors, even when pgrig itself starts with the usual 1,024 open files (seed 003's failure)."""

from __future__ import annotations

import re
import resource
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrig.archive.artifacts import artifact_path
from pgrig.archive.store import Archive
from pgrig.load.core.runner import execute
from pgrig.provision import pooler
from pgrig.provision.state.environment import Environment
from pgrig.request import RunRequest
from pgrig.workloads import datasets, specs, tickets

pytestmark = pytest.mark.integration

if not (shutil.which("pgbouncer") or Path("/usr/sbin/pgbouncer").exists()):
    pytest.skip("pgbouncer is not installed", allow_module_level=True)

CONN_ERRORS = re.compile(
    r"connection to server|could not connect|too many clients|Too many open files|aborted", re.I
)


@pytest.fixture
def low_nofile() -> Iterator[None]:
    """This process (pgrig) starts at 1,024 open files, as a default shell would."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_thousand_clients_both_paths(make_env, pgrig_home: Path, low_nofile: None) -> None:
    env: Environment = make_env("k1", "15", settings={"max_connections": "1100"})
    datasets.record(env, "pgrig", tickets.generate(env, "pgrig", rows=100_000))
    env = pooler.add(env, pooler.options(pool_size=20, max_client_conn=1100))
    archive = Archive(None)
    for via, warmup, duration in (("pooler", 4.0, 6.0), ("direct", 5.0, 5.0)):
        spec = RunRequest(
            env_name=env.name,
            workload="tickets:read",
            scripts=specs.parse_workloads(["tickets:read"]),
            clients=1000,
            threads=4,
            warmup_s=warmup,
            duration_s=duration,
            via=via,
            txlog="full",  # the late-start window rules of one logged pgbench process
        )
        rec = execute(spec, archive=archive, live=False)
        stderr = artifact_path(rec.artifacts["pgbench.stderr"]).read_text()
        errors = [ln for ln in stderr.splitlines() if CONN_ERRORS.search(ln)]
        assert rec.status == "ok", rec.error
        assert errors == [] and not rec.failed
        stdout = artifact_path(rec.artifacts["pgbench.stdout"]).read_text()
        assert "number of clients: 1000" in stdout
        # slow logins: whole seconds only; a window shortened by them says so (analysis/window)
        late = rec.extra["window"]["late_start_s"]
        assert rec.measured_s == duration - late
        measured = [t for t in rec.series["pgbench"]["t"] if t >= 0]
        assert measured == list(range(int(duration) - late))
        codes = [w["code"] for w in rec.extra.get("warnings", [])]
        assert ("late_start" in codes) == (late > 0)
        if via == "pooler":
            assert rec.transactions and rec.transactions > 0
            assert max(v or 0 for v in rec.series["pooler"]["cl_active"]) > 0
    log = "".join(p.read_text() for p in (env.dir / "pooler").glob("pgbouncer-*.log"))
    assert "Too many open files" not in log and "accept() failed" not in log
