"""UpdateTable: validate the request into an `UpdateTableRequest`.

Partita acts on BillingMode and ProvisionedThroughput (admission control reads them)
and DeletionProtectionEnabled; the other UpdateTable parameters (indexes, streams, SSE,
replicas, table class) are refused with a clear message until Partita implements them,
rather than accepted and silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.operations import common
from partita.api.shape import Violations, expect_dict, expect_type
from partita.common import errors
from partita.control.model import BillingMode

MAX_TABLE_UNITS = 40_000
_UNSUPPORTED = [
    "GlobalSecondaryIndexUpdates",
    "StreamSpecification",
    "SSESpecification",
    "ReplicaUpdates",
    "TableClass",
    "OnDemandThroughput",
    "WarmThroughput",
    "MultiRegionConsistency",
    "GlobalTableWitnessUpdates",
]


@dataclass(frozen=True)
class UpdateTableRequest:
    table_name: str
    billing_mode: BillingMode | None
    read_capacity: int | None
    write_capacity: int | None
    deletion_protection: bool | None = None  # None: left as it is

    @property
    def changes_throughput(self) -> bool:
        """Whether the autoadmin has something to apply (the table goes UPDATING)."""
        return self.billing_mode is not None or self.read_capacity is not None


def _refuse_unknown_indexes(updates: Any) -> None:
    """No table has a secondary index yet: an index to update or delete is not found.
    The error is DynamoDB's (nubo-db's conformance suite, 2026); the wording follows
    its message for a missing table, as no record of the index's was found."""
    for update in updates if isinstance(updates, list) else []:
        for action in ("Update", "Delete"):
            named = update.get(action) if isinstance(update, dict) else None
            if isinstance(named, dict) and isinstance(named.get("IndexName"), str):
                raise errors.resource_not_found(
                    f"Requested resource not found: Index: {named['IndexName']} not found"
                )


def validate(body: Any) -> UpdateTableRequest:
    body = expect_dict(body)
    v = Violations()
    name = common.string(body, "TableName")
    v.table_name(name)
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
    v.raise_if_any()
    assert name is not None

    unsupported = [p for p in _UNSUPPORTED if body.get(p) is not None]
    protection = body.get("DeletionProtectionEnabled")
    if throughput is None and billing is None and protection is None and not unsupported:
        raise errors.validation(
            "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates "
            "or SSESpecification or ReplicaUpdates is required"
        )
    _refuse_unknown_indexes(body.get("GlobalSecondaryIndexUpdates"))
    if unsupported:
        raise errors.validation(f"Partita does not support updating {', '.join(unsupported)} yet")
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
    return UpdateTableRequest(name, mode, rcu, wcu, protection if isinstance(protection, bool) else None)
