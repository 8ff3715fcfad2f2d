"""`--repeat N` of a run: the repeats in turn, each record yielded as it is stored (a caller
prints it at once); an interruption or a record not stored raises from the repeat it ends."""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console

from pgrig.archive.records import RunRecord
from pgrig.load.core.runner import execute
from pgrig.record.protocol import RunStore
from pgrig.request import RunRequest


def each(
    request: RunRequest, repeat: int, store: RunStore, console: Console, *, live: bool
) -> Iterator[RunRecord]:
    """Repeat k of `request`, for k in 0..repeat-1: its record."""
    for k in range(repeat):
        yield execute(
            request.model_copy(update={"repeat": k}), archive=store, console=console, live=live
        )
