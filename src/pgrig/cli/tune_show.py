"""`pgrig tune show NAME`: a tuning study's recommendation, ready to apply: an `env set` line
and a postgresql.conf snippet with one comment per setting saying why (its measured share of
the gain from the ablation, else its search importance, labelled as such)."""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

from pgrig.cli import common
from pgrig.errors import PgrigError

if TYPE_CHECKING:
    from pgrig.archive.protocol import RunStore
    from pgrig.views.tune_attribution import Attribution


def show_recommendation(store: RunStore, name: str) -> None:
    from pgrig.views import tune_attribution

    rec = store.get_study(name)
    if rec.kind != "tune":
        raise PgrigError(f"study {name!r} is a {rec.kind} study, not a tuning study (pgrig tune)")
    x = rec.extra
    best = (x.get("best") or {}).get("settings")
    if not best:
        raise PgrigError(f"tuning study {name!r} has no completed trial: nothing to recommend")
    runs = store.study_runs(name)
    from pgrig.tune.objective import METRIC_OF

    a = tune_attribution.build(x, runs, METRIC_OF[x.get("objective", "tps")])
    env = runs[0].env_name if runs else "ENV"
    common.out_console().print(render(name, env, best, a), highlight=False, soft_wrap=True)


def render(name: str, env: str, best: dict[str, str], a: Attribution) -> str:
    """The text `tune show` prints (plain: copy-pasteable)."""
    lines = [f"# tuning study {name}: recommendation for {env}"]
    for v in a.verdicts:
        c = v.comparison
        lines.append(
            f"# {v.question}: " + (c.describe() if c is not None else f"no verdict: {v.reason}")
        )
    if a.stopped_at is not None:
        lines.append(f"# confirmation stopped after {a.stopped_at} rounds (misrate {a.misrate:g})")
    keeps = a.durable_keeps()
    if keeps is not None:
        lines.append(
            f"# with durable settings only (fsync, synchronous_commit, full_page_writes on): "
            f"x{keeps[0]:.3f} [{keeps[1]:.3f}, {keeps[2]:.3f}] over the baseline"
        )
    from pgrig.tune.ablation import unsafe_off

    if unsafe_off(best):
        lines.append("# UNSAFE: durability is off in this configuration: throw-away data only")
    assignments = " ".join(shlex.quote(f"{k}={v}") for k, v in best.items())
    lines += ["", "# apply with pgrig:", f"pgrig env set {shlex.quote(env)} {assignments}", ""]
    lines.append("# postgresql.conf")
    for r in a.reasons:
        lines.append(f"# {r.why}")
        lines.append(f"{r.setting} = {_conf_value(r.value)}")
    return "\n".join(lines)


def _conf_value(value: str) -> str:
    """Numbers and bare words as they are; anything else quoted for postgresql.conf."""
    text = str(value)
    if re.fullmatch(r"-?[0-9]+(\.[0-9]+)?|[A-Za-z_]+", text):
        return text
    return "'" + text.replace("'", "''") + "'"
