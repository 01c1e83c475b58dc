"""The storage node's data path: framed RequestBatches in, framed ResponseBatches out.

Reads are answered inline; the writes of one batch are committed together (one WAL
append_many, sharing an fsync with every other write in flight) by a task, so reads
keep flowing during the fsync. All responses ready in one event-loop turn leave in one
frame.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import orjson
from google.protobuf.message import DecodeError

from partita._proto import storage_pb2 as pb
from partita.api import capacity
from partita.common import errors, keys
from partita.common.errors import DynamoError
from partita.common.framing import FrameDecoder, FrameError, encode_frame
from partita.common.partition_map import Partition
from partita.common.throughput import Kind
from partita.storage import metrics
from partita.storage.admission import Refusal, StorageAdmission, partition_rate
from partita.storage.effects import Effect
from partita.storage.effects import Kind as EffectKind
from partita.storage.group_log import group_of
from partita.storage.heat import PartitionHeat
from partita.storage.operations import PLANNERS, Plan, error_response
from partita.storage.replica_host import Superseded
from partita.storage.replication.core import NotLeader
from partita.storage.stream_reads import plan_stream_read, plan_stream_trim
from partita.storage.transactions import plan_prepare, plan_resolve

if TYPE_CHECKING:
    from partita.storage.node import NodeState

log = logging.getLogger(__name__)

_WRITES = frozenset((pb.PUT, pb.DELETE, pb.UPDATE, pb.TX_PREPARE, pb.TX_RESOLVE, pb.STREAM_TRIM))
# Requests admitted without the partition's buckets: a transaction's resolution (it
# finishes work admitted when prepared), stream reads (DynamoDB Streams' reads are not
# charged to the table's capacity) and the leader's own trims of old stream records.
_UNMETERED = frozenset((pb.TX_RESOLVE, pb.STREAM_READ, pb.STREAM_TRIM))
# Requests that name several keys (in their body), all in the request's partition.
_MULTI_KEY = frozenset((pb.TX_PREPARE, pb.TX_RESOLVE))
_PLANNERS = {
    **PLANNERS,
    pb.TX_PREPARE: plan_prepare,
    pb.TX_RESOLVE: plan_resolve,
    pb.STREAM_READ: plan_stream_read,
    pb.STREAM_TRIM: plan_stream_trim,
}
# Answers that send the router elsewhere: they read no item.
_REROUTED = frozenset((pb.NOT_LEADER, pb.WRONG_PARTITION, pb.UNAVAILABLE))
# A replicated write or strong read not decided by then is answered as of unknown outcome.
PROPOSAL_TIMEOUT_SECONDS = 5.0
# The node's partition meters by (table id, partition id), looked up once per request.
_METERS = metrics.meters


def not_leader(request_id: int, leader: str | None) -> pb.Response:
    return pb.Response(id=request_id, status=pb.NOT_LEADER, leader_hint=leader or "")


@dataclass
class Held:
    """A write's answer without effects, read from a write still pending on its key."""

    request: pb.Request
    response: pb.Response
    seen: bytes | None  # the key's value the answer was read from
    settled: asyncio.Future[None]  # the writes pending then are decided


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
        owner = self.state.owner(request)
        if owner is None or (request.op in _MULTI_KEY and not _owns_every_key(owner, request)):
            return Plan(pb.Response(id=request.id, status=pb.WRONG_PARTITION))
        # A transaction's resolution finishes work admitted when it was prepared: never
        # refused, or a committed transaction would stay invisible until swept.
        if self.admission is not None and request.op not in _UNMETERED and not request.unmetered:
            refused = self._admit(request)
            if refused is not None:
                return Plan(refused)
        group = self.state.replicated_group(request.table_id, owner)
        if group is None and self.state.awaits_group(owner):
            # A split child whose parent this replica has not applied up to the split:
            # the router tries another replica.
            return Plan(not_leader(request.id, None))
        if group is not None and owner.parent_index and self.state.engine.applied_index(group) == 0:
            # A newcomer to a split child (it missed the split): its copy of the range is
            # the parent's, stale, until the leader's snapshot is installed.
            return Plan(not_leader(request.id, None))
        if group is not None and self.state.engine.installing(group):
            # A snapshot install cut short by a crash: the range is emptied until the
            # install is redone (or the log has rebuilt it).
            return Plan(not_leader(request.id, None))
        if group is not None and request.op in _WRITES:
            return self._plan_replicated(request, owner, group)
        return self._plan_local(request, owner, group)

    def _plan_local(self, request: pb.Request, owner: Partition, group: str | None) -> Plan:
        """`group`: the partition's replication group, None for a single replica (its
        WAL group is then named only if the request writes: reads pay nothing for it)."""
        planner = _PLANNERS.get(request.op)
        if planner is None:
            return Plan(error_response(request.id, errors.validation("unsupported operation")))
        try:
            plan = planner(self.state.engine, request)
            if plan.effects:
                plan.group = group if group is not None else group_of(request.table_id, owner.partition_id)
                if request.body:  # a stream record comes only with options (a plain PutItem has none)
                    _place_stream_records(plan.effects, request.table_id, owner)
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
            # A Scan's units are spread over its range, not at one key: splitting cannot
            # relieve a scanned partition, so scans do not heat it.
            if request.op != pb.SCAN:
                self._heat(request, owner).record(
                    request.key_hash,
                    0.0 if request.op in _WRITES else units,
                    units if request.op in _WRITES else 0.0,
                    self.clock(),
                )
            if self.admission is not None and not request.unmetered:
                record = self.state.hosted[request.table_id].record
                kind: Kind = "write" if request.op in _WRITES else "read"
                self.admission.charge(record, request.partition_id, kind, units, self.clock())
        return plan

    def _heat(self, request: pb.Request, owner: Partition) -> PartitionHeat:
        """The partition's heat tracker (split for consumption), made on first use."""
        key = (request.table_id, owner.partition_id)
        heat = self.state.heat.get(key)
        if heat is None:
            record = self.state.hosted[request.table_id].record
            heat = PartitionHeat(
                self.clock(), partition_rate(record, "read"), partition_rate(record, "write")
            )
            self.state.heat[key] = heat
        return heat

    def _plan_replicated(self, request: pb.Request, owner: Partition, group: str) -> Plan:
        """A write to a replicated partition: planned and proposed in one synchronous
        step on the leader, so proposals keep the order of the plans they build on."""
        replicas = self.state.replicas
        assert replicas is not None  # replicated_group said so
        if not replicas.is_leader(group):
            return Plan(not_leader(request.id, replicas.leader_of(group)))
        if not replicas.ready_to_plan(group):  # just elected: one round trip, then retried
            return Plan(pb.Response(id=request.id, status=pb.UNAVAILABLE))
        if owner.split_at or replicas.is_sealed(group):
            # Splitting at a log index: the router retries once the children serve.
            return Plan(pb.Response(id=request.id, status=pb.UNAVAILABLE))
        plan = self._plan_local(request, owner, group)
        if plan.effects:
            try:
                plan.response.log_index, plan.proposal = replicas.submit(group, plan.effects)
            except NotLeader as exc:  # handing leadership off
                self.state.engine.unstage(plan.effects)
                return Plan(not_leader(request.id, exc.leader))
        return plan

    def hold(self, request: pb.Request, plan: Plan) -> Held | None:
        """A write answered without effects (a failed condition) whose plan read a write
        still pending on its key: held until that write is decided, since a client told
        "the condition failed" must then find the item in a strongly consistent read.
        None: answer now. Called in the plan's synchronous step."""
        if request.op not in _WRITES or plan.response.status in _REROUTED:
            return None
        engine = self.state.engine
        if not engine.pending(request.key):
            return None
        return Held(request, plan.response, engine.latest(request.key), engine.settled(request.key))

    def begin(self, request: pb.Request) -> pb.Response | Plan | Coroutine[Any, Any, pb.Response]:
        """A request's first, synchronous step, the same whichever path brought it: its
        answer now; or a write's plan to commit (`commit`, with the others of its batch);
        or what yields its answer once a wait ends (a gated read, a held answer)."""
        if request.consistent or request.read_floor:
            gate = self.read_gate(request)
            if gate is not None:
                return gate if isinstance(gate, pb.Response) else self._read_after(gate, request)
        plan = self.plan(request)
        if plan.effects:
            return plan
        held = self.hold(request, plan)
        return plan.response if held is None else self._held_answer(held)

    async def _read_after(self, gate: asyncio.Future[None], request: pb.Request) -> pb.Response:
        """A gated read's answer once its gate opens (the lease, the read's floor applied)."""
        try:
            await asyncio.wait_for(gate, PROPOSAL_TIMEOUT_SECONDS)
        except NotLeader as exc:
            return not_leader(request.id, exc.leader)
        except Exception:
            return pb.Response(id=request.id, status=pb.UNAVAILABLE)
        return self.plan(request).response

    async def _held_answer(self, held: Held) -> pb.Response:
        return (await self.answer_held(held))[0]

    async def answer_held(self, held: Held) -> list[pb.Response]:
        """The held answer once the value it read is committed; if that write was
        dropped (a failed commit, a lost leadership), the request planned again."""
        deadline = self.clock() + PROPOSAL_TIMEOUT_SECONDS
        engine = self.state.engine
        while True:
            try:
                await asyncio.wait_for(held.settled, max(0.0, deadline - self.clock()))
            except TimeoutError:  # nothing was written: the router may send it again
                return [pb.Response(id=held.request.id, status=pb.UNAVAILABLE)]
            if engine.get(held.request.key) == held.seen:
                return [held.response]
            plan = self.plan(held.request)
            if plan.effects:
                return await self.commit([plan])
            again = self.hold(held.request, plan)
            if again is None:
                return [plan.response]
            held = again

    def read_gate(self, request: pb.Request) -> asyncio.Future[None] | pb.Response | None:
        """What a read of a replicated partition must wait for, or its answer instead of
        the item. None: read now. A strongly consistent read: NOT_LEADER off the leader,
        else the leader's read gate. An eventually consistent one with a floor
        (`read_floor`, read-your-writes): now if this replica has applied that far; else
        NOT_LEADER from a follower (the router asks the leader rather than this replica
        answering with an item older than a write it acknowledged), and on a leader
        still applying its predecessor's entries, its read gate."""
        if request.op in _WRITES or not (request.consistent or request.read_floor):
            return None
        owner = self.state.owner(request)
        if owner is None:
            return None
        group = self.state.replicated_group(request.table_id, owner)
        replicas = self.state.replicas
        if group is None and self.state.awaits_group(owner):
            return not_leader(request.id, None)
        if group is None or replicas is None:
            return None
        if self.state.engine.installing(group):
            return not_leader(request.id, None if replicas.is_leader(group) else replicas.leader_of(group))
        if not request.consistent and self.state.engine.applied_index(group) >= request.read_floor:
            return None
        if not replicas.is_leader(group):
            return not_leader(request.id, replicas.leader_of(group))
        return replicas.read_gate(group)

    def _admit(self, request: pb.Request) -> pb.Response | None:
        assert self.admission is not None
        record = self.state.hosted[request.table_id].record
        kind: Kind = "write" if request.op in _WRITES else "read"
        refusal = self.admission.check(record, request.partition_id, kind, self.clock())
        if refusal is None:
            return None
        metrics.THROTTLED.inc((refusal.value, record.name, kind))
        operation = "Write" if kind == "write" else "Read"
        # A partition holding its table's whole rate is refused as the table is (the
        # router, refusing the same load a moment later, would say so too). Otherwise
        # either layer is a key range's limit to the client: more throughput at the
        # table would not help, spreading the keys would. The router turns the table's
        # name into its ARN (a node knows no region or account).
        whole = refusal is Refusal.PARTITION and self.admission.holds_table_rate(
            record, request.partition_id, kind
        )
        limit = "Provisioned" if whole else "KeyRange"
        reason = f"Table{operation}{limit}ThroughputExceeded"
        return error_response(request.id, errors.provisioned_throughput_exceeded([(reason, record.name)]))

    def _new_meter(self, request: pb.Request) -> metrics.PartitionMeter:
        # route() accepted the request, so its table is hosted here.
        name = self.state.hosted[request.table_id].record.name
        return metrics.meter_of(request.table_id, name, request.partition_id)

    async def commit(self, plans: list[Plan]) -> list[pb.Response]:
        local = [p for p in plans if p.effects and p.proposal is None]
        replicated = [p for p in plans if p.proposal is not None]
        answers: dict[int, pb.Response] = {}
        if replicated:
            outcomes = await self._settle(replicated)
            answers = {id(p): r for p, r in zip(replicated, outcomes, strict=True)}
        try:
            if local:
                await self.state.engine.commit_staged(
                    [p.effects or [] for p in local], [p.group for p in local]
                )
        except Exception as exc:  # durability failed: no write of this batch is acknowledged
            log.exception("commit failed")
            err = errors.internal_server_error(f"write failed: {exc}")
            for p in local:
                answers[id(p)] = error_response(p.response.id, err)
        return [answers.get(id(p), p.response) for p in plans]

    async def _settle(self, plans: list[Plan]) -> list[pb.Response]:
        """The answers to replicated writes once their proposals are decided.

        One waiter and one timer for the batch: a task, a `shield` and a `wait_for`
        timer per write were a few % of a leader's loop (docs/benchmarks.md, round 5).
        Each write is unstaged as soon as its own proposal is decided, not when the
        batch is: a dropped write must stop being read by new plans at once."""
        engine = self.state.engine
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        undecided = len(plans)
        staged = [True] * len(plans)

        def decided(i: int) -> None:
            nonlocal undecided
            if staged[i]:
                staged[i] = False
                engine.unstage(plans[i].effects or [])
                undecided -= 1
                if undecided == 0 and not waiter.done():
                    waiter.set_result(None)

        callbacks = [_on_done(decided, i) for i in range(len(plans))]
        for plan, callback in zip(plans, callbacks, strict=True):
            assert plan.proposal is not None and plan.effects is not None
            plan.proposal.add_done_callback(callback)
        try:
            # Not the proposals themselves: a timeout must not cancel them.
            await asyncio.wait_for(waiter, PROPOSAL_TIMEOUT_SECONDS)
        except TimeoutError:
            pass
        finally:
            for i, (plan, callback) in enumerate(zip(plans, callbacks, strict=True)):
                if staged[i]:
                    assert plan.proposal is not None
                    plan.proposal.remove_done_callback(callback)
                    # Decided later, if ever, with nobody waiting: no "never retrieved".
                    plan.proposal.add_done_callback(_retrieve)
                    decided(i)
        return [self._outcome(plan) for plan in plans]

    def _outcome(self, plan: Plan) -> pb.Response:
        proposal = plan.proposal
        assert proposal is not None
        if not proposal.done():  # too slow: the outcome is unknown
            log.warning("replicated write of %s undecided: timeout", plan.group)
            return error_response(plan.response.id, errors.internal_server_error("write outcome unknown"))
        exc = None if proposal.cancelled() else proposal.exception()
        if exc is None and not proposal.cancelled():
            return plan.response
        if isinstance(exc, NotLeader):  # the write never entered the log
            return not_leader(plan.response.id, exc.leader)
        if isinstance(exc, Superseded):  # a new leader's entry took its place: it never happened
            return pb.Response(id=plan.response.id, status=pb.UNAVAILABLE)
        # Leadership lost, or cancelled: the outcome is unknown.
        log.warning("replicated write of %s undecided: %r", plan.group, exc)
        return error_response(plan.response.id, errors.internal_server_error("write outcome unknown"))


