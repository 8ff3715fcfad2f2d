"""`--emit k8s DIR` (load/emit/k8s_emit.py): the manifests parse as YAML and hold what a
CloudNativePG Cluster and a batch/v1 Job require (the fields and types of their schemas that
these manifests use, checked with jsonschema), and they say the same experiment as the run:
version, settings, clients/threads/rate split, scripts. No cluster here: nothing is applied."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from pgrig.load.emit.k8s_emit import dns_name, manifests, write
from pgrig.request import RunRequest, ScriptSpec

DNS1123 = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
ENV_VAR = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
        "value": {"type": "string"},
        "valueFrom": {
            "type": "object",
            "properties": {
                "secretKeyRef": {
                    "type": "object",
                    "required": ["name", "key"],
                    "properties": {"name": {"type": "string"}, "key": {"type": "string"}},
                }
            },
        },
    },
    "additionalProperties": False,
}
METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": DNS1123, "maxLength": 63},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
CLUSTER = {  # postgresql.cnpg.io/v1 Cluster: the fields used, with the CRD's types
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "postgresql.cnpg.io/v1"},
        "kind": {"const": "Cluster"},
        "metadata": METADATA,
        "spec": {
            "type": "object",
            "required": ["instances", "storage"],
            "properties": {
                "instances": {"type": "integer", "minimum": 1},
                "imageName": {"type": "string"},
                "postgresql": {
                    "type": "object",
                    "properties": {
                        "parameters": {"type": "object", "additionalProperties": {"type": "string"}}
                    },
                },
                "bootstrap": {
                    "type": "object",
                    "properties": {
                        "initdb": {
                            "type": "object",
                            "properties": {
                                "database": {"type": "string"},
                                "owner": {"type": "string"},
                            },
                        }
                    },
                },
                "storage": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {"size": {"type": "string", "pattern": r"^\d+(Mi|Gi|Ti)$"}},
                },
            },
            "additionalProperties": False,
        },
    },
}
JOB = {  # batch/v1 Job
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "batch/v1"},
        "kind": {"const": "Job"},
        "metadata": METADATA,
        "spec": {
            "type": "object",
            "required": ["template"],
            "properties": {
                "backoffLimit": {"type": "integer", "minimum": 0},
                "template": {
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["containers", "restartPolicy"],
                            "properties": {
                                "restartPolicy": {"enum": ["Never", "OnFailure"]},
                                "containers": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "required": ["name", "image"],
                                        "properties": {
                                            "name": {"type": "string", "pattern": DNS1123},
                                            "image": {"type": "string"},
                                            "command": {"type": "array",
                                                        "items": {"type": "string"}},
                                            "args": {"type": "array", "items": {"type": "string"}},
                                            "env": {"type": "array", "items": ENV_VAR},
                                        },
                                    },
                                },
                            },
                        }
                    },
                },
            },
        },
    },
}  # fmt: skip
CONFIGMAP = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "data"],
    "properties": {
        "apiVersion": {"const": "v1"},
        "kind": {"const": "ConfigMap"},
        "metadata": METADATA,
        "data": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
SCHEMAS = {"Cluster": CLUSTER, "Job": JOB, "ConfigMap": CONFIGMAP}


def request(**kw: object) -> RunRequest:
    base: dict[str, object] = dict(
        env_name="Lab One",
        workload="read.sql@3,pgbench:tpcb@1",
        clients=10,
        threads=3,
        duration_s=30.0,
        warmup_s=5.0,
        rate=600.0,
        load_from=["c1", "c2"],
        scripts=[
            ScriptSpec(name="read.sql", path="/tmp/x/read.sql", weight=3),
            ScriptSpec(name="pgbench:tpcb", builtin="tpcb-like", weight=1),
        ],
    )
    base.update(kw)
    return RunRequest(**base)  # type: ignore[arg-type]


def emitted(tmp_path: Path, spec: RunRequest) -> dict[str, object]:
    docs = manifests(
        spec,
        env_name=spec.env_name,
        major=18,
        settings={"work_mem": "16MB", "listen_addresses": "127.0.0.1", "max_connections": "200"},
        database="pgrig",
        scale=10,
        scripts_text={"/tmp/x/read.sql": "SELECT 1;\n"},
        db_size_bytes=700 << 20,
    )
    written = write(tmp_path / "k8s", docs)
    return {p.name: yaml.safe_load(p.read_text()) for p in written}


def test_manifests_parse_and_match_their_schemas(tmp_path: Path) -> None:
    files = emitted(tmp_path, request())
    assert set(files) == {
        "cluster.yaml", "scripts.yaml", "pgbench-init.yaml", "pgbench-run-1.yaml",
        "pgbench-run-2.yaml", "kustomization.yaml",
    }  # fmt: skip
    for name, doc in files.items():
        if name != "kustomization.yaml":
            assert isinstance(doc, dict)
            jsonschema.validate(doc, SCHEMAS[doc["kind"]])
    kust = files["kustomization.yaml"]
    assert isinstance(kust, dict)
    assert sorted(kust["resources"]) == sorted(set(files) - {"kustomization.yaml"})


def test_manifests_say_the_same_experiment(tmp_path: Path) -> None:
    files = emitted(tmp_path, request())
    cluster = files["cluster.yaml"]
    assert isinstance(cluster, dict)
    assert cluster["spec"]["imageName"] == "ghcr.io/cloudnative-pg/postgresql:18"
    # the run's settings, without what the operator manages itself
    assert cluster["spec"]["postgresql"]["parameters"] == {"max_connections": "200",
                                                           "work_mem": "16MB"}  # fmt: skip
    assert cluster["spec"]["storage"]["size"] == "3Gi"
    jobs = [files["pgbench-run-1.yaml"], files["pgbench-run-2.yaml"]]
    shares = []
    for job in jobs:
        assert isinstance(job, dict)
        c = job["spec"]["template"]["spec"]["containers"][0]
        args = c["args"]
        shares.append((args[args.index("-c") + 1], args[args.index("-j") + 1],
                       args[args.index("-R") + 1]))  # fmt: skip
        assert args[args.index("-T") + 1] == "35"  # 5 s warm-up + 30 s, as a run's -T
        assert "-f" in args and args[args.index("-f") + 1].startswith("/scripts/s0-read")
        assert args[-1] == "pgrig"
        env = {e["name"]: e for e in c["env"]}
        assert env["PGHOST"]["value"] == "pgrig-lab-one-rw"
        assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "pgrig-lab-one-app"
    assert shares == [("5", "2", "300"), ("5", "1", "300")]  # load/remote/split.py's rule
    scripts = files["scripts.yaml"]
    assert isinstance(scripts, dict) and list(scripts["data"].values()) == ["SELECT 1;\n"]
    init = files["pgbench-init.yaml"]
    assert isinstance(init, dict)
    assert init["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "--initialize", "--scale", "10", "pgrig",
    ]  # fmt: skip


def test_one_job_without_load_hosts_and_names_are_dns_labels(tmp_path: Path) -> None:
    files = emitted(tmp_path, request(load_from=[], rate=None))
    assert "pgbench-run.yaml" in files and "pgbench-run-1.yaml" not in files
    assert dns_name("My_Env.2") == "my-env-2"
    assert dns_name("--") == "pgrig"


def test_the_written_yaml_is_data_not_code(tmp_path: Path) -> None:
    """A setting value that looks like YAML syntax stays a string."""
    spec = request()
    docs = manifests(
        spec,
        env_name="x",
        major=17,
        settings={"search_path": '"$user", public'},
        database="db",
        scale=None,
        scripts_text={"/tmp/x/read.sql": "x: [1"},
    )
    files = {p.name: yaml.safe_load(p.read_text()) for p in write(tmp_path, docs)}
    cluster = files["cluster.yaml"]
    assert cluster["spec"]["postgresql"]["parameters"]["search_path"] == '"$user", public'
    assert list(files["scripts.yaml"]["data"].values()) == ["x: [1"]


@pytest.mark.parametrize("bad", ["", "UPPER"])
def test_dns_names_are_valid(bad: str) -> None:
    import re

    assert re.match(DNS1123, dns_name(bad))
