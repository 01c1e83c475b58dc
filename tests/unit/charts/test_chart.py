"""The Helm chart, rendered and linted offline with helm-python-sdk (Helm v4's library):
every manifest valid Kubernetes for 1.29-1.33 with default values and with every
optional flag on, lint --strict clean, the values schema refusing bad values, and the
chart's CRDs the very files in crds/."""

from __future__ import annotations

import filecmp
import json
import shutil
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from partita.router.credentials import parse
from tests.unit.autoadmin.kube.manifests import KUBERNETES_VERSIONS, ROOT, validate

CHART = ROOT / "charts" / "partita"
ALL_ON: dict[str, Any] = {
    "router": {
        "autoscaling": {"enabled": True},
        "service": {"type": "LoadBalancer"},
        "tls": {"secretName": "partita-tls"},
        "extraEnv": [{"name": "AWS_ENDPOINT_URL_S3", "value": "http://minio:9000"}],
    },
    "networkPolicy": {
        "enabled": True,
        "routerIngressFrom": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}],
    },
    "metrics": {
        "serviceMonitor": {"enabled": True},
        "podMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus"}},
    },
    "grafana": {"dashboards": {"enabled": True}},
    "podDisruptionBudget": {"enabled": True},
    "storage": {"storageClassName": "ssd", "pinZones": False, "separateHosts": False},
    "etcd": {"storageClassName": "ssd"},
    "imagePullSecrets": [{"name": "regcred"}],
    "operator": {"nodeSelector": {"pool": "system"}, "tolerations": [{"key": "k", "operator": "Exists"}]},
    "doorman": {"enabled": True},
}
# Kinds of the Prometheus Operator and kopf: checked for shape, not against official schemas.
CUSTOM_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule", "KopfPeering"}


@pytest.fixture(scope="module")
def chart_with_dashboard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The chart plus one dashboard, as the dashboards' author will add them."""
    copy = tmp_path_factory.mktemp("chart") / "partita"
    shutil.copytree(CHART, copy)
    (copy / "dashboards").mkdir(exist_ok=True)
    (copy / "dashboards" / "partita_overview.json").write_text(json.dumps({"title": "Partita", "panels": []}))
    return copy


def render(values: dict[str, Any], path: Path = CHART) -> list[dict[str, Any]]:
    chart = helm.Chart.load(str(path))
    out = chart.render(values, name="demo", namespace="db", is_install=True)
    docs = []
    for name, text in out.items():
        if name.endswith("NOTES.txt"):
            continue
        docs += [d for d in yaml.safe_load_all(text) if d]
    return docs


@pytest.mark.parametrize("values", [{}, ALL_ON], ids=["defaults", "all-on"])
def test_every_rendered_manifest_is_valid(values: dict[str, Any], chart_with_dashboard: Path) -> None:
    docs = render(values, chart_with_dashboard)
    assert docs
    for doc in docs:
        if doc["kind"] in CUSTOM_KINDS:
            assert (
                doc["apiVersion"] in ("monitoring.coreos.com/v1", "kopf.dev/v1") and doc["metadata"]["name"]
            )
            continue
        validate(doc, KUBERNETES_VERSIONS)


