"""A CPU-burning neighbour beside a real run makes the run say "busy host"; without it, not."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator

import psutil
import pytest
import servers
from servers import pgrig

from pgrig.metrics.cpu_share import BUSY_HOST_CORE_PCT, BUSY_HOST_MACHINE_PCT

pytestmark = [pytest.mark.integration, pytest.mark.quiet_host]

RUN = ["--workload", "pgbench:select-only", "-c", "2", "--duration", "5", "--warmup", "1"]


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with servers.pgbench_lab("pgrig-busy-test-") as lab:
        yield lab


def _run(lab: str) -> dict:
    rec = json.loads(pgrig("run", lab, *RUN, "--json").stdout)
    assert rec["status"] == "ok"
    return rec


def _cpu_share(run_id: int) -> dict:
    doc = json.loads(pgrig("runs", "export", str(run_id), "--format", "json").stdout)
    return doc["extra"]["cpu_share"]


def _host_busy(seconds: float = 3.0) -> float:
    """CPU all processes use now, with no run going (% of one core): other people's work."""
    t = psutil.cpu_times_percent(interval=seconds)
    return (t.user + t.nice + t.system) * (psutil.cpu_count() or 1)


def test_a_cpu_burning_neighbour_makes_a_busy_host(lab: str) -> None:
    burner = psutil.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        rec = _run(lab)
        lifetime = time.time() - burner.create_time()
        cpu = burner.cpu_times()
        burner_pct = (cpu.user + cpu.system) / lifetime * 100  # its own mean, % of one core
    finally:
        burner.kill()
        burner.wait()
    [warning] = [w for w in rec["warnings"] if w["code"] == "busy_host"]
    assert "other processes used" in warning["message"]
    share = _cpu_share(rec["id"])
    assert share["other_cpu_pct_core"] > BUSY_HOST_CORE_PCT
    assert share["other_cpu_pct_host"] > BUSY_HOST_MACHINE_PCT
    # independent check: the neighbour's own CPU (psutil, whole life) is inside "other"
    assert share["other_cpu_pct_core"] >= 0.5 * burner_pct
    assert share["server_cpu_pct_core"] > 0 and share["pgbench_cpu_pct_core"] > 0
    shown = pgrig("runs", "show", str(rec["id"])).stdout
    assert "warning: busy host" in " ".join(shown.split())


def test_a_quiet_host_gives_no_warning(lab: str) -> None:
    before = _host_busy()
    cpus = psutil.cpu_count() or 1
    if before > BUSY_HOST_CORE_PCT and before / cpus > BUSY_HOST_MACHINE_PCT:
        pytest.skip(f"this host is busy with other work ({before:.0f}% of a core before the run)")
    rec = _run(lab)
    share = _cpu_share(rec["id"])
    assert rec["warnings"] == [], share
    assert 0 <= share["other_cpu_pct_core"] <= BUSY_HOST_CORE_PCT or (
        share["other_cpu_pct_host"] <= BUSY_HOST_MACHINE_PCT
    )
    assert "warning" not in pgrig("runs", "show", str(rec["id"])).stdout
