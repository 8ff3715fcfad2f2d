"""The 22 TPC-H queries (queries/qNN.sql, PostgreSQL's dialect, which DuckDB also reads) and
their substitution parameters, drawn from the ranges of clause 2.4 with a seed.

A query's parameters depend only on (seed, stream, query): a run records its seed and any
run with the same seed, scale factor and stream asks exactly the same questions; `db check`
asks them of DuckDB too. The qualification parameters (clause 2.4, "validation") are the
ones the spec's answer set was computed with.

Stream order: stream 0 is the spec's (clause 5.3.5's table, the power test's); other streams
take a permutation drawn from the seed, not the spec's table of Appendix A (said in the run).
"""

from __future__ import annotations

import difflib
import random
import re
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources

QUERIES: tuple[int, ...] = tuple(range(1, 23))
STREAM_0_ORDER: tuple[int, ...] = (
    14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12,
)  # fmt: skip

# dbgen's vocabulary (clause 4.2.2.13 and 4.2.3): what p_type, p_container, p_name,
# c_mktsegment, l_shipmode and the nations are made of.
TYPE_S1 = ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO")
TYPE_S2 = ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED")
TYPE_S3 = ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER")
CONTAINER_S1 = ("SM", "LG", "MED", "JUMBO", "WRAP")
CONTAINER_S2 = ("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM")
SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY")
SHIPMODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
Q13_WORD1 = ("special", "pending", "unusual", "express")
Q13_WORD2 = ("packages", "requests", "accounts", "deposits")
REGIONS = ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST")
# n_nationkey order; each nation's region key
NATIONS: tuple[tuple[str, int], ...] = (
    ("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4),
    ("ETHIOPIA", 0), ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2),
    ("IRAN", 4), ("IRAQ", 4), ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0),
    ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2), ("ROMANIA", 3), ("SAUDI ARABIA", 4),
    ("VIETNAM", 2), ("RUSSIA", 3), ("UNITED KINGDOM", 3), ("UNITED STATES", 1),
)  # fmt: skip
COLORS = (  # noqa: SIM905 (92 words: a list literal would take 30 lines)
    "almond antique aquamarine azure beige bisque black blanched blue blush brown burlywood "
    "burnished chartreuse chiffon chocolate coral cornflower cornsilk cream cyan dark deep dim "
    "dodger drab firebrick floral forest frosted gainsboro ghost goldenrod green grey honeydew "
    "hot indian ivory khaki lace lavender lawn lemon light lime linen magenta maroon medium "
    "metallic midnight mint misty moccasin navajo navy olive orange orchid pale papaya peach "
    "peru pink plum powder puff purple red rose rosy royal saddle salmon sandy seashell sienna "
    "sky slate smoke snow spring steel tan thistle tomato turquoise violet wheat white yellow"
).split()

Params = dict[str, str]


def qualification(query: int, sf: float) -> Params:
    """The validation parameters of clause 2.4 (those of the spec's answer set at SF 1)."""
    fixed: dict[int, Params] = {
        1: {"delta": "90"},
        2: {"size": "15", "type": "BRASS", "region": "EUROPE"},
        3: {"segment": "BUILDING", "date": "1995-03-15"},
        4: {"date": "1993-07-01"},
        5: {"region": "ASIA", "date": "1994-01-01"},
        6: {"date": "1994-01-01", "discount": "0.06", "quantity": "24"},
        7: {"nation1": "FRANCE", "nation2": "GERMANY"},
        8: {"nation": "BRAZIL", "region": "AMERICA", "type": "ECONOMY ANODIZED STEEL"},
        9: {"color": "green"},
        10: {"date": "1993-10-01"},
        11: {"nation": "GERMANY", "fraction": _fraction(sf)},
        12: {"shipmode1": "MAIL", "shipmode2": "SHIP", "date": "1994-01-01"},
        13: {"word1": "special", "word2": "requests"},
        14: {"date": "1995-09-01"},
        15: {"date": "1996-01-01"},
        16: {
            "brand": "Brand#45",
            "type": "MEDIUM POLISHED",
            "sizes": "49, 14, 23, 45, 19, 3, 36, 9",
        },
        17: {"brand": "Brand#23", "container": "MED BOX"},
        18: {"quantity": "300"},
        19: {
            "quantity1": "1",
            "quantity2": "10",
            "quantity3": "20",
            "brand1": "Brand#12",
            "brand2": "Brand#23",
            "brand3": "Brand#34",
        },
        20: {"color": "forest", "date": "1994-01-01", "nation": "CANADA"},
        21: {"nation": "SAUDI ARABIA"},
        22: {"codes": "'13', '31', '23', '29', '30', '18', '17'"},
    }
    return fixed[query]


