"""Whether an access key may make a request: its own tables, and the tables' policies.

A key lists the tables it may use (`credentials.json`); a table's resource-based
policies (PutResourcePolicy) then decide as IAM decides within one account: an
explicit Deny that matches the key refuses the request, whatever the key lists; an
Allow lets the key do what it names on a table the key does not list. Checked before
any work, for every table a request names, with the IAM actions the request stands for
(`actions`): a transaction's item actions, PartiQL's `PartiQLSelect`..., an index's or
a stream's ARN as the resource where the request reads one.

A table without policies costs one dictionary look-up here: the common case.

A key for every table (`"*"`) may always read, replace and delete a policy, as an
account's root user may: a policy that denies everyone cannot lock the cluster's
operators out of the table for good.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from partita.api import resource_policy, streams
from partita.api.partiql import parser as partiql_parser
from partita.api.resource_policy import Decision, Policy
from partita.common import errors
from partita.control.model import ResourcePolicy
from partita.router.context import RouterContext
from partita.router.credentials import ALL_TABLES, Credential

POLICY_OPERATIONS = frozenset({"GetResourcePolicy", "PutResourcePolicy", "DeleteResourcePolicy"})
STREAM_OPERATIONS = frozenset({"DescribeStream", "GetShardIterator", "GetRecords"})
_TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
_PARTIQL_ACTIONS = {
    "SELECT": "PartiQLSelect",
    "INSERT": "PartiQLInsert",
    "UPDATE": "PartiQLUpdate",
    "DELETE": "PartiQLDelete",
}
_CACHE_LIMIT = 4096


class PolicyCache:
    """Compiled policies by document: each is parsed once, not on every request."""

    def __init__(self) -> None:
        self._compiled: dict[str, Policy] = {}

    def compiled(self, policy: ResourcePolicy) -> Policy:
        found = self._compiled.get(policy.document)
        if found is None:
            if len(self._compiled) >= _CACHE_LIMIT:
                self._compiled.clear()
            # Stored documents were checked when put; a parse cannot fail here.
            found = self._compiled[policy.document] = resource_policy.parse(policy.document)
        return found


@dataclass(frozen=True)
class Caller:
    """Where a request came from, for policies' conditions."""

    address: str = ""
    secure: bool = False


def check(
    ctx: RouterContext,
    cache: PolicyCache,
    credential: Credential,
    operation: str,
    payload: dict[str, Any],
    tables: list[str],
    caller: Caller = Caller(),
) -> None:
    """AccessDeniedException unless `credential` may make this request on `tables`."""
    context: dict[str, str] | None = None
    principal: frozenset[str] = frozenset()
    for table in tables:
        cached = ctx.tables.tables.get(table)
        policies = cached.record.policies if cached is not None else ()
        listed = credential.may_access(table)
        if not policies:
            if not listed:
                raise _denied(ctx, credential, operation, ctx.table_arn(table))
            continue
        if operation in POLICY_OPERATIONS and ALL_TABLES in credential.tables:
            continue
        if context is None:  # once per request, and only for a table with policies
            principal = resource_policy.principal_names(ctx.settings.account_id, credential.name)
            context = condition_context(ctx, credential, caller, time.time())
        for action, resource in actions(ctx, operation, payload, table):
            decision = _decision(cache, policies, resource, principal, f"dynamodb:{action}", context)
            if decision is Decision.DENY or (decision is Decision.NONE and not listed):
                raise _denied(ctx, credential, action, resource, explicit=decision is Decision.DENY)


def _decision(
    cache: PolicyCache,
    policies: tuple[ResourcePolicy, ...],
    resource: str,
    principal: frozenset[str],
    action: str,
    context: dict[str, str],
) -> Decision:
    # A stream's policy governs its stream; the table's, the table and its indexes.
    stream = resource.partition("/stream/")[2]
    decision = Decision.NONE
    for policy in policies:
        if policy.resource == stream:
            decision = cache.compiled(policy).decision(principal, action, resource, context)
    return decision


def condition_context(
    ctx: RouterContext, credential: Credential, caller: Caller, now: float
) -> dict[str, str]:
    """The condition keys a request carries (`resource_policy.CONTEXT_KEYS`)."""
    name = credential.name or credential.access_key_id
    context = {
        "aws:principalarn": ctx.user_arn(name),
        "aws:principalaccount": ctx.settings.account_id,
        "aws:principaltype": "User",
        "aws:username": name,
        "aws:userid": credential.access_key_id,
        "aws:securetransport": "true" if caller.secure else "false",
        "aws:currenttime": datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "aws:epochtime": str(int(now)),
        "aws:requestedregion": ctx.settings.region,
    }
    if caller.address:
        context["aws:sourceip"] = caller.address
    return context


def actions(
    ctx: RouterContext, operation: str, payload: dict[str, Any], table: str
) -> Iterator[tuple[str, str]]:
    """The (IAM action, resource ARN) pairs a request asks of `table`."""
    arn = ctx.table_arn(table)
    if operation == "TransactWriteItems" or operation == "TransactGetItems":
        for entry in _listed(payload, "TransactItems"):
            for kind, action in entry.items():
                if isinstance(action, dict) and action.get("TableName") == table:
                    yield _TRANSACT_ACTIONS.get(kind, "GetItem"), arn
    elif operation in ("ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"):
        for entry in _statements(payload):
            head = partiql_parser.head(entry["Statement"], entry.get("Parameters"))
            if head is not None and head[1] == table:  # the batch's statements on this table
                verb = entry["Statement"].split(None, 1)[0].upper()
                yield _PARTIQL_ACTIONS.get(verb, "PartiQLSelect"), arn
    elif operation in STREAM_OPERATIONS:
        yield operation, _stream_arn(payload, arn)
    elif operation in ("Query", "Scan") and isinstance(payload.get("IndexName"), str):
        yield operation, f"{arn}/index/{payload['IndexName']}"
    elif operation in POLICY_OPERATIONS and isinstance(payload.get("ResourceArn"), str):
        yield operation, payload["ResourceArn"]
    else:
        yield operation, arn


def _listed(payload: dict[str, Any], member: str) -> list[dict[str, Any]]:
    value = payload.get(member)
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def _statements(payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    entries = [payload, *_listed(payload, "Statements"), *_listed(payload, "TransactStatements")]
    return (e for e in entries if isinstance(e.get("Statement"), str))


def _stream_arn(payload: dict[str, Any], table_arn: str) -> str:
    named = payload.get("StreamArn")
    if isinstance(named, str):
        return named
    text = payload.get("ShardIterator")
    if isinstance(text, str):
        try:
            iterator = streams.parse_iterator(text, 0.0, expiring=False)
        except errors.DynamoError:
            return table_arn
        return f"{table_arn}/stream/{streams.label_of_ms(iterator.stream_ms)}"
    return table_arn


def _denied(
    ctx: RouterContext, credential: Credential, action: str, resource: str, *, explicit: bool = False
) -> errors.DynamoError:
    who = credential.name or credential.access_key_id
    if explicit:
        # IAM's wording for a refusal by a resource-based policy's Deny.
        return errors.access_denied(
            f"User: {ctx.user_arn(who)} is not authorized to perform: dynamodb:{action} on resource: "
            f"{resource} with an explicit deny in a resource-based policy"
        )
    return errors.access_denied(
        f"User: {who} is not authorized to perform: dynamodb:{action} on resource: {resource}"
    )
