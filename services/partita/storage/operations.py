"""What a storage node does with one data request: pure planning over the engine's state.

`plan` turns a request into either an immediate response (reads, failed conditions) or
the effects to commit plus the response to send once they are durable. It reads the
engine's newest state (including durable-pending writes) and never awaits, so a
read-modify-write is atomic with respect to every other request on the node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import orjson

from partita._proto import storage_pb2 as pb
from partita.common.errors import DynamoError
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine


@dataclass(slots=True)
class Plan:
    response: pb.Response
    effects: list[Effect] | None = None  # None: answer now; else commit first


def error_response(request_id: int, error: DynamoError) -> pb.Response:
    return pb.Response(
        id=request_id,
        status=pb.ERROR,
        error_code=error.code,
        error_message=error.message,
        error_body=orjson.dumps(error.extra) if error.extra else b"",
    )


def _options(request: pb.Request) -> dict[str, object]:
    return orjson.loads(request.body) if request.body else {}


def plan_get(engine: Engine, request: pb.Request) -> Plan:
    value = engine.get(request.key)
    if value is None:
        return Plan(pb.Response(id=request.id, status=pb.NOT_FOUND))
    return Plan(pb.Response(id=request.id, status=pb.OK, value=value))


def plan_put(engine: Engine, request: pb.Request) -> Plan:
    options = _options(request)
    response = pb.Response(id=request.id, status=pb.OK)
    if options.get("return_old"):
        old = engine.latest(request.key)
        if old is not None:
            response.value = old
    return Plan(response, [Effect(Kind.PUT, request.key, request.value)])


def plan_delete(engine: Engine, request: pb.Request) -> Plan:
    options = _options(request)
    response = pb.Response(id=request.id, status=pb.OK)
    old = engine.latest(request.key)
    if options.get("return_old") and old is not None:
        response.value = old
    if old is None:
        # Nothing to delete: acknowledge without a WAL record.
        return Plan(response)
    return Plan(response, [Effect(Kind.DELETE, request.key)])


PLANNERS: dict[int, Callable[[Engine, pb.Request], Plan]] = {
    pb.GET: plan_get,
    pb.PUT: plan_put,
    pb.DELETE: plan_delete,
}
