"""What was wrong with a request, said in the words of the surface it came from.

A rule is written once, in the model, and read in two places: the CLI names flags
(`--clients must be >= 1 (got 0)`), study files name key paths (`run.clients: must be >= 1
(got 0)`). So a rule says only the predicate, and names the other fields it involves through
a namer the surface supplies (`--threads cannot exceed --clients` / `run.threads: cannot exceed
clients`). Pydantic's own errors (types, bounds, choices) are translated the same way.
"""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

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
    "in_file",
    "key_of",
    "problem_of",
    "unknown_key",
]
M = TypeVar("M", bound=BaseModel)
# where in the input a problem is: fields, dict keys, list indexes (pydantic's error loc)
Loc = tuple[int | str, ...]


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
    detail: Loc  # where inside the field: a dict key, a list index
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
        """`run.clients: must be >= 1 (got 0)` for the table at `path` ("": the file itself)."""
        key = key_of(model, self.field) if self.field else ""
        where = (f"{path}.{key}" if path and key else path or key) + _detail(self.detail)
        said = self.say(lambda f: key_of(model, f))
        return f"{where.lstrip('.')}: {said}" if where else said


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
    errors = error.errors(include_url=False)
    err = errors[0]
    if err["type"] == "missing":  # a key missing beside an unknown one: most likely misspelt
        beside = tuple(err["loc"])[:-1]
        unknown = (e for e in errors if e["type"] == "extra_forbidden")
        err = next((e for e in unknown if tuple(e["loc"])[:-1] == beside), err)
    loc = tuple(err["loc"])
    field = _field_name(model, loc[0]) if loc else None
    detail = tuple(x for x in (loc[1:] if field else loc) if x != "[key]")
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, Refusal):
        inner = _model_at(model, loc) if loc else None
        if inner is not None and cause.field in inner.model_fields:
            # a rule of a nested table (its model validator) names that table's keys
            say, namer = cause.say, _namer(inner)
            where = (*detail, key_of(inner, cause.field))
            return Problem(field, where, lambda _name: say(namer))
        return Problem(cause.field or field, detail, cause.say, cause.others)
    if err["type"] == "extra_forbidden":
        text = unknown_key(str(loc[-1]), _keys_at(model, loc[:-1]))
    else:
        text = _translate(err)
    return Problem(field, detail, lambda _name: text)


def in_file(error: ValidationError, model: type[BaseModel], path: str = "") -> str:
    """The first problem of a file's table at `path` (""): `knobs.work_mem.low: must be ...`."""
    return problem_of(error, model).at(path, model)


def unknown_key(key: str, allowed: Iterable[str]) -> str:
    """What a file hears about a key its table does not have, with the likely one it meant."""
    known = list(allowed)
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key{hint}; allowed here: {', '.join(known)}" if known else "unknown key"


def _namer(model: type[BaseModel]) -> Namer:
    return lambda name: key_of(model, name)


def _keys_at(model: type[BaseModel], loc: Loc) -> list[str]:
    inner = _model_at(model, loc)
    return [key_of(inner, name) for name in inner.model_fields] if inner is not None else []


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The nested model whose table sits at `loc` (fields, list indexes, dict keys)."""
    current: Any = model
    for part in loc:
        if part == "[key]":
            return None
        nxt: Any = None
        for tp in _alternatives(current):
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                name = _field_name(tp, part)
                nxt = tp.model_fields[name].annotation if name else None
            else:
                origin, args = typing.get_origin(tp), typing.get_args(tp)
                if origin in (list, tuple) and isinstance(part, int) and args:
                    nxt = args[0]
                elif origin is dict and isinstance(part, str) and len(args) == 2:
                    nxt = args[1]
            if nxt is not None:
                break
        if nxt is None:
            return None
        current = nxt
    found = [tp for tp in _alternatives(current) if isinstance(tp, type)]
    return next((tp for tp in found if issubclass(tp, BaseModel)), None)


def _alternatives(tp: object) -> list[object]:
    """The types a field may hold: Annotated and Optional/unions unwrapped."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _alternatives(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        return [a for arg in typing.get_args(tp) for a in _alternatives(arg)]
    return [tp]


def from_flags(model: type[M], **values: object) -> M:
    """The model built from CLI values; a problem is one PgrigError line naming the flag."""
    try:
        return model.model_validate(values)
    except ValidationError as e:
        raise PgrigError(problem_of(e, model).for_flags(model)) from None


def _field_name(model: type[BaseModel], loc0: int | str) -> str | None:
    for name, info in model.model_fields.items():
        if loc0 in (name, info.alias):
            return name
    return None


def _detail(detail: Loc) -> str:
    return "".join(f"[{x}]" if isinstance(x, int) else f".{_toml_key(str(x))}" for x in detail)


def _toml_key(key: str) -> str:
    """A key as the file would spell it: bare when TOML allows, else quoted ("work_mem ")."""
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "list": "a list",
    "dict": "a table",
    "tuple": "a list",
    "model": "a table",
}


def _translate(err: ErrorDetails) -> str:
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "unknown key"
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<="}
    if kind in ("string_too_short", "too_short"):
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
