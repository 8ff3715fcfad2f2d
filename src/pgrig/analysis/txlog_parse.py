"""pgbench's per-transaction log lines (-l) read into columns: the statuses pgbench writes, the
schema, complete lines, and a chunk of lines parsed (polars) into numpy columns that
txlog.py's stream folds.

A log line is `client_id transaction_no time_us script_no epoch_s epoch_us [lag_us] [retries]`
where time_us may read `skipped`, `failed`, `serialization` or `deadlock`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import polars as pl

from pgrig.errors import PgrigError, first_line

STATUSES = ("ok", "skipped", "failed", "serialization", "deadlock")
STATUS = pl.Enum(list(STATUSES))
OK, SKIPPED = 0, 1
FAILED_CODES = (2, 3, 4)  # failed, serialization, deadlock
SCHEMA: dict[str, pl.DataType] = {
    "client": pl.Int32(),
    "latency_us": pl.Int64(),
    "status": STATUS,
    "script": pl.Int16(),
    "end_us": pl.Int64(),
    "lag_us": pl.Int64(),
    "retries": pl.Int32(),
}

_STATUS_LEVELS = pl.Series("status", list(STATUSES), dtype=STATUS)


# --------------------------------------------------------------------------------------------
# parsing


def _raw_schema(
    has_lag: bool, has_retries: bool, time: pl.DataType | None = None
) -> dict[str, pl.DataType]:
    schema: dict[str, pl.DataType] = {
        "client": pl.Int32(),
        "txno": pl.Int64(),
        "time": time or pl.Utf8(),
        "script": pl.Int16(),
        "epoch_s": pl.Int64(),
        "epoch_us": pl.Int64(),
    }
    if has_lag:
        schema["lag_us"] = pl.Int64()
    if has_retries:
        schema["retries"] = pl.Int32()
    return schema


def _columns(has_lag: bool, has_retries: bool) -> list[pl.Expr]:
    """Raw log columns -> the public schema (see SCHEMA)."""
    t = pl.col("time")
    latency = t.str.to_integer(strict=False)
    # 0 ok (numeric time), 1.. the words pgbench writes; anything else stays null (unknown).
    code = (
        pl.when(latency.is_not_null())
        .then(0)
        .when(t == "skipped")
        .then(1)
        .when(t == "failed")
        .then(2)
        .when(t == "serialization")
        .then(3)
        .when(t == "deadlock")
        .then(4)
        .otherwise(None)
        .cast(pl.UInt32)
    )
    return [
        pl.col("client"),
        latency.alias("latency_us"),
        pl.lit(_STATUS_LEVELS).gather(code).alias("status"),
        pl.col("script"),
        (pl.col("epoch_s") * 1_000_000 + pl.col("epoch_us")).alias("end_us"),
        pl.col("lag_us") if has_lag else pl.lit(None, pl.Int64).alias("lag_us"),
        pl.col("retries") if has_retries else pl.lit(None, pl.Int32).alias("retries"),
    ]


def complete_lines(data: bytes) -> tuple[bytes, bytes]:
    """(complete lines, the rest): a line is only complete with its newline. pgbench writes
    through a buffer, so a read can end mid-line, and a killed pgbench leaves a torn last line
    (possibly a valid-looking prefix such as a shortened epoch_us)."""
    cut = data.rfind(b"\n")
    return data[: cut + 1], data[cut + 1 :]


def check_fields(data: bytes, *, has_lag: bool, has_retries: bool, source: str) -> None:
    """The first line has the fields of this run's options (a clear error otherwise)."""
    expected = 6 + has_lag + has_retries
    n = len(data[: data.find(b"\n")].split())
    if n != expected:
        raise PgrigError(
            f"{source}: pgbench log lines have {n} fields, expected {expected} "
            f"(has_lag={has_lag}, has_retries={has_retries}): not a per-transaction log of "
            "this run's options"
        )


