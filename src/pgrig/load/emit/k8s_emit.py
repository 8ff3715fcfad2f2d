"""`pgrig run ENV ... --emit k8s DIR`: the same experiment as Kubernetes manifests.

What `kubectl cnpg pgbench` creates, written down for the whole experiment:
- cluster.yaml: a CloudNativePG `Cluster` (postgresql.cnpg.io/v1) of the environment's
  PostgreSQL major (the operator's image ghcr.io/cloudnative-pg/postgresql:MAJOR), with every
  setting layer of the run as `spec.postgresql.parameters` (profile, environment, --set), and
  the database the run uses, bootstrapped with initdb;
- pgbench-init.yaml: a Job running `pgbench -i -s SCALE` against the cluster's read-write
  service (pgbench data only: other datasets are generated with `pgrig db generate` against
  the service);
- pgbench-run[-N].yaml: one Job per load host of the run (--load-from's split:
  load/remote/split.py),
  each with its share of clients, threads and rate and the same options; the container is the
  cluster's own image (as the plugin does), connection from the cluster's `<name>-app` secret;
- scripts.yaml: a ConfigMap holding custom script files (mounted at /scripts), when any;
- kustomization.yaml: the list, for `kubectl apply -k DIR`.

Kubernetes starts Jobs when it can: there is no common start instant, so the skew is not
bounded here as it is on the rig (docs/multi-host.md says how to read such runs). Nothing is
applied: these machines have no cluster.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from pgrig.errors import PgrigError
from pgrig.load.engines import command as pgbench_command
from pgrig.load.remote.split import split_load
from pgrig.request import RunRequest

IMAGE = "ghcr.io/cloudnative-pg/postgresql:{major}"
CNPG_API = "postgresql.cnpg.io/v1"
SCRIPTS_DIR = "/scripts"
_DNS = re.compile(r"[^a-z0-9-]+")
# settings the operator manages itself (it refuses them in spec.postgresql.parameters)
OPERATOR_MANAGED = frozenset(
    {
        "listen_addresses", "port", "unix_socket_directories", "data_directory",
        "hba_file", "ident_file", "config_file", "include_if_exists", "archive_command",
        "archive_mode", "restore_command", "primary_conninfo", "primary_slot_name",
        "recovery_target", "log_destination", "logging_collector", "log_directory",
        "log_filename", "ssl", "ssl_cert_file", "ssl_key_file", "ssl_ca_file",
        "promote_trigger_file", "synchronous_standby_names", "hot_standby",
    }
)  # fmt: skip


def dns_name(text: str) -> str:
    """A DNS-1123 label from any name (lower case, digits, dashes; at most 63)."""
    name = _DNS.sub("-", text.lower()).strip("-")[:63].strip("-")
    return name or "pgrig"


def manifests(
    spec: RunRequest,
    *,
    env_name: str,
    major: int,
    settings: dict[str, str],
    database: str,
    scale: int | None,
    scripts_text: dict[str, str],
    db_size_bytes: int | None = None,
) -> dict[str, Any]:
    """File name -> manifest (a dict, or a list of dicts) of the experiment."""
    cluster = dns_name(f"pgrig-{env_name}")
    hosts = spec.load_from or ["load"]
    shares = split_load(hosts, spec.clients, spec.threads, spec.rate)
    labels = {"app.kubernetes.io/managed-by": "pgrig", "pgrig.io/environment": dns_name(env_name)}
    params = {k: str(v) for k, v in sorted(settings.items()) if k not in OPERATOR_MANAGED}
    storage = max(1, -(-3 * (db_size_bytes or 0) // (1 << 30)))  # 3x the data, whole GiB
    out: dict[str, Any] = {
        "cluster.yaml": {
            "apiVersion": CNPG_API,
            "kind": "Cluster",
            "metadata": {"name": cluster, "labels": labels},
            "spec": {
                "instances": 1,
                "imageName": IMAGE.format(major=major),
                "postgresql": {"parameters": params},
                "bootstrap": {"initdb": {"database": database, "owner": "app"}},
                "storage": {"size": f"{storage}Gi"},
            },
        }
    }
    if scale:
        out["pgbench-init.yaml"] = _job(
            f"{cluster}-init", cluster, major, database, labels,
            ["--initialize", "--scale", str(scale)], None,
        )  # fmt: skip
    files: dict[str, str] = {}
    scripts = []
    for i, s in enumerate(spec.scripts):
        if s.path is not None:
            key = dns_name(f"s{i}-{Path(s.path).stem}") + ".sql"
            files[key] = scripts_text[s.path]
            s = s.model_copy(update={"path": f"{SCRIPTS_DIR}/{key}"})
        scripts.append(s)
    configmap = f"{cluster}-scripts" if files else None
    if files:
        out["scripts.yaml"] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": configmap, "labels": labels},
            "data": files,
        }
    for n, share in enumerate(shares):
        share_spec = spec.model_copy(
            update={"clients": share.clients, "threads": share.threads, "rate": share.rate,
                    "scripts": scripts, "database": database}
        )  # fmt: skip
        argv = pgbench_command.build_pgbench_command(
            "pgbench",
            share_spec,
            log_prefix="",  # the pod's log is pgbench's output (`kubectl logs job/...`)
            total_seconds=_total_seconds(spec),
            progress=True,
            pgbench_version_major=major,
        )
        name = f"{cluster}-run" + (f"-{n + 1}" if len(shares) > 1 else "")
        job = _job(name, cluster, major, database, labels, argv[1:-1], configmap)
        job["metadata"]["annotations"] = {"pgrig.io/load-host": share.host}
        out[f"pgbench-run{'-' + str(n + 1) if len(shares) > 1 else ''}.yaml"] = job
    out["kustomization.yaml"] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": sorted(k for k in out if k != "kustomization.yaml"),
    }
    return out


def _total_seconds(spec: RunRequest) -> int | None:
    from pgrig.analysis.window import WindowPlan

    return WindowPlan.for_run(spec.warmup_s, spec.duration_s).pgbench_seconds


def _job(
    name: str,
    cluster: str,
    major: int,
    database: str,
    labels: dict[str, str],
    args: list[str],
    configmap: str | None,
) -> dict[str, Any]:
    secret = f"{cluster}-app"
    container: dict[str, Any] = {
        "name": "pgbench",
        "image": IMAGE.format(major=major),
        "command": ["pgbench"],
        "args": [*args, database],
        "env": [
            {"name": "PGHOST", "value": f"{cluster}-rw"},
            {"name": "PGPORT", "value": "5432"},
            {"name": "PGDATABASE", "value": database},
            {"name": "PGUSER", "valueFrom": {"secretKeyRef": {"name": secret, "key": "username"}}},
            {
                "name": "PGPASSWORD",
                "valueFrom": {"secretKeyRef": {"name": secret, "key": "password"}},
            },
        ],
    }
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if configmap:
        container["volumeMounts"] = [{"name": "scripts", "mountPath": SCRIPTS_DIR}]
        pod["volumes"] = [{"name": "scripts", "configMap": {"name": configmap}}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": dns_name(name), "labels": labels},
        "spec": {
            "backoffLimit": 0,
            "template": {"metadata": {"labels": {**labels, "pgrig.io/job": dns_name(name)}},
                         "spec": pod},
        },
    }  # fmt: skip


def write(out_dir: Path, docs: dict[str, Any]) -> list[Path]:
    """Write each manifest as YAML into out_dir (created); returns the files written."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PgrigError(f"--emit k8s {out_dir}: {e.strerror}") from None
    written = []
    for name, doc in docs.items():
        path = out_dir / name
        path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
        written.append(path)
    return written


