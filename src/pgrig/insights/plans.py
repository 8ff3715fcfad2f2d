"""Plans from auto_explain (JSON format) in a run's server log: shapes, hashes, misestimates.

- The statement of a plan is its query text normalised (comments dropped, literals and numbers
  masked as ?, lists of them folded, blanks collapsed): the same statement with other values is
  one statement. Its fingerprint is a hash of that text.
- The plan hash covers the plan's structure only: node types, join types, strategies,
  relations, index names, scan directions, parent relationships; never costs, row counts,
  conditions or values. Two plans with the same hash are the same plan shape.
- A misestimate is a node whose estimated and actual rows differ by MISESTIMATE_FACTOR or more.
  Both are per loop in EXPLAIN (a node run 200 times reports its average rows per run), so they
  compare directly; below one row counts as one. Nodes that may stop early are skipped: below a
  Limit, the inner side of a semi/anti nested loop, the inputs of a merge join and EXISTS-style
  subplans (actual <= 1 row per loop), whose actual rows are legitimately fewer than estimated;
  so are nodes never executed and ModifyTable (it returns nothing without RETURNING). A noise
  floor (MIN_ROWS: the larger of the two, times loops) keeps 6-versus-67-row errors, which
  change no plan choice, from drowning the real ones.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterator

from pgrig.insights.server_log import Record
from pgrig.record.documents import (
    Misestimate,
    MisestimateFlag,
    PlanChangeWithin,
    PlanDoc,
    PlansDoc,
    PlanSpan,
    PlanStatement,
)
from pgrig.record.json_values import JsonObject, JsonValue, number

# A node of EXPLAIN (FORMAT JSON)'s plan: PostgreSQL's keys ("Node Type", "Plans"...)
PlanNode = JsonObject

MISESTIMATE_FACTOR = 10.0
MIN_ROWS = 100
TEXT_CHARS = 500
STRUCTURE_KEYS = (
    "Node Type",
    "Parallel Aware",
    "Join Type",
    "Strategy",
    "Partial Mode",
    "Operation",
    "Command",
    "Relation Name",
    "Index Name",
    "Scan Direction",
    "Parent Relationship",
    "Subplan Name",
    "CTE Name",
    "Function Name",
)
_PLAN_HEAD = re.compile(r"^duration: (?P<ms>[\d.]+) ms  plan:")
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
_STRING = re.compile(r"'(?:[^']|'')*'")
_NUMBER = re.compile(r"(?<![\w.$])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LIST = re.compile(r"\?(?:\s*,\s*\?)+")
_BLANKS = re.compile(r"\s+")
_FUNCTION = re.compile(r'PL/pgSQL function ([^\s(]+)\(|SQL function "([^"]+)"')
_SKIP_NODES = frozenset(("ModifyTable",))


# --- statements ---------------------------------------------------------------------------------


def normalize_query(text: str) -> str:
    """The statement of a query text: what stays the same whatever the values."""
    text = _COMMENTS.sub(" ", text)
    text = _STRING.sub("?", text)
    text = _NUMBER.sub("?", text)
    text = _LIST.sub("?, ...", text)
    return _BLANKS.sub(" ", text).strip().rstrip(";").strip()


def fingerprint(normalized: str) -> str:
    return hashlib.sha1(normalized.encode()).hexdigest()[:16]


def clip(text: str, limit: int = TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def calling_function(context: str | None) -> str | None:
    """The function a nested statement ran in, from the record's CONTEXT."""
    if not context:
        return None
    m = _FUNCTION.search(context)
    return (m.group(1) or m.group(2)) if m else None


# --- one plan -----------------------------------------------------------------------------------


def _children(node: PlanNode) -> list[PlanNode]:
    found = node.get("Plans")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _text(node: PlanNode, key: str) -> str | None:
    value = node.get(key)
    return value if isinstance(value, str) else None


def shape(node: PlanNode) -> PlanNode:
    """The structure of a plan node and its children (what the plan hash covers)."""
    out: PlanNode = {k: node[k] for k in STRUCTURE_KEYS if k in node}
    children = _children(node)
    if children:
        out["Plans"] = [shape(c) for c in children]
    return out


