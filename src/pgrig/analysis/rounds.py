"""The order of one round of interleaved runs (a study's points, tuning's confirmation and
ablation): every item once, in an order of the round's own.

In one fixed order each item always follows the same other: what its runs leave behind (dead
tuples for autovacuum, WAL to recycle, a cache filled with its pages) falls on the next item's
runs every round, and a paired comparison takes that carry-over for an effect. Shuffled per
round, the carry-over lands on every side alike and widens the bounds instead of moving the
ratio. Seeded by a name (the study's) and the round: a resumed study finds the same plan.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def shuffled(items: Sequence[T], seed: str, round_no: int) -> list[T]:
    """`items` in round `round_no`'s order for the plan named `seed`."""
    return random.Random(f"pgrig-rounds:{seed}:{round_no}").sample(list(items), len(items))
