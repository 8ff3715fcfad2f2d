"""Change points in a performance history: one value per build or version, in order.

E-divisive means (Matteson and James, 2014; the method Apache Otava uses) with a permutation
test. Apache Otava itself was tried and does not fit: it pins numpy 2.2 and pulls in BigQuery,
Slack and Graphite clients. This is the method, written with numpy only.

For a segment x[a:b] and a split tau, the divergence between the left and the right part is

    Q(tau) = (n_l n_r / n) * (2 mean|L - R| - mean|L - L'| - mean|R - R'|)

(alpha = 1: plain absolute differences, so any change of distribution counts, not only of the
mean). The candidate of a segment is its tau with the largest Q. Hierarchical search: among the
candidates of all current segments the strongest is tested by shuffling the points inside each
current segment (`permutations` times, all at once as one numpy array) and taking each
shuffle's best Q over all segments; p = (shuffles with Q >= observed + 1) / (permutations + 1).
The candidate is accepted when p <= max_p_value and the search goes on in the two halves; the
first candidate that is not significant ends it. Each part keeps at least `min_size` points.

The reported index is that of the first point of the new level (counted from 0), so
labels[index] is the first version that shows the change. `ratio` is the mean of the new level
over the mean of the level before (both between neighbouring change points): 0.95 is 5% lower;
None where the level before is not positive (a ratio of signed or zero levels means nothing).
`change_pct` is the difference over the size of the level before (-10 to -20: -100%), None
from a level of 0; both are None too where they exceed a float (from a level of 1e-320), never
inf (invalid JSON). The series is scaled by its largest magnitude first, so values near the
float limits (1e308) neither overflow nor lose the change. Whether lower is worse (a
regression) depends on the metric; the caller knows.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np

from pgrig.errors import PgrigError

MAX_P_VALUE = 0.01
PERMUTATIONS = 499
MAX_PERMUTATIONS = 9999  # p resolves to 0.0001; more costs minutes on long series, for nothing
MIN_SIZE = 3
CELLS = 100 * 30 * 30  # shuffles per batch x n^2: bounds the memory of one batch
MAX_POINTS = 1000


@dataclass(frozen=True)
class Change:
    """A level shift: points index.. differ from the points before, back to the last change."""

    index: int  # first point of the new level, from 0
    label: str
    before: float  # mean of the level before (since the previous change)
    after: float  # mean of the new level (until the next change)
    ratio: float | None  # after / before (None: the level before is not positive)
    change_pct: float | None  # (after - before) / |before| * 100 (None: before is 0, or ~0)
    p_value: float  # permutation test
    confidence: float  # 1 - p_value
    q: float | None  # the e-divisive divergence at this split (None: beyond a float's range)

    def to_dict(self) -> dict[str, int | str | float | None]:
        return asdict(self)

    def describe(self) -> str:
        pct = "from 0" if self.change_pct is None else f"{self.change_pct:+.1f}%"
        ratio = "" if self.ratio is None else f"x{self.ratio:.3f}, "
        return f"at {self.label} (#{self.index}): {pct} ({ratio}p={self.p_value:.3f})"


@dataclass(frozen=True)
class Detection:
    changes: list[Change]
    points: int
    max_p_value: float
    permutations: int
    min_size: int
    method: str = "e-divisive means, permutation test"

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "points": self.points,
            "max_p_value": self.max_p_value,
            "permutations": self.permutations,
            "min_size": self.min_size,
            "changes": [c.to_dict() for c in self.changes],
        }


def detect(
    values: Sequence[float],
    labels: Sequence[str] | None = None,
    *,
    max_p_value: float = MAX_P_VALUE,
    permutations: int = PERMUTATIONS,
    min_size: int = MIN_SIZE,
    seed: int | None = 0,
    groups: Sequence[object] | None = None,
) -> Detection:
    """Change points of `values` (in series order). Deterministic for a given seed.

    `groups` (one key per value, equal keys adjacent) allows cuts only between groups: the
    repeats of one version are one group, so a change can only fall between versions. The
    null hypothesis of the permutation test stays "no change at all" (every value of a
    segment is shuffled).
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise PgrigError("a series is one value per point")
    if not np.all(np.isfinite(x)):
        raise PgrigError("a series must hold finite numbers only")
    if len(x) > MAX_POINTS:
        raise PgrigError(f"a series of {len(x)} points is too long (at most {MAX_POINTS})")
    if labels is not None and len(labels) != len(x):
        raise PgrigError(f"{len(labels)} labels for {len(x)} values")
    if not 0 < max_p_value < 1:
        raise PgrigError(f"max_p_value must be between 0 and 1, not {max_p_value}")
    if not 19 <= permutations <= MAX_PERMUTATIONS:
        raise PgrigError(
            f"permutations must be between 19 and {MAX_PERMUTATIONS} (p resolves to "
            f"1/(permutations+1)), not {permutations}"
        )
    if min_size < 2:
        raise PgrigError(f"min_size must be at least 2, not {min_size}")
    if seed is not None and seed < 0:  # numpy's generator takes none: refused, not a traceback
        raise PgrigError(f"seed must be 0 or more, not {seed}")
    names = [str(s) for s in labels] if labels is not None else [str(i) for i in range(len(x))]
    scale = float(np.max(np.abs(x))) if len(x) else 0.0
    scale = scale if scale > 0 else 1.0
    x = x / scale  # |x| <= 1: differences and sums of 1e308s stay finite; Q scales linearly
    allowed = _allowed_cuts(len(x), groups)
    rng = np.random.default_rng(seed)
    cuts: list[tuple[int, float, float]] = []  # (index, p, q)
    bounds = [0, len(x)]
    while True:
        segments = list(itertools.pairwise(bounds))
        best = _best_candidate(x, segments, min_size, allowed)
        if best is None:
            break
        tau, q = best
        p = _permutation_p(x, segments, min_size, allowed, q, permutations, max_p_value, rng)
        if p > max_p_value:
            break
        cuts.append((tau, p, q))
        bounds = sorted([*bounds, tau])
    changes = _describe(x, scale, names, sorted(cuts))
    return Detection(changes, len(x), max_p_value, permutations, min_size)


