"""What `partita up` starts: etcd with auto-compaction, and the autoadmin as its own
process (after the router, so it is stopped first), with the flags passed through."""

from __future__ import annotations

from pathlib import Path

import pytest

from partita.autoadmin.main import build_parser as autoadmin_parser
from partita.cli.main import build_parser
from partita.cli.supervisor import ClusterLayout, prometheus_config


def _argv_after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_etcd_runs_with_revision_auto_compaction(tmp_path: Path) -> None:
    etcd = ClusterLayout(tmp_path, keep_revisions=250).children()[0]
    assert etcd.name == "etcd"
    assert _argv_after(etcd.argv, "--auto-compaction-mode") == "revision"
    assert _argv_after(etcd.argv, "--auto-compaction-retention") == "250"


def test_the_autoadmin_is_started_last_with_its_settings(tmp_path: Path) -> None:
    layout = ClusterLayout(
        tmp_path,
        etcd_port=3379,
        storage_base_port=8101,
        on_demand_partitions=6,
        defrag_interval=30,
        keep_revisions=99,
        log_level="warning",
    )
    children = layout.children()
    assert [c.role for c in children] == [
        "etcd", "storage", "storage", "storage", "doorman", "doorman", "router", "autoadmin"
    ]  # fmt: skip
    autoadmin = children[-1]
    # Its one port is /metrics, so prometheus.yml scrapes it and `up` waits for it.
    assert autoadmin.ports == {"metrics": 8400}
    assert _argv_after(autoadmin.argv, "--metrics-port") == "8400"
    assert _argv_after(autoadmin.argv, "--log-level") == "warning"
    assert "127.0.0.1:8400" in prometheus_config(children, "127.0.0.1", None)
    assert autoadmin.argv[autoadmin.argv.index("autoadmin") - 1] == "partita.cli.main"
    assert _argv_after(autoadmin.argv, "--etcd") == "127.0.0.1:3379"
    assert _argv_after(autoadmin.argv, "--on-demand-partitions") == "6"
    assert _argv_after(autoadmin.argv, "--defrag-interval") == "30"
    assert _argv_after(autoadmin.argv, "--keep-revisions") == "99"


def test_up_flags_reach_the_layout() -> None:
    args = build_parser().parse_args(
        ["up", "--on-demand-partitions", "2", "--defrag-interval", "5", "--etcd-keep-revisions", "10"]
    )
    assert (args.on_demand_partitions, args.defrag_interval, args.keep_revisions) == (2, 5.0, 10)


def test_the_autoadmin_process_takes_its_settings_and_refuses_bad_ones() -> None:
    args = autoadmin_parser().parse_args(["--etcd", "h:1", "--keep-revisions", "7"])
    assert (args.etcd, args.keep_revisions, args.on_demand_partitions) == ("h:1", 7, 4)
    assert (args.metrics_port, args.log_level, args.log_format) == (None, "info", "json")
    args = autoadmin_parser().parse_args(
        ["--metrics-port", "9100", "--log-level", "debug", "--log-format", "text"]
    )
    assert (args.metrics_port, args.log_level, args.log_format) == (9100, "debug", "text")
    for bad in (["--metrics-port", "0"], ["--metrics-port", "70000"], ["--log-level", "loud"]):
        with pytest.raises(SystemExit):
            autoadmin_parser().parse_args(bad)
    with pytest.raises(SystemExit):
        autoadmin_parser().parse_args(["--on-demand-partitions", "0"])


def test_the_split_size_flag_reaches_the_autoadmin_and_refuses_nonsense(tmp_path: Path) -> None:
    args = build_parser().parse_args(["up", "--split-size-bytes", "65536"])
    assert args.split_size_bytes == 65536
    assert build_parser().parse_args(["up"]).split_size_bytes == 10 * 2**30  # DynamoDB's 10 GB
    autoadmin = ClusterLayout(tmp_path, split_size_bytes=65536).children()[-1]
    assert _argv_after(autoadmin.argv, "--split-size-bytes") == "65536"
    assert autoadmin_parser().parse_args(["--split-size-bytes", "65536"]).split_size_bytes == 65536
    for bad in (["--split-size-bytes", "0"], ["--split-size-bytes", "ten"]):
        with pytest.raises(SystemExit):
            autoadmin_parser().parse_args(bad)
        with pytest.raises(SystemExit):
            build_parser().parse_args(["up", *bad])


