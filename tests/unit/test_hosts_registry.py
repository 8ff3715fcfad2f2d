"""The host registry (`pgrig host add/list/remove/import`) and Ansible inventories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgrig.cli import host as host_cli
from pgrig.errors import NotFound, PgrigError
from pgrig.hosts import inventory, registry

runner = CliRunner()


def test_parse_ssh_target() -> None:
    assert registry.parse_ssh_target("root@10.0.0.5") == ("root", "10.0.0.5", 22)
    assert registry.parse_ssh_target("bench@db.example:2222") == ("bench", "db.example", 2222)
    assert registry.parse_ssh_target("u@[fd00::5]:2200") == ("u", "fd00::5", 2200)
    assert registry.parse_ssh_target("u@fd00::5") == ("u", "fd00::5", 22)
    for bad in ("10.0.0.5", "@x", "u@", "u@h:x"):
        with pytest.raises(PgrigError):
            registry.parse_ssh_target(bad)


@pytest.mark.parametrize(
    "field", [{"name": "a b"}, {"name": "localhost"}, {"user": "$(id)"}, {"address": "-oProxy"}]
)
def test_host_rejects_what_is_not_a_name(field: dict[str, str]) -> None:
    doc = {"name": "db1", "user": "root", "address": "10.0.0.5", **field}
    with pytest.raises(PgrigError):
        registry.Host(**doc)


def test_add_get_remove_roundtrip(pgrig_home: Path) -> None:
    h = registry.Host("db1", "root", "10.0.0.5", 2222, "/keys/id", "/keys/known_hosts")
    registry.add(h)
    assert registry.get("db1") == h
    with pytest.raises(PgrigError, match="exists already"):
        registry.add(h)
    stored = json.loads((pgrig_home / "hosts" / "db1.json").read_text())
    assert stored["identity"] == "/keys/id"  # a path, never a key
    assert [x.name for x in registry.all_hosts()] == ["db1"]
    registry.remove("db1")
    with pytest.raises(NotFound, match="no host 'db1'"):
        registry.get("db1")


def test_private_key_content_is_never_stored(pgrig_home: Path, tmp_path: Path) -> None:
    key = tmp_path / "id_test"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETSECRET\n")
    out = runner.invoke(
        host_cli.app,
        ["add", "db2", "--ssh", "root@10.9.9.9", "--identity", str(key), "--no-probe"],
    )
    assert out.exit_code == 0, out.output
    for f in (pgrig_home / "hosts").rglob("*"):
        if f.is_file():
            assert "SECRETSECRET" not in f.read_text()


INI = """\
[db]
db1 ansible_host=10.231.0.11

[load]
c1 ansible_host=10.231.0.12 ansible_port=2222 ansible_user=bench

[all:vars]
ansible_user=root
ansible_ssh_private_key_file=/keys/id_ed25519
ansible_ssh_common_args='-o UserKnownHostsFile=/keys/known_hosts -o StrictHostKeyChecking=yes'
"""

YAML = """\
all:
  vars:
    ansible_user: root
  children:
    db:
      hosts:
        db1:
          ansible_host: 10.231.0.11
          ansible_ssh_private_key_file: /keys/id_ed25519
    load:
      hosts:
        c1:
          ansible_host: 10.231.0.12
          ansible_port: 2222
          ansible_user: bench
"""


def test_inventory_ini(tmp_path: Path) -> None:
    f = tmp_path / "hosts.ini"
    f.write_text(INI)
    hosts = {h.name: h for h in inventory.read(f)}
    assert hosts["db1"] == registry.Host(
        "db1", "root", "10.231.0.11", 22, "/keys/id_ed25519", "/keys/known_hosts"
    )
    assert hosts["c1"].user == "bench" and hosts["c1"].port == 2222


def test_inventory_yaml(tmp_path: Path) -> None:
    f = tmp_path / "hosts.yml"
    f.write_text(YAML)
    hosts = {h.name: h for h in inventory.read(f)}
    assert hosts["db1"].identity == "/keys/id_ed25519"
    assert hosts["db1"].known_hosts is None
    assert (hosts["c1"].user, hosts["c1"].address, hosts["c1"].port) == (
        "bench",
        "10.231.0.12",
        2222,
    )


def test_a_file_ansible_cannot_parse_is_one_line_with_its_reasons(
    pgrig_home: Path, tmp_path: Path
) -> None:
    # A command of its own: pytest's capture of warnings would hide Ansible's reasons
    f = tmp_path / "passwd"
    f.write_text("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody user:/:/bin/false\n")
    done = subprocess.run(
        ["pgrig", "host", "import", str(f)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"error: {f}: Ansible cannot read it as an inventory (")
    assert "ini: Failed to parse inventory" in done.stderr
    assert done.stderr.count("\n") == 1  # one line: Ansible's own warnings are not printed


def test_import_cli_refuses_clashes(pgrig_home: Path, tmp_path: Path) -> None:
    f = tmp_path / "hosts.ini"
    f.write_text(INI)
    out = runner.invoke(host_cli.app, ["import", str(f), "--json"])
    assert out.exit_code == 0, out.output
    assert {h["name"] for h in json.loads(out.stdout)["hosts"]} == {"db1", "c1"}
    again = runner.invoke(host_cli.app, ["import", str(f)])
    assert again.exit_code != 0
    assert "exist already" in str(again.exception or again.output)
    listed = runner.invoke(host_cli.app, ["list", "--json"])
    assert [h["name"] for h in json.loads(listed.stdout)["hosts"]] == ["c1", "db1"]