def _describe(
    x: np.ndarray, scale: float, names: list[str], cuts: list[tuple[int, float, float]]
) -> list[Change]:
    """The changes in the series' own units (x is the series over `scale`)."""
    edges = [0] + [c[0] for c in cuts] + [len(x)]
    out = []
    for k, (tau, p, q) in enumerate(cuts):
        before = float(np.mean(x[edges[k] : tau]))
        after = float(np.mean(x[tau : edges[k + 2]]))
        out.append(
            Change(
                index=tau,
                label=names[tau],
                before=before * scale,
                after=after * scale,
                # _finite: a level near 0 (1e-320) would make them inf, invalid JSON
                ratio=_finite(after / before) if before > 0 else None,
                change_pct=_finite((after - before) / abs(before) * 100) if before != 0 else None,
                p_value=p,
                confidence=1 - p,
                q=_finite(q * scale),
            )
        )
    return out


def _finite(v: float) -> float | None:
    """A divergence of a series near the float limits, or a ratio to a level near 0, can
    exceed them: not representable (None: shown as no ratio, never inf or NaN)."""
    return v if np.isfinite(v) else None


def _allowed_cuts(n: int, groups: Sequence[object] | None) -> np.ndarray:
    """Whether a new level may start at each index (True everywhere without groups)."""
    if groups is None:
        return np.ones(n + 1, dtype=bool)
    keys = list(groups)
    if len(keys) != n:
        raise PgrigError(f"{len(keys)} group keys for {n} values")
    ok = np.zeros(n + 1, dtype=bool)
    seen: set[object] = set()
    for i, key in enumerate(keys):
        if i == 0 or key != keys[i - 1]:
            if key in seen:
                raise PgrigError(f"group {key!r} is not contiguous: its values must be adjacent")
            seen.add(key)
            ok[i] = True
    return ok


def _splits(a: int, b: int, min_size: int, allowed: np.ndarray) -> np.ndarray:
    """Offsets (from a + min_size) of the allowed splits of segment [a, b)."""
    taus = np.arange(a + min_size, b - min_size + 1)
    return np.flatnonzero(allowed[taus])


def _best_candidate(
    x: np.ndarray, segments: list[tuple[int, int]], min_size: int, allowed: np.ndarray
) -> tuple[int, float] | None:
    best: tuple[int, float] | None = None
    for a, b in segments:
        ok = _splits(a, b, min_size, allowed)
        if ok.size == 0:
            continue
        q = _divergence(x[None, a:b], min_size)[0][ok]
        i = int(np.argmax(q))
        if best is None or q[i] > best[1]:
            best = (a + min_size + int(ok[i]), float(q[i]))
    return best


