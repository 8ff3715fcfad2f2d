"""Student's t quantile and two-sided p-value, from scipy.special.

scipy.stats computes these with the same functions (stdtrit, stdtr) but costs about a second
of CPU to import, which every `pgrig run` (drift tests) and `runs compare` would pay.
"""

from __future__ import annotations

from scipy import special


def quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (scipy.stats.t.ppf)."""
    return float(special.stdtrit(df, p))


def two_sided_p(t_stat: float, df: float) -> float:
    """P(|T| >= |t_stat|) for Student's t with df degrees of freedom (2 * scipy.stats.t.sf)."""
    return float(2 * special.stdtr(df, -abs(t_stat)))
