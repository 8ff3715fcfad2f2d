"""host_differences: what differed between the hosts of two runs, in plain words."""

from __future__ import annotations

from pgrig.analysis.host_diff import host_differences


def chk(name: str, value, status: str = "ok") -> dict:
    return {"name": name, "value": value, "recommended": None, "status": status, "why": ""}


def host(**checks) -> dict:
    base = {
        "governor": chk("governor", "performance"),
        "thp_enabled": chk("thp_enabled", "never"),
        "swappiness": chk("swappiness", 3),
        "cpu_steal": chk("cpu_steal", "0.0% over 0.5 s"),
        "cpu_busy": chk("cpu_busy", "3% busy over 0.5 s; load 0.1 0.2 0.3"),
        "uptime": chk("uptime", "5 h 0 min"),
    }
    base.update(checks)
    return {"hostname": "bench-01", "kernel": "6.1.0", "checks": list(base.values())}


def test_identical_hosts_have_no_differences() -> None:
    assert host_differences(host(), host(), {}, {}) == []
    assert host_differences(None, None) == []


def test_settings_moments_pinning_and_busy_host() -> None:
    b = host(
        swappiness=chk("swappiness", 60, "warn"),
        governor=chk("governor", "powersave", "warn"),
        cpu_steal=chk("cpu_steal", "7.5% over 0.5 s", "warn"),
        cpu_busy=chk("cpu_busy", "5% busy over 0.5 s; load 2.0 2.0 2.0"),  # value only: same
        uptime=chk("uptime", "5 h 1 min"),
    )
    extra_a = {"cpus": {"server": "0", "client": "1"}}
    extra_b = {"warnings": [{"code": "busy_host", "message": "others used 40% CPU"}]}
    assert host_differences(host(), b, extra_a, extra_b) == [
        "governor: A performance, B powersave",
        "swappiness: A 3, B 60",
        "cpu_steal: A ok (0.0% over 0.5 s), B warn (7.5% over 0.5 s)",
        "CPU pinning: A server 0, client 1, B not pinned",
        "busy host: A no, B yes",
    ]


def test_machines_and_unknowns() -> None:
    a = {**host(), "hostname": "a", "kernel": "6.1"}
    b = {**host(thp_enabled=chk("thp_enabled", None, "unavailable")), "hostname": "b"}
    b.pop("kernel")
    # unknown on one side (no kernel recorded, THP unavailable) is no difference
    assert host_differences(a, b) == ["host: A a, B b"]


def test_runs_archived_before_host_checks_compare_by_their_flat_facts() -> None:
    legacy = {"cpu_governor": "powersave", "vm_swappiness": 60, "cpu_turbo": True}
    new = host(turbo=chk("turbo", "off"))
    lines = host_differences(legacy, new)
    assert "governor: A powersave, B performance" in lines
    assert "swappiness: A 60, B 3" in lines and "turbo: A on, B off" in lines


def test_network_path_and_saturated_load_host_differ_like_settings() -> None:
    loop = {
        "network": {
            "paths": [
                {
                    "from": "localhost",
                    "to": "127.0.0.1:14000",
                    "address": "127.0.0.1",
                    "loopback": True,
                    "kind": "loopback",
                }
            ]
        }
    }
    other_port = {
        "network": {
            "paths": [
                {
                    "from": "localhost",
                    "to": "127.0.0.1:14001",
                    "address": "127.0.0.1",
                    "kind": "loopback",
                }
            ]
        }
    }
    net = {
        "network": {"paths": [
            {"from": h, "to": "10.232.0.2:5432", "address": "10.232.0.2", "kind": "network"}
            for h in ("c2", "c1")
        ]},
        "warnings": [{"code": "load_host_saturated", "message": "..."}],
    }  # fmt: skip
    assert host_differences({}, {}, loop, other_port) == []  # another port is not another path
    diff = host_differences({}, {}, loop, net)
    assert "network path: A localhost over loopback, B c1, c2 over network to 10.232.0.2" in diff
    assert "load host saturated: A no, B yes" in diff
    assert host_differences({}, {}, {}, net) == ["load host saturated: A no, B yes"]
