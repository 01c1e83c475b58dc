"""A parsed PartiQL statement as the DynamoDB requests that carry it out.

SELECT with the partition key's equality (or IN list) among its top-level AND terms is
a Query per key value, a term on the sort key its key condition when one fits, the
rest its filter; any other SELECT is a Scan filtered by the whole WHERE clause (a
filter naming a key attribute, which a Query refuses, makes it a Scan too). INSERT is
a PutItem that must not find the key; UPDATE an UpdateItem of an item that must exist;
DELETE a DeleteItem. Their WHERE clause names the whole primary key with `=`; its other
terms become the write's condition. Conditions are written as DynamoDB expressions with
placeholders, so the operations' own checks and evaluator apply unchanged."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

import orjson

from partita.api.expressions import ast, printer
from partita.api.expressions.parser import walk_paths
from partita.api.partiql import syntax as s
from partita.common import errors

NO_INDEX = "The table does not have the specified index"
WRITE_ON_INDEX = "This operation is not supported on an index"
INSERT_ON_INDEX = "FROM clause may only contain a single table name in data manipulation statements"
WHERE_LACKS_KEY = "Where clause does not contain a mandatory equality on all key attributes"
OVERLAPPING = "Overlapping conditions with range keys are not supported in where clause"
TOO_MANY_READS = "Too many decomposed read operations for a given query."
# Key reads one SELECT may be broken into (`pk IN [...]`).
MAX_KEY_READS = 50
BATCH_SELECT_LACKS_KEY = (
    "Select statements within BatchExecuteStatement must specify the primary key in the where clause."
)
_KEY_CONDITION_OPS = ("=", "<", "<=", ">", ">=")
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True, slots=True)
class KeySchema:
    partition: str
    sort: str | None


@dataclass(frozen=True, slots=True)
class ReadPlan:
    operation: Literal["Query", "Scan"]
    requests: tuple[dict[str, Any], ...]  # a Query per partition key value, or one Scan
    # A projection with a nested path: PartiQL names each value by its path's last
    # attribute (and the list indexes after it), where ProjectionExpression nests it.
    labels: tuple[tuple[ast.Path, str], ...] | None = None


@dataclass(frozen=True, slots=True)
class WritePlan:
    operation: Literal["PutItem", "UpdateItem", "DeleteItem"]
    request: dict[str, Any]
    insert: bool = False  # a failed condition means the key exists already
    returning: bool = False  # the answer carries the item (RETURNING)


Plan = ReadPlan | WritePlan


def plan(statement: s.Statement, key: KeySchema) -> Plan:
    """`key`: the key attributes of the table, or of the index a SELECT reads."""
    if isinstance(statement, s.Select):
        return _select(statement, key)
    if statement.source.index is not None:
        raise errors.validation(INSERT_ON_INDEX if isinstance(statement, s.Insert) else WRITE_ON_INDEX)
    table = statement.source.table
    if isinstance(statement, s.Insert):
        out = _Expression()
        condition = f"attribute_not_exists({out.name(key.partition)})"
        return WritePlan(
            "PutItem",
            out.request({"TableName": table, "Item": statement.item, "ConditionExpression": condition}),
            insert=True,
        )
    if isinstance(statement, s.Update):
        return _update(statement, key)
    return _delete(statement, key)


class _Expression:
    """One request's expressions: the statement's resolved nodes as a raw tree, names
    and values replaced by placeholders, printed by the expression printer."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, dict[str, Any]] = {}

    def name(self, name: str) -> str:
        if name not in self.names:
            self.names[name] = f"#n{len(self.names)}"
        return self.names[name]

    def value(self, value: dict[str, Any]) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def path(self, path: ast.Path) -> ast.Path:
        return ast.Path(tuple(e if isinstance(e, int) else self.name(e) for e in path.elements))

    def raw(self, node: Any) -> Any:
        """`node` (a condition or operand) with placeholders for its names and values."""
        if isinstance(node, ast.Path):
            return self.path(node)
        if isinstance(node, ast.Literal):
            return ast.ValueRef(self.value(node.value))
        if isinstance(node, ast.FunctionCall):
            return ast.FunctionCall(node.name, tuple(self.raw(a) for a in node.args))
        if isinstance(node, ast.Arithmetic):
            return ast.Arithmetic(node.op, self.raw(node.left), self.raw(node.right))
        if isinstance(node, ast.Compare):
            return ast.Compare(node.op, self.raw(node.left), self.raw(node.right))
        if isinstance(node, ast.Between):
            return ast.Between(self.raw(node.operand), self.raw(node.low), self.raw(node.high))
        if isinstance(node, ast.In):
            return ast.In(self.raw(node.operand), tuple(self.raw(o) for o in node.options))
        if isinstance(node, (ast.And, ast.Or)):
            return type(node)(self.raw(node.left), self.raw(node.right))
        assert isinstance(node, ast.Not)
        return ast.Not(self.raw(node.operand))

    def condition(self, c: ast.Condition) -> str:
        return printer.to_text(self.raw(c))

    def update(self, actions: tuple[ast.UpdateAction, ...]) -> str:
        """The UpdateExpression: its SET, REMOVE, ADD and DELETE sections, once each."""
        ordered = sorted(actions, key=lambda a: _SECTIONS.index(a.clause))
        raw = tuple(
            ast.UpdateAction(a.clause, self.path(a.path), None if a.value is None else self.raw(a.value))
            for a in ordered
        )
        return printer.to_text(ast.Update(raw))

    def projection(self, paths: list[ast.Path]) -> str:
        return printer.to_text(ast.Projection(tuple(self.path(p) for p in paths)))

    def request(self, base: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        if self.names:
            out["ExpressionAttributeNames"] = {v: k for k, v in self.names.items()}
        if self.values:
            out["ExpressionAttributeValues"] = dict(self.values)
        return out


_SECTIONS = ("SET", "REMOVE", "ADD", "DELETE")


def batch_get(statement: s.Statement, key: KeySchema) -> dict[str, Any]:
    """The GetItem request of a SELECT in a BatchExecuteStatement: its WHERE clause is
    the item's whole primary key, with `=`, and nothing else."""
    assert isinstance(statement, s.Select)
    if statement.source.index is not None:
        raise errors.validation(NO_INDEX)
    if statement.where is None:
        raise errors.validation(BATCH_SELECT_LACKS_KEY)
    try:
        item_key, rest = _primary_key(statement.where, key)
    except errors.DynamoError:
        raise errors.validation(BATCH_SELECT_LACKS_KEY) from None
    if rest:
        raise errors.validation(BATCH_SELECT_LACKS_KEY)
    out = _Expression()
    base: dict[str, Any] = {"TableName": statement.source.table, "Key": item_key}
    _project(statement, out, base)
    return out.request(base)


def _select(statement: s.Select, key: KeySchema) -> ReadPlan:
    terms = _conjuncts(statement.where) if statement.where is not None else []
    partition_values, rest = _partition_key_values(terms, key.partition)
    _check_order(statement, key, partition_values)
    if partition_values:
        sort_term, rest = _sort_key_term(rest, key.sort)
        if not any(_names_key(t, key) for t in rest):
            return _queries(statement, key, partition_values, sort_term, rest)
    out = _Expression()
    base: dict[str, Any] = _source(statement)
    if statement.where is not None:
        base["FilterExpression"] = out.condition(statement.where)
    _project(statement, out, base)
    return ReadPlan("Scan", (out.request(base),), _labels(statement))


def _source(statement: s.Select) -> dict[str, Any]:
    """The table a SELECT reads, and its index if it names one."""
    source = statement.source
    return {"TableName": source.table, **({"IndexName": source.index} if source.index is not None else {})}


def _check_order(statement: s.Select, key: KeySchema, partition_values: list[dict[str, Any]]) -> None:
    if not statement.order_by:
        return
    if statement.where is None:
        raise errors.validation("Must have WHERE clause in the statement when using ORDER BY clause.")
    for path, _ in statement.order_by:
        if path.elements not in ((key.partition,), (key.sort,)):
            raise errors.validation(
                f"Attribute {path.elements[0]} in ORDER BY clause must be part of the primary key"
            )
    if not partition_values:
        raise errors.validation(
            "Must have at least one non-optional hash key condition in WHERE clause when using ORDER BY clause."
        )
    if len(partition_values) > 1 and all(p.elements != (key.partition,) for p, _ in statement.order_by):
        raise errors.validation(
            "Must have hash key in ORDER BY clause when more than one hash key condition specified in WHERE clause."
        )


def _labels(statement: s.Select) -> tuple[tuple[ast.Path, str], ...] | None:
    projection = statement.projection
    if projection is None or all(len(p.elements) == 1 for p in projection):
        return None
    out = []
    for path in projection:
        last_name = max(i for i, e in enumerate(path.elements) if isinstance(e, str))
        label = str(path.elements[last_name]) + "".join(f"[{i}]" for i in path.elements[last_name + 1 :])
        out.append((path, label))
    return tuple(out)


def _queries(
    statement: s.Select,
    key: KeySchema,
    partition_values: list[dict[str, Any]],
    sort_term: ast.Condition | None,
    rest: list[ast.Condition],
) -> ReadPlan:
    forward = True
    for path, descending in statement.order_by:
        if path.elements == (key.sort,):
            forward = not descending
    if any(p.elements == (key.partition,) and descending for p, descending in statement.order_by):
        partition_values = sorted(partition_values, key=_scalar_order, reverse=True)
    elif any(p.elements == (key.partition,) for p, _ in statement.order_by):
        partition_values = sorted(partition_values, key=_scalar_order)
    requests = []
    for value in partition_values:
        out = _Expression()
        condition = f"{out.name(key.partition)} = {out.value(value)}"
        if sort_term is not None:
            condition += f" AND {out.condition(sort_term)}"
        base: dict[str, Any] = {**_source(statement), "KeyConditionExpression": condition}
        if rest:
            base["FilterExpression"] = out.condition(_joined(rest))
        if not forward:
            base["ScanIndexForward"] = False
        _project(statement, out, base)
        requests.append(out.request(base))
    return ReadPlan("Query", tuple(requests), _labels(statement))


def _scalar_order(value: dict[str, Any]) -> tuple[int, Any]:
    """A key value's place in DynamoDB's order of its type (numbers by value, strings
    and binaries by their bytes). A value of no key type (a boolean, a list...) takes a
    fixed place after them: its Query is refused when it runs, but the sort must not
    fail first."""
    kind, v = next(iter(value.items()))
    if kind == "N" and isinstance(v, str):
        try:
            return 0, Decimal(v)
        except InvalidOperation:
            return 0, Decimal(0)
    if kind == "S" and isinstance(v, str):
        return 1, v.encode()
    if kind == "B" and isinstance(v, str):
        try:
            return 1, base64.b64decode(v, validate=True)
        except binascii.Error:
            return 1, v.encode()
    return 2, orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _project(statement: s.Select, out: _Expression, base: dict[str, Any]) -> None:
    """The ProjectionExpression: the paths themselves, or with a nested one among them
    their top-level attributes, whole (the labels then pick the values out, as a list
    index projected would come back moved to the list's start)."""
    projection = statement.projection
    if projection is None:
        return
    if _labels(statement) is not None:
        roots = dict.fromkeys(p.elements[0] for p in projection)
        base["ProjectionExpression"] = out.projection([ast.Path((r,)) for r in roots])
    else:
        base["ProjectionExpression"] = out.projection(list(projection))


def _partition_key_values(
    terms: list[ast.Condition], partition: str
) -> tuple[list[dict[str, Any]], list[ast.Condition]]:
    """The partition key's values from the first term that names them (`pk = v`,
    `pk IN [...]`, or `pk = v OR pk = w ...`), and the other terms."""
    for i, term in enumerate(terms):
        values = _key_values(term, partition)
        if values:
            if len(values) > MAX_KEY_READS:
                raise errors.validation(TOO_MANY_READS)
            if any(v in values[:j] for j, v in enumerate(values)):
                raise errors.validation(OVERLAPPING)
            return values, terms[:i] + terms[i + 1 :]
    return [], terms


def _key_values(term: ast.Condition, name: str) -> list[dict[str, Any]]:
    if isinstance(term, ast.Compare) and term.op == "=":
        value = _key_equality(term, name)
        return [value] if value is not None else []
    if isinstance(term, ast.In) and _is_attribute(term.operand, name):
        if all(isinstance(o, ast.Literal) for o in term.options):
            return [o.value for o in term.options if isinstance(o, ast.Literal)]
        return []
    if isinstance(term, ast.Or):
        left, right = _key_values(term.left, name), _key_values(term.right, name)
        return left + right if left and right else []
    return []


def _sort_key_term(
    terms: list[ast.Condition], sort: str | None
) -> tuple[ast.Condition | None, list[ast.Condition]]:
    """The first term a Query's key condition can take on the sort key, and the rest."""
    if sort is None:
        return None, terms
    for i, term in enumerate(terms):
        fitting = _as_sort_key_condition(term, sort)
        if fitting is not None:
            return fitting, terms[:i] + terms[i + 1 :]
    return None, terms


def _as_sort_key_condition(term: ast.Condition, sort: str) -> ast.Condition | None:
    if isinstance(term, ast.Compare) and term.op in _KEY_CONDITION_OPS:
        if _is_attribute(term.left, sort) and isinstance(term.right, ast.Literal):
            return term
        if _is_attribute(term.right, sort) and isinstance(term.left, ast.Literal):
            return ast.Compare(_FLIPPED[term.op], term.right, term.left)
    if (
        isinstance(term, ast.Between)
        and _is_attribute(term.operand, sort)
        and isinstance(term.low, ast.Literal)
        and isinstance(term.high, ast.Literal)
    ):
        return term
    if (
        isinstance(term, ast.FunctionCall)
        and term.name == "begins_with"
        and _is_attribute(term.args[0], sort)
        and isinstance(term.args[1], ast.Literal)
    ):
        return term
    return None


def _names_key(term: ast.Condition, key: KeySchema) -> bool:
    """Whether a term reads a key attribute (a Query's filter may not)."""
    keys = {key.partition, key.sort}
    return any(p.elements[0] in keys for p in walk_paths(term))


# --- UPDATE and DELETE ---------------------------------------------------------------


def _update(statement: s.Update, key: KeySchema) -> WritePlan:
    item_key, rest = _primary_key(statement.where, key)
    out = _Expression()
    updates = out.update(statement.actions)
    condition = f"attribute_exists({out.name(key.partition)})"
    if rest:
        condition += f" AND ({out.condition(_joined(rest))})"
    request: dict[str, Any] = {
        "TableName": statement.source.table,
        "Key": item_key,
        "UpdateExpression": updates,
        "ConditionExpression": condition,
    }
    if statement.returning is not None:
        request["ReturnValues"] = statement.returning
    return WritePlan("UpdateItem", out.request(request), returning=statement.returning is not None)


_RETURNING_TEXT = {"ALL_NEW": "ALL NEW *", "UPDATED_OLD": "MODIFIED OLD *", "UPDATED_NEW": "MODIFIED NEW *"}


def _delete(statement: s.Delete, key: KeySchema) -> WritePlan:
    if statement.returning is not None and statement.returning != "ALL_OLD":
        raise errors.validation(
            f"Invalid returning clause: RETURNING {_RETURNING_TEXT[statement.returning]}. "
            "Only RETURNING ALL OLD * is allowed in DELETE statements."
        )
    item_key, rest = _primary_key(statement.where, key)
    out = _Expression()
    request: dict[str, Any] = {"TableName": statement.source.table, "Key": item_key}
    if rest:
        # A missing item is deleted (nothing happens) whatever the other terms say.
        missing = f"attribute_not_exists({out.name(key.partition)})"
        request["ConditionExpression"] = f"{missing} OR ({out.condition(_joined(rest))})"
    if statement.returning is not None:
        request["ReturnValues"] = "ALL_OLD"
    return WritePlan("DeleteItem", out.request(request), returning=statement.returning is not None)


def _primary_key(where: ast.Condition, key: KeySchema) -> tuple[dict[str, Any], list[ast.Condition]]:
    """The item's key from the WHERE clause's `=` terms on the key attributes (every one
    of them needed), and the other terms."""
    rest = _conjuncts(where)
    item_key: dict[str, Any] = {}
    for name in (key.partition, key.sort):
        if name is None:
            continue
        values = [
            _key_equality(t, name) if isinstance(t, ast.Compare) and t.op == "=" else None for t in rest
        ]
        found = [v for v in values if v is not None]
        if not found:
            raise errors.validation(WHERE_LACKS_KEY)
        if any(v != found[0] for v in found):
            raise errors.validation(
                f"Multiple conditions on same key {name}. Only single item Update/Insert/Delete are supported"
            )
        item_key[name] = found[0]
        rest = [t for t, v in zip(rest, values, strict=True) if v is None]
    return item_key, rest


# --- terms -----------------------------------------------------------------------------


def _conjuncts(c: ast.Condition) -> list[ast.Condition]:
    if isinstance(c, ast.And):
        return _conjuncts(c.left) + _conjuncts(c.right)
    return [c]


def _joined(terms: list[ast.Condition]) -> ast.Condition:
    out = terms[0]
    for term in terms[1:]:
        out = ast.And(out, term)
    return out


def _is_attribute(operand: ast.Operand, name: str) -> bool:
    return isinstance(operand, ast.Path) and operand.elements == (name,)


def _key_equality(term: ast.Compare, name: str) -> dict[str, Any] | None:
    """The value of `name = value` (or `value = name`); None for any other comparison."""
    if _is_attribute(term.left, name) and isinstance(term.right, ast.Literal):
        return term.right.value
    if _is_attribute(term.right, name) and isinstance(term.left, ast.Literal):
        return term.left.value
    return None
