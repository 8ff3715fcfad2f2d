"""quantile_bounds.binomial_quantile is scipy's binom.ppf, and no run or comparison imports
scipy.stats (about a second of CPU per command)."""

from __future__ import annotations

import random

import pytest
from scipy import stats

from pgrig.analysis import quantile_bounds


@pytest.mark.parametrize("q", sorted(quantile_bounds.QUANTILES.values()))
def test_binomial_quantile_equals_scipy(q: float) -> None:
    rng = random.Random(7)
    sizes = [*range(1, 200), *(rng.randint(200, 10_000_000) for _ in range(60))]
    for n in sizes:
        for p in (0.025, 0.975):  # the misrate/2 points rank_bounds asks for
            assert quantile_bounds.binomial_quantile(p, n, q) == int(stats.binom.ppf(p, n, q)), (
                n,
                q,
                p,
            )


def test_runs_and_comparisons_do_not_import_scipy_stats() -> None:
    """The run's path (drivers, the runner, the bounds, drift) and the comparison's must not
    pay scipy.stats' import (scipy.special, a tenth of it, is what analysis/student_t uses)."""
    import subprocess
    import sys

    code = (
        "import sys, pgrig.load.core.runner, pgrig.load.engines.engine_choice, "
        "pgrig.load.engines.pgbench_driver, pgrig.load.engines.sysbench_driver, pgrig.cli.run, "
        "pgrig.analysis.compare, pgrig.analysis.series, pgrig.cli.runs; "
        "print('scipy.stats' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
