"""The run record, as the archive stores it: defined in pgrig.record.run (below analysis, so
the statistics can read records without depending on the archive). Kept here so existing
imports (`pgrig.archive.records`) keep working."""

from pgrig.record.run import (
    LATENCY_FIELDS,
    LatencyStats,
    RunFilter,
    RunRecord,
    RunStatus,
    ScriptResult,
    StudyRecord,
)

__all__ = [
    "LATENCY_FIELDS",
    "LatencyStats",
    "RunFilter",
    "RunRecord",
    "RunStatus",
    "ScriptResult",
    "StudyRecord",
]
