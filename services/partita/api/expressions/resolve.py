"""The resolve pass: substitute ExpressionAttributeNames/Values and check what needs them.

A request may carry several expressions sharing one pair of maps, and DynamoDB judges
"unused" names and values over all of them, so the unit of work is the request:
`resolve_request` parses (through the cache), resolves and checks every expression in
DynamoDB's order and returns resolved trees ready to evaluate.

Order of checks, as observed on DynamoDB (mostly through dynalite's tests):
1. the two maps themselves (`check_attribute_maps`);
2. every expression's syntax and text-only checks (see `parser`), in the order
   KeyCondition, Update, Condition, Filter, Projection;
3. every expression's name/value dependent checks, same order. For conditions the
   leaf conditions are taken in textual order and the first faulty one is reported;
   within a leaf: undefined name or value, operand count, distinct operands, operand
   types. For updates the categories run over the whole expression: undefined names,
   undefined values, overlapping paths, conflicting paths, ADD/DELETE operand types,
   function operands. Key conditions then get their structural checks;
4. unused names, then unused values, over all expressions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from partita.api.expressions import ast, cache
from partita.api.expressions import key_condition as key_rules
from partita.api.expressions.parser import walk_functions, walk_paths
from partita.api.expressions.paths import check_no_overlap, format_path
from partita.api.item import NAME_TOO_LARGE, name_too_large
from partita.api.values import SET_TYPES, AttributeValue, compare, value_type
from partita.common import errors

_PLACEHOLDER_RE = re.compile(r"[A-Za-z0-9_]+")
MAX_PLACEHOLDER_BYTES = 255

_FUNCTION_ARITY = {
    "attribute_exists": 1,
    "attribute_not_exists": 1,
    "attribute_type": 2,
    "begins_with": 2,
    "contains": 2,
    "size": 1,
    "if_not_exists": 2,
    "list_append": 2,
}
_ORDERABLE = frozenset({"S", "N", "B"})
_ORDERING = frozenset({"<", "<=", ">", ">="})
# The order DynamoDB prints the type names in (it is not alphabetical).
_VALID_TYPES_MESSAGE = "{B,NULL,SS,BOOL,L,BS,N,NS,S,M}"
_ANY_TYPE = "{NS,SS,L,BS,N,M,B,BOOL,NULL,S}"
_VALID_TYPE_NAMES = frozenset({"S", "N", "B", "NULL", "SS", "BOOL", "L", "BS", "NS", "M"})
_UPDATE_TYPE_NAMES = {
    "S": "STRING",
    "N": "NUMBER",
    "B": "BINARY",
    "NULL": "NULL",
    "BOOL": "BOOLEAN",
    "L": "LIST",
    "M": "MAP",
}

CONDITION_KINDS = ("KeyConditionExpression", "ConditionExpression", "FilterExpression")


@dataclass(frozen=True, slots=True)
class Resolved:
    """The resolved expressions of one request (None where the request had none)."""

    key_condition: ast.Condition | None = None
    update: ast.Update | None = None
    condition: ast.Condition | None = None
    filter: ast.Condition | None = None
    projection: ast.Projection | None = None


def resolve_request(
    *,
    key_condition: str | None = None,
    update: str | None = None,
    condition: str | None = None,
    filter: str | None = None,  # the request parameter's name
    projection: str | None = None,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, AttributeValue] | None = None,
    legacy: bool = False,
) -> Resolved:
    """Parse, resolve and check every expression of one request; raise on the first error.

    `legacy`: the texts are translations of legacy parameters, not held to the
    expression limits (`parser.parse_condition`)."""
    if names is not None or values is not None:
        check_attribute_maps(names, values)
    limited = not legacy
    # Every expression is parsed (and its text-only checks run) before any is resolved.
    key_tree = (
        cache.condition(key_condition, "KeyConditionExpression", limited)
        if key_condition is not None
        else None
    )
    update_tree = cache.update(update, limited) if update is not None else None
    condition_tree = (
        cache.condition(condition, "ConditionExpression", limited) if condition is not None else None
    )
    filter_tree = cache.condition(filter, "FilterExpression", limited) if filter is not None else None
    projection_tree = cache.projection(projection, limited) if projection is not None else None

    resolver = Resolver(names, values)
    resolved_key = resolved_update = resolved_condition = resolved_filter = resolved_projection = None
    if key_tree is not None:
        resolved_key = resolver.condition(key_tree, "KeyConditionExpression")
        key_rules.check_shape(resolved_key)
    if update_tree is not None:
        resolved_update = resolver.update(update_tree)
    if condition_tree is not None:
        resolved_condition = resolver.condition(condition_tree, "ConditionExpression")
    if filter_tree is not None:
        resolved_filter = resolver.condition(filter_tree, "FilterExpression")
    if projection_tree is not None:
        resolved_projection = resolver.projection(projection_tree)
    if names or values:
        resolver.check_unused()
    return Resolved(resolved_key, resolved_update, resolved_condition, resolved_filter, resolved_projection)


def check_attribute_maps(
    names: Mapping[str, str] | None, values: Mapping[str, AttributeValue] | None
) -> None:
    """DynamoDB's checks of the placeholder maps' keys, made before any expression."""
    if names is not None:
        if not names:
            raise errors.validation("ExpressionAttributeNames must not be empty")
        for key, name in names.items():
            _check_placeholder("ExpressionAttributeNames", key, "#")
            if not name:
                raise errors.validation(
                    f"ExpressionAttributeNames contains invalid value: Empty attribute name for key {key}"
                )
            if name_too_large(name):
                raise errors.validation(
                    f"ExpressionAttributeNames contains invalid value: {NAME_TOO_LARGE} for key {key}"
                )
    if values is not None:
        if not values:
            raise errors.validation("ExpressionAttributeValues must not be empty")
        for key, value in values.items():
            _check_placeholder("ExpressionAttributeValues", key, ":")
            if not value:
                raise errors.validation(
                    "ExpressionAttributeValues contains invalid value: Supplied AttributeValue is "
                    f"empty, must contain exactly one of the supported datatypes for key {key}"
                )


def _check_placeholder(parameter: str, key: str, sigil: str) -> None:
    size = len(key.encode("utf-8"))
    if size > MAX_PLACEHOLDER_BYTES:
        # Observed quirk: only the names variant reports the size.
        suffix = f" size of key: {size}" if sigil == "#" else ""
        raise errors.validation(
            f"{parameter} contains invalid key: The expression attribute map contains a key that is "
            f"too long;{suffix}"
        )
    if key[:1] != sigil or not _PLACEHOLDER_RE.fullmatch(key, 1):
        raise errors.validation(f'{parameter} contains invalid key: Syntax error; key: "{key}"')


class Resolver:
    """Resolves the expressions of one request, remembering which placeholders they used."""

    __slots__ = ("kind", "names", "used_names", "used_values", "values")

    def __init__(self, names: Mapping[str, str] | None, values: Mapping[str, AttributeValue] | None) -> None:
        self.names: Mapping[str, str] = names or {}
        self.values: Mapping[str, AttributeValue] = values or {}
        self.used_names: set[str] = set()
        self.used_values: set[str] = set()
        self.kind = ""

    def fail(self, message: str) -> errors.DynamoError:
        return errors.validation(f"Invalid {self.kind}: {message}")

    def check_unused(self) -> None:
        unused = [k for k in self.names if k not in self.used_names]
        if unused:
            raise errors.validation(
                "Value provided in ExpressionAttributeNames unused in expressions: "
                f"keys: {{{', '.join(unused)}}}"
            )
        unused = [k for k in self.values if k not in self.used_values]
        if unused:
            raise errors.validation(
                "Value provided in ExpressionAttributeValues unused in expressions: "
                f"keys: {{{', '.join(unused)}}}"
            )

    # -- substitution --

    def name(self, placeholder: str) -> str:
        name = self.names.get(placeholder)
        if name is None:
            raise self.fail(
                "An expression attribute name used in the document path is not defined; "
                f"attribute name: {placeholder}"
            )
        self.used_names.add(placeholder)
        return name

    def path(self, path: ast.Path) -> ast.Path:
        elements = path.elements
        for element in elements:
            if isinstance(element, str) and element[0] == "#":
                break
        else:
            return path
        return ast.Path(tuple(self.name(e) if isinstance(e, str) and e[0] == "#" else e for e in elements))

    def value(self, ref: ast.ValueRef) -> ast.Literal:
        value = self.values.get(ref.name)
        if value is None:
            raise self.fail(
                "An expression attribute value used in expression is not defined; "
                f"attribute value: {ref.name}"
            )
        self.used_values.add(ref.name)
        return ast.Literal(value)

    def operand(self, node: ast.Operand) -> ast.Operand:
        kind = type(node)
        if kind is ast.Path:
            return self.path(node)  # type: ignore[arg-type]
        if kind is ast.ValueRef:
            return self.value(node)  # type: ignore[arg-type]
        if isinstance(node, ast.FunctionCall):
            return ast.FunctionCall(node.name, tuple(self.operand(a) for a in node.args))
        if isinstance(node, ast.Arithmetic):
            return ast.Arithmetic(node.op, self.operand(node.left), self.operand(node.right))
        return node

    # -- conditions --

    def condition(self, tree: ast.Condition, kind: str) -> ast.Condition:
        self.kind = kind
        return self._condition(tree)

    def _condition(self, node: ast.Condition) -> ast.Condition:
        kind = type(node)
        if kind is ast.Compare:
            assert isinstance(node, ast.Compare)
            left = node.left
            right = node.right
            leaf = ast.Compare(node.op, self.operand(left), self.operand(right))
            if type(left) is not ast.FunctionCall and type(right) is not ast.FunctionCall:
                # The common case, checked without walking for function calls.
                self._check_distinct(leaf.op, leaf.left, leaf.right)
                if leaf.op in _ORDERING:
                    self._check_orderable(leaf.op, leaf.left)
                    self._check_orderable(leaf.op, leaf.right)
                return leaf
            self._check_leaf(leaf)
            return leaf
        if kind is ast.And:
            assert isinstance(node, ast.And)
            return ast.And(self._condition(node.left), self._condition(node.right))
        if kind is ast.Or:
            assert isinstance(node, ast.Or)
            return ast.Or(self._condition(node.left), self._condition(node.right))
        if kind is ast.Not:
            assert isinstance(node, ast.Not)
            return ast.Not(self._condition(node.operand))
        other = self._leaf(node)
        self._check_leaf(other)
        return other

    def _leaf(self, node: ast.Condition) -> ast.Condition:
        if isinstance(node, ast.Between):
            return ast.Between(self.operand(node.operand), self.operand(node.low), self.operand(node.high))
        if isinstance(node, ast.In):
            return ast.In(self.operand(node.operand), tuple(self.operand(o) for o in node.options))
        assert isinstance(node, ast.FunctionCall)
        resolved = self.operand(node)
        assert isinstance(resolved, ast.FunctionCall)
        return resolved

    def _check_leaf(self, leaf: ast.Condition) -> None:
        if type(leaf) is ast.FunctionCall and not any(type(a) is ast.FunctionCall for a in leaf.args):
            calls = [leaf]  # the common `attribute_exists(path)` and friends
        else:
            calls = list(walk_functions(leaf))
        for call in calls:
            self._check_arity(call)
        for call in calls:
            if call.name in ("contains", "begins_with", "attribute_type"):
                self._check_distinct(call.name, call.args[0], call.args[1])
        if isinstance(leaf, ast.Compare):
            self._check_distinct(leaf.op, leaf.left, leaf.right)
        for call in calls:
            self._check_condition_function(call)
        if isinstance(leaf, ast.Compare) and leaf.op in _ORDERING:
            for side in (leaf.left, leaf.right):
                self._check_orderable(leaf.op, side)
        elif isinstance(leaf, ast.Between):
            for side in (leaf.operand, leaf.low, leaf.high):
                self._check_orderable("BETWEEN", side)
            self._check_bounds(leaf.low, leaf.high)

    def _check_arity(self, call: ast.FunctionCall) -> None:
        if len(call.args) != _FUNCTION_ARITY[call.name]:
            raise self.fail(
                "Incorrect number of operands for operator or function; "
                f"operator or function: {call.name}, number of operands: {len(call.args)}"
            )

    def _check_distinct(self, operator: str, first: ast.Operand, second: ast.Operand) -> None:
        if isinstance(first, ast.Path) and first == second:
            raise self.fail(
                "The first operand must be distinct from the remaining operands for this operator "
                f"or function; operator: {operator}, first operand: {format_path(first.elements)}"
            )

    def _operand_type(self, node: ast.Operand) -> str | None:
        """The type an operand is known to have before evaluation, if any."""
        if isinstance(node, ast.Literal):
            return value_type(node.value)
        if isinstance(node, ast.FunctionCall) and node.name == "size":
            return "N"
        return None

    def _wrong_type(self, function: str, type_name: str) -> errors.DynamoError:
        return self.fail(
            "Incorrect operand type for operator or function; "
            f"operator or function: {function}, operand type: {type_name}"
        )

    def _requires_path(self, function: str) -> errors.DynamoError:
        return self.fail(f"Operator or function requires a document path; operator or function: {function}")

    def _check_condition_function(self, call: ast.FunctionCall) -> None:
        name = call.name
        args = call.args
        if name in ("attribute_exists", "attribute_not_exists"):
            if not isinstance(args[0], ast.Path):
                raise self._requires_path(name)
        elif name == "attribute_type":
            kind = self._operand_type(args[1])
            if kind is None:
                raise self._wrong_type(name, _ANY_TYPE)
            if kind != "S":
                raise self._wrong_type(name, kind)
            assert isinstance(args[1], ast.Literal)
            type_name = args[1].value["S"]
            if type_name not in _VALID_TYPE_NAMES:
                raise self.fail(
                    f"Invalid attribute type name found; type: {type_name}, "
                    f"valid types: {_VALID_TYPES_MESSAGE}"
                )
        elif name == "begins_with":
            for arg in args:
                kind = self._operand_type(arg)
                if kind is not None and kind not in ("S", "B"):
                    raise self._wrong_type(name, kind)
        elif name == "size":
            kind = self._operand_type(args[0])
            if kind in ("N", "BOOL", "NULL"):
                raise self._wrong_type(name, kind)

    def _check_orderable(self, operator: str, node: ast.Operand) -> None:
        if isinstance(node, ast.Literal):
            kind = value_type(node.value)
            if kind not in _ORDERABLE:
                raise self._wrong_type(operator, kind)

    def _check_bounds(self, low: ast.Operand, high: ast.Operand) -> None:
        if not (isinstance(low, ast.Literal) and isinstance(high, ast.Literal)):
            return
        low_type = value_type(low.value)
        high_type = value_type(high.value)
        bounds = (
            f"lower bound operand: AttributeValue: {{{low_type}:{low.value[low_type]}}}, "
            f"upper bound operand: AttributeValue: {{{high_type}:{high.value[high_type]}}}"
        )
        if low_type != high_type:
            raise self.fail(
                f"The BETWEEN operator requires same data type for lower and upper bounds; {bounds}"
            )
        order = compare(low.value, high.value)
        if order is not None and order > 0:
            raise self.fail(
                "The BETWEEN operator requires upper bound to be greater than or equal to "
                f"lower bound; {bounds}"
            )

    # -- updates --

    def update(self, tree: ast.Update) -> ast.Update:
        self.kind = "UpdateExpression"
        # All names before any value: DynamoDB reports an undefined name first.
        for path in walk_paths(tree):
            self.path(path)
        actions = tuple(
            ast.UpdateAction(
                a.clause, self.path(a.path), self.operand(a.value) if a.value is not None else None
            )
            for a in tree.actions
        )
        check_no_overlap([a.path.elements for a in actions], self.kind)
        for action in actions:
            if action.clause in ("ADD", "DELETE"):
                assert isinstance(action.value, ast.Literal)
                self._check_add_delete(action.clause, action.value.value)
        for action in actions:
            if action.value is not None:
                for node in _update_nodes(action.value):
                    self._check_update_function(node)
        return ast.Update(actions)

    def _check_add_delete(self, clause: str, value: dict[str, Any]) -> None:
        kind = value_type(value)
        if kind in SET_TYPES or (clause == "ADD" and kind == "N"):
            return
        raise self.fail(
            "Incorrect operand type for operator or function; "
            f"operator: {clause}, operand type: {_UPDATE_TYPE_NAMES.get(kind, kind)}"
        )

    def _check_update_function(self, node: ast.FunctionCall | ast.Arithmetic) -> None:
        if isinstance(node, ast.Arithmetic):
            for side in (node.left, node.right):
                if isinstance(side, ast.Literal) and value_type(side.value) != "N":
                    raise self._wrong_type(node.op, value_type(side.value))
            return
        self._check_arity(node)
        if node.name == "if_not_exists":
            if not isinstance(node.args[0], ast.Path):
                raise self._requires_path(node.name)
        else:
            for arg in node.args:
                if isinstance(arg, ast.Literal) and value_type(arg.value) != "L":
                    raise self._wrong_type(node.name, value_type(arg.value))

    # -- projections --

    def projection(self, tree: ast.Projection) -> ast.Projection:
        self.kind = "ProjectionExpression"
        paths = tuple(self.path(p) for p in tree.paths)
        check_no_overlap([p.elements for p in paths], self.kind)
        return ast.Projection(paths)


def _update_nodes(node: object) -> Iterator[ast.FunctionCall | ast.Arithmetic]:
    """Function calls and arithmetic of an update operand, operands before their user."""
    for child in ast.children(node):
        yield from _update_nodes(child)
    if isinstance(node, (ast.FunctionCall, ast.Arithmetic)):
        yield node
