"""UpdateTable: validate the request into an `UpdateTableRequest`, and apply its index
changes to a table spec (`with_index_updates`, pure).

Partita acts on BillingMode and ProvisionedThroughput (admission control reads them),
DeletionProtectionEnabled, and GlobalSecondaryIndexUpdates with the AttributeDefinitions
a Create needs; the other UpdateTable parameters (streams, SSE, replicas, table class,
on-demand and warm throughput) are refused with a clear message until Partita
implements them, rather than accepted and silently ignored.

The checks run in DynamoDB's order, first failure wins after the first step:
1. the request's shape, every constraint violation at once (the front door has checked
   the service model's constraints already, `api/service_model.py`; these are the same
   checks for a direct caller, and an Update without throughput);
2. the request on its own (`validate`): something to change, the index updates' entries
   (one action each, one update per index, one Create or Delete per request), the
   parameters Partita does not implement, what an index Create or Delete may not share
   a request with, then the table's billing mode and throughput;
3. against the table (`with_index_updates`, called by the router after the table's own
   changes): each index update in request order, then a switch to PROVISIONED that
   leaves a global index without throughput.
Where each message comes from is said where it is raised. "The 2026 catalogue" is a
catalogue of DynamoDB's answers probed in 2026 (ack-api-quirks, table-indexes.md and
DDB-TABLE-442: findings DDB-TABLE-015, -149, -151, -152, -159, -160, -162, -164, -169,
-174, -359), the source CreateTable cites too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from partita.api.operations import common, on_demand_throughput, stream_specification, warm_throughput
from partita.api.operations.create_table import (
    MAX_GLOBAL_INDEXES,
    MAX_PROJECTED_ATTRIBUTES,
    check_global_key_schema,
    check_projection,
    key_name_size,
    key_schema_shape,
    projection_shape,
    secondary_index,
    throughput_shape,
)
from partita.api.shape import Violations, expect_dict, expect_type
from partita.common import errors
from partita.control.model import BillingMode, SecondaryIndex, TableSpec

MAX_TABLE_UNITS = 40_000
_UNSUPPORTED = [
    "SSESpecification",
    "ReplicaUpdates",
    "MultiRegionConsistency",
    "GlobalTableWitnessUpdates",
]
# Members of an index Create or Update Partita does not implement, refused by name.
_INDEX_NOT_IMPLEMENTED = ("OnDemandThroughput", "WarmThroughput")
_ACTIONS = ("Update", "Create", "Delete")  # in the order DynamoDB's message names them
IndexAction = Literal["Create", "Update", "Delete"]
_INVALID = common.INVALID


@dataclass(frozen=True)
class IndexUpdate:
    """One entry of GlobalSecondaryIndexUpdates. `index` is a Create's index as sent (it
    is checked against the table, `with_index_updates`); `read_capacity` and
    `write_capacity` are an Update's throughput."""

    action: IndexAction
    name: str
    index: dict[str, Any] | None = None
    read_capacity: int = 0
    write_capacity: int = 0


@dataclass(frozen=True)
class UpdateTableRequest:
    table_name: str
    billing_mode: BillingMode | None
    read_capacity: int | None
    write_capacity: int | None
    deletion_protection: bool | None = None  # None: left as it is
    stream: dict[str, Any] | None = None  # StreamSpecification as sent; None: left as it is
    index_updates: tuple[IndexUpdate, ...] = ()
    # The request's AttributeDefinitions (None: not given); only a Create reads them.
    attribute_definitions: tuple[tuple[str, str], ...] | None = None
    warm_throughput: tuple[int, int] | None = None  # WarmThroughput asked; None: not given
    on_demand_max: on_demand_throughput.Requested | None = None  # OnDemandThroughput's members sent
    table_class: str | None = None  # TableClass asked; None: not given

    @property
    def changes_throughput(self) -> bool:
        """Whether the autoadmin has something to apply (the table goes UPDATING)."""
        return (
            self.billing_mode is not None
            or self.read_capacity is not None
            or self.warm_throughput is not None
        )


