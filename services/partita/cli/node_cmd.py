"""`partita node add|hold|release`: change the storage nodes of a running local cluster.

- `add [--zone Z]`: start one more storage node, `storage-<Z>` (default: the next free
  zone letter; in a zone that has nodes already, `storage-<Z>2`, `-<Z>3`...: room for
  migration within the zone), on ports the kernel picks; it registers itself
  (membership, zone) and hosts what the control store gives it: new tables, and repaired groups (a group whose
  member has been down for seconds gets a log-only member, then a full one on a node
  outside it: docs/replication.md). It is started again with the cluster.
- `hold NAME`: the supervisor stops restarting NAME when it exits (to keep a node down
  after killing it); `release NAME` starts it again.
- `drain NAME [--wait SECONDS]`: move every replica off NAME (a mark in the control store
  that the groups' leaders follow: each builds a full member on another node outside
  the group, then removes NAME's, a leader on NAME handing over first; no node leads
  there meanwhile); with `--wait`, until no partition names it, so it can be held and
  stopped with nothing lost. `undrain NAME` clears the mark (replicas moved stay moved).
  Needs replication (`--replication-factor 3`) and a node outside each group to move to.

The commands write `<data-dir>/nodes.json`; the running `partita up` follows it within
a quarter of a second. Output is JSON on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import string
import sys
import time
from pathlib import Path
from typing import Any

from partita.cli.supervisor import NodeRequests
from partita.common import config
from partita.control.model import TableRecord

# How long `node add` waits for the new node to register in the control store.
ADD_TIMEOUT_SECONDS = 60.0


def _cluster(data_dir: Path) -> dict[str, Any]:
    path = data_dir / "cluster.json"
    if not path.exists():
        raise SystemExit(f"no running cluster in {data_dir} (cluster.json is missing)")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _storage_names(cluster: dict[str, Any]) -> set[str]:
    return {str(p["name"]) for p in cluster["processes"] if p.get("role") == "storage"}


def node_suffix(zone: str, taken: set[str]) -> str:
    """The name suffix of a new node in `zone`: the zone itself for its first node,
    then zone2, zone3... (`taken`: the suffixes in use)."""
    if zone not in taken:
        return zone
    return next(f"{zone}{n}" for n in itertools.count(2) if f"{zone}{n}" not in taken)


def next_zone(taken: set[str]) -> str:
    """The first letter no storage node's zone uses."""
    for letter in string.ascii_lowercase:
        if letter not in taken:
            return letter
    raise SystemExit("every zone letter is taken")


async def _registered(etcd: str, node_id: str, timeout: float) -> dict[str, Any] | None:
    from partita.control.store import EtcdControlStore

    host, port = config.parse_endpoint(etcd)
    store = EtcdControlStore(host, port, timeout=3)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in await store.list_nodes():
                if node.node_id == node_id:
                    return node.to_json()
            await asyncio.sleep(0.2)
        return None
    finally:
        await store.close()


def cmd_add(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir).resolve()
    cluster = _cluster(data_dir)
    requests = NodeRequests.read(data_dir)
    taken = {name.removeprefix("storage-") for name in _storage_names(cluster)} | set(requests.added)
    zone = args.zone or next_zone({requests.zone_of(t) for t in taken})
    suffix = node_suffix(zone, taken)
    requests.added.append(suffix)
    if suffix != zone:
        requests.zones[suffix] = zone
    requests.write(data_dir)
    node = asyncio.run(_registered(cluster["etcd"], f"storage-{suffix}", ADD_TIMEOUT_SECONDS))
    if node is None:
        print(
            f"storage-{suffix} did not register within {ADD_TIMEOUT_SECONDS:.0f}s; see its log",
            file=sys.stderr,
        )
        return 1
    print(json.dumps(node, indent=2))
    return 0


def _known_node(data_dir: Path, cluster: dict[str, Any], name: str) -> bool:
    """Whether `name` is one of the cluster's storage nodes (its own or an added one);
    says so on stderr if not."""
    if name in _storage_names(cluster) or name in {f"storage-{z}" for z in NodeRequests.read(data_dir).added}:
        return True
    print(f"no storage node {name}", file=sys.stderr)
    return False


