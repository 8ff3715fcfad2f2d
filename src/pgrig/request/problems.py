"""What was wrong with a request, said in the words of the surface it came from.

A rule is written once, in the model, and read in two places: the CLI names flags
(`--clients must be >= 1 (got 0)`), study files name key paths (`run.clients: must be >= 1
(got 0)`). So a rule says only the predicate, and names the other fields it involves through
a namer the surface supplies (`--threads cannot exceed --clients` / `run.threads: cannot exceed
clients`). Pydantic's own errors (types, bounds, choices) are translated the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from pgrig.errors import PgrigError
from pgrig.request.values import number_text

Namer = Callable[[str], str]  # a field name -> how the surface calls it
Say = Callable[[Namer], str]  # the predicate, naming other fields through the namer

__all__ = [
    "Namer",
    "Problem",
    "Refusal",
    "flag_of",
    "from_flags",
    "key_of",
    "problem_of",
]
M = TypeVar("M", bound=BaseModel)


class Refusal(ValueError):
    """A broken rule of a request: the predicate and the fields it is about.

    `field` is the field the message starts with (None: the one pydantic was validating);
    `others` are the other fields the rule involves (a study names the table that set them).
    """

    def __init__(self, say: str | Say, *, field: str | None = None, others: tuple[str, ...] = ()):
        if isinstance(say, str):
            text = say
            self.say: Say = lambda _name: text
        else:
            self.say = say
        self.field = field
        self.others = others
        super().__init__(self.say(lambda name: name))


@dataclass(frozen=True)
class Problem:
    field: str | None  # the model field the problem is about (None: the request as a whole)
    detail: tuple[Any, ...]  # where inside the field: a dict key, a list index
    say: Say
    others: tuple[str, ...] = ()

    @property
    def fields(self) -> set[str]:
        return {f for f in (self.field, *self.others) if f}

    def for_flags(self, model: type[BaseModel]) -> str:
        """`--clients must be >= 1 (got 0)`"""
        subject = flag_of(model, self.field) if self.field else ""
        return f"{subject}{_detail(self.detail)} {self.say(lambda f: flag_of(model, f))}".strip()

    def at(self, path: str, model: type[BaseModel]) -> str:
        """`run.clients: must be >= 1 (got 0)` for the table at `path`."""
        where = f"{path}.{key_of(model, self.field)}" if self.field else path
        return f"{where}{_detail(self.detail)}: {self.say(lambda f: key_of(model, f))}"


def flag_of(model: type[BaseModel], field: str) -> str:
    """The CLI flag of a field (`--latency-limit`), or its key where no flag sets it."""
    extra = model.model_fields[field].json_schema_extra
    flag = extra.get("flag") if isinstance(extra, dict) else None
    return str(flag) if flag else key_of(model, field)


def key_of(model: type[BaseModel], field: str) -> str:
    """The key of a field in a study file (`latency_limit` for latency_limit_ms)."""
    return model.model_fields[field].alias or field


def problem_of(error: ValidationError, model: type[BaseModel]) -> Problem:
    """The first problem pydantic found (fields in declaration order, then the rules)."""
    err = error.errors(include_url=False)[0]
    loc = tuple(err["loc"])
    field = _field_name(model, loc[0]) if loc else None
    detail = tuple(x for x in (loc[1:] if field else loc) if x != "[key]")
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, Refusal):
        return Problem(cause.field or field, detail, cause.say, cause.others)
    text = _translate(err)
    return Problem(field, detail, lambda _name: text)


def from_flags(model: type[M], **values: Any) -> M:
    """The model built from CLI values; a problem is one PgrigError line naming the flag."""
    try:
        return model(**values)
    except ValidationError as e:
        raise PgrigError(problem_of(e, model).for_flags(model)) from None


def _field_name(model: type[BaseModel], loc0: Any) -> str | None:
    for name, info in model.model_fields.items():
        if loc0 in (name, info.alias):
            return name
    return None


def _detail(detail: tuple[Any, ...]) -> str:
    return "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in detail)


_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "list": "a list",
    "dict": "a table",
    "tuple": "a list",
}


def _translate(err: Any) -> str:
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a known key"
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<="}
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "finite_number":
        return f"must be a finite number (got {value})"
    if kind in bounds:
        limit = next(iter(ctx.values()))
        return f"must be {bounds[kind]} {number_text(limit)} (got {number_text(value)})"
    if kind == "literal_error":
        choices = str(ctx.get("expected", "")).replace(" or ", ", ").replace("'", "")
        return f"must be one of {choices} (got {value!r})"
    base = kind.split("_")[0]
    if base in _TYPE_WORDS:
        return f"expected {_TYPE_WORDS[base]} (got {value!r})"
    message = str(err.get("msg", "is invalid")).removeprefix("Value error, ")
    return message[:1].lower() + message[1:]
