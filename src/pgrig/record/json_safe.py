"""The JSON form of a record's documents: what strict JSON can hold."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

__all__ = ["json_safe"]


def json_safe(value: Any) -> Any:
    """JSON-safe: datetimes as ISO 8601, NaN/inf as null (strict JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
