"""The storage node's data path: framed RequestBatches in, framed ResponseBatches out.

Reads are answered inline; the writes of one batch are committed together (one WAL
append_many, sharing an fsync with every other write in flight) by a task, so reads
keep flowing during the fsync. All responses ready in one event-loop turn leave in one
frame.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from google.protobuf.message import DecodeError

from partita._proto import storage_pb2 as pb
from partita.api import capacity
from partita.common import errors
from partita.common.errors import DynamoError
from partita.common.framing import FrameDecoder, FrameError, encode_frame
from partita.common.throughput import Kind
from partita.storage import metrics
from partita.storage.admission import StorageAdmission
from partita.storage.operations import PLANNERS, Plan, error_response

if TYPE_CHECKING:
    from partita.storage.node import NodeState

log = logging.getLogger(__name__)

_WRITES = frozenset((pb.PUT, pb.DELETE, pb.UPDATE))
# The node's partition meters by (table id, partition id), looked up once per request.
_METERS = metrics.meters


class DataPlane:
    """What a connection needs from the node: routing and planning over the engine."""

    def __init__(
        self,
        state: NodeState,
        admission: StorageAdmission | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = state
        # Partition and node buckets; None: not enforced (the default for now).
        self.admission = admission
        self.clock = clock

    def plan(self, request: pb.Request) -> Plan:
        rejected = self.state.route(request)
        if rejected is not None:
            return Plan(rejected)
        if self.admission is not None:
            refused = self._admit(request)
            if refused is not None:
                return Plan(refused)
        planner = PLANNERS.get(request.op)
        if planner is None:
            return Plan(error_response(request.id, errors.validation("unsupported operation")))
        try:
            plan = planner(self.state.engine, request)
            if plan.effects:
                self.state.engine.stage(plan.effects)
        except DynamoError as exc:
            plan = Plan(error_response(request.id, exc))
            if exc.code == "ConditionalCheckFailedException":
                # DynamoDB charges a write whose condition failed; at least one unit.
                plan.response.capacity_units = capacity.write_units(0)
        except Exception:
            log.exception("request %d failed", request.id)
            return Plan(error_response(request.id, errors.internal_server_error()))
        # Metering, inline: this runs for every request the node serves.
        units = plan.response.capacity_units
        if units:
            meter = _METERS.get((request.table_id, request.partition_id))
            if meter is None:
                meter = self._new_meter(request)
            if request.op in _WRITES:
                meter.write.value += units
            else:
                meter.read.value += units
            if self.admission is not None:
                record = self.state.hosted[request.table_id].record
                kind: Kind = "write" if request.op in _WRITES else "read"
                self.admission.charge(record, request.partition_id, kind, units, self.clock())
        return plan

    def _admit(self, request: pb.Request) -> pb.Response | None:
        assert self.admission is not None
        record = self.state.hosted[request.table_id].record
        kind: Kind = "write" if request.op in _WRITES else "read"
        refusal = self.admission.check(record, request.partition_id, kind, self.clock())
        if refusal is None:
            return None
        metrics.THROTTLED.inc((refusal.value, record.name, kind))
        operation = "Write" if kind == "write" else "Read"
        # Both layers are a key range's limit to the client: more throughput at the
        # table would not help, spreading the keys would. The router turns the table's
        # name into its ARN (a node knows no region or account).
        reason = f"Table{operation}KeyRangeThroughputExceeded"
        return error_response(request.id, errors.provisioned_throughput_exceeded([(reason, record.name)]))

    def _new_meter(self, request: pb.Request) -> metrics.PartitionMeter:
        # route() accepted the request, so its table is hosted here.
        name = self.state.hosted[request.table_id].record.name
        return metrics.meter_of(request.table_id, name, request.partition_id)

    async def commit(self, plans: list[Plan]) -> list[pb.Response]:
        try:
            await self.state.engine.commit_staged([p.effects for p in plans if p.effects])
            return [p.response for p in plans]
        except Exception as exc:  # durability failed: no write of this batch is acknowledged
            log.exception("commit failed")
            err = errors.internal_server_error(f"write failed: {exc}")
            return [error_response(p.response.id, err) for p in plans]


class DataProtocol(asyncio.Protocol):
    def __init__(self, plane: DataPlane) -> None:
        self._plane = plane
        self._decoder = FrameDecoder()
        self._transport: asyncio.Transport | None = None
        self._outbox: list[pb.Response] = []
        self._flush_scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        # Kept: asyncio.get_running_loop() makes a getpid() system call every time.
        self._loop = asyncio.get_running_loop()

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except FrameError as exc:
            log.warning("closing data connection: %s", exc)
            if self._transport is not None:
                self._transport.close()
            return
        for frame in frames:
            try:
                batch = pb.RequestBatch.FromString(frame)
            except DecodeError:
                log.warning("closing data connection: a frame is not a RequestBatch")
                if self._transport is not None:
                    self._transport.close()
                return
            writes: list[Plan] = []
            for request in batch.requests:
                plan = self._plane.plan(request)
                if plan.effects:
                    writes.append(plan)
                else:
                    self._send([plan.response])
            if writes:
                task = self._loop.create_task(self._commit(writes))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _commit(self, plans: list[Plan]) -> None:
        self._send(await self._plane.commit(plans))

    def _send(self, responses: list[pb.Response]) -> None:
        self._outbox.extend(responses)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        responses, self._outbox = self._outbox, []
        if self._transport is not None and responses:
            payload = pb.ResponseBatch(responses=responses).SerializeToString()
            self._transport.write(encode_frame(payload))


async def start_data_server(
    plane: DataPlane, host: str, port: int, protocol: Callable[[DataPlane], DataProtocol] = DataProtocol
) -> asyncio.Server:
    """`protocol` makes each connection's handler (tests pass one that records)."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: protocol(plane), host, port, reuse_address=True)