def parse_lines(
    data: bytes, *, has_lag: bool, has_retries: bool, source: str = "pgbench log"
) -> pl.DataFrame:
    """Complete log lines -> a DataFrame of SCHEMA.

    Columns: client Int32, latency_us Int64 (null unless the time field is numeric), status
    Enum(ok, skipped, failed, serialization, deadlock; null for an unknown word), script Int16,
    end_us Int64 (epoch microseconds), lag_us Int64 (null without -R), retries Int32 (null with
    --max-tries 1).
    """
    if not data:
        return pl.DataFrame(schema=SCHEMA)
    check_fields(data, has_lag=has_lag, has_retries=has_retries, source=source)
    try:
        raw = _read(data, _raw_schema(has_lag, has_retries))
        return raw.select(_columns(has_lag, has_retries))
    except pl.exceptions.PolarsError as e:
        raise PgrigError(f"cannot parse pgbench log ({source}): {first_line(e)}") from None


def _read(
    data: bytes, schema: dict[str, pl.DataType], columns: list[int] | None = None
) -> pl.DataFrame:
    return pl.read_csv(
        data, separator=" ", has_header=False, schema=schema, quote_char=None, columns=columns
    )


@dataclass(frozen=True)
class Chunk:
    """Parsed lines as numpy columns: the stream's working form (numpy folds a chunk several
    times cheaper than polars group-bys; bench/txlog_rate.py)."""

    latency: np.ndarray  # int64 us; 0 unless ok
    code: np.ndarray  # uint8: index in STATUSES, UNKNOWN for a word pgbench does not write
    script: np.ndarray
    end_us: np.ndarray
    lag: np.ndarray | None  # int64 (with -R)
    retries: np.ndarray | None  # int64 (with --max-tries other than 1)
    bucket: np.ndarray | None = None  # hdr.bucket_index of latency (set by the stream)

    def take(self, sel: np.ndarray | slice) -> Chunk:
        if isinstance(sel, slice):
            return self

        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[sel]

        return Chunk(
            latency=self.latency[sel],
            code=self.code[sel],
            script=self.script[sel],
            end_us=self.end_us[sel],
            lag=pick(self.lag),
            retries=pick(self.retries),
            bucket=pick(self.bucket),
        )

    @property
    def ok(self) -> np.ndarray:
        return cast(np.ndarray, self.code == OK)


UNKNOWN = len(STATUSES)
# Every word pgbench writes instead of a latency has an "e": a one-byte search (memchr) tells
# the usual all-number chunk; a word without one fails the integer read and takes the other way.
assert all("e" in word for word in STATUSES[1:])


def parse_chunk(
    data: bytes, *, has_lag: bool, has_retries: bool, source: str = "pgbench log"
) -> Chunk:
    """Complete log lines -> numpy columns. Lines that are all numbers (the usual chunk) are
    read as integers, without the columns the figures do not use; a chunk with a word in it
    takes parse_lines' way."""
    if b"e" not in data:
        check_fields(data, has_lag=has_lag, has_retries=has_retries, source=source)
        extra = [6] * has_lag + [6 + has_lag] * has_retries
        try:
            raw = _read(data, _raw_schema(has_lag, has_retries, pl.Int64()), [2, 3, 4, 5, *extra])
        except pl.exceptions.PolarsError:
            pass  # a word pgbench does not write, or a broken line: parse_lines tells which
        else:
            latency = raw["time"].to_numpy()
            return Chunk(
                latency=latency,
                code=np.zeros(latency.size, np.uint8),
                script=raw["script"].to_numpy(),
                end_us=raw["epoch_s"].to_numpy() * 1_000_000 + raw["epoch_us"].to_numpy(),
                lag=raw["lag_us"].to_numpy() if has_lag else None,
                retries=raw["retries"].to_numpy() if has_retries else None,
            )
    df = parse_lines(data, has_lag=has_lag, has_retries=has_retries, source=source)
    return Chunk(
        latency=df["latency_us"].fill_null(0).to_numpy(),
        code=df["status"].to_physical().fill_null(UNKNOWN).cast(pl.UInt8).to_numpy(),
        script=df["script"].to_numpy(),
        end_us=df["end_us"].to_numpy(),
        lag=df["lag_us"].to_numpy() if has_lag else None,
        retries=df["retries"].to_numpy() if has_retries else None,
    )


def end_of_last_line(data: bytes) -> int:
    """End time (epoch us) of the last complete line of data."""
    fields = data[data.rfind(b"\n", 0, len(data) - 1) + 1 :].split()
    return int(fields[4]) * 1_000_000 + int(fields[5])
