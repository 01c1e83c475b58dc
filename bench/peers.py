"""Starting and stopping benchmark targets: dynalite (in memory and on disk) and Partita.

dynalite is pinned in bench/package.json + package-lock.json and installed with `npm ci`
into bench/.node (git-ignored), so every machine benchmarks the same build. Install it
with `.venv/bin/python -m bench.peers install` (what `make bench` runs first); the
harness also calls ensure_dynalite() itself when the install is missing or stale.

Every target is started in a new session (process group) so that stopping it can reach
the whole tree it spawned, signalled by that group's id only.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
NODE_DIR = BENCH_DIR / ".node"
_PIN_FILES = ("package.json", "package-lock.json")

# Every peer listens on loopback only; benchmarks never leave the machine.
HOST = "127.0.0.1"
# Generous: `partita up` starts etcd, storage nodes, metadata, Doorman and a router.
STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0


class PeerUnavailable(RuntimeError):
    """A target could not be installed or started; the message says why."""


@dataclass
class Peer:
    """A running target: where to send requests, with which credentials, and its pid."""

    name: str
    endpoint: str
    access_key: str
    secret_key: str
    region: str
    proc: subprocess.Popen[bytes]
    version: str
    workdir: Path
    log_path: Path
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def root_pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        """Ctrl-C the process group (what a user would do), then SIGKILL it if it lingers."""
        stop_process_group(self.proc)


def stop_process_group(proc: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT_S) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)
    # Children may outlive a leader that exited; the group id is still ours to signal.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float, log_path: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise PeerUnavailable(f"exited with status {proc.returncode}; log: {_tail(log_path)}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.2)
            if s.connect_ex((HOST, port)) == 0:
                return
        time.sleep(0.1)
    raise PeerUnavailable(f"port {port} not open after {timeout:.0f}s; log: {_tail(log_path)}")


# What `partita up` prints once every process it starts is serving.
RUNNING_BANNER = "Partita is running"


def wait_for_log(text: str, proc: subprocess.Popen[bytes], timeout: float, log_path: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise PeerUnavailable(f"exited with status {proc.returncode}; log: {_tail(log_path)}")
        if log_path.exists() and text in log_path.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise PeerUnavailable(f"{text!r} not logged after {timeout:.0f}s; log: {_tail(log_path)}")


def _tail(path: Path, limit: int = 800) -> str:
    try:
        return path.read_text(errors="replace")[-limit:].strip() or "(empty)"
    except FileNotFoundError:
        return "(no log)"


# --- dynalite ----------------------------------------------------------------------------


def pinned_dynalite_version() -> str:
    deps: dict[str, str] = json.loads((BENCH_DIR / "package.json").read_text())["dependencies"]
    return deps["dynalite"]


def _installed_dynalite_version() -> str | None:
    try:
        meta = json.loads((NODE_DIR / "node_modules" / "dynalite" / "package.json").read_text())
    except FileNotFoundError:
        return None
    version: str = meta["version"]
    return version


def _install_is_current() -> bool:
    if _installed_dynalite_version() != pinned_dynalite_version():
        return False
    # A changed lock (e.g. a transitive bump) must trigger a reinstall, not just the version.
    return all(
        (NODE_DIR / name).exists() and (NODE_DIR / name).read_bytes() == (BENCH_DIR / name).read_bytes()
        for name in _PIN_FILES
    )


def ensure_dynalite() -> Path:
    """Install the pinned dynalite into bench/.node if missing or stale; return its cli.js."""
    cli = NODE_DIR / "node_modules" / "dynalite" / "cli.js"
    if _install_is_current() and cli.exists():
        return cli
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise PeerUnavailable("node and npm are needed for dynalite (Node 20+)")
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    for name in _PIN_FILES:
        shutil.copyfile(BENCH_DIR / name, NODE_DIR / name)
    # `npm ci` installs exactly the lockfile. Install scripts are not needed: classic-level
    # (dynalite's LevelDB binding) ships prebuilt binaries that node-gyp-build finds at run time.
    cmd = [npm, "ci", "--prefix", str(NODE_DIR), "--no-audit", "--no-fund", "--ignore-scripts"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if res.returncode != 0 or not cli.exists():
        raise PeerUnavailable(f"`{' '.join(cmd)}` failed: {res.stderr[-2000:]}")
    return cli


def start_dynalite(*, disk: bool, workdir: Path) -> Peer:
    """dynalite in memory (its default) or, with disk=True, on LevelDB under workdir."""
    cli = ensure_dynalite()
    node = shutil.which("node")
    assert node is not None  # ensure_dynalite checked
    port = free_port()
    name = "dynalite-disk" if disk else "dynalite"
    cmd = [node, str(cli), "--host", HOST, "--port", str(port)]
    if disk:
        cmd += ["--path", str(workdir / "leveldb")]
    log_path = workdir / f"{name}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    try:
        wait_for_port(port, proc, STARTUP_TIMEOUT_S, log_path)
    except BaseException:
        stop_process_group(proc)
        raise
    # dynalite checks that a SigV4 header is present but accepts any credentials.
    return Peer(
        name=name,
        endpoint=f"http://{HOST}:{port}",
        access_key="bench",
        secret_key="bench-secret",
        region="us-east-1",
        proc=proc,
        version=f"dynalite {_installed_dynalite_version()}",
        workdir=workdir,
        log_path=log_path,
        notes={"storage": "LevelDB on disk (no fsync per write)" if disk else "in memory"},
    )


# --- Partita -----------------------------------------------------------------------------


def partita_command() -> list[str]:
    """The `partita` console script next to this interpreter, else the module via Python.

    The fallback covers a checkout whose venv has the dependencies but not `pip install -e .`.
    """
    script = Path(sys.executable).parent / "partita"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from partita.cli.main import main; sys.exit(main())"]


def _partita_env() -> dict[str, str]:
    env = dict(os.environ)
    roots = [str(REPO / "services"), str(REPO / "operator")]
    env["PYTHONPATH"] = os.pathsep.join([*roots, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _import_partita(module: str) -> Any:
    """Import a partita module, from the source tree if the venv lacks `pip install -e .`."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != "partita":
            raise
        sys.path.insert(0, str(REPO / "services"))
        return importlib.import_module(module)


