"""The patch screen's one rule that reads code, not lines (pure; ``grading/screen.py`` calls it): an ``__eq__`` or
``__ne__`` that the patch adds and that never reads its other argument, or returns one constant whatever it is
given. Such an object compares equal (or unequal) to every expected value, so a test's ``assert result ==
expected`` passes with the bug left in place: a value-level trick no runner can see (docs/grading.md)."""

from __future__ import annotations

import ast
import re
import textwrap

_DEF = re.compile(r"^(\s*)(async\s+)?def\s+__(eq|ne)__\s*\(")
_LAMBDA = re.compile(r"^(\s*)__(eq|ne)__\s*=\s*lambda\b")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _block(lines: list[str], start: int) -> str:
    """The ``def`` at ``start`` and the lines of its body that follow (deeper indented, or blank), dedented."""
    depth, out = _indent(lines[start]), [lines[start]]
    open_ = lines[start].count("(") - lines[start].count(")")
    for line in lines[start + 1 :]:
        if open_ <= 0 and line.strip() and _indent(line) <= depth:
            break
        open_ += line.count("(") - line.count(")") if open_ > 0 else 0
        out.append(line)
    return textwrap.dedent("\n".join(out))


def _own_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of ``function``'s body, not those of functions, lambdas or classes nested in it."""
    out, todo = [], list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _ignores_other(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> bool:
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    others = positional[1:] + [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    body = function.body if isinstance(function, ast.Lambda) else function
    nodes = [body] + list(ast.walk(body)) if isinstance(function, ast.Lambda) else list(ast.walk(body))
    read = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if isinstance(function, ast.Lambda):
        results: list[ast.expr | None] = [function.body]
    else:
        results = [n.value for n in _own_nodes(function) if isinstance(n, ast.Return)]
        if not results:
            return False  # raises, or falls off the end (None): not an equality that says yes
    if all(isinstance(r, ast.Name) and r.id == "NotImplemented" for r in results):
        return False  # declines to compare: Python tries the other side
    if not read.intersection(others):
        return True
    constants = {repr(r.value) if isinstance(r, ast.Constant) else None for r in results}
    return len(constants) == 1 and None not in constants and constants != {"None"}


def always_equal(hunks: list[list[tuple[str, bool]]]) -> list[str]:
    """The added ``def __eq__``/``__ne__`` (or ``__eq__ = lambda``) lines, among each hunk's new-file lines
    (text, added), whose comparison ignores its other argument or returns one constant."""
    flagged = []
    for hunk in hunks:
        lines = [text for text, _ in hunk]
        for i, (text, added) in enumerate(hunk):
            if not added or not (_DEF.match(text) or _LAMBDA.match(text)):
                continue
            try:
                tree = ast.parse(_block(lines, i) if _DEF.match(text) else text.strip())
            except SyntaxError:
                continue  # not all of it is in the hunk
            node = tree.body[0] if tree.body else None
            if isinstance(node, ast.Assign):
                node = node.value
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and _ignores_other(node):
                flagged.append(text)
    return flagged
