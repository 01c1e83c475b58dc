"""Resource-based policies: the policy language, parsed and evaluated (pure).

A policy is IAM's JSON grammar: `Statement` (one or a list), each with an `Effect`
(Allow or Deny), `Principal` or `NotPrincipal`, `Action` or `NotAction`, and optionally
`Resource` or `NotResource` and `Condition`. `parse` checks a document as DynamoDB does
before it attaches one (refusals are ValidationExceptions saying "Invalid policy
document: ..."; the action-name wording is DynamoDB's, recorded in
aws-controllers-k8s/dynamodb-controller#176; the other details follow IAM's
MalformedPolicyDocument texts) and compiles it into `Policy`, whose `decision` is what
the router's access check asks.

What a request is checked as: its principal is the access key's account and name
(`principal_names`), its action `dynamodb:<Operation>` (`dynamodb:PartiQLSelect`... for
PartiQL, the item actions for transactions), its resource the table's ARN (an index's
or a stream's ARN where the request reads one).

Conditions are IAM's (`Condition`): the String, Numeric, Date, Bool, IpAddress, Arn and
Null operators, with `...IfExists` and the `ForAllValues:`/`ForAnyValue:` qualifiers,
over the keys a request carries here (`CONTEXT_KEYS`: who the key is, whether the
request came over TLS, its source address, the time). As in IAM, a condition on a key
the request does not carry (DynamoDB's own keys, such as `dynamodb:LeadingKeys`, are
not carried yet) is false, unless it is an `IfExists` one or `Null`: such a statement
neither allows nor denies.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson

from partita.api import service_model
from partita.common import errors

# DynamoDB's limit, counted in bytes of the document as sent, white space included.
MAX_POLICY_BYTES = 20 * 1024

_INVALID = "One or more parameter values were invalid: Invalid policy document: "

# Actions on the account rather than on a table or stream: a resource policy cannot
# grant them (DynamoDB refuses dynamodb:ListStreams in a stream's policy).
_ACCOUNT_ACTIONS = frozenset(
    {
        "ListTables",
        "ListStreams",
        "ListBackups",
        "ListExports",
        "ListImports",
        "ListGlobalTables",
        "ListContributorInsights",
        "DescribeLimits",
        "DescribeEndpoints",
    }
)
# IAM actions with no operation of their own (a transaction's ConditionCheck, PartiQL).
_EXTRA_ACTIONS = frozenset(
    {"ConditionCheckItem", "PartiQLSelect", "PartiQLInsert", "PartiQLUpdate", "PartiQLDelete"}
)


@lru_cache(maxsize=1)
def _action_names() -> frozenset[str]:
    return frozenset(
        name.lower() for name in (service_model.operation_names() | _EXTRA_ACTIONS) - _ACCOUNT_ACTIONS
    )


class Decision(enum.Enum):
    DENY = "Deny"
    ALLOW = "Allow"
    NONE = "None"  # no statement matched: the key's own permissions decide


def _pattern(glob: str, ignore_case: bool) -> re.Pattern[str]:
    """IAM's wildcards: `*` any run of characters, `?` any one character."""
    text = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    return re.compile(text, re.IGNORECASE if ignore_case else 0)


# The condition keys a request carries (lower case: IAM's keys are case-insensitive).
CONTEXT_KEYS = (
    "aws:principalarn",
    "aws:principalaccount",
    "aws:principaltype",
    "aws:username",
    "aws:userid",
    "aws:securetransport",
    "aws:sourceip",
    "aws:currenttime",
    "aws:epochtime",
    "aws:requestedregion",
)
Context = Mapping[str, str]


def _number(text: str) -> float:
    return float(text)