def validate(body: Any) -> UpdateTableRequest:
    body = expect_dict(body)
    v = Violations()
    name = common.string(body, "TableName")
    v.table_name(name)
    attr_defs = expect_type(body.get("AttributeDefinitions"), list, "a list")
    _attribute_definitions_shape(attr_defs, v)
    billing = common.string(body, "BillingMode")
    v.enum(billing, "billingMode", ["PROVISIONED", "PAY_PER_REQUEST"])
    throughput = expect_type(body.get("ProvisionedThroughput"), dict, "a structure")
    rcu = wcu = None
    if throughput is not None:
        rcu = common.integer(throughput, "ReadCapacityUnits")
        wcu = common.integer(throughput, "WriteCapacityUnits")
        if v.not_null(rcu, "provisionedThroughput.readCapacityUnits"):
            v.at_least(rcu, "provisionedThroughput.readCapacityUnits", 1)
        if v.not_null(wcu, "provisionedThroughput.writeCapacityUnits"):
            v.at_least(wcu, "provisionedThroughput.writeCapacityUnits", 1)
    updates = expect_type(body.get("GlobalSecondaryIndexUpdates"), list, "a list")
    _index_updates_shape(updates, v)
    v.raise_if_any()
    assert name is not None

    unsupported = [p for p in _UNSUPPORTED if body.get(p) is not None]
    protection = body.get("DeletionProtectionEnabled")
    # An empty GlobalSecondaryIndexUpdates counts as absent here, and AttributeDefinitions
    # asks for no change on its own (the 2026 catalogue, DDB-TABLE-015, -162, -359).
    stream = body.get("StreamSpecification")
    warm = body.get("WarmThroughput")
    on_demand_max = on_demand_throughput.requested(body.get("OnDemandThroughput"))
    table_class = common.string(body, "TableClass")
    changes = [
        throughput,
        billing,
        protection,
        updates or None,
        stream,
        warm,
        on_demand_max,
        table_class,
        *unsupported,
    ]
    if all(c is None for c in changes):
        raise errors.validation(
            "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates "
            "or SSESpecification or ReplicaUpdates is required"
        )
    if updates is not None and not updates:
        # Once another member makes the request one, the empty list is refused itself
        # (the 2026 catalogue, DDB-TABLE-359).
        raise errors.validation(_INVALID + "List of GlobalSecondaryIndexUpdates is empty")
    index_updates = _index_updates(updates or [])
    unsupported += _index_members_not_implemented(updates or [])
    if unsupported:
        raise errors.validation(f"Partita does not support updating {', '.join(unsupported)} yet")
    if any(u.action != "Update" for u in index_updates):
        # What an index Create or Delete may not share a request with (the 2026
        # catalogue, DDB-TABLE-174: a Create with table throughput or deletion
        # protection; a Create with a BillingMode switch or an index Update is accepted).
        if throughput is not None:
            raise errors.validation(_INVALID + "You cannot create or delete index while updating table IOPS")
        if protection is not None and any(u.action == "Create" for u in index_updates):
            raise errors.validation(
                _INVALID + "DeletionProtection modification must be the only operation in the request"
            )
    if stream is not None:
        _check_stream_change(stream, throughput, protection, index_updates)
    if billing == "PROVISIONED" and throughput is None:
        raise errors.validation(
            common.INVALID + "ProvisionedThroughput must be specified when BillingMode is PROVISIONED"
        )
    common.check_units_in_bounds(rcu, wcu)
    for limit_name, units in (("ReadCapacityUnits", rcu), ("WriteCapacityUnits", wcu)):
        if units is not None and units > MAX_TABLE_UNITS:
            raise errors.limit_exceeded(
                f"Subscriber limit exceeded: Provisioned throughput for {limit_name} on a table "
                f"cannot exceed {MAX_TABLE_UNITS}"
            )
    mode: BillingMode | None = billing  # type: ignore[assignment]  # checked against the enum above
    return UpdateTableRequest(
        name,
        mode,
        rcu,
        wcu,
        protection if isinstance(protection, bool) else None,
        index_updates=index_updates,
        attribute_definitions=_definitions(attr_defs, index_updates) if attr_defs is not None else None,
        stream=stream,
        warm_throughput=warm_throughput.asked(warm) if warm is not None else None,
        on_demand_max=on_demand_max,
        table_class=table_class,
    )


