"""PutResourcePolicy, GetResourcePolicy, DeleteResourcePolicy.

A table's policies (its own and its streams') live on its spec, so every change is a
compare-and-swap of the spec (`table_spec.change`) and a policy goes with its table:
DeleteTable drops it, and a table created again under the name starts with none.
Policies, like tags, do not move the spec's generation.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from partita.api import streams
from partita.api.operations import resource_policy
from partita.api.operations.resource_policy import TABLE, Target
from partita.common import errors
from partita.control.model import ResourcePolicy, TableSpec
from partita.router.actions import table_spec
from partita.router.context import RouterContext

Policies = tuple[ResourcePolicy, ...]


def _missing(target: Target) -> errors.DynamoError:
    if target.stream == TABLE:
        return errors.table_not_found(target.table_name)
    return errors.resource_not_found(f"Requested resource not found: Stream: {target.arn} not found")


def _check_target(ctx: RouterContext, spec: TableSpec, target: Target) -> None:
    """The ARN must be this table's (this account and region) and, for a stream, name
    one that can still be read."""
    table_arn = ctx.table_arn(spec.name)
    if target.stream == TABLE:
        if target.arn != table_arn:
            raise _missing(target)
        return
    labels = {streams.stream_label(s) for s in streams.readable_streams(spec.stream, time.time())}
    if target.stream not in labels or not target.arn.startswith(table_arn + "/stream/"):
        raise _missing(target)


async def _read(ctx: RouterContext, target: Target) -> TableSpec:
    spec = await table_spec.client_spec(ctx, target.table_name)
    if spec is None or spec.deleting:
        raise _missing(target)
    _check_target(ctx, spec, target)
    return spec


async def get_resource_policy(ctx: RouterContext, body: Any) -> dict[str, Any]:
    target = resource_policy.validate_get(body)
    policy = resource_policy.attached((await _read(ctx, target)).policies, target)
    if policy is None:
        raise resource_policy.not_attached(target)
    return {"Policy": policy.document, "RevisionId": policy.revision_id}


async def put_resource_policy(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = resource_policy.validate_put(body)
    answered = [""]

    def edit(spec: TableSpec) -> TableSpec:
        _check_target(ctx, spec, req.target)
        policies, answered[0] = resource_policy.put(spec.policies, req, time.time())
        return dataclasses.replace(spec, policies=policies)

    await _change(ctx, req.target, edit)
    return {"RevisionId": answered[0]}


async def delete_resource_policy(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = resource_policy.validate_delete(body)
    answered = [""]

    def edit(spec: TableSpec) -> TableSpec:
        _check_target(ctx, spec, req.target)
        policies, answered[0] = resource_policy.delete(spec.policies, req)
        return dataclasses.replace(spec, policies=policies)

    await _change(ctx, req.target, edit)
    return {"RevisionId": answered[0]}


async def _change(ctx: RouterContext, target: Target, edit: Callable[[TableSpec], TableSpec]) -> None:
    # A table being created or deleted takes no policy change (DynamoDB's
    # ResourceInUseException); one being updated does, as its policy is not its layout.
    await table_spec.change(
        ctx, target.table_name, edit, refuse=("CREATING", "DELETING"), missing=lambda: _missing(target)
    )