def substitution(query: int, sf: float, seed: int, stream: int = 0) -> Params:
    """Parameters drawn from clause 2.4's ranges, the same for the same (seed, stream, query)."""
    rng = random.Random(f"tpch:{seed}:{stream}:{query}")  # str seeds hash stably (sha512)
    return _DRAW[query](rng, sf)


def stream_order(stream: int, seed: int) -> tuple[int, ...]:
    """The order of a stream's 22 queries: the spec's for stream 0, a seeded one otherwise."""
    if stream == 0:
        return STREAM_0_ORDER
    order = list(QUERIES)
    random.Random(f"tpch-order:{seed}:{stream}").shuffle(order)
    return tuple(order)


def text(query: int, params: Params) -> str:
    """The query's SQL with its parameters in place (they come from the lists above, never
    from a user: no quoting needed beyond the literals the templates write)."""
    return _template(query).format(**params).strip()


@cache
def _template(query: int) -> str:
    raw = resources.files("pgrig.workloads.tpch").joinpath(f"queries/q{query:02d}.sql")
    return "\n".join(line for line in raw.read_text().splitlines() if not line.startswith("--"))


MATCH = 0.9
_QUOTED = re.compile(r"'[^']*'|\{[a-z_0-9]+\}")
_WORD = re.compile(r"[a-z_][a-z_0-9]*")


def words(sql: str) -> list[str]:
    """The words of a query's text without its constants: the same for the template, the
    query sent and pg_stat_statements' normalised text ($1 for each constant)."""
    return _WORD.findall(_QUOTED.sub(" ", sql.lower()).replace("$", " 0"))


@cache
def _signatures() -> dict[int, list[str]]:
    return {q: words(_template(q)) for q in range(1, 23)}


def query_of(text: str) -> int | None:
    """Which of the 22 queries a statement's text is (pg_stat_statements' normalised and
    maybe clipped text, or the query sent), None for any other statement. Normalising turns
    some words into constants (extract(year from ...) becomes extract($1 from ...)), so the
    words are compared by similarity with each template's words as far as the text goes: the
    one query at least MATCH similar wins."""
    seen = words(text)
    if text.rstrip().endswith("\u2026"):  # clipped (insights/plans.clip): its last word may be cut
        seen = seen[:-1]
    if len(seen) < 8:
        return None
    scores = {
        q: difflib.SequenceMatcher(None, seen, sig[: len(seen)], autojunk=False).ratio()
        for q, sig in _signatures().items()
    }
    ranked = sorted(scores, key=lambda q: -scores[q])
    best, second = ranked[0], ranked[1]
    if scores[best] < MATCH or scores[second] >= scores[best]:
        return None
    return best


@dataclass(frozen=True)
class Planned:
    query: int
    params: Params
    sql: str


def plan_stream(
    sf: float, seed: int | None, stream: int = 0, order: tuple[int, ...] | None = None
) -> list[Planned]:
    """A stream's queries in its order; seed None: the qualification parameters."""
    out = []
    for q in order or stream_order(stream, seed or 0):
        params = qualification(q, sf) if seed is None else substitution(q, sf, seed, stream)
        out.append(Planned(q, params, text(q, params)))
    return out


# --- clause 2.4's ranges -----------------------------------------------------------------------


def _day(d: date) -> str:
    return d.isoformat()


def _month_start(rng: random.Random, first: tuple[int, int], last: tuple[int, int]) -> str:
    months = (last[0] - first[0]) * 12 + last[1] - first[1]
    k = rng.randint(0, months)
    year, month = first[0] + (first[1] - 1 + k) // 12, (first[1] - 1 + k) % 12 + 1
    return _day(date(year, month, 1))


def _year_start(rng: random.Random) -> str:
    return _day(date(rng.randint(1993, 1997), 1, 1))


def _brand(rng: random.Random) -> str:
    return f"Brand#{rng.randint(1, 5)}{rng.randint(1, 5)}"


def _nation(rng: random.Random) -> str:
    return rng.choice(NATIONS)[0]


def _fraction(sf: float) -> str:
    return f"{0.0001 / sf:.10f}"


