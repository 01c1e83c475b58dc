"""`partita node add|hold|release`: change the storage nodes of a running local cluster.

- `add [--zone Z]`: start one more storage node, `storage-<Z>` (default: the next free
  zone letter), on ports the kernel picks; it registers itself (membership, zone) and
  hosts what the control store gives it: new tables, and repaired groups (a group whose
  member has been down for seconds gets a log-only member, then a full one on a node
  outside it: docs/replication.md). It is started again with the cluster.
- `hold NAME`: the supervisor stops restarting NAME when it exits (to keep a node down
  after killing it); `release NAME` starts it again.

The commands write `<data-dir>/nodes.json`; the running `partita up` follows it within
a quarter of a second. Output is JSON on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import string
import sys
import time
from pathlib import Path
from typing import Any

from partita.cli.supervisor import NodeRequests
from partita.common import config

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
    zone = args.zone or next_zone(taken)
    if zone in taken:
        print(f"storage-{zone} already exists", file=sys.stderr)
        return 1
    requests.added.append(zone)
    requests.write(data_dir)
    node = asyncio.run(_registered(cluster["etcd"], f"storage-{zone}", ADD_TIMEOUT_SECONDS))
    if node is None:
        print(
            f"storage-{zone} did not register within {ADD_TIMEOUT_SECONDS:.0f}s; see its log", file=sys.stderr
        )
        return 1
    print(json.dumps(node, indent=2))
    return 0


def _set_held(args: argparse.Namespace, held: bool) -> int:
    data_dir = Path(args.data_dir).resolve()
    cluster = _cluster(data_dir)
    if args.name not in _storage_names(cluster) and args.name not in {
        f"storage-{z}" for z in NodeRequests.read(data_dir).added
    }:
        print(f"no storage node {args.name}", file=sys.stderr)
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


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "node",
        help="add a storage node to a running local cluster, or hold one down (add, hold, release)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )

    def usage(_: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    parser.set_defaults(func=usage)
    sub = parser.add_subparsers(dest="node_command", metavar="{add,hold,release}")
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