def plan_hash(plan: PlanNode) -> str:
    text = json.dumps(shape(plan), sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()[:16]


AGGREGATE_NAMES = {"Sorted": "GroupAggregate", "Hashed": "HashAggregate", "Mixed": "MixedAggregate"}


def node_label(node: PlanNode) -> str:
    """A node as EXPLAIN's text format names it: 'Index Scan using i on t', 'Hash Join'."""
    ntype = str(node.get("Node Type", "?"))
    name = ntype
    if ntype == "Aggregate":
        name = AGGREGATE_NAMES.get(str(node.get("Strategy", "")), "Aggregate")
        if node.get("Partial Mode") in ("Partial", "Finalize"):
            name = f"{node['Partial Mode']} {name}"
    elif ntype == "ModifyTable":
        name = str(node.get("Operation", ntype))
    elif ntype in ("Nested Loop", "Hash Join", "Merge Join"):
        join = node.get("Join Type", "Inner")
        if join != "Inner":
            name = f"{ntype} {join} Join" if ntype == "Nested Loop" else f"{ntype[:-5]} {join} Join"
    if node.get("Parallel Aware"):
        name = f"Parallel {name}"
    if node.get("Scan Direction") == "Backward":
        name += " Backward"
    if node.get("Index Name"):
        name += (
            f" using {node['Index Name']}"
            if "Relation Name" in node
            else f" on {node['Index Name']}"
        )
    target = node.get("Relation Name") or node.get("CTE Name") or node.get("Function Name")
    if target:
        name += f" on {target}"
    return name


def _walk(
    node: PlanNode, early: bool = False, depth: int = 0, table: str | None = None
) -> Iterator[tuple[PlanNode, bool, int, str | None]]:
    """(node, may_stop_early, depth, its table) for every node, depth first. A bitmap index
    scan's table is its bitmap heap scan's."""
    if node.get("Parent Relationship") == "SubPlan" and _actual(node) <= 1:
        early = True  # EXISTS-style subplans stop at their first row
    bitmap = "Bitmap" in str(node.get("Node Type"))
    table = _text(node, "Relation Name") or (table if bitmap else None)
    yield node, early, depth, table
    ntype = node.get("Node Type")
    semi = ntype == "Nested Loop" and node.get("Join Type") in ("Semi", "Anti")
    for child in _children(node):
        stop = early or ntype in ("Limit", "Merge Join")
        stop = stop or (semi and child.get("Parent Relationship") == "Inner")
        yield from _walk(child, stop, depth + 1, table)


def _actual(node: PlanNode) -> float:
    return number(node.get("Actual Rows")) or 0.0


def outline(plan: PlanNode) -> list[str]:
    """The plan's shape as indented lines, one per node."""
    lines = []
    for node, _, depth, _ in _walk(plan):
        label = node_label(node)
        if node.get("Parent Relationship") in ("SubPlan", "InitPlan") and node.get("Subplan Name"):
            label = f"{node['Subplan Name']}: {label}"
        lines.append("  " * depth + label)
    return lines


def relations_below(node: PlanNode) -> list[str]:
    """Relations scanned by a node and its children, in plan order, without repeats."""
    out: list[str] = []
    for n, _, _, _ in _walk(node):
        rel = _text(n, "Relation Name")
        if rel and rel not in out:
            out.append(rel)
    return out


def misestimates(plan: PlanNode) -> list[Misestimate]:
    """Nodes whose estimated and actual rows (per loop) differ by MISESTIMATE_FACTOR or more."""
    out = []
    for node, early, _, table in _walk(plan):
        loops = int(number(node.get("Actual Loops")) or 0)
        if early or loops == 0 or node.get("Node Type") in _SKIP_NODES:
            continue
        planned = number(node.get("Plan Rows"))
        if planned is None or "Actual Rows" not in node:
            continue
        est, act = planned, _actual(node)
        factor = max(est, 1.0) / max(act, 1.0)
        direction = "over"
        if factor < 1:
            factor, direction = 1 / factor, "under"
        if factor < MISESTIMATE_FACTOR or max(est, act) * loops < MIN_ROWS:
            continue
        rels = relations_below(node)
        out.append(
            Misestimate(
                node=node_label(node),
                node_type=_text(node, "Node Type"),
                relation=table or ", ".join(rels) or None,
                index=_text(node, "Index Name"),
                estimated_rows=est,
                actual_rows=act,
                loops=loops,
                factor=round(factor, 1),
                direction=direction,
            )
        )
    return out


def parse_plan_record(rec: Record) -> tuple[float, PlanNode] | None:
    """(duration ms, auto_explain document) of a plan record, None for other records."""
    if rec.severity != "LOG":
        return None
    head, _, body = rec.message.partition("\n")
    m = _PLAN_HEAD.match(head)
    if m is None:
        return None
    if rec.truncated:
        raise ValueError("plan larger than the record limit")
    doc: JsonValue = json.loads(body)
    if not isinstance(doc, dict) or not isinstance(doc.get("Plan"), dict):
        raise ValueError("no Plan in the auto_explain document")
    return float(m.group("ms")), doc


# --- all plans of a run ---------------------------------------------------------------------------


class _PlanEntry:
    def __init__(self, digest: str, plan: PlanNode, t: float | None) -> None:
        self.hash = digest
        self.samples = 0
        self.first_t = t
        self.last_t = t
        self.total_ms = 0.0
        self.max_ms = 0.0
        self.plan = plan
        self.misestimate_samples = 0
        self.misestimates: list[Misestimate] = []
        self.worst = 0.0

    def add(self, ms: float, plan: PlanNode, t: float | None) -> None:
        self.samples += 1
        self.total_ms += ms
        self.max_ms = max(self.max_ms, ms)
        if t is not None:
            self.first_t = t if self.first_t is None else min(self.first_t, t)
            self.last_t = t if self.last_t is None else max(self.last_t, t)
        found = misestimates(plan)
        if found:
            self.misestimate_samples += 1
            worst = max(f["factor"] for f in found)
            if worst > self.worst:  # keep the nodes of the worst sample
                self.worst, self.misestimates = worst, found

    def as_dict(self, with_plan: bool) -> PlanDoc:
        return PlanDoc(
            hash=self.hash,
            samples=self.samples,
            first_t=self.first_t,
            last_t=self.last_t,
            mean_ms=round(self.total_ms / self.samples, 3) if self.samples else None,
            max_ms=round(self.max_ms, 3),
            outline=outline(self.plan),
            misestimate_samples=self.misestimate_samples,
            misestimates=self.misestimates,
            plan=self.plan if with_plan else None,
        )


class _Statement:
    def __init__(self, key: str, text: str, function: str | None) -> None:
        self.key, self.text, self.function = key, text, function
        self.plans: dict[str, _PlanEntry] = {}
        self.samples = 0
        self.top_up_samples = 0  # of them, logged by the top-up after the window
        self.total_ms = 0.0


class PlanBook:
    """Feed records with add(); result() is the `plans` document of a run (bounded in size)."""

    def __init__(
        self,
        window_start: float | None,
        max_statements: int = 200,
        max_plans_per_statement: int = 10,
        plans_kept: int = 50,
        max_plan_chars: int = 65536,
        top_up_from: float | None = None,
    ) -> None:
        self.window_start = window_start
        # plans logged from then on come from the top-up of rare scripts after the window
        # (load/core/plan_top_up.py): counted apart, and kept out of the plan-change timeline
        self.top_up_from = top_up_from
        self.top_up_samples = 0
        self.max_statements = max_statements
        self.max_plans = max_plans_per_statement
        self.plans_kept = plans_kept
        self.max_plan_chars = max_plan_chars
        self.statements: dict[str, _Statement] = {}
        self.samples = 0
        self.skipped = {"too_large": 0, "unparsable": 0, "over_limit": 0}

    def add(self, rec: Record) -> bool:
        """Take a record if it is a plan (True), ignore it otherwise (False)."""
        try:
            parsed = parse_plan_record(rec)
        except ValueError:  # json.JSONDecodeError is one
            self.skipped["too_large" if rec.truncated else "unparsable"] += 1
            return True
        if parsed is None:
            return False
        ms, doc = parsed
        text = normalize_query(str(doc.get("Query Text") or ""))
        key = fingerprint(text)
        st = self.statements.get(key)
        if st is None:
            if len(self.statements) >= self.max_statements:
                self.skipped["over_limit"] += 1
                return True
            func = calling_function(rec.parts.get("CONTEXT"))
            st = self.statements[key] = _Statement(key, clip(text), func)
        plan = doc["Plan"]
        assert isinstance(plan, dict)  # parse_plan_record checked it
        digest = plan_hash(plan)
        t = None if rec.ts is None or self.window_start is None else rec.ts - self.window_start
        t = None if t is None else round(t, 3)
        top_up = self.top_up_from is not None and rec.ts is not None and rec.ts >= self.top_up_from
        if top_up:
            t = None
        entry = st.plans.get(digest)
        if entry is None:
            if len(st.plans) >= self.max_plans:
                self.skipped["over_limit"] += 1
                return True
            entry = st.plans[digest] = _PlanEntry(digest, plan, t)
        entry.add(ms, plan, t)
        st.samples += 1
        st.total_ms += ms
        self.samples += 1
        if top_up:
            st.top_up_samples += 1
            self.top_up_samples += 1
        return True

    def result(self) -> PlansDoc:
        ordered = sorted(self.statements.values(), key=lambda s: (-s.total_ms, s.key))
        statements = []
        for rank, st in enumerate(ordered):
            plans = sorted(st.plans.values(), key=lambda p: (-p.samples, p.hash))
            statements.append(
                PlanStatement(
                    fingerprint=st.key,
                    text=st.text,
                    function=st.function,
                    samples=st.samples,
                    top_up_samples=st.top_up_samples,
                    sampled_ms=round(st.total_ms, 3),
                    plans=[p.as_dict(self._keep_plan(rank, p)) for p in plans],
                )
            )
        return PlansDoc(
            collected=True,
            samples=self.samples,
            top_up_samples=self.top_up_samples,
            skipped=dict(self.skipped),
            statements=statements,
            misestimates=flag_list(statements),
            changes=changes_within(statements),
        )

    def _keep_plan(self, rank: int, entry: _PlanEntry) -> bool:
        if rank >= self.plans_kept and not entry.misestimates:
            return False
        return len(json.dumps(entry.plan)) <= self.max_plan_chars


def flag_list(statements: list[PlanStatement], limit: int = 20) -> list[MisestimateFlag]:
    """Every misestimated node of every plan, worst first."""
    out = []
    for st in statements:
        for p in st["plans"]:
            for flag in p["misestimates"]:
                out.append(
                    MisestimateFlag(
                        fingerprint=st["fingerprint"],
                        text=st["text"],
                        function=st["function"],
                        hash=p["hash"],
                        samples=p["samples"],
                        misestimate_samples=p["misestimate_samples"],
                        **flag,
                    )
                )
    out.sort(key=lambda f: -f["factor"])
    return out[:limit]


def changes_within(statements: list[PlanStatement]) -> list[PlanChangeWithin]:
    """Statements seen with more than one plan during the run: "switched" when the plans'
    time spans do not overlap (one replaced the other), "alternating" when they do."""
    out = []
    for st in statements:
        plans = [p for p in st["plans"] if p["samples"]]
        if len(plans) < 2:
            continue
        spans = sorted((p for p in plans if p["first_t"] is not None), key=_first_t)
        switched = len(spans) == len(plans) and all(
            _first_t(b) > (a["last_t"] or 0.0) for a, b in itertools.pairwise(spans)
        )
        out.append(
            PlanChangeWithin(
                fingerprint=st["fingerprint"],
                text=st["text"],
                pattern="switched" if switched else "alternating",
                plans=[
                    PlanSpan(
                        hash=p["hash"],
                        samples=p["samples"],
                        first_t=p["first_t"],
                        last_t=p["last_t"],
                        outline=p["outline"],
                    )
                    for p in (spans if switched else plans)
                ],
            )
        )
    return out


def _first_t(p: PlanDoc) -> float:
    return p["first_t"] or 0.0  # called on plans with a first_t only