def _check_stream_change(
    stream: dict[str, Any], throughput: Any, protection: Any, index_updates: tuple[IndexUpdate, ...]
) -> None:
    """What a change of the stream may not share a request with (the 2026 catalogue,
    DDB-TABLE-437), then its own checks."""
    if throughput is not None:
        raise errors.validation(_INVALID + "You cannot modify stream status while updating table IOPS")
    if any(u.action != "Update" for u in index_updates):
        raise errors.validation(_INVALID + "You cannot create or delete index while changing stream status")
    if protection is not None:
        raise errors.validation(
            _INVALID + "DeletionProtection modification must be the only operation in the request"
        )
    stream_specification.check_update(stream)


# --- shape ------------------------------------------------------------------------------


def _attribute_definitions_shape(attr_defs: list[Any] | None, v: Violations) -> None:
    """CreateTable's constraints on each definition (the same model shape)."""
    for i, d in enumerate(attr_defs or [], 1):
        d = expect_dict(d)
        where = f"attributeDefinitions.{i}.member"
        expect_type(d.get("AttributeName"), str, "a string")
        expect_type(d.get("AttributeType"), str, "a string")
        if v.not_null(d.get("AttributeName"), f"{where}.attributeName"):
            key_name_size(d["AttributeName"], f"{where}.attributeName", v)
        if v.not_null(d.get("AttributeType"), f"{where}.attributeType"):
            v.enum(d["AttributeType"], f"{where}.attributeType", ["B", "N", "S"])


def _index_updates_shape(updates: list[Any] | None, v: Violations) -> None:
    """The constraints of each entry's actions, at DynamoDB's member paths
    ('globalSecondaryIndexUpdates.1.member.update.indexName', dynalite's recordings).
    An Update without ProvisionedThroughput is reported as dynalite recorded it, from
    when the model still required it: Partita implements no other member of an Update."""
    for i, update in enumerate(updates or [], 1):
        at = f"globalSecondaryIndexUpdates.{i}.member"
        update = expect_dict(update)
        for action in _ACTIONS:
            member = expect_type(update.get(action), dict, "a structure")
            if member is None:
                continue
            where = f"{at}.{action.lower()}"
            v.table_name(expect_type(member.get("IndexName"), str, "a string"), f"{where}.indexName")
            if action == "Create":
                key_schema = expect_type(member.get("KeySchema"), list, "a list")
                projection = expect_type(member.get("Projection"), dict, "a structure")
                if v.not_null(key_schema, f"{where}.keySchema"):
                    key_schema_shape(key_schema, f"{where}.keySchema", v, max_length=None)
                if v.not_null(projection, f"{where}.projection"):
                    projection_shape(projection, f"{where}.projection", v)
            if action != "Delete":
                throughput = expect_type(member.get("ProvisionedThroughput"), dict, "a structure")
                if action == "Update" and not any(member.get(m) is not None for m in _INDEX_NOT_IMPLEMENTED):
                    v.not_null(throughput, f"{where}.provisionedThroughput")
                throughput_shape(throughput, f"{where}.provisionedThroughput", v)


def _definitions(
    attr_defs: list[dict[str, Any]], updates: tuple[IndexUpdate, ...]
) -> tuple[tuple[str, str], ...]:
    """The request's definitions, read by a Create only (others ignore them: the 2026
    catalogue, DDB-TABLE-162)."""
    seen: set[str] = set()
    for d in attr_defs if any(u.action == "Create" for u in updates) else ():
        if d["AttributeName"] in seen:
            # Not found recorded for UpdateTable: CreateTable's words, as ScyllaDB
            # recorded them (scylladb/scylladb#13870).
            raise errors.validation(f"Attribute Name is duplicated: {d['AttributeName']}")
        seen.add(d["AttributeName"])
    return tuple((d["AttributeName"], d["AttributeType"]) for d in attr_defs)


# --- the request on its own ---------------------------------------------------------------