def _permutation_p(
    x: np.ndarray,
    segments: list[tuple[int, int]],
    min_size: int,
    allowed: np.ndarray,
    q_observed: float,
    permutations: int,
    max_p_value: float,
    rng: np.random.Generator,
) -> float:
    """Share of shuffles (inside each current segment) whose best split is as strong.

    Shuffles go in batches; once more are as strong as significance allows, the candidate is
    rejected without the rest (its p-value is then only known to exceed max_p_value, and it is
    not reported).
    """
    tolerated = max_p_value * (permutations + 1) - 1  # extreme shuffles with p <= max still
    extreme = 0
    done = 0
    while done < permutations:
        batch = min(max(1, CELLS // len(x) ** 2), permutations - done)
        best = np.zeros(batch)
        for a, b in segments:
            ok = _splits(a, b, min_size, allowed)
            if ok.size == 0:
                continue
            shuffled = rng.permuted(np.broadcast_to(x[a:b], (batch, b - a)), axis=1)
            best = np.maximum(best, _divergence(shuffled, min_size)[:, ok].max(axis=1))
        # A float tolerance: a shuffle that reproduces the observed order counts as extreme.
        extreme += int(np.count_nonzero(best >= q_observed * (1 - 1e-12)))
        done += batch
        if extreme > tolerated:
            return (extreme + 1) / (done + 1)
    return (extreme + 1) / (permutations + 1)


def _divergence(rows: np.ndarray, min_size: int) -> np.ndarray:
    """Q(tau) for every allowed split tau = min_size .. n - min_size of each row.

    Row-wise for a batch of series of one length; returns shape (rows, n - 2 min_size + 1).
    """
    r, n = rows.shape
    if n < 2 * min_size:
        return np.empty((r, 0))
    d = np.abs(rows[:, :, None] - rows[:, None, :])  # (r, n, n), symmetric
    lower = np.tril(np.ones((n, n), dtype=bool), -1)
    below = np.where(lower, d, 0.0).sum(axis=2)  # point k to the points before it
    whole = d.sum(axis=2)  # point k to all points
    above = whole - below  # point k to the points after it
    tau = np.arange(min_size, n - min_size + 1)
    left = 2 * np.cumsum(below, axis=1)[:, tau - 1]  # L x L, each pair twice
    right = 2 * np.cumsum(above[:, ::-1], axis=1)[:, ::-1][:, tau]  # R x R
    cross = np.cumsum(whole, axis=1)[:, tau - 1] - left  # L x R
    n_l = tau.astype(float)
    n_r = n - n_l
    between = 2 * cross / (n_l * n_r)
    within_l = left / (n_l * (n_l - 1))
    within_r = right / (n_r * (n_r - 1))
    return cast(np.ndarray, (n_l * n_r / n) * (between - within_l - within_r))


# --- `label,value` text (a nightly job's CSV) --------------------------------------------------


def _header_name(value: str) -> bool:
    """Whether a first line's value column is a name ("tps", "TPS (mean)"), not a bad number
    ("12.5x", "", "-", "1e"): only a name makes the line a header."""
    text = value.strip().strip('"')
    return bool(text) and text[0].isalpha()


def parse_csv(text: str, source: str = "input") -> tuple[list[str], list[float]]:
    """`label,value` lines; blank lines and #-comments are skipped; a header line whose value
    is not a number is allowed as the first line only. Errors name the line."""
    labels: list[str] = []
    values: list[float] = []
    first = True
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        label, sep, value = line.rpartition(",")
        if not sep:
            raise PgrigError(f"{source}:{lineno}: expected `label,value`, got {line[:60]!r}")
        try:
            v = float(value)
        except ValueError:
            if first and _header_name(value):
                first = False
                continue  # a header such as "version,tps"
            raise PgrigError(f"{source}:{lineno}: {value.strip()[:40]!r} is not a number") from None
        first = False
        if not np.isfinite(v):
            raise PgrigError(f"{source}:{lineno}: {value.strip()!r} is not a finite number")
        labels.append(label.strip().strip('"'))
        values.append(v)
    if not values:
        raise PgrigError(f"{source}: no `label,value` lines")
    return labels, values