def test_the_autoadmin_takes_the_sustained_hot_window_of_a_consumption_split() -> None:
    assert autoadmin_parser().parse_args([]).split_hot_seconds == 300.0
    assert autoadmin_parser().parse_args(["--split-hot-seconds", "60"]).split_hot_seconds == 60.0
    with pytest.raises(SystemExit):
        autoadmin_parser().parse_args(["--split-hot-seconds", "0"])


def test_replicated_groups_split_at_a_log_index_by_default_and_the_flag_turns_it_off(tmp_path: Path) -> None:
    assert build_parser().parse_args(["up"]).split_replicated_groups is True
    off = build_parser().parse_args(["up", "--no-split-replicated-groups"])
    assert off.split_replicated_groups is False
    assert "--split-replicated-groups" in ClusterLayout(tmp_path).children()[-1].argv
    kept = ClusterLayout(tmp_path, split_replicated_groups=False).children()[-1].argv
    assert "--no-split-replicated-groups" in kept and "--split-replicated-groups" not in kept
    assert autoadmin_parser().parse_args([]).split_replicated_groups is True
    assert autoadmin_parser().parse_args(["--no-split-replicated-groups"]).split_replicated_groups is False


def test_leadership_rebalancing_is_on_by_default_and_the_flag_turns_it_off(tmp_path: Path) -> None:
    assert build_parser().parse_args(["up"]).no_leader_rebalance is False
    assert build_parser().parse_args(["up", "--no-leader-rebalance"]).no_leader_rebalance is True
    storage = [c for c in ClusterLayout(tmp_path).children() if c.role == "storage"]
    assert storage and all("--no-leader-rebalance" not in c.argv for c in storage)
    off = [c for c in ClusterLayout(tmp_path, leader_rebalance=False).children() if c.role == "storage"]
    assert off and all("--no-leader-rebalance" in c.argv for c in off)
    node = build_parser().parse_args(
        ["storage", "--node-id", "n", "--zone", "z", "--port", "1", "--data-port", "2", "--data-dir", "d"]
    )
    assert node.no_leader_rebalance is False


def test_colocated_routers_serve_the_endpoint_from_every_storage_node_and_no_router_process(
    tmp_path: Path,
) -> None:
    layout = ClusterLayout(tmp_path, router_port=8123, region="eu-west-1", admission="doorman")
    children = layout.children()
    assert "router" in [c.role for c in children]  # the default: a router process of its own
    layout.routers = "colocated"
    children = layout.children()
    assert "router" not in [c.role for c in children]
    storage = [c for c in children if c.role == "storage"]
    assert len(storage) == 3
    for child in storage:
        assert _argv_after(child.argv, "--router-port") == "8123"
        assert _argv_after(child.argv, "--credentials-dir") == str(tmp_path)
        assert _argv_after(child.argv, "--region") == "eu-west-1"
        assert _argv_after(child.argv, "--router-admission") == "doorman"
        assert _argv_after(child.argv, "--doorman").count(",") == 1  # both Doorman servers
        assert child.ports["http"] == 8123  # `up` waits for it before saying it runs
        args = build_parser().parse_args(child.argv[child.argv.index("storage") :])
        assert (args.router_port, args.router_admission, args.node_id) == (8123, "doorman", child.name)
    added = layout.storage_child(["python"], "d", None)  # `partita node add` joins the port too
    assert _argv_after(added.argv, "--router-port") == "8123"


def test_the_routers_flag_parses_and_refuses_other_layouts() -> None:
    assert build_parser().parse_args(["up"]).routers == "separate"
    assert build_parser().parse_args(["up", "--routers", "colocated"]).routers == "colocated"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["up", "--routers", "everywhere"])


def test_colocated_routers_refuse_local_admission_which_would_admit_each_rate_three_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from partita.cli.main import cmd_up

    args = build_parser().parse_args(
        ["up", "--data-dir", str(tmp_path), "--routers", "colocated", "--admission", "local"]
    )
    assert cmd_up(args) == 2
    assert "--admission local needs one router" in capsys.readouterr().out
    assert not (tmp_path / "cluster.json").exists()  # nothing was started