def _index_updates(updates: list[dict[str, Any]]) -> tuple[IndexUpdate, ...]:
    """The entries as `IndexUpdate`s: each with exactly one action, no index named twice,
    at most one Create or Delete."""
    out: list[IndexUpdate] = []
    for update in updates:
        actions = [a for a in _ACTIONS if update.get(a) is not None]
        if not actions:
            # dynalite's recording ("should return ValidationException for empty index
            # struct"); the 2026 catalogue, DDB-TABLE-160.
            raise errors.validation(
                _INVALID + "One of GlobalSecondaryIndexUpdate.Update, GlobalSecondaryIndexUpdate.Create, "
                "GlobalSecondaryIndexUpdate.Delete must not be null"
            )
        if len(actions) > 1:
            # The 2026 catalogue, DDB-TABLE-160 (Alternator's test_gsi_updatetable_errors,
            # run against DynamoDB, matches its 'one').
            raise errors.validation(
                _INVALID
                + "Only one global secondary index action is allowed per GlobalSecondaryIndexUpdate object"
            )
        action: IndexAction = actions[0]  # type: ignore[assignment]  # one of _ACTIONS
        member = update[action]
        throughput = member.get("ProvisionedThroughput") or {}
        out.append(
            IndexUpdate(
                action,
                member["IndexName"],
                index=member if action == "Create" else None,
                read_capacity=int(throughput.get("ReadCapacityUnits", 0)),
                write_capacity=int(throughput.get("WriteCapacityUnits", 0)),
            )
        )
    seen: set[str] = set()
    for u in out:
        if u.name in seen:
            # dynalite's recording ("should return ValidationException for repeated
            # GlobalSecondaryIndexUpdates"), on a table that did not exist: before the
            # table is looked up. The 2026 catalogue (DDB-TABLE-160) has it for a Delete
            # and a Create of one name too.
            raise errors.validation(
                _INVALID
                + f"Only one global secondary index update per index is allowed simultaneously. Index: {u.name}"
            )
        seen.add(u.name)
    if sum(u.action != "Update" for u in out) > 1:
        # dynalite's recording (six Deletes of indexes the table lacks: this comes before
        # their existence); Alternator's test_gsi_updatetable_errors and the 2026
        # catalogue (DDB-TABLE-159) for two Creates, two Deletes, a Create and a Delete.
        raise errors.limit_exceeded(
            "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table"
        )
    return tuple(out)


def _index_members_not_implemented(updates: list[dict[str, Any]]) -> list[str]:
    return [
        f"GlobalSecondaryIndexUpdates.{action}.{member}"
        for action in ("Create", "Update")
        for member in _INDEX_NOT_IMPLEMENTED
        if any((u.get(action) or {}).get(member) is not None for u in updates)
    ]


# --- against the table ----------------------------------------------------------------------


def with_index_updates(req: UpdateTableRequest, before: TableSpec, spec: TableSpec, now: float) -> TableSpec:
    """`spec` (`before` with the request's table-level changes made) with the request's
    index updates applied, in request order; a ValidationException (or
    ResourceNotFoundException, LimitExceededException) for the first one the table
    refuses. New indexes are created at `now`. A switch to PAY_PER_REQUEST leaves the
    global indexes without throughput of their own; one to PROVISIONED needs an Update
    with throughput for each."""
    mode = spec.billing_mode
    if mode == "PAY_PER_REQUEST" and before.billing_mode != mode:
        spec = dataclasses.replace(
            spec,
            indexes=tuple(
                dataclasses.replace(i, read_capacity=0, write_capacity=0) if i.kind == "GLOBAL" else i
                for i in spec.indexes
            ),
        )
    for update in req.index_updates:
        if update.action == "Create":
            spec = _created(req, spec, update, now)
        elif update.action == "Delete":
            spec = _deleted(spec, _existing_global(spec, update))
        else:
            spec = _throughput_changed(before, spec, _existing_global(spec, update), update)
    if before.billing_mode == "PAY_PER_REQUEST" and mode == "PROVISIONED":
        updated = {u.name for u in req.index_updates if u.action != "Delete"}
        for index in spec.indexes:
            if index.kind == "GLOBAL" and index.name not in updated:
                # The 2026 catalogue, DDB-TABLE-152: nothing is assigned to an index the
                # switch leaves without throughput.
                raise errors.validation(
                    _INVALID + f"ProvisionedThroughput must be specified for index: {index.name}"
                )
    return spec


def _existing_global(spec: TableSpec, update: IndexUpdate) -> SecondaryIndex:
    """The global index an Update or Delete names."""
    index = next((i for i in spec.indexes if i.name == update.name), None)
    if index is None:
        # The wording follows DynamoDB's for a missing table. (The 2026 catalogue,
        # DDB-TABLE-375, recorded 'Requested resource not found: Index <name> for table
        # <table>' for an Update of an index just deleted.)
        raise errors.resource_not_found(f"Requested resource not found: Index: {update.name} not found")
    if index.kind != "GLOBAL":
        # The 2026 catalogue (DDB-TABLE-442): a local index is named as one, but refused.
        verb = "delete" if update.action == "Delete" else "update"
        raise errors.validation(f"Cannot {verb} an index that is not a GlobalSecondaryIndex: {update.name}")
    return index