def _set_held(args: argparse.Namespace, held: bool) -> int:
    data_dir = Path(args.data_dir).resolve()
    cluster = _cluster(data_dir)
    if not _known_node(data_dir, cluster, args.name):
        return 1
    requests = NodeRequests.read(data_dir)
    names = set(requests.held)
    names = names | {args.name} if held else names - {args.name}
    requests.held = sorted(names)
    requests.write(data_dir)
    # The supervisor reads the file every quarter of a second: give it two.
    time.sleep(0.5)
    print(json.dumps({"node": args.name, "held": held, "supervisor_pid": cluster.get("supervisor_pid")}))
    return 0


def replicas_on(tables: list[TableRecord], node_id: str) -> int:
    """How many partitions name `node_id` as a member (serving, being built or log-only)."""
    return sum(
        node_id in (*p.replicas, *p.joining, *p.log_replicas)
        for t in tables
        if t.status != "DELETING"
        for p in t.partitions
    )


async def _drain(etcd: str, node_id: str, draining: bool, wait: float | None) -> dict[str, Any]:
    from partita.control.store import EtcdControlStore

    host, port = config.parse_endpoint(etcd)
    store = EtcdControlStore(host, port, timeout=3)
    try:
        await store.set_draining(node_id, draining)
        deadline = time.monotonic() + (wait or 0.0)
        left = replicas_on(await store.list_tables(), node_id)
        while draining and left and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            left = replicas_on(await store.list_tables(), node_id)
        return {"node": node_id, "draining": draining, "replicas": left}
    finally:
        await store.close()


def _set_draining(args: argparse.Namespace, draining: bool) -> int:
    data_dir = Path(args.data_dir).resolve()
    cluster = _cluster(data_dir)
    if not _known_node(data_dir, cluster, args.name):
        return 1
    wait = getattr(args, "wait", None)
    result = asyncio.run(_drain(cluster["etcd"], args.name, draining, wait))
    print(json.dumps(result))
    if draining and wait is not None and result["replicas"]:
        print(f"{args.name} still holds {result['replicas']} replicas after {wait:.0f}s", file=sys.stderr)
        return 1
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "node",
        help="add a storage node to a running local cluster, hold one down, or drain one "
        "(add, hold, release, drain, undrain)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )

    def usage(_: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    parser.set_defaults(func=usage)
    sub = parser.add_subparsers(dest="node_command", metavar="{add,hold,release,drain,undrain}")
    add = sub.add_parser("add", help="start one more storage node")
    add.add_argument("--zone", help="its zone (default: the next letter no node uses)")
    add.add_argument("--data-dir", default=os.environ.get("PARTITA_DATA_DIR", config.DEFAULT_DATA_DIR))
    add.set_defaults(func=cmd_add)
    for name, held, text in (
        ("hold", True, "do not restart the node when it exits"),
        ("release", False, "start a held node again"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("name", help="the storage node, e.g. storage-c")
        cmd.add_argument("--data-dir", default=os.environ.get("PARTITA_DATA_DIR", config.DEFAULT_DATA_DIR))
        cmd.set_defaults(func=lambda a, h=held: _set_held(a, h))
    drain = sub.add_parser("drain", help="move every replica off a storage node")
    drain.add_argument("name", help="the storage node, e.g. storage-c")
    drain.add_argument(
        "--wait", type=float, metavar="SECONDS", help="until no partition names it (exit 1 if not)"
    )
    drain.add_argument("--data-dir", default=os.environ.get("PARTITA_DATA_DIR", config.DEFAULT_DATA_DIR))
    drain.set_defaults(func=lambda a: _set_draining(a, True))
    undrain = sub.add_parser("undrain", help="clear a storage node's drain mark")
    undrain.add_argument("name", help="the storage node, e.g. storage-c")
    undrain.add_argument("--data-dir", default=os.environ.get("PARTITA_DATA_DIR", config.DEFAULT_DATA_DIR))
    undrain.set_defaults(func=lambda a: _set_draining(a, False))
