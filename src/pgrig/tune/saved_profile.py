"""A tuning study's best configuration as a profile's content (`profile save --from-study`)."""

from __future__ import annotations

from pgrig.errors import PgrigError
from pgrig.record.protocol import RunReader


def from_study(store: RunReader, study: str) -> tuple[dict[str, str], str, list[str]]:
    """(settings, description, notes) of the best trial of tuning study `study`; refused for
    another kind of study or one with no completed trial."""
    rec = store.get_study(study)
    if rec.kind != "tune":
        raise PgrigError(f"--from-study {study}: a {rec.kind} study, not a tuning study")
    best = rec.extra.get("best")
    if not best:
        raise PgrigError(f"--from-study {study}: no trial completed, there is no best")
    notes = [
        f"best trial {best['trial'] + 1} (run {best.get('run_id')}) of tuning study {study}",
        "the environment's own settings (env --set) are not part of it",
    ] + [n for n in rec.extra.get("notes") or [] if n.startswith("UNSAFE")]
    return dict(best["settings"]), f"tuned by pgrig tune ({study})", notes
