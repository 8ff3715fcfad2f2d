"""CH-benCHmark (Cole et al., DBTest 2011): TPC-C's tables and transactions, plus SUPPLIER,
NATION and REGION, and 22 analytic queries adapted from TPC-H that run over the same tables
while the transactions do."""

from pgrig.workloads.chbench.loader import SUPPLIERS, TABLES, generate
from pgrig.workloads.chbench.queries import QUERIES

__all__ = ["QUERIES", "SUPPLIERS", "TABLES", "generate"]
