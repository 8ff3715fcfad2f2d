"""Student's t quantile and two-sided p-value, from scipy.special.

scipy.stats computes these with the same functions (stdtrit, stdtr) but costs about a second
of CPU to import; scipy.special still costs about 0.2 s (it loads numpy.f2py), so it is imported
on the first call: a run whose series is too short for a drift test never pays it.
"""

from __future__ import annotations


def quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (scipy.stats.t.ppf)."""
    from scipy import special

    return float(special.stdtrit(df, p))


def two_sided_p(t_stat: float, df: float) -> float:
    """P(|T| >= |t_stat|) for Student's t with df degrees of freedom (2 * scipy.stats.t.sf)."""
    from scipy import special

    return float(2 * special.stdtr(df, -abs(t_stat)))
