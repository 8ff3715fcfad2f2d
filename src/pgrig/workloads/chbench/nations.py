"""CH-benCHmark's regions and its 62 nations (one per character a TPC-C c_state can start with).

The paper defines 62 nations without naming them all; pgrig names them after real countries,
TPC-H's 25 first (in their TPC-H regions), so the queries' constants (GERMANY, CAMBODIA, EUROPE)
select what they select in the other kits. Key = the code of the character that maps to it.
"""

from __future__ import annotations

from pgrig.workloads.tpch.queries import NATIONS as TPCH_NATIONS
from pgrig.workloads.tpch.queries import REGIONS

__all__ = ["CHARACTERS", "REGIONS", "nations"]

# (name, region index), in the order of the characters 0-9, A-Z, a-z: TPC-H's 25 in their
# order, then 37 more.
_NATIONS = (
    *TPCH_NATIONS,
    ("AUSTRALIA", 2), ("AUSTRIA", 3), ("BELGIUM", 3), ("CAMBODIA", 2),
    ("CHILE", 1), ("COLOMBIA", 1), ("CROATIA", 3), ("CUBA", 1), ("DENMARK", 3),
    ("ECUADOR", 1), ("FINLAND", 3), ("GHANA", 0), ("GREECE", 3), ("HUNGARY", 3),
    ("ICELAND", 3), ("IRELAND", 3), ("ISRAEL", 4), ("ITALY", 3), ("KUWAIT", 4),
    ("LEBANON", 4), ("MALAYSIA", 2), ("MEXICO", 1), ("NEPAL", 2), ("NETHERLANDS", 3),
    ("NIGERIA", 0), ("NORWAY", 3), ("OMAN", 4), ("PAKISTAN", 2), ("PHILIPPINES", 2),
    ("POLAND", 3), ("PORTUGAL", 3), ("QATAR", 4), ("SENEGAL", 0), ("SPAIN", 3),
    ("SWEDEN", 3), ("THAILAND", 2), ("URUGUAY", 1),
)  # fmt: skip

CHARACTERS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def nations() -> list[tuple[int, str, int]]:
    """(n_nationkey, n_name, n_regionkey) of the 62 nations."""
    assert len(_NATIONS) == len(CHARACTERS)
    return [(ord(c), name, region) for c, (name, region) in zip(CHARACTERS, _NATIONS, strict=True)]
