"""PutItem, GetItem, DeleteItem (P1 subset: no expressions yet).

Items travel as the JSON bytes the node stores, so a GetItem answer is assembled by
concatenation, never decoded and encoded again on the router.
"""

from __future__ import annotations

from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api.operations import item_requests
from partita.api.table_keys import key_of_item, key_of_key
from partita.router.context import RouterContext

_RETURN_OLD = orjson.dumps({"return_old": True})


def _attributes(response: pb.Response) -> bytes:
    return b'{"Attributes":' + response.value + b"}" if response.value else b"{}"


async def put_item(ctx: RouterContext, body: Any) -> bytes:
    req = item_requests.validate_put(body)
    table = ctx.tables.require_active(req.table_name)
    key = key_of_item(table.record, req.item)
    request = pb.Request(
        op=pb.PUT,
        key_hash=key.hash,
        key=key.storage_key,
        value=orjson.dumps(req.item),
        body=_RETURN_OLD if req.return_old else b"",
    )
    return _attributes(await ctx.send(table, request))


async def get_item(ctx: RouterContext, body: Any) -> bytes:
    req = item_requests.validate_get(body)
    table = ctx.tables.require_active(req.table_name)
    key = key_of_key(table.record, req.key)
    request = pb.Request(op=pb.GET, key_hash=key.hash, key=key.storage_key, consistent=req.consistent)
    response = await ctx.send(table, request)
    return b'{"Item":' + response.value + b"}" if response.status == pb.OK else b"{}"


async def delete_item(ctx: RouterContext, body: Any) -> bytes:
    req = item_requests.validate_delete(body)
    table = ctx.tables.require_active(req.table_name)
    key = key_of_key(table.record, req.key)
    request = pb.Request(
        op=pb.DELETE, key_hash=key.hash, key=key.storage_key, body=_RETURN_OLD if req.return_old else b""
    )
    return _attributes(await ctx.send(table, request))