def _kinds(docs: list[dict[str, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for d in docs:
        out.setdefault(d["kind"], []).append(d["metadata"]["name"])
    return out


def test_defaults_render_the_core_and_no_optional_objects() -> None:
    kinds = _kinds(render({}))
    assert kinds["Deployment"] == ["demo-partita-operator", "demo-partita-router"]
    assert kinds["StatefulSet"] == ["demo-partita-etcd"]
    assert sorted(kinds["PodDisruptionBudget"]) == [
        "demo-partita-etcd",
        "demo-partita-operator",
        "demo-partita-router",
    ]
    assert kinds["KopfPeering"] == ["partita"]
    for optional in (
        "HorizontalPodAutoscaler", "NetworkPolicy", "ServiceMonitor", "PodMonitor", "PrometheusRule", "ConfigMap"
    ):  # fmt: skip
        assert optional not in kinds


def test_every_flag_on_renders_every_optional_object(chart_with_dashboard: Path) -> None:
    kinds = _kinds(render(ALL_ON, chart_with_dashboard))
    assert kinds["HorizontalPodAutoscaler"] == ["demo-partita-router"]
    assert len(kinds["NetworkPolicy"]) == 6  # deny, router, storage, etcd, metrics, doorman
    assert sorted(kinds["ServiceMonitor"]) == ["demo-partita-doorman", "demo-partita-router"]
    assert sorted(kinds["PodMonitor"]) == ["demo-partita-operator", "demo-partita-storage"]
    assert "demo-partita-doorman" in kinds["Deployment"]
    # One ConfigMap per dashboard file: the chart's own (charts/partita/dashboards/*.json)
    # and the one the fixture adds; and Doorman's configuration.
    shipped = sorted(p.stem.replace("_", "-") for p in (chart_with_dashboard / "dashboards").glob("*.json"))
    assert {"overview", "storage", "tables", "autoadmin"} <= set(shipped)
    assert sorted(kinds["ConfigMap"]) == sorted(
        [f"demo-partita-dashboard-{stem}" for stem in shipped] + ["demo-partita-doorman"]
    )


def test_the_operator_runs_the_storage_fleet_the_values_describe() -> None:
    docs = render({"storage": {"zones": ["x", "y"], "replicasPerZone": 3, "pinZones": False}})
    (operator,) = [
        d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-operator")
    ]
    args = operator["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[0] == "operator"
    assert {"--release=demo-partita", "--zones=x,y", "--replicas-per-zone=3", "--no-pin-zones"} <= set(args)
    assert "--etcd=demo-partita-etcd:2379" in args


def test_the_monitors_scrape_the_ports_the_processes_serve_metrics_on() -> None:
    from partita.autoadmin.kube import builders
    from partita.autoadmin.kube.cli import config_from_args
    from partita.cli.main import build_parser

    docs = render({**ALL_ON, "storage": {"metricsPort": 9300}})
    (service_monitor,) = [
        d for d in docs if d["kind"] == "ServiceMonitor" and d["metadata"]["name"] == "demo-partita-router"
    ]
    (pod_monitor,) = [
        d for d in docs if d["kind"] == "PodMonitor" and d["metadata"]["name"] == "demo-partita-storage"
    ]
    (operator_monitor,) = [
        d for d in docs if d["kind"] == "PodMonitor" and d["metadata"]["name"] == "demo-partita-operator"
    ]
    (router,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-router")]
    (router_service,) = [
        d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "demo-partita-router"
    ]
    # Routers answer /metrics on their DynamoDB port, which the Service names.
    [endpoint] = service_monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] in {p["name"] for p in router_service["spec"]["ports"]}
    assert endpoint["port"] in {
        p["name"] for p in router["spec"]["template"]["spec"]["containers"][0]["ports"]
    }
    # Storage pods: the StatefulSet the operator builds from the flags the chart passes it.
    (operator,) = [
        d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-operator")
    ]
    args = operator["spec"]["template"]["spec"]["containers"][0]["args"]
    fleet = config_from_args(build_parser().parse_args([*args, "--namespace=db"])).fleet
    container = builders.storage_statefulset(fleet, fleet.zones[0])["spec"]["template"]["spec"]["containers"][
        0
    ]
    [pod_endpoint] = pod_monitor["spec"]["podMetricsEndpoints"]
    assert pod_endpoint["path"] == "/metrics"
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert named[pod_endpoint["port"]] == 9300
    assert "--metrics-port=9300" in container["args"]
    # The operator serves the autoadmin's metrics on the port its PodMonitor names.
    operator_container = operator["spec"]["template"]["spec"]["containers"][0]
    [operator_endpoint] = operator_monitor["spec"]["podMetricsEndpoints"]
    named = {p["name"]: p["containerPort"] for p in operator_container["ports"]}
    assert named[operator_endpoint["port"]] == 9090
    assert build_parser().parse_args([*args, "--namespace=db"]).metrics_port == 9090
    assert pod_monitor["spec"]["selector"]["matchLabels"].items() <= (
        builders.storage_statefulset(fleet, fleet.zones[0])["spec"]["template"]["metadata"]["labels"].items()
    )


def test_routers_write_tables_where_the_values_say_and_their_role_allows_exactly_that() -> None:
    def router_args(values: dict[str, Any]) -> list[str]:
        docs = render(values)
        (router,) = [
            d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-router")
        ]
        args: list[str] = router["spec"]["template"]["spec"]["containers"][0]["args"]
        return args

    # Kubernetes mode by default: the operator reconciles Table resources and assigns
    # their replicas; nothing in the chart would place a table written to etcd.
    assert "--control-store=kubernetes" in router_args({})
    assert "--control-store=etcd" in router_args({"router": {"controlStore": "etcd"}})
    (role,) = [
        d for d in render({}) if d["kind"] == "Role" and d["metadata"]["name"] == "demo-partita-router"
    ]
    rules = {tuple(r["resources"]): set(r["verbs"]) for r in role["rules"]}
    assert rules == {
        ("tables",): {"get", "list", "watch", "create", "patch", "delete"},
        ("partitions",): {"get", "list", "watch"},
    }


def test_doorman_runs_a_master_and_a_standby_elected_through_the_charts_etcd() -> None:
    docs = render({"doorman": {"enabled": True}, "metrics": {"serviceMonitor": {"enabled": True}}})
    (deployment,) = [
        d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-doorman")
    ]
    (config,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-doorman")]
    (monitor,) = [
        d for d in docs if d["kind"] == "ServiceMonitor" and d["metadata"]["name"].endswith("-doorman")
    ]
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert args[0] == "doorman" and "--etcd=demo-partita-etcd:2379" in args and "--election-name=root" in args
    assert "--server-id=$(POD_NAME)" in args and "--advertise=$(POD_IP):5101" in args
    # The configuration the server reads is the ConfigMap's, in Doorman's own format.
    from partita.cli.main import build_parser
    from partita.doorman.repository import ResourceRepository

    parsed = build_parser().parse_args(args)
    assert parsed.config == "/etc/doorman/doorman.yaml" and parsed.metrics_port == 5201
    repository = ResourceRepository.from_text(config["data"]["doorman.yaml"])  # validates it
    assert [r.identifier_glob for r in repository.message.resources] == ["*"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports[monitor["spec"]["endpoints"][0]["port"]] == 5201
    assert not [d for d in render({}) if "doorman" in d["metadata"]["name"]]  # off by default


def test_the_operator_publishes_tables_throughput_to_the_key_the_doorman_servers_read() -> None:
    from partita.cli.main import build_parser

    docs = render({"doorman": {"enabled": True}})
    deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
    doorman = deployments["demo-partita-doorman"]["spec"]["template"]["spec"]
    operator = deployments["demo-partita-operator"]["spec"]["template"]["spec"]
    server = build_parser().parse_args(doorman["containers"][0]["args"])
    published = build_parser().parse_args(operator["containers"][0]["args"])
    # The servers read the operator's key, and the chart's templates until it exists.
    assert server.config_key == published.doorman_config_key == "/partita/doorman/config"
    assert server.config == "/etc/doorman/doorman.yaml"
    # The operator reads the same templates, from the same ConfigMap, to follow the tables'.
    assert str(published.doorman_templates) == "/etc/doorman/doorman.yaml"
    (mount,) = [m for m in operator["containers"][0]["volumeMounts"] if m["mountPath"] == "/etc/doorman"]
    (volume,) = [v for v in operator["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == "demo-partita-doorman"
    # Without Doorman the operator publishes nothing.
    plain = {d["metadata"]["name"]: d for d in render({}) if d["kind"] == "Deployment"}
    args = plain["demo-partita-operator"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert build_parser().parse_args(args).doorman_config_key is None


def test_routers_and_storage_pods_enforce_throughput_by_default_through_doorman_when_deployed() -> None:
    from partita.autoadmin.kube import builders
    from partita.autoadmin.kube.cli import config_from_args, register
    from partita.cli.main import build_parser

    def args_of(values: dict[str, Any], name: str) -> list[str]:
        docs = render(values)
        (deployment,) = [
            d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith(f"-{name}")
        ]
        out: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        return out

    def storage_args(operator_args: list[str]) -> list[str]:
        import argparse

        parser = argparse.ArgumentParser()
        register(parser.add_subparsers())
        config = config_from_args(parser.parse_args([*operator_args, "--namespace=db"]))
        sts = builders.storage_statefulset(config.fleet, config.fleet.zones[0])
        out: list[str] = sts["spec"]["template"]["spec"]["containers"][0]["args"]
        return out

    def router_flags(args: list[str]) -> Any:
        # Only the admission flags matter here (parse_known_args: other lanes own the rest).
        return build_parser().parse_known_args(args)[0]

    # Defaults (no Doorman): each router admits a table's whole rate; storage enforces.
    router = router_flags(args_of({}, "router"))
    assert router.admission == "local" and router.doorman == ""
    assert "--admission" in storage_args(args_of({}, "operator"))
    # Doorman deployed: the routers lease from its Service.
    on = {"doorman": {"enabled": True}}
    router = router_flags(args_of(on, "router"))
    assert router.admission == "doorman" and router.doorman == "demo-partita-doorman:5101"
    assert "--admission" in storage_args(args_of(on, "operator"))
    # Off: neither enforces.
    off = {"admission": "off", "doorman": {"enabled": True}}
    assert router_flags(args_of(off, "router")).admission == "off"
    assert "--admission" not in storage_args(args_of(off, "operator"))


@pytest.mark.parametrize("values", [{}, ALL_ON], ids=["defaults", "all-on"])
def test_every_partita_container_the_chart_runs_accepts_its_arguments(values: dict[str, Any]) -> None:
    """A flag the sub-command does not know makes the pod exit at start (argparse): the
    router once got the operator's --on-demand-partitions. The operator's own flags
    are parsed by its own parser (tested above), so it is left out here."""
    from partita.cli.main import build_parser

    parser = build_parser()
    checked = []
    for doc in render(values):
        if doc["kind"] not in ("Deployment", "StatefulSet"):
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            args = container.get("args") or []
            if not args or args[0] not in ("router", "doorman", "storage"):
                continue
            parsed = parser.parse_args(args)  # SystemExit(2) on an unknown flag
            assert parsed.func is not None
            checked.append(args[0])
    assert "router" in checked
    if values.get("doorman", {}).get("enabled"):
        assert "doorman" in checked


def test_etcd_is_three_members_that_know_each_other_and_compact() -> None:
    (etcd,) = [d for d in render({}) if d["kind"] == "StatefulSet"]
    assert etcd["spec"]["replicas"] == 3
    command = etcd["spec"]["template"]["spec"]["containers"][0]["command"]
    (cluster,) = [c for c in command if c.startswith("--initial-cluster=")]
    assert cluster.count("=http://") == 3
    assert "--auto-compaction-mode=periodic" in command


def test_the_operator_role_is_namespaced_and_least_privilege() -> None:
    docs = render({})
    assert not [d for d in docs if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    (role,) = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"].endswith("-operator")]
    verbs = {
        (g, r): set(rule["verbs"])
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }
    assert "delete" not in verbs[("apps", "statefulsets")] and "delete" not in verbs[("partita.io", "tables")]
    assert verbs[("partita.io", "partitions")] >= {"create", "delete", "watch"}
    assert all("*" not in v for v in verbs.values())


def test_the_credentials_secret_is_a_file_the_router_reads() -> None:
    (secret,) = [d for d in render({}) if d["kind"] == "Secret"]
    data = secret["stringData"]
    (cred,) = parse(data["credentials.json"].encode())
    assert (
        cred.access_key_id == data["AWS_ACCESS_KEY_ID"]
        and cred.secret_access_key == data["AWS_SECRET_ACCESS_KEY"]
    )
    assert len(cred.access_key_id) == 20 and cred.access_key_id.startswith("AKIA")
    given = {"credentials": {"accessKeyId": "AKIA" + "A" * 16, "secretAccessKey": "s" * 40}}
    (secret,) = [d for d in render(given) if d["kind"] == "Secret"]
    assert secret["stringData"]["AWS_ACCESS_KEY_ID"] == "AKIA" + "A" * 16
    assert not [d for d in render({"credentials": {"existingSecret": "mine"}}) if d["kind"] == "Secret"]


def test_with_a_tls_secret_the_routers_serve_https_from_its_files_and_everyone_speaks_https() -> None:
    from partita.cli.main import _tls_files, build_parser

    docs = render(
        {"router": {"tls": {"secretName": "partita-tls"}}, "metrics": {"serviceMonitor": {"enabled": True}}}
    )
    (router,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-router")]
    pod = router["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    files = _tls_files(build_parser().parse_args(container["args"]))
    assert files is not None
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "tls"]
    assert files.cert.parent == files.key.parent == Path(mount["mountPath"])
    assert (files.cert.name, files.key.name) == ("tls.crt", "tls.key")  # a kubernetes.io/tls Secret's keys
    (volume,) = [v for v in pod["volumes"] if v["name"] == "tls"]
    assert volume["secret"]["secretName"] == "partita-tls"
    (service,) = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"].endswith("-router")]
    assert service["spec"]["ports"][0]["appProtocol"] == "https"
    (monitor,) = [
        d for d in docs if d["kind"] == "ServiceMonitor" and d["metadata"]["name"].endswith("-router")
    ]
    assert monitor["spec"]["endpoints"][0]["scheme"] == "https"
    (test_pod,) = [d for d in docs if d["kind"] == "Pod"]
    env = {e["name"]: e.get("value") for e in test_pod["spec"]["containers"][0]["env"]}
    assert env["ENDPOINT"].startswith("https://")
    plain = render({})
    (router,) = [d for d in plain if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-router")]
    assert "env" not in router["spec"]["template"]["spec"]["containers"][0]
    assert not any(a.startswith("--tls") for a in router["spec"]["template"]["spec"]["containers"][0]["args"])


def test_extra_router_environment_reaches_the_router_containers() -> None:
    env = [{"name": "AWS_ENDPOINT_URL_S3", "value": "http://minio:9000"}]
    docs = render({"router": {"extraEnv": env}})
    (router,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-router")]
    assert router["spec"]["template"]["spec"]["containers"][0]["env"] == env


def test_the_helm_test_pod_puts_and_gets_an_item() -> None:
    (pod,) = [d for d in render({}) if d["kind"] == "Pod"]
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    script = pod["spec"]["containers"][0]["args"][0]
    assert "put-item" in script and "get-item" in script


@pytest.mark.parametrize("values", [{}, ALL_ON], ids=["defaults", "all-on"])
def test_lint_strict_is_clean(values: dict[str, Any]) -> None:
    report = helm.lint(str(CHART), values, strict=True)
    assert report["errors"] == [] and report["messages"] == []


@pytest.mark.parametrize(
    "bad",
    [
        {"storage": {"zones": []}},
        {"storage": {"zones": ["UPPER"]}},
        {"storage": {"replicasPerZone": 0}},
        {"storage": {"size": "ten gigs"}},
        {"router": {"service": {"type": "Ingress"}}},
        {"router": {"port": 70000}},
        {"router": {"controlStore": "zookeeper"}},
        {"etcd": {"replicas": 2}},
        {"credentials": {"accessKeyId": "not-a-key"}},
        {"operator": {"replicas": 0}},
        {"unknownTopLevel": True},
        {"networkPolicy": {"enabled": "yes"}},
        {"admission": "global"},
    ],
)
def test_values_schema_rejects_bad_values(bad: dict[str, Any]) -> None:
    chart = helm.Chart.load(str(CHART))
    with pytest.raises(helm.HelmValuesError):
        chart.validate_schema(chart.merge_values(bad))


def test_values_schema_accepts_the_defaults_and_every_flag_on() -> None:
    chart = helm.Chart.load(str(CHART))
    chart.validate_schema(chart.merge_values({}))
    chart.validate_schema(chart.merge_values(ALL_ON))


def test_chart_crds_are_exactly_the_top_level_crds() -> None:
    top = sorted(p.name for p in (ROOT / "crds").glob("*.yaml"))
    ours = sorted(p.name for p in (CHART / "crds").glob("*.yaml"))
    assert top == ours and top
    _same, mismatch, errors = filecmp.cmpfiles(ROOT / "crds", CHART / "crds", top, shallow=False)
    assert mismatch == [] and errors == []


def test_the_prometheus_rule_carries_the_alert_rules_verbatim() -> None:
    rules = ROOT / "deploy" / "prometheus" / "partita-rules.yml"
    assert filecmp.cmp(rules, CHART / "rules" / "partita-rules.yml", shallow=False), (
        "charts/partita/rules/partita-rules.yml differs from deploy/prometheus/partita-rules.yml: copy it"
    )
    [rule] = [d for d in render(ALL_ON) if d["kind"] == "PrometheusRule"]
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus"
    # Every alert arrives with its own {{ $labels }} templates untouched by Helm.
    assert rule["spec"]["groups"] == yaml.safe_load(rules.read_text())["groups"]


def test_the_operator_splits_partitions_at_the_size_the_values_say() -> None:
    from partita.autoadmin.kube.cli import config_from_args
    from partita.cli.main import build_parser

    def operator_args(values: dict[str, Any]) -> list[str]:
        (operator,) = [
            d
            for d in render(values)
            if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-operator")
        ]
        args: list[str] = operator["spec"]["template"]["spec"]["containers"][0]["args"]
        return args

    # The default (10 GB) renders as an integer the operator's flag accepts, not 1.07e+10.
    assert "--split-size-bytes=10737418240" in operator_args({})
    assert "--split-size-bytes=65536" in operator_args({"operator": {"splitSizeBytes": 65536}})
    parsed = build_parser().parse_args([*operator_args({}), "--namespace=n"])
    assert config_from_args(parsed).split_size_bytes == 10 * 2**30


def test_the_operator_places_tables_on_shuffle_shards_and_migrates_as_the_values_say() -> None:
    from partita.autoadmin.kube.cli import config_from_args
    from partita.cli.main import build_parser

    def operator_config(values: dict[str, Any]) -> Any:
        (operator,) = [
            d
            for d in render(values)
            if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-operator")
        ]
        args = operator["spec"]["template"]["spec"]["containers"][0]["args"]
        return config_from_args(build_parser().parse_args([*args, "--namespace=n"]))

    default = operator_config({})
    assert default.shards.enabled and default.shards.max_shared == 1
    changed = operator_config({"operator": {"shuffleShard": False, "shardMaxShared": 0}})
    assert not changed.shards.enabled and changed.shards.max_shared == 0
    assert default.migration.enabled and (default.migration.above, default.migration.room_below) == (0.8, 0.6)
    moved = operator_config({"operator": {"migration": False, "migrateAbove": 0.9, "migrateRoomBelow": 0.5}})
    assert not moved.migration.enabled and (moved.migration.above, moved.migration.room_below) == (0.9, 0.5)
    assert (default.fleet.node_read_units, default.fleet.node_write_units) == (30000.0, 10000.0)
    sized = operator_config({"storage": {"readUnits": 4000, "writeUnits": 1500}})
    assert (sized.fleet.node_read_units, sized.fleet.node_write_units) == (4000.0, 1500.0)


def test_partitions_are_replication_groups_by_default_on_a_port_only_storage_pods_reach() -> None:
    """storage.replication (on): the operator runs storage pods with replication groups
    on storage.replicationPort and routers send writes to leaders and spread eventual
    reads; the NetworkPolicy opens that port to storage pods and nobody else. Off: the
    operator is told so and routers do not spread reads over unreplicated copies."""
    from partita.autoadmin.kube import builders
    from partita.autoadmin.kube.cli import config_from_args
    from partita.cli.main import build_parser

    def container_args(docs: list[dict[str, Any]], suffix: str) -> list[str]:
        (deployment,) = [
            d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith(suffix)
        ]
        args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        return args

    docs = render({**ALL_ON, "storage": {"replicationPort": 7999}})
    assert "--replication" in container_args(docs, "-router")
    operator_args = container_args(docs, "-operator")
    assert "--no-storage-replication" not in operator_args
    fleet = config_from_args(build_parser().parse_args([*operator_args, "--namespace=db"])).fleet
    assert fleet.replication and fleet.replication_port == 7999
    storage = builders.storage_statefulset(fleet, fleet.zones[0])["spec"]["template"]["spec"]["containers"][0]
    assert "--replication-listen=$(POD_IP):7999" in storage["args"]
    (policy,) = [
        d for d in docs if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "demo-partita-storage"
    ]
    by_port = {
        port["port"]: {
            peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for peer in rule["from"]
        }
        for rule in policy["spec"]["ingress"]
        for port in rule["ports"]
    }
    assert by_port[7999] == {"storage"}
    assert by_port[7100] == by_port[7200] == {"router", "operator", "storage"}

    off = render({"storage": {"replication": False}})
    assert "--replication" not in container_args(off, "-router")
    operator_args = container_args(off, "-operator")
    assert not config_from_args(
        build_parser().parse_args([*operator_args, "--namespace=db"])
    ).fleet.replication
