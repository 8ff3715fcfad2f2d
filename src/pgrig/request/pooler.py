"""The pooler request: `pgrig env pooler add`'s flags and a study's `[environment].pooler` table.

One model for both surfaces, like the run request: the CLI hears `--pool-size must be >= 1
(got 0): ...`, a study file `environment.pooler.pool_size: must be >= 1 (got 0): ...`
(problems.py). provision/pooler turns a valid request into the configuration env.json keeps.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel

from pgrig.request.fields import STRICT, flag_field
from pgrig.request.problems import Refusal
from pgrig.request.vocabulary import PORT_RANGE

__all__ = [
    "DEFAULT_MAX_CLIENT_CONN",
    "DEFAULT_MODE",
    "DEFAULT_POOL_SIZE",
    "KINDS",
    "MAX_PROCESSES",
    "MODES",
    "PoolerKind",
    "PoolerRequest",
    "Port",
]

PoolerKind = Literal["pgbouncer"]  # `env create --pooler`'s too (request/environment.py)
KINDS: tuple[str, ...] = get_args(PoolerKind)
MODES = ("session", "transaction", "statement")
DEFAULT_MODE = "transaction"
DEFAULT_POOL_SIZE = 20
DEFAULT_MAX_CLIENT_CONN = 2000
MAX_PROCESSES = 64


def _pool_size(value: int) -> int:
    if value < 1:
        raise Refusal(
            f"must be >= 1 (got {value}): a pool without server connections cannot run any query"
        )
    return value


def _max_client_conn(value: int) -> int:
    if value < 2:
        raise Refusal(f"must be >= 2 (got {value}): one connection is kept for statistics")
    return value


def _processes(value: int) -> int:
    if not 1 <= value <= MAX_PROCESSES:
        raise Refusal(f"must be between 1 and {MAX_PROCESSES} (got {value})")
    return value


def _port(value: int | None) -> int | None:
    if value is not None and not PORT_RANGE[0] <= value <= PORT_RANGE[1]:
        raise Refusal(f"must be between {PORT_RANGE[0]} and {PORT_RANGE[1]} (got {value})")
    return value


# a TCP port a user asks for (None: pgrig picks a free one): a pooler's, a server's
Port = Annotated[int | None, AfterValidator(_port)]


class PoolerRequest(BaseModel):
    """A pooler in front of an environment: which one, its pool mode and sizes."""

    model_config = STRICT

    kind: PoolerKind = flag_field("pooler kind", default="pgbouncer")
    mode: Literal["session", "transaction", "statement"] = flag_field(
        "--mode", default=DEFAULT_MODE
    )
    pool_size: Annotated[int, AfterValidator(_pool_size)] = flag_field(
        "--pool-size", default=DEFAULT_POOL_SIZE
    )
    max_client_conn: Annotated[int, AfterValidator(_max_client_conn)] = flag_field(
        "--max-client-conn", default=DEFAULT_MAX_CLIENT_CONN
    )
    processes: Annotated[int, AfterValidator(_processes)] = flag_field("--processes", default=1)
    port: Port = flag_field("--port", default=None)

    def values(self) -> dict[str, Any]:
        """The request as keyword arguments (port None: pgrig picks a free one)."""
        return self.model_dump()