def _date(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _in_network(value: str, network: str) -> bool:
    try:
        return ipaddress.ip_address(value) in ipaddress.ip_network(network, strict=False)
    except ValueError:
        return False


def _like(value: str, pattern: str) -> bool:
    return _pattern(pattern, ignore_case=False).fullmatch(value) is not None


_ORDERED: dict[str, Callable[[float, float], bool]] = {
    "Equals": lambda a, b: a == b,
    "NotEquals": lambda a, b: a != b,
    "LessThan": lambda a, b: a < b,
    "LessThanEquals": lambda a, b: a <= b,
    "GreaterThan": lambda a, b: a > b,
    "GreaterThanEquals": lambda a, b: a >= b,
}
# Each operator: (does the key's value match one of the condition's values, negated?).
# A negated operator holds when the value matches none of them.
_OPERATORS: dict[str, tuple[Callable[[str, str], bool], bool]] = {
    "StringEquals": (lambda v, c: v == c, False),
    "StringNotEquals": (lambda v, c: v == c, True),
    "StringEqualsIgnoreCase": (lambda v, c: v.lower() == c.lower(), False),
    "StringNotEqualsIgnoreCase": (lambda v, c: v.lower() == c.lower(), True),
    "StringLike": (_like, False),
    "StringNotLike": (_like, True),
    "ArnEquals": (lambda v, c: v == c, False),
    "ArnNotEquals": (lambda v, c: v == c, True),
    "ArnLike": (_like, False),
    "ArnNotLike": (_like, True),
    "Bool": (lambda v, c: v.lower() == c.lower(), False),
    "IpAddress": (_in_network, False),
    "NotIpAddress": (_in_network, True),
    **{
        f"Numeric{name}": ((lambda test: lambda v, c: test(_number(v), _number(c)))(t), False)
        for name, t in _ORDERED.items()
    },
    **{
        f"Date{name}": ((lambda test: lambda v, c: test(_date(v), _date(c)))(t), False)
        for name, t in _ORDERED.items()
    },
}


@dataclass(frozen=True)
class Condition:
    """One operator's test of one key: the key's value against any of `values`."""

    operator: str  # a key of _OPERATORS, or "Null"
    key: str  # lower case
    values: tuple[str, ...]
    if_exists: bool = False
    qualifier: str = ""  # "ForAllValues", "ForAnyValue" or ""

    def holds(self, context: Context) -> bool:
        value = context.get(self.key)
        if self.operator == "Null":
            return (value is None) == (self.values[0].lower() == "true")
        if value is None:
            # IAM: a missing key fails the test, but where the test says it may be absent.
            return self.if_exists or self.qualifier == "ForAllValues"
        test, negated = _OPERATORS[self.operator]
        try:
            matched = any(test(value, wanted) for wanted in self.values)
        except (ValueError, TypeError):  # a number or date that is not one: no match
            matched = False
        return matched != negated


@dataclass(frozen=True)
class Statement:
    deny: bool
    principals: frozenset[str] | None  # None: every principal ("*")
    not_principal: bool
    actions: tuple[re.Pattern[str], ...]
    not_action: bool
    resources: tuple[re.Pattern[str], ...] | None  # None: every resource
    not_resource: bool
    conditions: tuple[Condition, ...] = ()

    def matches(self, principal: frozenset[str], action: str, resource: str, context: Context) -> bool:
        if not all(c.holds(context) for c in self.conditions):
            return False
        named = self.principals is None or not self.principals.isdisjoint(principal)
        if named == self.not_principal:
            return False
        acted = any(p.fullmatch(action) for p in self.actions)
        if acted == self.not_action:
            return False
        if self.resources is None:
            return not self.not_resource
        return any(p.fullmatch(resource) for p in self.resources) != self.not_resource


@dataclass(frozen=True)
class Policy:
    statements: tuple[Statement, ...]

    def decision(
        self, principal: frozenset[str], action: str, resource: str, context: Context | None = None
    ) -> Decision:
        """An explicit Deny wins over any Allow, as in IAM's evaluation."""
        allowed = False
        for statement in self.statements:
            if statement.matches(principal, action, resource, context or {}):
                if statement.deny:
                    return Decision.DENY
                allowed = True
        return Decision.ALLOW if allowed else Decision.NONE


def principal_names(account_id: str, key_name: str) -> frozenset[str]:
    """What a policy's `Principal` may call the holder of an access key: anyone, its
    account (by id or root ARN), or the key by name as an IAM user of that account."""
    names = {"*", account_id, f"arn:aws:iam::{account_id}:root"}
    if key_name:
        names.add(f"arn:aws:iam::{account_id}:user/{key_name}")
    return frozenset(names)


def parse(document: str) -> Policy:
    """The compiled policy, or DynamoDB's ValidationException for a document it would
    not attach."""
    if len(document.encode()) > MAX_POLICY_BYTES:
        raise errors.validation(
            f"One or more parameter values were invalid: Policy document size exceeds the maximum of "
            f"{MAX_POLICY_BYTES} bytes"
        )
    try:
        data = orjson.loads(document)
    except orjson.JSONDecodeError:
        raise _invalid("This policy contains invalid Json") from None
    if not isinstance(data, dict):
        raise _invalid("This policy contains invalid Json")
    version = data.get("Version")
    if version is not None and version not in ("2012-10-17", "2008-10-17"):
        raise _invalid(f"The policy must contain a valid version string: {version}")
    raw = data.get("Statement")
    if raw is None:
        raise _invalid("Missing required field Statement")
    listed = raw if isinstance(raw, list) else [raw]
    if not listed:
        raise _invalid("Missing required field Statement")
    statements = tuple(_statement(s) for s in listed)
    wrong = sorted({a for s in listed for a in _actions_named(s) if not _known_action(a)})
    if wrong:
        names = ", ".join(f'"{a}"' for a in wrong)
        raise _invalid(f"The following action names are invalid: {names}")
    return Policy(statements)


def _invalid(why: str) -> errors.DynamoError:
    return errors.validation(_INVALID + why)


def _strings(value: Any, field: str) -> list[str]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, str) for v in values):
        raise _invalid(f"Syntax errors in policy: {field} must be a string or a list of strings")
    return list(values)


