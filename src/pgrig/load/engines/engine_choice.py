"""Which load driver (load/engines/driver.py) a run request gets: TPC-H's query streams for
tpch, tpch:power and tpch:throughput, sysbench for a sysbench workload, TPC-C's
pgbench with the analytic streams beside it for chbench,
else pgbench reading its whole per-transaction log or, above the rate where reading it costs
throughput, its summary (load/engines/txlog_mode.py decides).

Apart from driver.py so that the engines import the seam and this module imports the engines:
dependencies flow one way (tests/unit/test_layering.py checks there is no import cycle).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgrig.load.engines.driver import LoadDriver
    from pgrig.provision.state.environment import Environment
    from pgrig.record.documents import DatasetDoc
    from pgrig.record.protocol import RunReader
    from pgrig.request import RunRequest


def for_request(
    spec: RunRequest,
    env: Environment,
    work: Path,
    client_env: dict[str, str],
    prefix: list[str],
    dataset: DatasetDoc,
    archive: RunReader | None = None,
) -> LoadDriver:
    """The driver of the request's workload. client_env: the libpq variables of the target
    (never a password in argv); prefix: taskset for --client-cpus; dataset: what
    `db generate` recorded for the database."""
    from pgrig.workloads import sysbench

    if spec.is_tpch:
        from pgrig.load.engines.tpch_driver import TpchDriver

        return TpchDriver(spec, client_env, dataset)
    if sysbench.is_sysbench(spec.workload):
        from pgrig.load.engines.sysbench_driver import SysbenchDriver

        return SysbenchDriver(spec, client_env, dataset)
    from pgrig.load.engines import txlog_mode
    from pgrig.load.engines.pgbench_driver import PgbenchDriver

    if spec.is_chbench:  # TPC-C's pgbench, and the analytic streams beside it
        from pgrig.load.engines.chbench_driver import ChbenchDriver

        tpcc = PgbenchDriver(spec, env, work, client_env, prefix)
        return ChbenchDriver(spec, tpcc, client_env, prefix, work)
    # --load-from merges every load host's full log (load/core/multi_runner.py): no probe
    if spec.txlog == "full" or spec.keep_txlog or spec.is_tpcc or spec.load_from:
        return PgbenchDriver(spec, env, work, client_env, prefix)
    choice = txlog_mode.choose(
        spec,
        txlog_mode.previous_run_tps(archive, spec, env.name, _database(spec)),
        txlog_mode.probe(env.binary("pgbench"), spec, client_env, prefix),
    )
    if choice.mode == "full":
        return PgbenchDriver(spec, env, work, client_env, prefix, choice)
    from pgrig.load.engines.pgbench_sampled import PgbenchSummaryDriver

    return PgbenchSummaryDriver(spec, env, work, client_env, prefix, choice)


def _database(spec: RunRequest) -> str:
    from pgrig.provision.state.environment import DEFAULT_DATABASE

    return spec.database or DEFAULT_DATABASE
