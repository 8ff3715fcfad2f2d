"""What to run, defined once: the run request, the dataset request and their vocabulary.

The CLI, study files and the archive all build on these models (see docs/architecture.md):
the CLI turns a ValidationError into a line naming the flag, a study file into one naming the
key path (problems.py), and the archive stores every load parameter under the field's name.

The models are imported on first use: modules that only need the vocabulary (names, protocols)
do not pay for pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgrig.request.dataset import DatasetRequest
    from pgrig.request.load import (
        CHBENCH_FIELDS,
        LOAD_FIELDS,
        TPCH_FIELDS,
        LoadParams,
        RunRequest,
        ScriptSpec,
        TpchLoad,
        load_values,
        tpcc_mix_weights,
        validate_field,
    )
    from pgrig.request.problems import Problem, Refusal, from_flags, problem_of

_EXPORTS = {
    "DatasetRequest": "dataset",
    "CHBENCH_FIELDS": "load",
    "LOAD_FIELDS": "load",
    "TPCH_FIELDS": "load",
    "TpchLoad": "load",
    "LoadParams": "load",
    "RunRequest": "load",
    "ScriptSpec": "load",
    "load_values": "load",
    "tpcc_mix_weights": "load",
    "validate_field": "load",
    "Problem": "problems",
    "Refusal": "problems",
    "from_flags": "problems",
    "problem_of": "problems",
}
__all__ = [
    "CHBENCH_FIELDS",
    "LOAD_FIELDS",
    "TPCH_FIELDS",
    "DatasetRequest",
    "LoadParams",
    "Problem",
    "Refusal",
    "RunRequest",
    "ScriptSpec",
    "TpchLoad",
    "from_flags",
    "load_values",
    "problem_of",
    "tpcc_mix_weights",
    "validate_field",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"pgrig.request.{module}"), name)
