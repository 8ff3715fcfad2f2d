"""Network facts of a run: from each load host to where pgbench connects, the round-trip time
(p50/p99 of TCP connects on that very path, measured just before the load starts) and whether
the path is loopback. Kept in RunRecord.extra["network"]; a run over the network and one over
loopback are different experiments, and comparisons say so (analysis/host_diff.py)."""

from __future__ import annotations

import numpy as np

from pgrig.load.remote.remote_agent import measure_rtt
from pgrig.record.doc_read import read_document
from pgrig.record.documents import NetworkDoc, NetworkPath, RttDoc

RTT_SAMPLES = 50


def path_facts(source: str, measured: RttDoc) -> NetworkPath:
    """One path's facts from an rtt measurement (remote_agent.measure_rtt's dict)."""
    samples = [float(x) for x in measured.get("samples_us") or []]
    facts: NetworkPath = {
        "from": source,
        "to": measured.get("target"),
        "address": measured.get("address"),
        "loopback": measured.get("loopback"),
        "kind": measured.get("kind"),  # unix socket, loopback or network
        "samples": len(samples),
    }
    if samples:
        a = np.asarray(samples) / 1000.0
        facts["rtt_p50_ms"] = round(float(np.quantile(a, 0.5)), 4)
        facts["rtt_p99_ms"] = round(float(np.quantile(a, 0.99)), 4)
        facts["rtt_max_ms"] = round(float(a.max()), 4)
    if measured.get("error"):
        facts["error"] = measured["error"]
    return facts


def local_path(host: str, port: int, source: str = "localhost") -> NetworkPath:
    """The path from this machine (the load of a run without --load-from)."""
    return path_facts(source, read_document(RttDoc, measure_rtt(host, port, RTT_SAMPLES)))


def describe(network: NetworkDoc | None) -> str | None:
    """One line for a run's network facts (None when the run has none)."""
    paths = (network or {}).get("paths") or []
    if not paths:
        return None
    parts = []
    for p in paths:
        kind = p.get("kind") or ("loopback" if p.get("loopback") else "network")
        rtt = (
            f" rtt p50 {p['rtt_p50_ms']:.3f} ms p99 {p['rtt_p99_ms']:.3f} ms"
            if p.get("rtt_p50_ms") is not None
            else ""
        )
        parts.append(f"{p.get('from')} -> {p.get('to')} ({kind}){rtt}")
    return "; ".join(parts)