def test_migration_flags_reach_the_autoadmin_and_node_capacity_the_storage_nodes(tmp_path: Path) -> None:
    args = build_parser().parse_args(["up"])
    assert (args.migration, args.migrate_above, args.migrate_room_below) == (True, 0.8, 0.6)
    assert (args.node_read_units, args.node_write_units, args.load_report_interval) == (
        30000.0,
        10000.0,
        10.0,
    )
    layout = ClusterLayout(
        tmp_path,
        migration=False,
        migrate_above=0.9,
        migrate_room_below=0.5,
        node_read_units=500.0,
        node_write_units=200.0,
        load_report_interval=2.0,
    )
    children = layout.children()
    autoadmin = children[-1].argv
    assert "--no-migration" in autoadmin and "--migration" not in autoadmin
    assert (_argv_after(autoadmin, "--migrate-above"), _argv_after(autoadmin, "--migrate-room-below")) == (
        "0.9",
        "0.5",
    )
    parsed = autoadmin_parser().parse_args(autoadmin[autoadmin.index("autoadmin") + 1 :])
    assert (parsed.migration, parsed.migrate_above, parsed.migrate_room_below) == (False, 0.9, 0.5)
    storage = [c.argv for c in children if c.role == "storage"]
    assert len(storage) == 3
    # A node added later (`partita node add`) is started with the same capacity.
    added = layout.storage_child(["python", "-m", "partita.cli.main"], "a2", None)
    for argv in [*storage, added.argv]:
        node = build_parser().parse_args(argv[argv.index("partita.cli.main") + 1 :])
        assert (node.node_read_units, node.node_write_units, node.load_report_interval) == (500.0, 200.0, 2.0)
    for bad in (["--migrate-above", "0"], ["--migrate-above", "1.5"], ["--node-read-units", "0"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["up", *bad])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["up", "--load-report-interval", "-1"])


def test_an_added_node_in_a_zone_that_has_one_is_its_second(tmp_path: Path) -> None:
    from partita.cli.node_cmd import node_suffix
    from partita.cli.supervisor import NodeRequests

    assert node_suffix("d", {"a", "b", "c"}) == "d"
    assert node_suffix("a", {"a", "b", "c"}) == "a2"
    assert node_suffix("a", {"a", "a2", "b", "c"}) == "a3"
    # The zone is kept beside the name, so a zone ending in a digit stays itself.
    requests = NodeRequests(["a2", "z1", "z12"], [], {"a2": "a", "z12": "z1"})
    requests.write(tmp_path)
    again = NodeRequests.read(tmp_path)
    assert [again.zone_of(s) for s in again.added] == ["a", "z1", "z1"]
    child = ClusterLayout(tmp_path).storage_child(["py"], "a2", None, again.zone_of("a2"))
    assert (child.name, child.zone) == ("storage-a2", "a")
    assert _argv_after(child.argv, "--node-id") == "storage-a2"
    assert _argv_after(child.argv, "--zone") == "a"
    assert _argv_after(child.argv, "--data-dir") == str(tmp_path / "storage-a2")


def test_tls_reaches_every_router_and_the_endpoint_and_metrics_say_https(tmp_path: Path) -> None:
    from partita.cli.main import _tls_files
    from partita.cli.supervisor import Supervisor
    from partita.router.tls import TlsFiles

    args = build_parser().parse_args(["up", "--tls-cert", "c.pem", "--tls-key", "k.pem"])
    files = _tls_files(args)
    assert files == TlsFiles(Path("c.pem").resolve(), Path("k.pem").resolve())  # the children's cwd differs
    with pytest.raises(SystemExit):
        _tls_files(build_parser().parse_args(["up", "--tls-cert", "c.pem"]))
    layout = ClusterLayout(tmp_path, router_port=8123, tls=files)
    assert layout.endpoint == "https://127.0.0.1:8123"
    for routers in ("separate", "colocated"):
        layout.routers = routers
        serving = [c for c in layout.children() if "http" in c.ports]
        assert serving and all(_argv_after(c.argv, "--tls-cert") == str(files.cert) for c in serving)
        for child in serving:
            parsed = build_parser().parse_args(child.argv[child.argv.index(child.role) :])
            assert _tls_files(parsed) == files
    # A router process serves its /metrics on the DynamoDB port; colocated routers' nodes
    # list their own metrics ports instead.
    layout.routers = "separate"
    metrics = dict(Supervisor(layout).metrics_endpoints())
    assert [url for url in metrics.values() if url.startswith("https://")] == [
        "https://127.0.0.1:8123/metrics"
    ]
    assert '"scheme": "https"' in prometheus_config(layout.children(), "127.0.0.1", None, https=True)
    assert ClusterLayout(tmp_path, router_port=8123).endpoint == "http://127.0.0.1:8123"