def _created(req: UpdateTableRequest, spec: TableSpec, update: IndexUpdate, now: float) -> TableSpec:
    """The spec with the new global index, checked as CreateTable checks one (key schema,
    projection), in UpdateTable's own words where they differ (definitions,
    throughput), then against the table's other indexes."""
    index = update.index
    assert index is not None
    if any(i.name == update.name for i in spec.indexes):
        # The 2026 catalogue (DDB-TABLE-442; this check comes before the schema's);
        # Alternator's test_gsi_updatetable.py, run against DynamoDB, for a global and a
        # local index of the name ('already exists').
        raise errors.validation("Attempting to create an index which already exists")
    if req.attribute_definitions is None:
        # The 2026 catalogue (DDB-TABLE-162, -442).
        raise errors.validation(_INVALID + f"AttributeDefinitions is not specified for index: {update.name}")
    # The new index's keys must be defined in the request itself, even when the table
    # knows them (Alternator's test_gsi_backfill_with_lsi, run against DynamoDB); other
    # definitions in the request are ignored (the 2026 catalogue, DDB-TABLE-162).
    requested = dict(req.attribute_definitions)
    key_names = [k["AttributeName"] for k in index["KeySchema"]]
    if any(n not in requested for n in key_names):
        # DynamoDB's answer to a Create whose sort key had no definition in the request
        # (alexdebrie/dynamodbguide.com#16, 2019); not recorded for a partition key.
        raise errors.validation("Invalid KeySchema: Some index key attribute have no definition")
    _check_redefinition(spec, index, requested)
    check_global_key_schema(index)
    check_projection(index)
    _check_throughput(index, spec.billing_mode)
    if sum(i.kind == "GLOBAL" for i in spec.indexes) >= MAX_GLOBAL_INDEXES:
        # The 2026 catalogue (DDB-TABLE-169): a LimitExceededException here, where
        # CreateTable answers a ValidationException.
        raise errors.limit_exceeded(
            f"Subscriber limit exceeded: Number of global secondary indexes exceeds per-table limit of "
            f"{MAX_GLOBAL_INDEXES}"
        )
    projected = sum(len(i.non_key_attributes) for i in spec.indexes)
    if projected + len(index["Projection"].get("NonKeyAttributes") or []) > MAX_PROJECTED_ATTRIBUTES:
        # Not found recorded: CreateTable's words for the documented limit.
        raise errors.validation(
            _INVALID
            + f"Number of projected attributes in all indexes exceeds limit of {MAX_PROJECTED_ATTRIBUTES}"
        )
    new = dataclasses.replace(secondary_index(index, "GLOBAL", requested, spec.billing_mode), created_at=now)
    known = {n for n, _ in spec.attribute_definitions}
    added = tuple((n, requested[n]) for n in dict.fromkeys(key_names) if n not in known)
    return dataclasses.replace(
        spec,
        indexes=(*spec.indexes, new),
        attribute_definitions=(*spec.attribute_definitions, *added),
    )


def _check_redefinition(spec: TableSpec, index: dict[str, Any], requested: dict[str, str]) -> None:
    """A key attribute of the new index the table already defines with another type.

    DynamoDB's words as Alternator's test_gsi_key_type_conflict_on_update (run against
    DynamoDB) quotes them, for a one-attribute key on both sides: each schema as
    `Schema:[SchemaElement: key{name:type:KEYTYPE}]`. Partita lists every element of the
    existing key schema that uses the attribute (the table's, else the first index's)
    and of the new one, comma-separated as Java prints a list."""
    defined = dict(spec.attribute_definitions)
    for key in index["KeySchema"]:
        name = key["AttributeName"]
        if name in defined and defined[name] != requested[name]:
            existing = next(s for s in _key_schemas(spec) if any(n == name for n, _, _ in s))
            new = [
                (k["AttributeName"], requested[k["AttributeName"]], k["KeyType"]) for k in index["KeySchema"]
            ]
            raise errors.validation(
                _INVALID + "Attributes cannot be redefined. Please check that your attribute has the same "
                f"type as previously defined. Existing schema: {_schema_text(existing)} New schema: "
                f"{_schema_text(new)}"
            )


