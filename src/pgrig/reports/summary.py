"""The study figures, now in the view layer (pgrig.views.study_data); kept for the report
builders' and tests' imports."""

from pgrig.format import VERDICT_STYLES, verdict_style
from pgrig.views.study_data import (
    Interval,
    PointSummary,
    RunStability,
    StudyData,
    compare_points,
    fmt,
    fmt_interval,
    interval,
    latency_columns,
    load_study,
    robust_center,
    run_stability,
    short_version,
    summarize_point,
)

__all__ = [
    "VERDICT_STYLES",
    "Interval",
    "PointSummary",
    "RunStability",
    "StudyData",
    "compare_points",
    "fmt",
    "fmt_interval",
    "interval",
    "latency_columns",
    "load_study",
    "robust_center",
    "run_stability",
    "short_version",
    "summarize_point",
    "verdict_style",
]
