"""The first two stages of DynamoDB's request checks, driven by its service model.

DynamoDB's service framework (Coral) checks a request in stages, and the first stage
that fails decides the answer:

(a) deserialization: the request is read into the operation's input shape; a member of
    the wrong JSON type, however deeply nested (an `Expected.<attr>.Exists`, an
    `ExclusiveStartKey.<attr>`, each AttributeValue), is a SerializationException in
    the framework's own words (the first one found);
(b) constraint validation: every required, length, range, pattern and enum constraint
    of the model, all violations of the request reported together as "N validation
    error(s) detected: Value ... at '<member path>' failed to satisfy constraint: ...".

The operations' own modules then make the semantic checks (c), and only after them
does an action look at table state (d).

The shapes are the public service model botocore ships
(`botocore/data/dynamodb/.../service-2.json`): it is loaded once, at import, and
compiled into one tree of checkers per operation. One walk over the request's own JSON
makes both stages; member paths are only built, in a second walk, for a request that
has a violation to report. JSON `null` anywhere means "absent", as in Coral. Nesting is
bounded explicitly (`MAX_NESTING`): no request, however deep, reaches Python's
recursion limit.

Where DynamoDB's recorded answers differ from the public model, the recorded answer
wins (`_SHAPE_OVERRIDES`, `_NOT_REQUIRED`, `_UNCHECKED_KEY_SHAPES`), each with why.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from partita.api.item import check_base64
from partita.api.shape import CREATE_TABLE_NEEDS_NAME, repr_value
from partita.common import errors
from partita.common.errors import DynamoError

# JSON containers a request may nest: a document of DynamoDB's 32 levels is two
# containers per level (AttributeValue + its M or L) under at most a handful of request
# levels (RequestItems, a list, a PutRequest, Item). Deeper is refused with DynamoDB's
# nesting error before any recursion could get near the interpreter's limit.
MAX_NESTING = 80

# Table names: the model now types TableName as TableArn (1..1024 characters, so that an
# ARN may stand for the name). The router has put the name in an ARN's place by now
# (`router.table_arns`), and DynamoDB's recorded answers for names are TableName's
# constraints.
# An empty name is reported by the model's own minimum (1) alone (nubo-db's conformance
# suite, run against DynamoDB in 2026: PutItem with TableName '').
_TABLE_NAME = {"type": "string", "min": 3, "max": 255, "pattern": "[a-zA-Z0-9_.-]+", "floor": 1}
_SHAPE_OVERRIDES: dict[str, dict[str, Any]] = {
    "TableArn": _TABLE_NAME,
    # Attribute names (Item keys, ExpressionAttributeNames values, AttributesToGet):
    # DynamoDB reports their sizes in its own words, never as a Coral constraint.
    "AttributeName": {"type": "string"},
    # Tag operations check the ARN itself first, with DynamoDB's "Invalid TableArn"
    # (recorded by dynalite), before any constraint; see operations/tag_resource.py.
    "ResourceArnString": {"type": "string"},
}
# Enum lists in the order DynamoDB's messages print them (a Java set's order, recorded by
# dynalite), where it is not the model's.
_ENUM_ORDER: dict[str, list[str]] = {
    "Select": ["SPECIFIC_ATTRIBUTES", "COUNT", "ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES"],
    "ComparisonOperator": [
        "IN", "NULL", "BETWEEN", "LT", "NOT_CONTAINS", "EQ", "GT", "NOT_NULL", "NE", "LE", "BEGINS_WITH", "GE",
        "CONTAINS",
    ],
    "ScalarAttributeType": ["B", "N", "S"],
    "ProjectionType": ["ALL", "INCLUDE", "KEYS_ONLY"],
    # The 2026 catalogue of DynamoDB's answers (DDB-TABLE-035).
    "StreamViewType": ["OLD_IMAGE", "KEYS_ONLY", "NEW_AND_OLD_IMAGES", "NEW_IMAGE"],
}  # fmt: skip
# Members the model requires but DynamoDB checks later, in its own words (recorded by
# dynalite): the tag operations answer an invalid ARN before a missing Tags/TagKeys.
_NOT_REQUIRED = frozenset(
    {
        ("TagResourceInput", "ResourceArn"),
        ("TagResourceInput", "Tags"),
        ("UntagResourceInput", "ResourceArn"),
        ("UntagResourceInput", "TagKeys"),
        ("ListTagsOfResourceInput", "ResourceArn"),
    }
)
# Map keys whose shape constraints DynamoDB reports as its own semantic errors instead
# ("Attribute name is too large ..."; see api/item.py), never as a Coral constraint.
_UNCHECKED_KEY_SHAPES = frozenset({"AttributeName"})

_LIST_START = "Start of list found where not expected"
_MAP_START = "Start of structure or map found where not expected."


def _token(value: object) -> str:
    """Coral's name for the JSON token it found (Jackson's token names)."""
    if value is True:
        return "TRUE_VALUE"
    if value is False:
        return "FALSE_VALUE"
    if isinstance(value, str):
        return "STRING_VALUE"
    return "NUMBER_VALUE"


def _container_error(value: object) -> DynamoError | None:
    if isinstance(value, list):
        return errors.serialization(_LIST_START)
    if isinstance(value, dict):
        return errors.serialization(_MAP_START)
    return None


def _scalar_mismatch(value: object, type_name: str) -> DynamoError:
    container = _container_error(value)
    if container is not None:
        return container
    return errors.serialization(f"{_token(value)} cannot be converted to {type_name}")


class Walk:
    """One walk over a request. The first walk only notes that some constraint failed
    (`found`); a second one, only for such a request, builds every message with its
    member path (`messages`)."""

    __slots__ = ("found", "messages", "valueless")

    def __init__(self, describe: bool, valueless: Callable[[str], str | None] | None = None) -> None:
        self.found = False
        self.messages: list[str] | None = [] if describe else None
        self.valueless = valueless

    def violation(self, value: object, path: str, constraint: str) -> None:
        self.found = True
        if self.messages is not None:
            named = self.valueless(path) if self.valueless is not None else None
            if named is not None:
                self.messages.append(f"Value at '{named}' failed to satisfy constraint: {constraint}")
                return
            shown = "null" if value is None else repr_value(value)
            self.messages.append(f"Value {shown} at '{path}' failed to satisfy constraint: {constraint}")


def _member_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _compiled(pattern: str) -> re.Pattern[str] | None:
    """The model's patterns are Java's; the two Python cannot read (\\p{Print}, UTF-16
    surrogate ranges) belong to auto-scaling shapes no Partita operation takes."""
    try:
        return re.compile(pattern)
    except re.error:
        return None


class Constraints:
    """A shape's constraints, with Coral's wording, in the order Coral reports them."""

    __slots__ = ("enum", "enum_text", "floor", "max", "min", "pattern", "pattern_text")

    def __init__(self, shape: dict[str, Any]) -> None:
        # A length below `floor` is reported alone, as that minimum (see _TABLE_NAME).
        self.floor: int | None = shape.get("floor")
        pattern = shape.get("pattern")
        self.pattern_text: str = pattern or ""
        self.pattern: re.Pattern[str] | None = _compiled(pattern) if pattern else None
        self.min: int | None = shape.get("min")
        self.max: int | None = shape.get("max")
        enum = shape.get("enum")
        self.enum: frozenset[str] | None = frozenset(enum) if enum else None
        self.enum_text = f"Member must satisfy enum value set: [{', '.join(enum)}]" if enum else ""

    def any(self) -> bool:
        return (
            self.pattern is not None or self.min is not None or self.max is not None or self.enum is not None
        )

    def texts(self) -> list[str]:
        """Every constraint as Coral lists them in a map-key or map-value message."""
        out = []
        if self.max is not None:
            out.append(f"Member must have length less than or equal to {self.max}")
        if self.min is not None:
            out.append(f"Member must have length greater than or equal to {self.min}")
        if self.pattern is not None:
            out.append(f"Member must satisfy regular expression pattern: {self.pattern_text}")
        return out

    def check_text(self, value: str, walk: Walk, path: str) -> bool:
        if self.floor is not None and len(value) < self.floor:
            walk.violation(value, path, f"Member must have length greater than or equal to {self.floor}")
            return False
        ok = True
        if self.pattern is not None and self.pattern.fullmatch(value) is None:
            walk.violation(
                value, path, f"Member must satisfy regular expression pattern: {self.pattern_text}"
            )
            ok = False
        ok = self.check_length(value, len(value), walk, path) and ok
        if self.enum is not None and value not in self.enum:
            walk.violation(value, path, self.enum_text)
            ok = False
        return ok

    def check_length(self, value: object, length: int, walk: Walk, path: str) -> bool:
        if self.min is not None and length < self.min:
            walk.violation(value, path, f"Member must have length greater than or equal to {self.min}")
            return False
        if self.max is not None and length > self.max:
            walk.violation(value, path, f"Member must have length less than or equal to {self.max}")
            return False
        return True

    def check_number(self, value: int | float, walk: Walk, path: str) -> None:
        # int | float, not float: compiled code would turn 0 into 0.0 in the message.
        if self.min is not None and value < self.min:
            walk.violation(value, path, f"Member must have value greater than or equal to {self.min}")
        elif self.max is not None and value > self.max:
            walk.violation(value, path, f"Member must have value less than or equal to {self.max}")


_NO_CONSTRAINTS = Constraints({})


class Check:
    """Checks one JSON value (never None: null is absent) against one shape: its type
    (stage a, raises) and its constraints (stage b, noted in `walk`)."""

    def check(self, value: object, depth: int, walk: Walk, path: str) -> None:
        raise NotImplementedError

    def satisfied(self, value: object) -> bool:
        """Whether a map value meets this shape's own constraints (no descent)."""
        return True


