"""Whether a run may be deleted (`runs delete`): never while it runs; not a run a tuning study
names (its best trial's, its baseline) unless forced."""

from __future__ import annotations

from pgrig.archive.store import Archive
from pgrig.errors import PgrigError


def check_deletable(arch: Archive, run_id: int, force: bool) -> None:
    """Refuse, naming why, a run that must not be deleted (NotFound for no such run)."""
    arch.get_run(run_id)
    owner = arch.running_owner(run_id)
    if owner is not None:
        raise PgrigError(f"cannot delete run {run_id}: it is running ({owner})")
    named = named_by_studies(arch, run_id)
    if named and not force:
        raise PgrigError(
            f"cannot delete run {run_id}: it is {named[0]} (add --force to delete it anyway; "
            "the study would then name a run that is gone)"
        )


def named_by_studies(arch: Archive, run_id: int) -> list[str]:
    """What tuning studies name this run as (their best trial's run, their baseline)."""
    out = []
    for study in arch.list_studies():
        x = study.extra or {}
        best = x.get("best") or {}
        if best.get("run_id") == run_id:
            out.append(f"the best trial's run of tuning study {study.name!r}")
        if x.get("baseline_run") == run_id:
            out.append(f"the baseline run of tuning study {study.name!r}")
    return out
