"""Print a raw expression tree back as expression text.

Used to test the parser (printing then parsing must give the same tree) and to show
expressions in logs. Parentheses appear only where precedence needs them (NOT binds
tighter than AND, AND than OR; comparisons tighter than all three), so the output never
trips DynamoDB's "redundant parentheses" rule.
"""

from __future__ import annotations

from partita.api.expressions import ast

_OR, _AND, _NOT, _LEAF = 1, 2, 3, 4


def to_text(tree: ast.Condition | ast.Update | ast.Projection) -> str:
    if isinstance(tree, ast.Update):
        return _update_text(tree)
    if isinstance(tree, ast.Projection):
        return ", ".join(path_text(p) for p in tree.paths)
    return _condition_text(tree)


def path_text(path: ast.Path) -> str:
    parts: list[str] = []
    for element in path.elements:
        if isinstance(element, int):
            parts.append(f"[{element}]")
        elif parts:
            parts.append("." + element)
        else:
            parts.append(element)
    return "".join(parts)


def operand_text(node: ast.Operand) -> str:
    if isinstance(node, ast.Path):
        return path_text(node)
    if isinstance(node, ast.ValueRef):
        return node.name
    if isinstance(node, ast.FunctionCall):
        return f"{node.name}({', '.join(operand_text(a) for a in node.args)})"
    if isinstance(node, ast.Arithmetic):
        return f"{operand_text(node.left)} {node.op} {operand_text(node.right)}"
    raise ValueError("a resolved literal has no text; print the raw tree")


def _precedence(node: ast.Condition) -> int:
    if isinstance(node, ast.Or):
        return _OR
    if isinstance(node, ast.And):
        return _AND
    if isinstance(node, ast.Not):
        return _NOT
    return _LEAF


def _wrapped(node: ast.Condition, minimum: int) -> str:
    text = _condition_text(node)
    return f"({text})" if _precedence(node) < minimum else text


def _condition_text(node: ast.Condition) -> str:
    if isinstance(node, ast.Or):
        return f"{_wrapped(node.left, _OR)} OR {_wrapped(node.right, _AND)}"
    if isinstance(node, ast.And):
        return f"{_wrapped(node.left, _AND)} AND {_wrapped(node.right, _NOT)}"
    if isinstance(node, ast.Not):
        return f"NOT {_wrapped(node.operand, _NOT)}"
    if isinstance(node, ast.Compare):
        return f"{operand_text(node.left)} {node.op} {operand_text(node.right)}"
    if isinstance(node, ast.Between):
        return f"{operand_text(node.operand)} BETWEEN {operand_text(node.low)} AND {operand_text(node.high)}"
    if isinstance(node, ast.In):
        return f"{operand_text(node.operand)} IN ({', '.join(operand_text(o) for o in node.options)})"
    return operand_text(node)


def _update_text(tree: ast.Update) -> str:
    clauses: list[str] = []
    current = ""
    for action in tree.actions:
        text = path_text(action.path)
        if action.clause == "SET":
            assert action.value is not None
            text += " = " + operand_text(action.value)
        elif action.value is not None:
            text += " " + operand_text(action.value)
        if action.clause != current:
            clauses.append(f"{action.clause} {text}")
            current = action.clause
        else:
            clauses[-1] += ", " + text
    return " ".join(clauses)
