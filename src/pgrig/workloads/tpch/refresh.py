"""TPC-H's refresh functions (clause 2.5): RF1 inserts SF x 1,500 new orders with their
lineitems, RF2 deletes SF x 1,500 orders with theirs.

What differs from the spec, and why: dbgen's update sets (dbgen -U) are not written by
tpchgen-cli, so RF1's new orders copy the rows of existing orders under new keys, and RF2
deletes the orders RF1 inserted (the spec's RF2 deletes old orders of the generated data).
A power run therefore leaves the database exactly as generated: `pgrig db check` stays valid
and every run starts from the same data. The keys are ones dbgen never uses (of every 32
order keys it uses the first 8): refresh pair p takes key 32k + 9 + p, so up to 24 pairs
never collide: a power test's (pair 0) and its throughput test's (1..S, request/vocabulary.py's
TPCH_MAX_STREAMS bounds S).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import psycopg

from pgrig.request.vocabulary import TPCH_MAX_STREAMS

ORDERS_PER_SF = 1_500
MAX_PAIRS = TPCH_MAX_STREAMS + 1  # the unused keys of one group of 32: 24


@dataclass(frozen=True)
class RefreshSet:
    pair: int
    new_keys: list[int]  # the orders RF1 inserts (and RF2 deletes)
    sources: list[int]  # the existing orders whose rows they copy


def refresh_set(sf: float, seed: int, pair: int = 0) -> RefreshSet:
    """Pair `pair`'s keys: SF x 1,500 orders spread over the whole key range."""
    if not 0 <= pair < MAX_PAIRS:
        raise ValueError(f"refresh pair {pair} outside 0..{MAX_PAIRS - 1}")
    n = max(1, round(sf * ORDERS_PER_SF))
    groups = max(n, int(sf * 1_500_000) // 8)  # groups of 32 keys dbgen filled
    stride = groups // n
    rng = random.Random(f"tpch-refresh:{seed}:{pair}")
    ks = [i * stride + rng.randrange(stride) for i in range(n)]
    return RefreshSet(
        pair=pair,
        new_keys=[32 * k + 9 + pair for k in ks],
        sources=[32 * k + 1 + rng.randrange(8) for k in ks],
    )


def rf1(conn: psycopg.Connection, rs: RefreshSet) -> None:
    """The new orders and their lineitems, in one transaction."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO orders SELECT m.key, o_custkey, o_orderstatus, o_totalprice,"
            " o_orderdate, o_orderpriority, o_clerk, o_shippriority, o_comment"
            " FROM orders JOIN unnest(%s::bigint[], %s::bigint[]) AS m(src, key)"
            " ON o_orderkey = m.src",
            (rs.sources, rs.new_keys),
        )
        conn.execute(
            "INSERT INTO lineitem SELECT m.key, l_partkey, l_suppkey, l_linenumber, l_quantity,"
            " l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate,"
            " l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, l_comment"
            " FROM lineitem JOIN unnest(%s::bigint[], %s::bigint[]) AS m(src, key)"
            " ON l_orderkey = m.src",
            (rs.sources, rs.new_keys),
        )


def rf2(conn: psycopg.Connection, rs: RefreshSet) -> None:
    """The orders RF1 inserted and their lineitems, deleted in one transaction."""
    with conn.transaction():
        conn.execute("DELETE FROM lineitem WHERE l_orderkey = ANY(%s)", (rs.new_keys,))
        conn.execute("DELETE FROM orders WHERE o_orderkey = ANY(%s)", (rs.new_keys,))


# the orders a refresh function inserts, whatever its seed: 32k+9+pair (refresh_set), keys no
# generator uses (dbgen's are 32k+1..32k+8, tpchgen-cli's 32k..32k+7: a sweep of every key
# past the first 8 of a group deleted tpchgen-cli's 32k+32, found on a real database). Pair 23's
# 32k+32 is such a key and left out here.
REFRESHED_KEYS = "o_orderkey % 32 BETWEEN 9 AND 31"


def leftovers(conn: psycopg.Connection) -> int:
    """Orders an RF1 inserted that no RF2 deleted (a run stopped between them): removed with
    their lineitems, so the run starts from the generated data; how many there were is
    returned. Any seed's: a run's refresh set follows its seed, new for each run, so looking
    for this run's own keys found nothing after another run's stop (the data stayed changed,
    db check failed and every later run measured it)."""
    keys = [
        int(r[0]) for r in conn.execute(f"SELECT o_orderkey FROM orders WHERE {REFRESHED_KEYS}")
    ]
    if keys:
        with conn.transaction():
            conn.execute("DELETE FROM lineitem WHERE l_orderkey = ANY(%s)", (keys,))
            conn.execute("DELETE FROM orders WHERE o_orderkey = ANY(%s)", (keys,))
    return len(keys)
