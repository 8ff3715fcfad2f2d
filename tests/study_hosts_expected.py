"""The study hosts table (pgrig.views.study_hosts) computed from run documents alone, without
pgrig's code: the `runs export` documents of a point's ok runs (their via, measured_s, extra and
series) give each host's rows. The unit tests use captured runs, the rig test real ones.
"""

from __future__ import annotations

import statistics
from typing import Any

GROUPS = {"db": "server", "pooler": "pooler", "load": "pgbench"}


def hodges_lehmann(xs: list[float]) -> float:
    """The median of the Walsh averages (x_i + x_j) / 2, i <= j."""
    return statistics.median((a + b) / 2 for i, a in enumerate(xs) for b in xs[i:])


def window(doc: dict[str, Any], kind: str, column: str) -> list[float]:
    """A sampler column over the measured window: 0 < t <= measured_s + 0.5."""
    cols, end = doc["series"][kind], doc["measured_s"]
    return [v for t, v in zip(cols["t"], cols[column], strict=True) if 0 < t <= end + 0.5]


def expected_rows(label: str, docs: list[dict[str, Any]]) -> list[list[str]]:
    """The rows of one point's hosts, from its runs' documents alone."""
    rows = []
    via = docs[0]["via"]
    for host, roles in docs[0]["extra"]["host_roles"].items():
        kind = f"os@{host}"
        busy = [statistics.fmean(100 - i - w for i, w in zip(window(d, kind, "cpu_idle"),
                                                                window(d, kind, "cpu_iowait"),
                                                                strict=True))
                for d in docs]  # fmt: skip
        wait = [statistics.fmean(window(d, kind, "cpu_iowait")) for d in docs]
        steal = [statistics.fmean(window(d, kind, "cpu_steal")) for d in docs]
        samples = sum(len(window(d, kind, "cpu_idle")) for d in docs)
        process = []
        for role in roles:
            group = GROUPS[role]
            column = f"proc_{group}_cpu"
            per_run = [
                statistics.fmean(vals)
                for d in docs
                if column in d["series"][kind]
                and (vals := [v for v in window(d, kind, column) if v is not None])
            ]  # a run whose sampler did not find the process group has no figure for it
            if per_run:
                process.append(f"{group} {hodges_lehmann(per_run):.1f}")
        role_cell = ", ".join(roles)
        saturated = [host in (d["extra"]["load"].get("saturated") or {}) for d in docs]
        if "load" in roles and any(saturated):
            role_cell += f" saturated {sum(saturated)}/{len(docs)}"
        paths = [p for d in docs for p in d["extra"]["network"]["paths"] if p["from"] == host]
        target = next(h for h, rs in docs[0]["extra"]["host_roles"].items()
                      if ("pooler" if via != "direct" else "db") in rs)  # fmt: skip
        path_cells = ["-", "-", "-"]
        if paths:
            p50 = hodges_lehmann([p["rtt_p50_ms"] for p in paths])
            p99 = hodges_lehmann([p["rtt_p99_ms"] for p in paths])
            path_cells = [f"{target} ({paths[0]['kind']})", f"{p50:.3f} / {p99:.3f}",
                          str(sum(p["samples"] for p in paths))]  # fmt: skip
        rows.append([
            label, host, role_cell, f"{hodges_lehmann(busy):.1f}",
            f"{hodges_lehmann(wait):.1f} / {hodges_lehmann(steal):.1f}", " ".join(process) or "-",
            str(samples), *path_cells,
        ])  # fmt: skip
    return rows
