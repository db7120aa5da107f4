"""The pytest reporter's identity check rewrites only the top-level statement holding a test
(report_identity.py ``_rewritten_at``, report_pytest.py ``_rewritten``): every code object it makes must be the one
pytest's assertion rewriter makes of the whole file (bytecode, names, constants, first line: ``_same``), in files
with a docstring, ``from __future__`` flags, classes (name mangling), decorators, nested functions and asserts at
every depth, two statements on a line, a file that is not UTF-8, imports in a module-level ``try`` (3.11's compiler reads the module's imports); and a function whose
asserts were dropped must still not match."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import CodeType

from _pytest.assertion.rewrite import rewrite_asserts

from swe_srl.benchmark.report_identity import IDENTITY
from swe_srl.benchmark.report_rewrite import REWRITE

TRICKY = '''\
"""A test module."""
from __future__ import annotations

import functools

try:
    import json
except ImportError:
    json = None


def helper(x: int) -> int:
    assert x > 0, "positive"
    return x


def wrap(f):
    @functools.wraps(f)
    def inner(*a):
        return f(*a)
    return inner


class TestThing:
    __secret = 3

    def test_mangled(self):
        assert self.__secret == 3 and [n for n in range(3) if n] == [1, 2]

    @wrap
    def test_decorated(self, x: "int" = 1):
        def nested(y: list[int]) -> int:
            assert y, f"empty {y!r}"
            return len(y)
        assert nested([x]) == 1
        assert (z := x + 1) == 2, z


@wrap
@wrap
def test_twice_decorated():
    assert helper(2) == 2 and json.dumps([]) == "[]"
    assert not (1 == 2 or 3 in {4})


if True:
    def test_in_if():
        assert [1] * 2 == [1, 1]

test_alias = test_in_if
first = 1; test_lambda = lambda: first == 1  # noqa: E702, E731
'''


def _identity() -> dict:
    """The reporter's identity functions and its rewriter, run against pytest's own ``rewrite_asserts``."""
    ns: dict = {
        "_REWRITE_ASSERTS": rewrite_asserts,
        "_state": {"config": None},
        "_sys": sys,
        "_CODE": CodeType,
    }
    exec(IDENTITY, ns)  # its module-level code only defines
    body = ast.parse(REWRITE)
    wanted = [
        n
        for n in body.body
        if isinstance(n, ast.FunctionDef) and n.name in ("_module", "_rewrite_form", "_rewritten")
    ]
    exec(compile(ast.Module(body=wanted, type_ignores=[]), "report_pytest", "exec"), ns)
    ns["_REWRITERS"].append(ns["_rewritten"])
    return ns


def _whole(path: Path) -> list:
    source = path.read_bytes()
    tree = ast.parse(source, str(path))
    rewrite_asserts(tree, source, str(path), None)
    out: dict = {}
    _identity()["_codes"](compile(tree, str(path), "exec", 0, True), out)
    return [c for codes in out.values() for c in codes if c.co_name != "<module>"]


def test_each_statement_rewritten_alone_is_the_whole_file_rewritten(tmp_path: Path) -> None:
    tricky = tmp_path / "test_tricky.py"
    tricky.write_text(TRICKY)
    here = Path(__file__).parent
    files = [
        tricky,
        here / "test_grading_canaries.py",
        here / "test_grading_screen.py",
        here / "test_grading_integrity.py",
        here / "test_eval_report.py",
    ]
    other = tmp_path / "test_latin.py"  # not UTF-8: the whole file is rewritten, once
    other.write_bytes(
        ("# -*- coding: latin-1 -*-\n" + TRICKY.replace('"positive"', '"positivé"')).encode("latin-1")
    )
    files.append(other)
    for path in files:
        ns, codes = _identity(), _whole(path)
        assert len(codes) > 5, path
        for code in codes:
            found = ns["_rewritten_at"](str(path), code.co_firstlineno).get(
                (code.co_name, code.co_firstlineno), ()
            )
            assert any(ns["_same"](code, c) for c in found), (path, code.co_name, code.co_firstlineno)


def test_a_test_compiled_without_its_asserts_does_not_match(tmp_path: Path) -> None:
    tricky = tmp_path / "test_tricky.py"
    tricky.write_text(TRICKY)
    stripped = TRICKY.replace("        assert nested([x]) == 1\n", "        nested([x])\n")
    out: dict = {}
    ns = _identity()
    ns["_codes"](compile(stripped, str(tricky), "exec"), out)
    (cls,) = out[("TestThing", 24)]
    (fake,) = [c for c in cls.co_consts if getattr(c, "co_name", "") == "test_decorated"]
    found = ns["_rewritten_at"](str(tricky), fake.co_firstlineno)[("test_decorated", fake.co_firstlineno)]
    assert found and not any(ns["_same"](fake, c) for c in found)