class StringCheck(Check):
    def __init__(self, type_name: str, constraints: Constraints) -> None:
        self.type_name = type_name  # "String", or "Blob" for base64 text
        self.constraints = constraints
        self.constrained = constraints.any()

    def check(self, value: object, depth: int, walk: Walk, path: str) -> None:
        if not isinstance(value, str):
            raise _scalar_mismatch(value, self.type_name)
        if self.constrained:
            self.constraints.check_text(value, walk, path)


class BlobCheck(StringCheck):
    """Base64 text, decoded (and so refused) while the request is read, before any
    validation: a blob that is not base64 is a SerializationException even in a request
    missing its required members (`item.check_base64`)."""

    def __init__(self) -> None:
        super().__init__("Blob", _NO_CONSTRAINTS)

    def check(self, value: object, depth: int, walk: Walk, path: str) -> None:
        if not isinstance(value, str):
            raise _scalar_mismatch(value, "Blob")
        check_base64(value)


class BooleanCheck(Check):
    def check(self, value: object, depth: int, walk: Walk, path: str) -> None:
        if not isinstance(value, bool):
            raise _scalar_mismatch(value, "Boolean")


class NumberCheck(Check):
    """integer, long, double: a JSON number (a fraction is the next stages' concern)."""

    def __init__(self, type_name: str, constraints: Constraints) -> None:
        self.type_name = type_name
        self.constraints = constraints
        self.constrained = constraints.min is not None or constraints.max is not None

    def check(self, value: object, depth: int, walk: Walk, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _scalar_mismatch(value, self.type_name)
        if self.constrained:
            self.constraints.check_number(value, walk, path)


class TimestampCheck(Check):
    """Epoch seconds as a number, or a date string: Coral accepts both."""

    def check(self, value: object, depth: int, walk: Walk, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise _scalar_mismatch(value, "Date")


class StructureCheck(Check):
    def __init__(self) -> None:
        # Filled after creation (shapes may recurse): checker and path segment by name.
        self.members: dict[str, tuple[Check, str]] = {}
        self.required: list[tuple[str, str]] = []  # (member, path segment)

    def check(self, value: object, depth: int, walk: Walk, path: str) -> None:
        if not isinstance(value, dict):
            if isinstance(value, list):
                raise errors.serialization(_LIST_START)
            raise errors.serialization("Expected null")
        if depth > MAX_NESTING:
            raise errors.nesting_too_deep()
        members = self.members
        describe = walk.messages is not None
        for name, member in value.items():
            if member is not None:
                found = members.get(name)
                # Members the model does not know are ignored, as Coral ignores them.
                if found is not None:
                    checker, segment = found
                    checker.check(member, depth + 1, walk, _member_path(path, segment) if describe else "")
        for name, segment in self.required:
            if value.get(name) is None:
                walk.violation(
                    None, _member_path(path, segment) if describe else "", "Member must not be null"
                )


class ListCheck(Check):
    def __init__(self, constraints: Constraints) -> None:
        self.member: Check = Check()
        self.constraints = constraints
        self.constrained = constraints.min is not None or constraints.max is not None

    def check(self, value: object, depth: int, walk: Walk, path: str) -> None:
        if not isinstance(value, list):
            if isinstance(value, dict):
                raise errors.serialization(_MAP_START)
            raise errors.serialization("Expected list or null")
        if depth > MAX_NESTING:
            raise errors.nesting_too_deep()
        member = self.member
        describe = walk.messages is not None
        for i, element in enumerate(value, 1):
            if element is not None:
                member.check(element, depth + 1, walk, f"{path}.{i}.member" if describe else "")
        if self.constrained:
            self.constraints.check_length(value, len(value), walk, path)

    def satisfied(self, value: object) -> bool:
        if not self.constrained or not isinstance(value, list):
            return True
        return self.constraints.check_length(value, len(value), Walk(False), "")


class MapCheck(Check):
    def __init__(self, constraints: Constraints, key_constraints: Constraints) -> None:
        self.value: Check = Check()
        self.value_rule: Check = Check()  # the value's own constraints, when value_text is set
        self.constraints = constraints
        self.constrained = constraints.min is not None or constraints.max is not None
        self.key_constraints = key_constraints
        self.keys_constrained = key_constraints.any()
        self.key_text = f"Map keys must satisfy constraint: [{', '.join(key_constraints.texts())}]"
        self.value_text = ""  # set once the value's checker is known

    def check(self, value: object, depth: int, walk: Walk, path: str) -> None:
        if not isinstance(value, dict):
            if isinstance(value, list):
                raise errors.serialization(_LIST_START)
            raise errors.serialization("Expected map or null")
        if depth > MAX_NESTING:
            raise errors.nesting_too_deep()
        checker = self.value
        describe = walk.messages is not None
        for key, element in value.items():
            if self.keys_constrained and not self.key_constraints.check_text(key, Walk(False), ""):
                walk.violation(key, path, self.key_text)
            if element is not None:
                if self.value_text and not self.value_rule.satisfied(element):
                    # Coral reports a map value's own constraints on the map, naming the entry.
                    walk.violation(f"{{{key}={element}}}", path, self.value_text)
                checker.check(element, depth + 1, walk, f"{path}.{key}.member" if describe else "")
        if self.constrained:
            self.constraints.check_length(value, len(value), walk, path)


_SCALAR_TYPE_NAMES = {"integer": "Integer", "long": "Long", "double": "Double", "float": "Float"}


class _Compiler:
    """One checker per shape name, shared by every operation that uses the shape."""

    def __init__(self, shapes: dict[str, Any]) -> None:
        self.shapes = shapes
        self.done: dict[str, Check] = {}

    def shape(self, name: str) -> dict[str, Any]:
        shape: dict[str, Any] = self.shapes[name]
        override = _SHAPE_OVERRIDES.get(name)
        if override is not None and override["type"] == shape["type"]:
            return override
        if name in _ENUM_ORDER and sorted(_ENUM_ORDER[name]) == sorted(shape.get("enum", [])):
            return {**shape, "enum": _ENUM_ORDER[name]}
        return shape

    def _member(self, member_name: str, shape_name: str) -> Check:
        # A member that is an ARN by name (ListImports' and ExportTableToPointInTime's
        # TableArn) keeps the model's own constraints: the table-name override of the
        # TableArn shape is for the TableName members that share it.
        if member_name in ("TableArn", "SourceTableArn") and shape_name in _SHAPE_OVERRIDES:
            return StringCheck("String", Constraints(self.shapes[shape_name]))
        return self.compile(shape_name)

    def compile(self, name: str) -> Check:
        found = self.done.get(name)
        if found is not None:
            return found
        shape = self.shape(name)
        kind = shape["type"]
        constraints = Constraints(shape)
        if kind == "structure":
            structure = StructureCheck()
            self.done[name] = structure  # before the members: AttributeValue contains itself
            for member_name, member in shape.get("members", {}).items():
                structure.members[member_name] = (
                    self._member(member_name, member["shape"]),
                    _segment(member_name),
                )
            structure.required = [
                (member, _segment(member))
                for member in shape.get("required", [])
                if (name, member) not in _NOT_REQUIRED
            ]
            return structure
        if kind == "list":
            listing = ListCheck(constraints)
            self.done[name] = listing
            listing.member = self.compile(shape["member"]["shape"])
            return listing
        if kind == "map":
            key_shape = shape["key"]["shape"]
            keys = (
                _NO_CONSTRAINTS if key_shape in _UNCHECKED_KEY_SHAPES else Constraints(self.shape(key_shape))
            )
            mapping = MapCheck(constraints, keys)
            self.done[name] = mapping
            mapping.value = self.compile(shape["value"]["shape"])
            value_shape = self.shape(shape["value"]["shape"])
            if isinstance(mapping.value, ListCheck) and ("min" in value_shape or "max" in value_shape):
                # A map value's own constraints are reported once, on the map, naming the
                # entry; the walk into the value then checks only what is inside it.
                texts = Constraints(value_shape).texts()
                mapping.value_text = f"Map value must satisfy constraint: [{', '.join(texts)}]"
                mapping.value_rule = mapping.value
                inside = ListCheck(_NO_CONSTRAINTS)
                inside.member = mapping.value.member
                mapping.value = inside
            return mapping
        checker: Check
        if kind == "string":
            checker = StringCheck("String", constraints)
        elif kind == "blob":
            checker = BlobCheck()
        elif kind == "boolean":
            checker = BooleanCheck()
        elif kind == "timestamp":
            checker = TimestampCheck()
        elif kind in _SCALAR_TYPE_NAMES:
            checker = NumberCheck(_SCALAR_TYPE_NAMES[kind], constraints)
        else:
            raise ValueError(f"shape {name}: unknown type {kind!r}")
        self.done[name] = checker
        return checker


def _segment(member: str) -> str:
    """A member's name in Coral's paths: lower camel case ("TableName" -> "tableName")."""
    return member[:1].lower() + member[1:]


def compile_model(model: dict[str, Any]) -> dict[str, StructureCheck]:
    """Each operation's input checker, by operation name."""
    compiler = _Compiler(model["shapes"])
    plans: dict[str, StructureCheck] = {}
    for name, operation in model["operations"].items():
        input_shape = operation.get("input")
        checker = compiler.compile(input_shape["shape"]) if input_shape else StructureCheck()
        if isinstance(checker, StructureCheck):
            plans[name] = checker
    return plans


def load_model() -> dict[str, Any]:
    """DynamoDB's service model as the installed botocore ships it."""
    from botocore.loaders import Loader

    model: dict[str, Any] = Loader().load_service_model("dynamodb", "service-2")
    return model


def load_streams_model() -> dict[str, Any]:
    """DynamoDB Streams' service model (its operations share DynamoDB's endpoint)."""
    from botocore.loaders import Loader

    model: dict[str, Any] = Loader().load_service_model("dynamodbstreams", "service-2")
    return model


_MODEL = load_model()
# No DynamoDB Streams operation shares a name with one of DynamoDB's.
_PLANS: dict[str, StructureCheck] = {**compile_model(load_streams_model()), **compile_model(_MODEL)}
_NO_MEMBERS = StructureCheck()


# Members DynamoDB's newer front end reports by their request name, without the value
# ("Value at 'Limit' ..."), where others still get Coral's form (nubo-db's conformance
# suite, run against DynamoDB in 2026: Query's Limit, BatchGetItem's Keys; Scan's Limit
# is still "Value '0' at 'limit'").
_BATCH_GET_KEYS = re.compile(r"requestItems\.(.+)\.member\.keys")


def _query_names(path: str) -> str | None:
    return "Limit" if path == "limit" else None


def _batch_get_names(path: str) -> str | None:
    keys = _BATCH_GET_KEYS.fullmatch(path)
    return f"RequestItems.{keys.group(1)}.member.Keys" if keys else None


_VALUELESS: dict[str, Callable[[str], str | None]] = {"Query": _query_names, "BatchGetItem": _batch_get_names}
# Batches without RequestItems: DynamoDB's own words, not Coral's (same suite).
_BATCHES = frozenset({"BatchGetItem", "BatchWriteItem"})


def check_request(operation: str, body: dict[str, Any]) -> None:
    """Stages (a) and (b) for `operation`: the first wrongly typed member raises its
    SerializationException; otherwise every constraint violation is reported in one
    ValidationException. An operation the model does not describe (none Partita serves
    today) is checked as a structure without members."""
    plan = _PLANS.get(operation, _NO_MEMBERS)
    walk = Walk(describe=False)
    plan.check(body, 1, walk, "")  # raises the first wrongly typed member's error
    if operation in _BATCHES and body.get("RequestItems") in (None, {}):
        raise errors.validation(f"The requestItems parameter is required for {operation}")
    if operation == "CreateTable" and body.get("TableName") is None:
        raise errors.validation(CREATE_TABLE_NEEDS_NAME)
    if walk.found:
        described = Walk(describe=True, valueless=_VALUELESS.get(operation))
        plan.check(body, 1, described, "")
        assert described.messages is not None
        raise errors.constraint_violations(described.messages)


def input_members(operation: str) -> list[str]:
    """The members of an operation's input shape, in the model's order."""
    spec = _MODEL["operations"][operation].get("input")
    return list(_MODEL["shapes"][spec["shape"]].get("members", {})) if spec else []


def operation_names() -> frozenset[str]:
    """Every operation of DynamoDB's and DynamoDB Streams' models."""
    return frozenset(_PLANS)