def read_partita_credentials(path: Path, table: str) -> tuple[str, str]:
    """(access key, secret key) from the `credentials.json` that `partita up` writes.

    Read with the product's own parser (partita.router.credentials); take the first key
    that may access the benchmark table and needs no session token.
    """
    creds = _import_partita("partita.router.credentials")
    for cred in creds.load(path):
        if cred.session_token is None and cred.may_access(table):
            return cred.access_key_id, cred.secret_access_key
    raise PeerUnavailable(f"no credential in {path} may access table {table!r} without a session token")


def _partita_region(cluster_file: Path) -> str:
    """The region the router was started with (`cluster.json`), for the SigV4 scope."""
    try:
        region = json.loads(cluster_file.read_text()).get("region")
    except (FileNotFoundError, ValueError):
        region = None
    return region if isinstance(region, str) and region else "us-east-1"


def _partita_version() -> str:
    try:
        from importlib.metadata import version

        return f"partita {version('partita')}"
    except Exception:
        return "partita (source tree)"


def _free_port_block(offsets: tuple[int, ...], tries: int = 50) -> int:
    """A base port such that base+offset is free for every offset (best effort, racy).

    `partita up` places etcd and the storage nodes at fixed offsets from base ports whose
    defaults would collide with any other local cluster (a developer's `make up`, tests).
    """
    rng = random.Random()
    for _ in range(tries):
        base = rng.randrange(20_000, 30_000)
        socks: list[socket.socket] = []
        try:
            for off in offsets:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind((HOST, base + off))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise PeerUnavailable("no free block of ports for partita's internal listeners")


