"""The DynamoDB front door: from an HTTP request to an operation's answer.

Order of checks, as DynamoDB does it: authentication (SigV4) first, then the target
operation, then the JSON body, then the operation's own validation and work (shape
from the service model, then semantics, then table state). Every failure is a
DynamoError rendered once, here.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from partita.api import error_wording, service_model
from partita.api.partiql import parser as partiql_parser
from partita.api.streams import iterator_table
from partita.common import errors, metrics
from partita.common.errors import DynamoError
from partita.common.logs import RateLimitedLog
from partita.router import access, response_encoding
from partita.router import metrics as router_metrics
from partita.router.actions import (
    backups,
    batch_execute_statement,
    batch_get_item,
    batch_write_item,
    continuous_backups,
    create_table,
    delete_item,
    delete_table,
    describe_endpoints,
    describe_limits,
    describe_table,
    describe_time_to_live,
    execute_statement,
    execute_transaction,
    exports,
    get_item,
    imports,
    list_tables,
    list_tags_of_resource,
    put_item,
    query,
    resource_policies,
    scan,
    streams,
    tag_resource,
    transactions,
    unbuilt_table_features,
    untag_resource,
    update_item,
    update_table,
    update_time_to_live,
)
from partita.router.admission import CONTROL_PLANE, KIND_OF, Admission
from partita.router.auth import authenticate
from partita.router.context import RouterContext
from partita.router.credentials import CredentialStore
from partita.router.http_server import FIRST_ACCEPT_ENCODING, MAX_BODY_BYTES, HttpRequest, HttpResponse
from partita.router.index_capacity import global_indexes, queried
from partita.router.request_encoding import decoded_body
from partita.router.table_arns import keyed_by_arn, names_for_arns, request_item_arns

log = logging.getLogger(__name__)
# Rejected requests, one line each at info, at most a burst of 100 then 10 a second.
rejections = RateLimitedLog(logging.getLogger("partita.router.rejected"))

TARGET_PREFIX = "DynamoDB_20120810."
# DynamoDB Streams' operations arrive on the same endpoint under their own prefix (boto3's
# dynamodbstreams client signs them for the service "dynamodb").
STREAMS_TARGET_PREFIX = "DynamoDBStreams_20120810."
Action = Callable[[RouterContext, Any], Awaitable[dict[str, Any] | bytes]]

OPERATIONS: dict[str, Action] = {
    "CreateTable": create_table.run,
    "DescribeTable": describe_table.run,
    "ListTables": list_tables.run,
    "DeleteTable": delete_table.run,
    "UpdateTable": update_table.run,
    "DescribeLimits": describe_limits.run,
    "DescribeEndpoints": describe_endpoints.run,
    "TagResource": tag_resource.run,
    "UntagResource": untag_resource.run,
    "ListTagsOfResource": list_tags_of_resource.run,
    "PutResourcePolicy": resource_policies.put_resource_policy,
    "GetResourcePolicy": resource_policies.get_resource_policy,
    "DeleteResourcePolicy": resource_policies.delete_resource_policy,
    "CreateBackup": backups.create_backup,
    "DescribeBackup": backups.describe_backup,
    "ListBackups": backups.list_backups,
    "DeleteBackup": backups.delete_backup,
    "RestoreTableFromBackup": backups.restore_table_from_backup,
    "ImportTable": imports.import_table,
    "DescribeImport": imports.describe_import,
    "ListImports": imports.list_imports,
    "ExportTableToPointInTime": exports.export_table,
    "DescribeExport": exports.describe_export,
    "ListExports": exports.list_exports,
    "DescribeContinuousBackups": continuous_backups.describe,
    "UpdateContinuousBackups": continuous_backups.update,
    "RestoreTableToPointInTime": continuous_backups.restore_table_to_point_in_time,
    "DescribeContributorInsights": unbuilt_table_features.describe_contributor_insights,
    "UpdateContributorInsights": unbuilt_table_features.update_contributor_insights,
    "ListContributorInsights": unbuilt_table_features.list_contributor_insights,
    "DescribeKinesisStreamingDestination": unbuilt_table_features.describe_kinesis_streaming_destination,
    "EnableKinesisStreamingDestination": unbuilt_table_features.enable_kinesis_streaming_destination,
    "UpdateKinesisStreamingDestination": unbuilt_table_features.update_kinesis_streaming_destination,
    "DisableKinesisStreamingDestination": unbuilt_table_features.disable_kinesis_streaming_destination,
    "PutItem": put_item.run,
    "GetItem": get_item.run,
    "UpdateItem": update_item.run,
    "DeleteItem": delete_item.run,
    "Query": query.run,
    "Scan": scan.run,
    "BatchGetItem": batch_get_item.run,
    "BatchWriteItem": batch_write_item.run,
    "UpdateTimeToLive": update_time_to_live.run,
    "DescribeTimeToLive": describe_time_to_live.run,
    "ExecuteStatement": execute_statement.run,
    "BatchExecuteStatement": batch_execute_statement.run,
    "TransactWriteItems": transactions.run_write,
    "TransactGetItems": transactions.run_get,
    "ExecuteTransaction": execute_transaction.run,
}

STREAM_OPERATIONS: dict[str, Action] = {
    "ListStreams": streams.list_streams,
    "DescribeStream": streams.describe_stream,
    "GetShardIterator": streams.get_shard_iterator,
    "GetRecords": streams.get_records,
}

# The request cells by (operation, table, outcome), read directly on every request.
_REQUEST_CELLS = router_metrics.request_cells

_HEADERS = b"Content-Type: application/x-amz-json-1.0\r\nx-amzn-RequestId: %s\r\nx-amz-crc32: %d\r\n"


class RequestLabels:
    """What a request turned out to be, for its metrics and log line: filled in by
    `_dispatch` as it learns them, so a request refused early still has its labels."""

    __slots__ = ("operation", "table")

    def __init__(self) -> None:
        self.operation = "unknown"
        self.table = router_metrics.NO_TABLE


class DynamoApp:
    def __init__(
        self, ctx: RouterContext, credentials: CredentialStore, admission: Admission | None = None
    ) -> None:
        self.ctx = ctx
        self.credentials = credentials
        # Table-level throughput admission; None: not enforced (the default for now).
        self.admission = admission
        self.policies = access.PolicyCache()
        self._request_ids = itertools.count(1)
        self._id_prefix = os.urandom(6).hex().upper().encode()

    def _next_request_id(self) -> bytes:
        """What `x-amzn-RequestId` says and the log lines carry: unique per answer, 52
        upper-case letters and digits as DynamoDB's are (dynalite's recorded tests)."""
        return b"%s%040d" % (self._id_prefix, next(self._request_ids))

    def _response(self, status: int, body: bytes, request_id: bytes, encoding: str | None) -> HttpResponse:
        # botocore checks x-amz-crc32 (CRC32 of the body sent) when present.
        headers = _HEADERS % (request_id, zlib.crc32(body))
        if encoding is not None:
            headers += b"Content-Encoding: %s\r\n" % encoding.encode()
        return HttpResponse(status, body, headers)

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        if "origin" in request.headers:
            return _with_cors(await self._answer(request), request)
        return await self._answer(request)

    async def _answer(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            return self._not_post(request)
        started = time.perf_counter()
        request_id = self._next_request_id()
        labels = RequestLabels()
        router_metrics.RECEIVED.value += 1
        outcome = "ok"
        try:
            body = await self._dispatch(request, labels)
            status = 200
        except DynamoError as raised:
            exc = error_wording.as_answered(labels.operation, raised)
            if exc.code == "ProvisionedThroughputExceededException":
                self._name_throttled_resources(exc)
            status, body, outcome = exc.status, exc.render(), exc.code
            self._log_error(exc, labels, request_id)
        except Exception:
            log.exception(
                "operation failed",
                extra={
                    "request_id": request_id.decode(),
                    "operation": labels.operation,
                    "table": labels.table,
                },
            )
            internal = errors.internal_server_error()
            status, body, outcome = internal.status, internal.render(), internal.code
        except BaseException:  # cancelled: the connection closed before the answer
            router_metrics.ABANDONED.value += 1
            raise
        encoding = None
        if len(body) > response_encoding.THRESHOLD_BYTES:
            headers = request.headers
            encoding = response_encoding.chosen_encoding(
                headers.get(FIRST_ACCEPT_ENCODING, headers.get("accept-encoding"))
            )
            if encoding is not None:
                body = await _compressed(body, encoding)
        cells = _REQUEST_CELLS.get((labels.operation, labels.table, outcome))
        if cells is None:
            cells = router_metrics.new_request_cells(labels.operation, labels.table, outcome)
        cells.count.value += 1
        cells.bytes_in.value += len(request.body)
        cells.bytes_out.value += len(body)
        cells.latency.observe(time.perf_counter() - started)
        return self._response(status, body, request_id, encoding)

    def _name_throttled_resources(self, exc: DynamoError) -> None:
        """A storage node names a throttled table by name (it knows no region or
        account); the client gets its ARN, as DynamoDB sends it."""
        reasons = exc.extra.get("ThrottlingReasons")
        if isinstance(reasons, list):
            for reason in reasons:
                resource = reason.get("resource") if isinstance(reason, dict) else None
                if isinstance(resource, str) and not resource.startswith("arn:"):
                    reason["resource"] = self.ctx.table_arn(resource)

    def _not_post(self, request: HttpRequest) -> HttpResponse:
        """Every GET route lives here. DynamoDB answers its health check on `/` only;
        `/metrics` is the Prometheus exposition; a browser's CORS preflight (OPTIONS with
        an Origin) is answered empty; other paths and methods are not found (a 4xx in
        DynamoDB's JSON form, never a 200)."""
        if request.method == "OPTIONS" and "origin" in request.headers:
            return HttpResponse(200, b"", b"x-amzn-RequestId: %s\r\n" % self._next_request_id())
        if request.method == "GET" and request.path == "/":
            host = request.headers.get("host", "localhost")
            return HttpResponse(200, f"healthy: {host} ".encode(), b"Content-Type: text/plain\r\n")
        if request.method == "GET" and request.path == "/metrics":
            body, content_type = metrics.exposition()
            return HttpResponse(200, body, f"Content-Type: {content_type}\r\n".encode())
        missing = errors.not_found_route()
        request_id = self._next_request_id()
        return self._response(missing.status, missing.render(), request_id, None)

    def _log_error(self, exc: DynamoError, labels: RequestLabels, request_id: bytes) -> None:
        extra = {
            "request_id": request_id.decode(),
            "operation": labels.operation,
            "table": labels.table,
            "error_type": exc.code,
            "error_message": exc.message,
        }
        if not exc.client_fault:
            log.error("request failed", extra=extra, exc_info=exc)
        else:
            rejections.log(logging.INFO, "request rejected", extra)

    async def _dispatch(self, request: HttpRequest, labels: RequestLabels) -> bytes:
        # DynamoDB authenticates before it looks at the target: an unsigned request for
        # an unknown operation is an authentication error, not UnknownOperation.
        credential = authenticate(
            method=request.method,
            path=request.path,
            query=request.query,
            headers=request.headers,
            body=request.body,
            now=time.time(),
            lookup=self.credentials.lookup,
        )
        target = request.headers.get("x-amz-target", "")
        if target.startswith(TARGET_PREFIX):
            operation = target[len(TARGET_PREFIX) :]
            action = OPERATIONS.get(operation)
        elif target.startswith(STREAMS_TARGET_PREFIX):
            operation = target[len(STREAMS_TARGET_PREFIX) :]
            action = STREAM_OPERATIONS.get(operation)
        else:
            action = None
        if action is None:
            raise errors.unknown_operation()
        labels.operation = operation
        body = decoded_body(request.body, request.headers.get("content-encoding"), MAX_BODY_BYTES)
        try:
            payload = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            # DynamoDB names no position or cause for a body that is not JSON (dynalite's
            # and Alternator's tests, recorded against DynamoDB).
            raise errors.serialization("") from None
        if not isinstance(payload, dict):
            raise errors.serialization(
                "Start of list found where not expected"
                if isinstance(payload, list)
                else "Start of structure or map found where not expected."
            )
        arns = request_item_arns(payload)
        payload = names_for_arns(payload)
        table_name = payload.get("TableName")
        if isinstance(table_name, str) and table_name in self.ctx.tables.tables:
            labels.table = table_name  # only tables the cluster has: labels stay bounded
        # Coral's first stage, for every operation in OPERATIONS alike.
        service_model.check_request(operation, payload)
        named = tables_named(payload)
        heads = statement_heads(payload) if operation in STATEMENT_OPERATIONS else []
        named.extend(table for _, table in heads)
        caller = access.Caller(request.peer, request.secure)
        access.check(self.ctx, self.policies, credential, operation, payload, named, caller)
        if self.admission is not None:
            if operation in _INDEXED_READS:
                self._admit_indexed_read(named, payload.get("IndexName"))
            elif operation in KIND_OF:
                self._admit(named, KIND_OF[operation])
            elif operation in STATEMENT_OPERATIONS:
                for kind, table in heads:
                    self._admit([table], kind)
            elif operation in CONTROL_PLANE:
                self.admission.admit_control()
        result = await action(self.ctx, payload)
        if arns:
            result = keyed_by_arn(result, arns)
        return result if isinstance(result, bytes) else orjson.dumps(result)

    def _admit(self, named: list[str], kind: str) -> None:
        """Refuses the request when a table it uses is over its rate (before any work);
        a write, also when one of the table's global indexes is over its own."""
        admission = self.admission
        assert admission is not None
        for table in named:
            cached = self.ctx.tables.tables.get(table)
            if cached is not None:
                if kind == "read":
                    admission.admit(cached.record, "read")
                else:
                    admission.admit(cached.record, "write")
                    for index in global_indexes(cached.record):
                        admission.admit(index, "write")

    def _admit_indexed_read(self, named: list[str], index: object) -> None:
        """A Query or Scan: the global index it names pays for it, else the table."""
        admission = self.admission
        assert admission is not None
        for table in named:
            cached = self.ctx.tables.tables.get(table)
            if cached is not None:
                admission.admit(queried(cached.record, index), "read")


# Answers past this many bytes are compressed off the event loop (zlib releases the GIL):
# level 6 takes about 30 ms a MB of item JSON here (256 KB: 7.7 ms, 16 MB: 510 ms), so
# the loop waits at most some 2 ms for one it compresses itself.
_COMPRESS_OFF_LOOP_BYTES = 64 * 1024


async def _compressed(body: bytes, encoding: str) -> bytes:
    if len(body) > _COMPRESS_OFF_LOOP_BYTES:
        return await asyncio.to_thread(response_encoding.compressed, body, encoding)
    return response_encoding.compressed(body, encoding)


# Members naming a table, or something of one, by ARN: tags and policies, streams,
# exports and imports, backups (a backup's ARN starts with its table's).
_ARN_MEMBERS = (
    "ResourceArn",
    "StreamArn",
    "TableArn",
    "BackupArn",
    "ImportArn",
    "ExportArn",
    "SourceTableArn",
)


def tables_named(payload: dict[str, Any]) -> list[str]:
    """Every table a request names: TableName, the keys of a batch's RequestItems, the
    table of an ARN (tags, policies, streams, backups, imports, exports), a restore's or
    an import's new table. Permissions are checked on all of them before any work, so a
    key limited to some tables cannot reach others through a batch."""
    names = []
    table = payload.get("TableName")
    if isinstance(table, str):
        names.append(table)
    items = payload.get("RequestItems")
    if isinstance(items, dict):
        names.extend(name for name in items if isinstance(name, str))
    listed = payload.get("TransactItems")
    if isinstance(listed, list):
        for entry in listed:
            for action in entry.values() if isinstance(entry, dict) else ():
                name = action.get("TableName") if isinstance(action, dict) else None
                if isinstance(name, str):
                    names.append(name)
    for member in _ARN_MEMBERS:
        arn = payload.get(member)
        if isinstance(arn, str) and ":table/" in arn:
            names.append(arn.split(":table/", 1)[1].split("/", 1)[0])
    target = payload.get("TargetTableName")  # a restore's new table
    if isinstance(target, str):
        names.append(target)
    source = payload.get("SourceTableName")  # a point-in-time restore's source
    if isinstance(source, str):
        names.append(source)
    creation = payload.get("TableCreationParameters")  # an import's new table
    if isinstance(creation, dict) and isinstance(creation.get("TableName"), str):
        names.append(creation["TableName"])
    iterator = payload.get("ShardIterator")
    if isinstance(iterator, str):
        table = iterator_table(iterator)
        if table is not None:
            names.append(table)
    return names


# Reads that may name a global index, which then pays for them (router/index_capacity.py).
_INDEXED_READS = frozenset({"Query", "Scan"})


# PartiQL: the tables and kinds of work its statements name (`partiql.parser.head`).
STATEMENT_OPERATIONS = frozenset({"ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"})


def statement_heads(payload: dict[str, Any]) -> list[tuple[str, str]]:
    entries = [payload]
    for member in ("Statements", "TransactStatements"):
        listed = payload.get(member)
        if isinstance(listed, list):
            entries.extend(entry for entry in listed if isinstance(entry, dict))
    heads = (
        partiql_parser.head(entry["Statement"], entry.get("Parameters"))
        for entry in entries
        if isinstance(entry.get("Statement"), str)
    )
    return [h for h in heads if h is not None]


# CORS, as DynamoDB answers a browser's requests (Alternator's DynamoDB-verified tests and
# dynalite's recorded ones): any request with an Origin gets these; a preflight (OPTIONS)
# also has what it asked for allowed, for as long as DynamoDB lets it be cached.
_CORS = b"Access-Control-Allow-Origin: *\r\nAccess-Control-Expose-Headers: x-amzn-RequestId,x-amzn-ErrorType,x-amzn-ErrorMessage,Date\r\n"
_PREFLIGHT_MAX_AGE = b"Access-Control-Max-Age: 172800\r\n"


def _with_cors(response: HttpResponse, request: HttpRequest) -> HttpResponse:
    headers = response.headers + _CORS
    if request.method == "OPTIONS":
        for asked, allowed in (
            ("access-control-request-headers", b"Access-Control-Allow-Headers"),
            ("access-control-request-method", b"Access-Control-Allow-Methods"),
        ):
            value = request.headers.get(asked)
            if value:
                headers += b"%s: %s\r\n" % (allowed, _header_text(value))
        headers += _PREFLIGHT_MAX_AGE
    response.headers = headers
    return response


def _header_text(value: str) -> bytes:
    """A request header's value, fit to be echoed in an answer's header line."""
    return value.encode("utf-8", "surrogateescape").replace(b"\r", b"").replace(b"\n", b"")
