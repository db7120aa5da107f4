"""AST bug injection: find mutation sites in a Python source, apply one as a minimal text edit, diff it back.

A site is addressed by ``(qualname, operator, occurrence)``: the ``occurrence``-th site (source order) of that
operator inside that function. Edits touch only the mutated tokens so the fix diff is one small hunk.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from swe_srl.core.search_replace import make_patch
from swe_srl.errors import TaskError

OPERATORS = (
    "flip_comparison",
    "off_by_one",
    "negate_condition",
    "remove_statement",
    "swap_arguments",
    "change_constant",
    "wrong_variable",
)
_FLIP = {"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "==", "is not": "is", "is": "is not",
         "not in": "in", "in": "not in"}  # fmt: skip
_CMP_RE = re.compile(r"not\s+in|is\s+not|<=|>=|==|!=|<|>|\bin\b|\bis\b")


@dataclass(frozen=True)
class Site:
    """One place a mutation applies: the text span to replace (``line:col`` 1-based lines) and the new text."""

    qualname: str
    operator: str
    occurrence: int
    lineno: int
    start: tuple[int, int]
    end: tuple[int, int]
    replacement: str


class _Finder(ast.NodeVisitor):
    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source.splitlines(keepends=True)
        self.stack: list[str] = []
        self.raw: list[tuple[str, str, ast.AST, tuple[int, int], tuple[int, int], str]] = []
        self.locals: dict[str, list[str]] = {}

    def _scope(self, node: ast.AST) -> None:
        self.stack.append(node.name)  # type: ignore[attr-defined]
        self.generic_visit(node)
        self.stack.pop()

    visit_ClassDef = _scope

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stack.append(node.name)
        qual = ".".join(self.stack)
        names = [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id not in names:
                names.append(sub.id)
        self.locals[qual] = names
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def add(self, op: str, node: ast.AST, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        if self.stack and ".".join(self.stack) in self.locals:
            self.raw.append((".".join(self.stack), op, node, start, end, text))

    def seg(self, node: ast.AST) -> str:
        """Source text of ``node`` (like ``ast.get_source_segment`` without re-splitting the file each call)."""
        (l1, c1), (l2, c2) = _span(node)
        first, last = self.lines[l1 - 1].encode(), self.lines[l2 - 1].encode()
        if l1 == l2:
            return first[c1:c2].decode()
        middle = "".join(self.lines[l1 : l2 - 1])
        return first[c1:].decode() + middle + last[:c2].decode()

    def generic_visit(self, node: ast.AST) -> None:
        if self.stack and ".".join(self.stack) in self.locals:
            _sites_for(self, node)
        super().generic_visit(node)


def _span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    return (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]


def _sites_for(f: _Finder, node: ast.AST) -> None:
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left_end = (node.left.end_lineno, node.left.end_col_offset)
        right_start = (node.comparators[0].lineno, node.comparators[0].col_offset)
        if left_end[0] == right_start[0]:
            gap = f.lines[left_end[0] - 1].encode()[left_end[1] : right_start[1]].decode()
            match = _CMP_RE.search(gap)
            if match:
                op = re.sub(r"\s+", " ", match.group(0))
                new = gap[: match.start()] + _FLIP[op] + gap[match.end() :]
                f.add("flip_comparison", node, left_end, right_start, new)
    if isinstance(node, ast.Constant) and type(node.value) is int and abs(node.value) < 10**6:
        f.add("off_by_one", node, *_span(node), str(node.value + 1))
    if isinstance(node, ast.Constant) and type(node.value) in (bool, str) and node.value != "":
        parent_is_doc = f.seg(node).startswith(('"""', "'''"))
        if type(node.value) is bool:
            f.add("change_constant", node, *_span(node), str(not node.value))
        elif not parent_is_doc and "\n" not in f.seg(node) and len(node.value) < 80:
            f.add("change_constant", node, *_span(node), repr(node.value[:-1] or "x"))
    if isinstance(node, ast.If | ast.While | ast.IfExp):
        test = node.test
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            f.add("negate_condition", test, *_span(test), f.seg(test.operand))
        else:
            f.add("negate_condition", test, *_span(test), f"not ({f.seg(test)})")
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.For | ast.While | ast.If | ast.With):
        body = node.body
        for i, stmt in enumerate(body):
            doc = i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            start, end = _span(stmt)
            alone = f.lines[start[0] - 1][: start[1]].strip() == ""
            if (
                len(body) > 1
                and alone
                and not doc
                and isinstance(stmt, ast.Assign | ast.AugAssign | ast.Expr)
            ):
                f.add("remove_statement", stmt, (start[0], 0), (end[0] + 1, 0), "")
    if (
        isinstance(node, ast.Call)
        and len(node.args) >= 2
        and not any(isinstance(a, ast.Starred) for a in node.args[:2])
    ):
        a, b = node.args[0], node.args[1]
        if f.seg(a) != f.seg(b):
            f.add("swap_arguments", node, _span(a)[0], _span(b)[1], f"{f.seg(b)}, {f.seg(a)}")
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        others = [n for n in f.locals.get(".".join(f.stack), []) if n != node.id]
        if node.id in f.locals.get(".".join(f.stack), []) and others:
            f.add("wrong_variable", node, *_span(node), others[0])


def find_sites(source: str, path: str = "<source>") -> list[Site]:
    """Every mutation site in ``source``, occurrences numbered per (qualname, operator) in source order."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise TaskError(f"{path}:{exc.lineno}: cannot parse Python source: {exc.msg}") from None
    finder = _Finder(source)
    finder.visit(tree)
    seen: set[tuple] = set()
    counts: dict[tuple[str, str], int] = {}
    sites = []
    for qual, op, node, start, end, text in sorted(finder.raw, key=lambda r: (r[3], r[4], r[1])):
        if (op, start, end) in seen:
            continue
        seen.add((op, start, end))
        index = counts.get((qual, op), 0)
        counts[(qual, op)] = index + 1
        sites.append(Site(qual, op, index, node.lineno, start, end, text))
    return sites


def apply_site(source: str, site: Site) -> str:
    """``source`` with ``site`` applied; the result must still parse (``TaskError`` otherwise)."""
    lines = source.splitlines(keepends=True)
    encoded = [ln.encode("utf-8") for ln in lines]

    def offset(pos: tuple[int, int]) -> int:
        line, col = pos
        if line > len(lines):
            return len(source)
        return sum(len(x) for x in lines[: line - 1]) + len(encoded[line - 1][:col].decode("utf-8"))

    mutated = source[: offset(site.start)] + site.replacement + source[offset(site.end) :]
    try:
        ast.parse(mutated)
    except SyntaxError:
        raise TaskError(
            f"mutation {site.operator} #{site.occurrence} in {site.qualname} breaks syntax"
        ) from None
    return mutated


def locate(source: str, qualname: str, operator: str, occurrence: int, path: str = "<source>") -> Site:
    """The site a recipe names; ``TaskError`` naming what exists when it does not."""
    if operator not in OPERATORS:
        raise TaskError(f"unknown mutation operator {operator!r}; choose one of {', '.join(OPERATORS)}")
    matches = [s for s in find_sites(source, path) if s.qualname == qualname and s.operator == operator]
    if occurrence >= len(matches):
        raise TaskError(
            f"{path}: {qualname} has {len(matches)} {operator} site(s), recipe asks for #{occurrence}"
        )
    return matches[occurrence]


def unified_diff(path: str, before: str, after: str) -> str:
    """A git-style unified diff turning ``before`` into ``after`` for ``path`` (applies with ``git apply``)."""
    return make_patch({path: after}, {path: before})
