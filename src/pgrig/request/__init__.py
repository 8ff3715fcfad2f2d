"""What to run, defined once: the run request, the dataset request and their vocabulary.

The CLI, study files and the archive all build on these models (see docs/architecture.md):
the CLI turns a ValidationError into a line naming the flag, a study file into one naming the
key path (problems.py), and the archive stores every load parameter under the field's name.
"""

from pgrig.request.dataset import DatasetRequest
from pgrig.request.load import (
    LOAD_FIELDS,
    LoadParams,
    RunRequest,
    ScriptSpec,
    load_values,
    tpcc_mix_weights,
    validate_field,
)
from pgrig.request.problems import Problem, Refusal, from_flags, problem_of

__all__ = [
    "LOAD_FIELDS",
    "DatasetRequest",
    "LoadParams",
    "Problem",
    "Refusal",
    "RunRequest",
    "ScriptSpec",
    "from_flags",
    "load_values",
    "problem_of",
    "tpcc_mix_weights",
    "validate_field",
]
