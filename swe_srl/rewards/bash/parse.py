"""Bash actions → a flat, normalized list of simple commands, via tree-sitter-bash (parsed once, cached).

Pipelines, ``&&``/``||``/``;`` chains, ``if``/``for`` bodies and subshells all flatten to the commands in source
order. Arguments are unquoted (``"a b"`` → ``a b``, ``\\;`` → ``;``); redirections and heredoc bodies stay attached
to the command they belong to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter
import tree_sitter_bash

_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_DQ_ESCAPE = re.compile(r'\\([$`"\\\n])')
_SKIP = frozenset(
    {"variable_assignment", "comment", "file_redirect", "heredoc_redirect", "herestring_redirect"}
)


@dataclass(frozen=True)
class ShellCommand:
    """One simple command: ``name`` (basename, unquoted), unquoted ``args``, redirects and heredoc body."""

    name: str
    args: tuple[str, ...]
    redirects: tuple[tuple[str, str], ...] = ()  # (operator, target), e.g. (">", "x.py")
    heredoc: str | None = None  # body of a ``<<EOF`` heredoc or ``<<<`` here-string
    word: str = ""  # the command word as written, unquoted (``./reproduce.sh``; ``name`` is its basename)
    piped: bool = False  # reads the output of the command before it in a pipeline


@dataclass(frozen=True)
class ShellParse:
    """The commands of one action and whether tree-sitter found ERROR/MISSING nodes."""

    commands: tuple[ShellCommand, ...]
    has_error: bool
    error: str | None = None  # where the first ERROR/MISSING node is, for humans
    functions: tuple[str, ...] = ()  # names of the shell functions the action defines


_PARSER: tree_sitter.Parser | None = None


def _parser() -> tree_sitter.Parser:
    global _PARSER
    if _PARSER is None:
        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER


def _text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def unquote(node: tree_sitter.Node) -> str:
    """The value bash would pass for an argument node (expansions stay as written)."""
    kind, raw = node.type, _text(node)
    if kind == "raw_string":
        return raw[1:-1]
    if kind == "string":
        return _DQ_ESCAPE.sub(r"\1", raw[1:-1])
    if kind == "ansi_c_string":
        return raw[2:-1]
    if kind == "concatenation":
        return "".join(unquote(child) for child in node.children)
    if kind == "word":
        return _ESCAPE.sub(r"\1", raw)
    return raw


def _first_error(root: tree_sitter.Node) -> str | None:
    stack = [root]
    while stack:
        node = stack.pop()
        if not node.has_error:
            continue
        if node.type == "ERROR" or node.is_missing:
            row, col = node.start_point
            what = f"missing {node.type!r}" if node.is_missing else "ERROR"
            return f"{what} at line {row + 1}, column {col + 1}"
        stack.extend(reversed(node.children))
    return "syntax error"


def _redirects(
    node: tree_sitter.Node, pending: list[tree_sitter.Node]
) -> tuple[list[tuple[str, str]], str | None]:
    """Collect (op, target) pairs and the heredoc body of a redirect node; commands after a heredoc start go to pending."""
    out: list[tuple[str, str]] = []
    heredoc: str | None = None
    if node.type == "file_redirect":
        dest = node.child_by_field_name("destination")
        op = next((_text(c) for c in node.children if not c.is_named), ">")
        fd = next((_text(c) for c in node.children if c.type == "file_descriptor"), "")
        op = fd + op  # ``2>`` is not ``>``: only stdout redirects write what a command prints
        out.append((op, unquote(dest) if dest is not None else ""))
    elif node.type == "heredoc_redirect":
        for child in node.children:
            if child.type == "heredoc_body":
                heredoc = _text(child)
            elif child.type == "file_redirect":
                out.extend(_redirects(child, pending)[0])
            elif child.is_named and child.type not in ("heredoc_start", "heredoc_end"):
                pending.append(child)
        heredoc = heredoc if heredoc is not None else ""
    elif node.type == "herestring_redirect":
        heredoc = "".join(unquote(c) for c in node.children if c.is_named)
    return out, heredoc


def _command(
    node: tree_sitter.Node, redirect_nodes: list[tree_sitter.Node], pending: list, piped: bool
) -> ShellCommand:
    name_node = node.child_by_field_name("name")
    name = unquote(name_node.children[0]) if name_node is not None and name_node.children else ""
    args = tuple(unquote(c) for c in node.children_by_field_name("argument"))
    redirects: list[tuple[str, str]] = []
    heredoc: str | None = None
    for child in [*(c for c in node.children if c.type.endswith("_redirect")), *redirect_nodes]:
        pairs, body = _redirects(child, pending)
        redirects.extend(pairs)
        heredoc = body if body is not None else heredoc
    return ShellCommand(name.rsplit("/", 1)[-1], args, tuple(redirects), heredoc, name, piped)


def _walk(root: tree_sitter.Node) -> tuple[list[ShellCommand], list[str]]:
    commands: list[ShellCommand] = []
    functions: list[str] = []
    stack = [(root, False)]
    while stack:
        node, piped = stack.pop()
        if node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            redirects = node.children_by_field_name("redirect")
            pending: list[tree_sitter.Node] = []
            if body is not None and body.type == "command":
                commands.append(_command(body, redirects, pending, piped))
            else:
                pending = [c for c in node.children if c.is_named]
            stack.extend((c, piped) for c in reversed(pending))
        elif node.type == "command":
            pending = []
            commands.append(_command(node, [], pending, piped))
            stack.extend((c, False) for c in reversed(pending))
        elif node.type == "pipeline":
            parts = [c for c in node.children if c.is_named]
            stack.extend((c, piped or k > 0) for k, c in reversed(list(enumerate(parts))))
        elif node.type not in _SKIP:
            if node.type == "function_definition" and (name := node.child_by_field_name("name")) is not None:
                functions.append(_text(name))
            stack.extend((c, piped) for c in reversed([c for c in node.children if c.is_named]))
    return commands, functions


@lru_cache(maxsize=65536)
def parse_shell(action: str) -> ShellParse:
    """Parse one bash action (cached: expert actions repeat across a GRPO group)."""
    tree = _parser().parse(action.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    error = _first_error(root) if root.has_error else None
    commands, functions = _walk(root)
    return ShellParse(tuple(commands), root.has_error, error, tuple(functions))