def _place_stream_records(effects: list[Effect], table_id: int, owner: Partition) -> None:
    """A stream record's key names its stream (the planner's 8 bytes); here it gets the
    shard's whole prefix, which only the partition knows."""
    for i, effect in enumerate(effects):
        if effect.kind is EffectKind.STREAM_RECORD and len(effect.key) == keys.STREAM_TIME.size:
            prefix = keys.stream_shard_prefix(
                table_id, owner.start, keys.STREAM_TIME.unpack(effect.key)[0], owner.partition_id
            )
            effects[i] = Effect(EffectKind.STREAM_RECORD, prefix, effect.value)


def _owns_every_key(owner: Partition, request: pb.Request) -> bool:
    """Whether every key a transaction's request names is in the partition (the router
    grouped them by its partition map, which a split may have changed since)."""
    body = orjson.loads(request.body)
    encoded = body.get("keys") or [action["key"] for action in body.get("actions", ())]
    return all(owner.start <= keys.parse_item_key(base64.b64decode(k))[1] < owner.end for k in encoded)


def _on_done(decided: Callable[[int], None], i: int) -> Callable[[asyncio.Future[None]], None]:
    return lambda _: decided(i)


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


class LocalDataChannel:
    """The data path to this node from a router in the same process (`partita storage
    --router-port`): each request goes to the plane as a call, not framed over a socket,
    so a read served by the local replica costs no system call and no encoding. Writes
    are committed one request at a time (a socket's batch commits a frame's together);
    they still share the WAL's fsync with every other write in flight."""

    def __init__(self, plane: DataPlane) -> None:
        self._plane = plane

    async def call(self, request: pb.Request) -> pb.Response:
        step = self._plane.begin(request)
        if isinstance(step, pb.Response):
            return step
        if isinstance(step, Plan):
            return (await self._plane.commit([step]))[0]
        return await step


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
                step = self._plane.begin(request)
                if isinstance(step, pb.Response):
                    self._send([step])
                elif isinstance(step, Plan):
                    writes.append(step)
                else:
                    self._spawn(self._answer_later(step))
            if writes:
                self._spawn(self._commit(writes))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = self._loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _commit(self, plans: list[Plan]) -> None:
        self._send(await self._plane.commit(plans))

    async def _answer_later(self, answer: Coroutine[Any, Any, pb.Response]) -> None:
        self._send([await answer])

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