def emit(spec: RunRequest, out_dir: Path) -> list[Path]:
    """The run's experiment as manifests in out_dir: its environment's version and settings,
    its dataset's scale, its workload's scripts (resolved as a run would)."""
    import tempfile

    from pgrig.load.core import runner
    from pgrig.provision.state.environment import Environment
    from pgrig.workloads import datasets

    if spec.is_chbench or spec.is_tpch:  # the manifests run pgbench alone: never half the load
        raise PgrigError(
            f"--emit k8s: workload {spec.workload} runs pgrig's own query streams, which the "
            "manifests (pgbench only) cannot carry"
        )
    spec = runner._with_scripts(spec)
    env = Environment.load(spec.env_name)
    if env.major is None:
        raise PgrigError(f"{env.name}: its PostgreSQL major is unknown (see `pgrig env show`)")
    database = spec.database or env.default_database
    info = datasets.get(env, database) or {}
    with tempfile.TemporaryDirectory(prefix="pgrig-emit-") as tmp:
        planned, _info = runner._resolve_scripts(spec, env, database, Path(tmp))
        spec = spec.model_copy(
            update={"scripts": planned.scripts, "defines": {**planned.defines, **spec.defines}}
        )
        texts = {s.path: Path(s.path).read_text() for s in planned.scripts if s.path is not None}
    settings = {**env.profile_settings, **env.settings, **spec.settings}
    docs = manifests(
        spec,
        env_name=env.name,
        major=int(env.major),
        settings=settings,
        database=database,
        scale=(info.get("scale") or None) if info.get("scenario") == "pgbench" else None,
        scripts_text=texts,
    )
    return write(out_dir, docs)
