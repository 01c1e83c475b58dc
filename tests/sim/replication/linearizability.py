"""A linearizability checker for histories of register operations (read, write,
compare-and-set), after Wing & Gong with porcupine's memoisation (anishathalye/porcupine
checker.go): search for an order of the operations that respects real time and the
register's sequential semantics, caching (linearized set, state) pairs already tried.

A history is checked per key (P-compositionality: a history of independent registers is
linearizable iff each key's sub-history is). An operation whose outcome the client never
learned (a write that timed out) has return time +inf and no output: it may take effect
at any point after its call, or never.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

READ = "read"
WRITE = "write"
CAS = "cas"


@dataclass(frozen=True, slots=True)
class Operation:
    client: int
    key: str
    kind: str  # READ / WRITE / CAS
    value: Any  # WRITE: the value; CAS: (expected, new); READ: None
    output: Any  # READ: value seen; CAS: bool; WRITE: None; None when unknown
    call: float
    ret: float  # math.inf when the client never learned the outcome

    @property
    def outcome_known(self) -> bool:
        return not math.isinf(self.ret)


class CheckBudgetExceeded(RuntimeError):
    """The search ran past its step budget: the history is too concurrent to decide."""


def step(state: Any, op: Operation) -> tuple[bool, Any]:
    """The register's sequential specification: may `op` run in `state`, and to what state."""
    if op.kind == READ:
        return (not op.outcome_known or op.output == state), state
    if op.kind == WRITE:
        return True, op.value
    expected, new = op.value
    if not op.outcome_known:
        return True, new if state == expected else state
    if op.output:
        return state == expected, new
    return state != expected, state


class _Node:
    __slots__ = ("call", "match", "next", "op", "prev", "uid")

    def __init__(self, op: Operation | None, uid: int, call: bool) -> None:
        self.op = op
        self.uid = uid
        self.call = call
        self.match: _Node | None = None
        self.prev: _Node | None = None
        self.next: _Node | None = None


def _build(ops: list[Operation]) -> _Node:
    events: list[tuple[float, int, int, bool]] = []
    for uid, op in enumerate(ops):
        # At equal times a call sorts before a return: such operations count as
        # concurrent, the lenient reading (never reports a violation that is not one).
        events.append((op.call, 0, uid, True))
        events.append((op.ret, 1, uid, False))
    events.sort()
    head = _Node(None, -1, False)
    calls: dict[int, _Node] = {}
    tail = head
    for _, _, uid, is_call in events:
        node = _Node(ops[uid], uid, is_call)
        if is_call:
            calls[uid] = node
        else:
            calls[uid].match = node
        tail.next = node
        node.prev = tail
        tail = node
    return head


def _lift(call: _Node) -> None:
    assert call.prev is not None and call.match is not None and call.match.prev is not None
    call.prev.next = call.next
    if call.next is not None:
        call.next.prev = call.prev
    ret = call.match
    ret.prev.next = ret.next  # type: ignore[union-attr]
    if ret.next is not None:
        ret.next.prev = ret.prev


def _unlift(call: _Node) -> None:
    assert call.match is not None
    ret = call.match
    ret.prev.next = ret  # type: ignore[union-attr]
    if ret.next is not None:
        ret.next.prev = ret
    call.prev.next = call  # type: ignore[union-attr]
    if call.next is not None:
        call.next.prev = call


def check_single(ops: list[Operation], initial: Any = None, max_steps: int = 2_000_000) -> bool:
    """Whether one key's history is linearizable."""
    if not ops:
        return True
    head = _build(ops)
    state = initial
    linearized = 0
    cache: set[tuple[int, Any]] = set()
    stack: list[tuple[_Node, Any]] = []
    entry = head.next
    for _ in range(max_steps):
        if head.next is None:
            return True
        assert entry is not None
        if entry.call:
            assert entry.op is not None
            ok, new_state = step(state, entry.op)
            if ok:
                new_linearized = linearized | (1 << entry.uid)
                if (new_linearized, new_state) not in cache:
                    cache.add((new_linearized, new_state))
                    stack.append((entry, state))
                    state, linearized = new_state, new_linearized
                    _lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            # A return whose call could not be placed: undo the last choice.
            if not stack:
                return False
            entry, state = stack.pop()
            linearized &= ~(1 << entry.uid)
            _unlift(entry)
            entry = entry.next
    raise CheckBudgetExceeded(f"no verdict within {max_steps} steps for {len(ops)} operations")


def check_history(ops: Iterable[Operation], initial: Any = None) -> list[str]:
    """The keys whose sub-history is not linearizable (empty: the history is)."""
    by_key: dict[str, list[Operation]] = {}
    for op in ops:
        by_key.setdefault(op.key, []).append(op)
    return sorted(key for key, key_ops in by_key.items() if not check_single(key_ops, initial))


def explain(ops: list[Operation], initial: Any = None, context: int = 6) -> str:
    """For a history that is not linearizable: the first operation (by completion) that no
    order can accommodate, with the operations around it, as text for a failure message.
    (Porcupine draws this; a few lines of text do for a test log.)"""
    done = sorted((op for op in ops if op.outcome_known), key=lambda op: op.ret)
    for culprit in done:
        prefix = [op for op in ops if op.call <= culprit.ret]
        if not check_single(prefix, initial):
            around = sorted(prefix, key=lambda op: op.call)[-context - 1 :]
            lines = [f"cannot place {_show(culprit)}; the latest operations before it:"]
            lines.extend(f"  {_show(op)}" for op in around if op is not culprit)
            return "\n".join(lines)
    return "linearizable"


def _show(op: Operation) -> str:
    ret = "?" if not op.outcome_known else f"{op.ret:.3f}"
    return f"client {op.client} {op.kind}({op.value!r}) -> {op.output!r} [{op.call:.3f}, {ret}]"
