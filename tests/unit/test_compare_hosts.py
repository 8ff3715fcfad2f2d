"""The hosts of compared runs (views/compare_hosts.py): repeats show the centre of their ok runs
and how many saturated a load host; runs on this machine alone get no hosts table. The same
table on every surface: tests/unit/test_compare_surfaces.py."""

from __future__ import annotations

from hosts_run_fakes import hosts_run, local_run

from pgrig.views import compare, compare_hosts


def test_repeats_show_the_centre_and_how_many_were_saturated() -> None:
    base = [hosts_run(10 + i, busy_c1=False) for i in range(3)]
    cand = [hosts_run(20 + i, busy_c1=i < 2) for i in range(3)]
    for i, r in enumerate(base + cand):
        r.id = i + 1
    rows = {(r.key.host, r.key.role): r for r in compare_hosts.build([base, cand])}
    assert set(rows) == {("c1", "load"), ("c2", "load"), ("db1", "db")}
    assert rows[("c1", "load")].saturated == ["0/3 runs", "2/3 runs"]
    assert rows[("db1", "db")].saturated is None  # not a load host
    table = compare_hosts.table(list(rows.values()), ["A", "B"])
    assert table is not None
    sat = [r for r in table.rows if r[0].text == "c1" and r[2].text.startswith("saturated")]
    assert [c.style for c in sat[0][3:]] == [None, "warn"]


def test_runs_without_hosts_get_no_table() -> None:
    a, b = local_run(1), local_run(2)
    a.id, b.id = 1, 2
    view = compare.build([[a], [b]])
    assert view.hosts == [] and compare.hosts_table(view, ("A", "B")) is None
    assert compare.to_json(view)["hosts"] == []
