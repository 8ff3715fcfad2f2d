"""How one run's load is shared between its load hosts (`pgrig run --load-from A --load-from B`).

The rule, stated once:
- clients: as evenly as possible, in the order the hosts were given: with c clients over n hosts,
  the first c mod n hosts run floor(c/n) + 1, the others floor(c/n). Every host needs a client,
  so c >= n.
- threads: the same rule over -j, then at least 1 and at most the host's clients (pgbench cannot
  run a thread without a client). So the total can exceed -j when -j < n: each host runs a thread.
- rate (-R): in proportion to each host's clients, so every client is paced alike; the shares add
  up to the requested rate.
- transactions per client (-t) and every other option: the same on every host.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgrig.errors import PgrigError
from pgrig.record.documents import LoadShare


@dataclass(frozen=True)
class HostShare:
    host: str
    clients: int
    threads: int
    rate: float | None

    def as_dict(self) -> LoadShare:
        return {"host": self.host, "clients": self.clients, "threads": self.threads,
                "rate": self.rate}  # fmt: skip


def even(total: int, parts: int) -> list[int]:
    """total split into parts integers that differ by at most one, larger ones first."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def split_load(
    hosts: Sequence[str], clients: int, threads: int, rate: float | None
) -> list[HostShare]:
    if not hosts:
        raise PgrigError("no load host to split the load over")
    if len(set(hosts)) != len(hosts):
        dup = next(h for h in hosts if list(hosts).count(h) > 1)
        raise PgrigError(f"--load-from {dup} is given twice")
    if clients < len(hosts):
        raise PgrigError(
            f"--clients {clients} cannot be split over {len(hosts)} load hosts: "
            "each needs at least one client"
        )
    shares = []
    for host, c, j in zip(hosts, even(clients, len(hosts)), even(threads, len(hosts)), strict=True):
        shares.append(
            HostShare(
                host=host,
                clients=c,
                threads=max(1, min(j, c)),
                rate=rate * c / clients if rate is not None else None,
            )
        )
    return shares
