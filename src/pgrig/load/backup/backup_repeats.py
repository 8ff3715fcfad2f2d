"""`--repeat N` of a backup run, alone or --during a load: the repeats in turn, each record
yielded as it is stored (the baseline and history of --during shared across repeats)."""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console

from pgrig.archive.records import RunRecord
from pgrig.load.backup import backup_run
from pgrig.load.backup.backup_run import BackupRequest
from pgrig.record.protocol import RunStore
from pgrig.request import RunRequest


def each(
    req: BackupRequest,
    load: RunRequest | None,
    repeat: int,
    baseline: bool,
    store: RunStore,
    console: Console,
) -> Iterator[RunRecord]:
    """Repeat k of `req` (and of `load` under it), for k in 0..repeat-1: its backup record."""
    history = None
    for k in range(repeat):
        one = req.__class__(**{**req.__dict__, "repeat": k})
        if load is None:
            yield backup_run.execute(one, archive=store, console=console)
            continue
        from pgrig.load.backup import backup_during

        history = history or backup_during.History()
        result = backup_during.execute(
            one, load.model_copy(update={"repeat": k}), archive=store, console=console,
            baseline=baseline, history=history,
        )  # fmt: skip
        yield result.backup