def _key_schemas(spec: TableSpec) -> Iterable[list[tuple[str, str, str]]]:
    """The table's key schema, then each index's, as (name, type, key type)."""
    keys = [(spec.partition_key, spec.sort_key)] + [(i.partition_key, i.sort_key) for i in spec.indexes]
    for partition, sort in keys:
        yield [(e.name, e.type, kind) for e, kind in ((partition, "HASH"), (sort, "RANGE")) if e is not None]


def _schema_text(schema: list[tuple[str, str, str]]) -> str:
    elements = [f"SchemaElement: key{{{name}:{kind}:{key_type}}}" for name, kind, key_type in schema]
    return f"Schema:[{', '.join(elements)}]"


def _check_throughput(index: dict[str, Any], mode: BillingMode) -> None:
    """A new global index has throughput exactly when the table is provisioned (after a
    BillingMode switch in the same request), in UpdateTable's words (the 2026 catalogue:
    DDB-TABLE-152 for a provisioned table, DDB-TABLE-442 for an on-demand one)."""
    throughput = index.get("ProvisionedThroughput")
    name = index["IndexName"]
    if mode == "PAY_PER_REQUEST" and throughput is not None:
        raise errors.validation(
            _INVALID + f"Neither ReadCapacityUnits nor WriteCapacityUnits can be specified for index: {name} "
            "when BillingMode is PAY_PER_REQUEST"
        )
    if mode == "PROVISIONED" and throughput is None:
        raise errors.validation(
            _INVALID + f"Both ReadCapacityUnits and WriteCapacityUnits must be specified for index: {name}"
        )
    if throughput is not None:
        # Not found recorded for an index: the table's bound, in the table's words.
        common.check_units_in_bounds(throughput["ReadCapacityUnits"], throughput["WriteCapacityUnits"])


def _deleted(spec: TableSpec, index: SecondaryIndex) -> TableSpec:
    """The spec without the index, nor the definitions only its key used (DynamoDB prunes
    them once the index is gone: the 2026 catalogue, DDB-TABLE-149, -151)."""
    kept = tuple(i for i in spec.indexes if i.name != index.name)
    used = {spec.partition_key.name} | ({spec.sort_key.name} if spec.sort_key else set())
    used |= {n for i in kept for n in i.key_names}
    return dataclasses.replace(
        spec,
        indexes=kept,
        attribute_definitions=tuple(d for d in spec.attribute_definitions if d[0] in used),
    )


def _throughput_changed(
    before: TableSpec, spec: TableSpec, index: SecondaryIndex, update: IndexUpdate
) -> TableSpec:
    if spec.billing_mode == "PAY_PER_REQUEST":
        # The 2026 catalogue (DDB-TABLE-152, -164).
        raise errors.validation(
            _INVALID
            + f"The only Updates for index: {index.name} when TableThroughputMode is PAY_PER_REQUEST "
            "can be to OnDemandThroughput, WarmThroughput"
        )
    common.check_units_in_bounds(update.read_capacity, update.write_capacity)
    asked = (update.read_capacity, update.write_capacity)
    if before.billing_mode == "PROVISIONED" and asked == (index.read_capacity, index.write_capacity):
        # The 2026 catalogue (DDB-TABLE-164) recorded this far: '... Current
        # WriteCapacityUnits ...'; the rest follows the table's message.
        raise errors.validation(
            f"The provisioned throughput for the index {index.name} will not change. The requested value "
            f"equals the current value. Current ReadCapacityUnits provisioned for index {index.name}: "
            f"{index.read_capacity}. Requested ReadCapacityUnits: {update.read_capacity}. Current "
            f"WriteCapacityUnits provisioned for index {index.name}: {index.write_capacity}. Requested "
            f"WriteCapacityUnits: {update.write_capacity}. Refer to the Amazon DynamoDB Developer Guide for "
            "current limits and how to request higher limits."
        )
    changed = dataclasses.replace(
        index, read_capacity=update.read_capacity, write_capacity=update.write_capacity
    )
    return dataclasses.replace(
        spec, indexes=tuple(changed if i.name == index.name else i for i in spec.indexes)
    )