def start_partita(
    *,
    workdir: Path,
    table: str,
    fsync: bool = True,
    replication_factor: int = 3,
    extra_args: tuple[str, ...] = (),
) -> Peer:
    """`partita up --data-dir <workdir>/data --port <free port> --replication-factor N`:
    the whole local cluster (3, the product's default: three-replica groups; 1: each
    partition on one node, for comparison)."""
    port = free_port()
    etcd_port = _free_port_block((0, 1))  # client, peer
    storage_base = _free_port_block((0, 1, 2, 100, 101, 102))  # admin gRPC and data, 3 zones
    # Doorman's default ports may be held by another local cluster: two servers, each
    # with a metrics port 100 above.
    doorman_base = _free_port_block((0, 1, 100, 101))
    data_dir = workdir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "partita.log"
    cmd = [
        *partita_command(),
        "up",
        "--data-dir",
        str(data_dir),
        "--port",
        str(port),
        "--etcd-port",
        str(etcd_port),
        "--storage-base-port",
        str(storage_base),
        "--doorman-base-port",
        str(doorman_base),
    ]
    if not fsync:
        cmd.append("--unsafe-no-fsync")
    cmd += ["--replication-factor", str(replication_factor), *extra_args]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=_partita_env(),
        )
    try:
        wait_for_port(port, proc, STARTUP_TIMEOUT_S, log_path)
        # The port opens with the first process serving it; with routers in the storage
        # nodes (`--routers colocated`) the others join it later, and connections made
        # before then would all stay on the first.
        wait_for_log(RUNNING_BANNER, proc, STARTUP_TIMEOUT_S, log_path)
        creds_path = data_dir / "credentials.json"
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not creds_path.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise PeerUnavailable(f"{creds_path} never appeared; log: {_tail(log_path)}")
            time.sleep(0.1)
        # credentials.json is replaced atomically, so it is complete once it exists.
        access, secret = read_partita_credentials(creds_path, table)
        region = _partita_region(data_dir / "cluster.json")
    except BaseException:
        stop_process_group(proc)
        raise
    return Peer(
        name=("partita" if fsync else "partita-nofsync") + ("-rf1" if replication_factor == 1 else ""),
        endpoint=f"http://{HOST}:{port}",
        access_key=access,
        secret_key=secret,
        region=region,
        proc=proc,
        version=_partita_version(),
        workdir=workdir,
        log_path=log_path,
        notes={
            "storage": "3 storage nodes (WAL + RocksDB), "
            + ("fsync per write" if fsync else "NO fsync (--unsafe-no-fsync)")
            + f", replication factor {replication_factor}"
        },
    )


def leaders_per_node(peer: Peer, table: str) -> dict[str, int]:
    """How many of `table`'s partitions each storage node leads, from `partita status`
    ({} when it cannot be told). Where the leaders sit moves a replicated write's cost:
    with 4 partitions on 3 nodes one node may lead none or all, and a node that leads
    every group sends each follower one coalesced append per round, where leaders on
    every node make each node a follower of two (docs/benchmarks.md, round 16)."""
    try:
        out = subprocess.run(
            [*partita_command(), "status", "--data-dir", str(peer.workdir / "data")],
            capture_output=True,
            text=True,
            timeout=30,
            env=_partita_env(),
        )
        status = json.loads(out.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return {}
    counts: dict[str, int] = {}
    for t in status.get("tables") or ():
        if t.get("name") != table:
            continue
        for partition in t.get("partitions") or ():
            for replica in partition.get("replicas") or ():
                if replica.get("role") == "leader":
                    counts[replica["node"]] = counts.get(replica["node"], 0) + 1
    return dict(sorted(counts.items()))


# The default set: Partita as `partita up` runs it (replication factor 3), and with one
# replica per partition beside it. "partita-nofsync" is extra: Partita without fsync, to
# compare like with like against dynalite-disk (LevelDB does not fsync each write either).
# "partita-colocated" is `partita up --routers colocated`: a router in each storage node's
# process, on one shared port, instead of a router process of its own.
TARGETS = ("partita", "partita-colocated", "partita-rf1", "dynalite", "dynalite-disk")
ALL_TARGETS = (*TARGETS, "partita-nofsync")
_PARTITA = {
    "partita": (True, 3, ()),
    "partita-rf1": (True, 1, ()),
    "partita-nofsync": (False, 3, ()),
    "partita-colocated": (True, 3, ("--routers", "colocated")),
}


@contextlib.contextmanager
def running(
    target: str,
    *,
    table: str = "usertable",
    keep_workdir: bool = False,
    partita_args: tuple[str, ...] = (),
) -> Iterator[Peer]:
    """Start a target in a fresh temporary directory, yield it, always stop and clean up.
    `partita_args` go to Partita's `partita up` (dynalite ignores them)."""
    if target not in ALL_TARGETS:
        raise ValueError(f"unknown target {target!r}; choose from {', '.join(ALL_TARGETS)}")
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-{target}-"))
    try:
        if target in _PARTITA:
            fsync, replication_factor, layout_args = _PARTITA[target]
            peer = start_partita(
                workdir=workdir,
                table=table,
                fsync=fsync,
                replication_factor=replication_factor,
                extra_args=(*layout_args, *partita_args),
            )
            peer.name = target
        else:
            peer = start_dynalite(disk=target == "dynalite-disk", workdir=workdir)
        try:
            yield peer
        finally:
            peer.stop()
    finally:
        if not keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.peers install`: install the pinned dynalite (for the Makefile)."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["install"]:
        print("usage: python -m bench.peers install", file=sys.stderr)
        return 2
    try:
        cli = ensure_dynalite()
    except PeerUnavailable as exc:
        print(f"dynalite install failed: {exc}", file=sys.stderr)
        return 1
    print(f"dynalite {_installed_dynalite_version()} ready at {cli}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
