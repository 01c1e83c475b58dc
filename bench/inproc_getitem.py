"""GetItem in process, for counting its instructions with callgrind.

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        .venv/bin/python -m bench.inproc_getitem 1300 router      # or: storage

`router` drives N SigV4-signed GetItem requests through the router's `DynamoApp` (the
real table cache over an in-memory control store; a data path that answers at once);
`storage` runs N GETs through a storage node's `DataPlane.plan` over a real engine.
`router-admission` and `storage-admission` do the same with admission control on (the
router's table bucket; the node's partition and node buckets), under the rate.
Startup costs the same for any N, so the instructions of one request are
(count at N2 - count at N1) / (N2 - N1). Used for docs/benchmarks.md (P8) to compare
two versions of the code (put the other version's `services/` and `operator/` first
on PYTHONPATH), where wall-clock runs on a shared machine are too noisy.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from partita._proto import storage_pb2 as pb

ITEM = orjson.dumps({"pk": {"S": "user000001"}, **{f"field{i}": {"S": "x" * 100} for i in range(8)}})


class _Channel:
    async def call(self, request: pb.Request) -> pb.Response:
        return pb.Response(id=request.id, status=pb.OK, value=ITEM, capacity_units=0.5)


class _DataPath:
    def channel(self, address: str) -> _Channel:
        return _Channel()


def _signed(operation: str, body: dict[str, Any], access_key: str, secret_key: str) -> Any:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from partita.router.http_server import HttpRequest

    data = orjson.dumps(body)
    aws = AWSRequest(
        method="POST",
        url="http://localhost:8000/",
        data=data,
        headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": "DynamoDB_20120810." + operation,
        },
    )
    SigV4Auth(Credentials(access_key, secret_key), "dynamodb", "us-east-1").add_auth(aws)
    headers = {"host": "localhost:8000"}
    for name, value in aws.headers.items():
        headers[name.lower()] = value.decode() if isinstance(value, bytes) else str(value)
    return HttpRequest("POST", "/", "", headers, data)


async def router(n: int, admit: bool = False) -> None:
    from partita.control.model import NodeRecord
    from partita.control.store import MemoryControlStore
    from partita.router.app import DynamoApp
    from partita.router.context import RouterContext, RouterSettings
    from partita.router.credentials import Credential, CredentialStore, save
    from partita.router.table_cache import TableCache

    path = Path(tempfile.mkdtemp()) / "credentials.json"
    cred = Credential("AKIAADMIN00000000000", "a" * 40, name="admin", tables=("*",))
    save(path, [cred])
    store = MemoryControlStore()
    await store.register_node(NodeRecord("n1", "a", "127.0.0.1:1", "127.0.0.1:2"), ttl=1000)
    ctx = RouterContext(TableCache(store), store, _DataPath(), RouterSettings())
    admission = None
    if admit:
        from partita.router.admission import Admission, ProvisionedRate

        admission = Admission(ProvisionedRate(), table_arn=ctx.table_arn)
    app = DynamoApp(ctx, CredentialStore(path), admission)
    create = {
        "TableName": "usertable",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST",
    }
    response = await app(_signed("CreateTable", create, cred.access_key_id, cred.secret_access_key))
    assert response.status == 200, response.body
    # The autoadmin places the partitions (one pass), the replicas report ready, and a
    # second pass makes the table ACTIVE.
    from partita.autoadmin.local import LocalAutoadmin
    from partita.autoadmin.reconcile import Settings

    autoadmin = LocalAutoadmin(store, Settings())
    await autoadmin.reconcile_once()
    for table in await store.list_tables():
        for p in table.partitions:
            for node in p.replicas:
                await store.mark_ready(table.table_id, p.partition_id, node)
    await autoadmin.reconcile_once()
    await ctx.tables.refresh()
    get = {"TableName": "usertable", "Key": {"pk": {"S": "user000001"}}}
    request = _signed("GetItem", get, cred.access_key_id, cred.secret_access_key)
    for _ in range(n):
        response = await app(request)
    assert response.status == 200 and b'"Item"' in response.body, response.body


async def storage(n: int, admit: bool = False) -> None:
    from partita.common import keys
    from partita.common.partition_map import Partition
    from partita.control.model import KeyElement, TableRecord
    from partita.storage.data_server import DataPlane
    from partita.storage.effects import Effect, Kind
    from partita.storage.engine import Engine
    from partita.storage.hosting import desired_hosting
    from partita.storage.node import NodeState

    record = TableRecord(
        name="usertable",
        table_id=7,
        status="ACTIVE",
        partition_key=KeyElement("pk", "S"),
        sort_key=None,
        attribute_definitions=(("pk", "S"),),
        billing_mode="PAY_PER_REQUEST",
        read_capacity=0,
        write_capacity=0,
        created_at=0.0,
        partitions=(Partition("p0", 0, 2**64, ("a",), "a"),),
    )
    engine = Engine.open(Path(tempfile.mkdtemp()), sync=False)
    key = keys.item_key(7, 1000, b"user000001", None)
    await engine.commit([Effect(Kind.PUT, key, ITEM)])
    state = NodeState(node_id="a", zone="a", engine=engine, hosted=desired_hosting([record], "a"))
    if admit:
        import time

        from partita.storage.admission import StorageAdmission

        plane = DataPlane(state, StorageAdmission(time.monotonic()))
    else:
        plane = DataPlane(state)
    request = pb.Request(op=pb.GET, key=key, key_hash=1000, table_id=7, partition_id="p0")
    for _ in range(n):
        plan = plane.plan(request)
    assert plan.response.value == ITEM
    await engine.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    modes = ("router", "storage", "router-admission", "storage-admission")
    if len(args) != 2 or args[1] not in modes or not args[0].isdigit():
        print(f"usage: python -m bench.inproc_getitem N {'|'.join(modes)}", file=sys.stderr)
        return 2
    n = int(args[0])
    admit = args[1].endswith("-admission")
    asyncio.run(router(n, admit) if args[1].startswith("router") else storage(n, admit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