def _one_of(statement: dict[str, Any], name: str) -> tuple[Any, bool]:
    """(value, negated) of `name` or `Not<name>`; both or neither is refused."""
    plain, negated = statement.get(name), statement.get(f"Not{name}")
    if plain is not None and negated is not None:
        raise _invalid(f"Statement cannot contain both {name} and Not{name}")
    if plain is None and negated is None:
        raise _invalid(f"Missing required field {name}")
    return (plain, False) if plain is not None else (negated, True)


def _statement(raw: Any) -> Statement:
    if not isinstance(raw, dict):
        raise _invalid("Syntax errors in policy: a Statement must be an object")
    effect = raw.get("Effect")
    if effect is None:
        raise _invalid("Missing required field Effect")
    if effect not in ("Allow", "Deny"):
        raise _invalid(f"Invalid effect: {effect}")
    principal, not_principal = _one_of(raw, "Principal")
    action, not_action = _one_of(raw, "Action")
    resources: tuple[re.Pattern[str], ...] | None = None
    not_resource = False
    if raw.get("Resource") is not None or raw.get("NotResource") is not None:
        resource, not_resource = _one_of(raw, "Resource")
        named = _strings(resource, "Resource")
        resources = None if "*" in named else tuple(_pattern(r, ignore_case=False) for r in named)
    return Statement(
        deny=effect == "Deny",
        principals=_principals(principal),
        not_principal=not_principal,
        actions=tuple(_pattern(a, ignore_case=True) for a in _strings(action, "Action")),
        not_action=not_action,
        resources=resources,
        not_resource=not_resource,
        conditions=_conditions(raw.get("Condition")),
    )


def _text(value: Any) -> Any:
    """A condition value as IAM reads it: JSON booleans and numbers stand for their text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def _conditions(raw: Any) -> tuple[Condition, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise _invalid("Syntax errors in policy: Condition must be an object")
    out = []
    for name, tests in raw.items():
        qualifier, _, operator = name.rpartition(":")
        if_exists = operator.endswith("IfExists") and operator != "IfExists"
        base = operator[: -len("IfExists")] if if_exists else operator
        if qualifier not in ("", "ForAllValues", "ForAnyValue") or (
            base not in _OPERATORS and base != "Null"
        ):
            raise _invalid(f"Invalid Condition type : {name}")
        if not isinstance(tests, dict) or not tests:
            raise _invalid(f"Syntax errors in policy: {name} must name a condition key")
        for key, values in tests.items():
            listed = [_text(v) for v in (values if isinstance(values, list) else [values])]
            out.append(
                Condition(base, str(key).lower(), tuple(_strings(listed, "Condition")), if_exists, qualifier)
            )
    return tuple(out)


def _principals(value: Any) -> frozenset[str] | None:
    if value == "*":
        return None
    if not isinstance(value, dict) or not value:
        raise _invalid("Invalid principal in policy")
    names: set[str] = set()
    for kind, listed in value.items():
        if kind not in ("AWS", "Service", "Federated", "CanonicalUser"):
            raise _invalid("Invalid principal in policy")
        entries = _strings(listed, "Principal")
        if kind == "AWS":
            if "*" in entries:
                return None
            names.update(entries)
        # Service and federated principals name no access key: they never match one.
    return frozenset(names)


def _actions_named(raw: Any) -> list[str]:
    if not isinstance(raw, dict):
        return []
    value = raw.get("Action", raw.get("NotAction"))
    return [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]


def _known_action(action: str) -> bool:
    if action == "*":
        return True
    service, _, name = action.partition(":")
    if service.lower() != "dynamodb" or not name:
        return False
    if "*" in name or "?" in name:
        pattern = _pattern(name, ignore_case=True)
        return any(pattern.fullmatch(known) for known in _action_names())
    return name.lower() in _action_names()