def _q1(rng: random.Random, sf: float) -> Params:
    return {"delta": str(rng.randint(60, 120))}


def _q2(rng: random.Random, sf: float) -> Params:
    return {
        "size": str(rng.randint(1, 50)),
        "type": rng.choice(TYPE_S3),
        "region": rng.choice(REGIONS),
    }


def _q3(rng: random.Random, sf: float) -> Params:
    return {"segment": rng.choice(SEGMENTS), "date": _day(date(1995, 3, rng.randint(1, 31)))}


def _q4(rng: random.Random, sf: float) -> Params:
    return {"date": _month_start(rng, (1993, 1), (1997, 10))}


def _q5(rng: random.Random, sf: float) -> Params:
    return {"region": rng.choice(REGIONS), "date": _year_start(rng)}


def _q6(rng: random.Random, sf: float) -> Params:
    return {
        "date": _year_start(rng),
        "discount": f"0.0{rng.randint(2, 9)}",
        "quantity": str(rng.randint(24, 25)),
    }


def _q7(rng: random.Random, sf: float) -> Params:
    first, second = rng.sample([n for n, _r in NATIONS], 2)
    return {"nation1": first, "nation2": second}


def _q8(rng: random.Random, sf: float) -> Params:
    name, region = rng.choice(NATIONS)
    kind = f"{rng.choice(TYPE_S1)} {rng.choice(TYPE_S2)} {rng.choice(TYPE_S3)}"
    return {"nation": name, "region": REGIONS[region], "type": kind}


def _q9(rng: random.Random, sf: float) -> Params:
    return {"color": rng.choice(COLORS)}


def _q10(rng: random.Random, sf: float) -> Params:
    return {"date": _month_start(rng, (1993, 2), (1995, 1))}


def _q11(rng: random.Random, sf: float) -> Params:
    return {"nation": _nation(rng), "fraction": _fraction(sf)}


def _q12(rng: random.Random, sf: float) -> Params:
    first, second = rng.sample(SHIPMODES, 2)
    return {"shipmode1": first, "shipmode2": second, "date": _year_start(rng)}


def _q13(rng: random.Random, sf: float) -> Params:
    return {"word1": rng.choice(Q13_WORD1), "word2": rng.choice(Q13_WORD2)}


def _q14(rng: random.Random, sf: float) -> Params:
    return {"date": _month_start(rng, (1993, 1), (1997, 12))}


def _q15(rng: random.Random, sf: float) -> Params:
    return {"date": _month_start(rng, (1993, 1), (1997, 10))}


def _q16(rng: random.Random, sf: float) -> Params:
    sizes = rng.sample(range(1, 51), 8)
    return {
        "brand": _brand(rng),
        "type": f"{rng.choice(TYPE_S1)} {rng.choice(TYPE_S2)}",
        "sizes": ", ".join(map(str, sizes)),
    }


def _q17(rng: random.Random, sf: float) -> Params:
    return {
        "brand": _brand(rng),
        "container": f"{rng.choice(CONTAINER_S1)} {rng.choice(CONTAINER_S2)}",
    }


def _q18(rng: random.Random, sf: float) -> Params:
    return {"quantity": str(rng.randint(312, 315))}


def _q19(rng: random.Random, sf: float) -> Params:
    return {
        "quantity1": str(rng.randint(1, 10)),
        "quantity2": str(rng.randint(10, 20)),
        "quantity3": str(rng.randint(20, 30)),
        "brand1": _brand(rng),
        "brand2": _brand(rng),
        "brand3": _brand(rng),
    }


def _q20(rng: random.Random, sf: float) -> Params:
    return {"color": rng.choice(COLORS), "date": _year_start(rng), "nation": _nation(rng)}


def _q21(rng: random.Random, sf: float) -> Params:
    return {"nation": _nation(rng)}


def _q22(rng: random.Random, sf: float) -> Params:
    codes = rng.sample(range(10, 35), 7)  # country codes: n_nationkey + 10
    return {"codes": ", ".join(f"'{c}'" for c in codes)}


_DRAW = {
    1: _q1, 2: _q2, 3: _q3, 4: _q4, 5: _q5, 6: _q6, 7: _q7, 8: _q8, 9: _q9, 10: _q10,
    11: _q11, 12: _q12, 13: _q13, 14: _q14, 15: _q15, 16: _q16, 17: _q17, 18: _q18,
    19: _q19, 20: _q20, 21: _q21, 22: _q22,
}  # fmt: skip
