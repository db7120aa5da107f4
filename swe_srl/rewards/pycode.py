"""Python compared on its syntax tree: code → a token sequence of AST nodes, and the change an edit makes.

A token is a node's type with its salient value (``Name:x``, ``Attribute:add``, ``Constant:1``, ``BinOp``, ``Add``);
contexts (Load/Store) are left out, so formatting, quotes, parentheses and comments never count. ``from m import f``
reads as ``import m`` with ``f`` used as ``m.f`` (and ``import m as k`` as ``import m``), so the two spellings of one
call compare equal. ``fuzzy`` turns names into ``_`` and string constants into ``''``. Code that does not parse is
compared as whitespace-normalized text (a regex tokenization for :func:`change_sim`).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections import Counter
from functools import lru_cache

from swe_srl.rewards.similarity import normalize_ws, text_ratio

LIMIT = 4_000  # tokens / characters of code compared (longer: compared on the prefix)
_WORDS = re.compile(r"\w+|[^\w\s]")


def _qualified(tree: ast.Module) -> dict[str, str]:
    """Local name → qualified name for ``from m import f [as g]`` and ``import m as k``."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names if a.name != "*"})
        elif isinstance(node, ast.Import):
            names.update({a.asname: a.name for a in node.names if a.asname})
    return names


def _label(node: ast.AST, fuzzy: bool, names: dict[str, str]) -> list[str]:
    kind = type(node).__name__
    if isinstance(node, ast.Name):
        qualified = names.get(node.id, node.id)
        parts = qualified.split(".")
        return ["Name:_"] if fuzzy else [f"Attribute:{p}" for p in reversed(parts[1:])] + [f"Name:{parts[0]}"]
    if isinstance(node, ast.ImportFrom):
        return ["Import", f"alias:{node.module}"]
    if isinstance(node, ast.Constant):
        value = "''" if fuzzy and isinstance(node.value, str) else repr(node.value)
        return [f"Constant:{value}"]
    for attr in ("attr", "arg", "name"):
        value = getattr(node, attr, None)
        if isinstance(value, str):
            return [f"{kind}:{'_' if fuzzy and attr != 'attr' else value}"]
    return [kind]


def _walk(node: ast.AST, fuzzy: bool, names: dict[str, str], out: list[str]) -> None:
    if isinstance(node, ast.ImportFrom):
        out.extend(_label(node, fuzzy, names))
        return  # its aliases are spelled through the qualified names
    if isinstance(node, ast.alias):
        out.append(f"alias:{node.name}")
        return
    if not isinstance(node, (ast.expr_context, ast.Module)):
        out.extend(_label(node, fuzzy, names))
    for child in ast.iter_child_nodes(node):
        _walk(child, fuzzy, names, out)


@lru_cache(maxsize=32768)
def ast_tokens(code: str, fuzzy: bool = False) -> tuple[str, ...] | None:
    """The token sequence of ``code`` (dedented), or None when it does not parse."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out: list[str] = []
    try:
        _walk(tree, fuzzy, _qualified(tree), out)
    except RecursionError:
        return None
    return tuple(out)


def _text_tokens(code: str, fuzzy: bool) -> tuple[str, ...]:
    return tuple(_WORDS.findall(code.lower() if fuzzy else code))


def code_sim(a: str, b: str, fuzzy: bool = False) -> float:
    """Token-sequence similarity when both sides parse, else whitespace-normalized text similarity."""
    if a == b:
        return 1.0
    ta, tb = ast_tokens(a, fuzzy), ast_tokens(b, fuzzy)
    if ta is not None and tb is not None:
        return text_ratio(ta, tb, LIMIT)  # type: ignore[arg-type]
    na, nb = normalize_ws(a), normalize_ws(b)
    return text_ratio(na.lower(), nb.lower(), LIMIT) if fuzzy else text_ratio(na, nb, LIMIT)


def _dice(a: Counter, b: Counter) -> float:
    total = sum(a.values()) + sum(b.values())
    return 2 * sum((a & b).values()) / total if total else 1.0


def change_sim(old_a: str, new_a: str, old_b: str, new_b: str, fuzzy: bool = False) -> float:
    """How alike two replacements' *changes* are: Dice of the tokens each adds (0.7) and removes (0.3)."""
    texts = (old_a, new_a, old_b, new_b)
    tokens = [ast_tokens(t, fuzzy) for t in texts]
    if any(t is None for t in tokens):
        tokens = [_text_tokens(t, fuzzy) for t in texts]
    oa, na, ob, nb = (Counter(t) for t in tokens)  # type: ignore[arg-type]
    return 0.7 * _dice(na - oa, nb - ob) + 0.3 * _dice(oa - na, ob - nb)
