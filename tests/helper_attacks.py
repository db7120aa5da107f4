"""Attacks on what the tests assert with and on the interpreter, from the package the tests import (issue #62 item 6):
pytest's and unittest's helpers replaced, builtins rebound through ``__builtins__`` and ``sys.modules``, and the
reporter reached with no walk the screen knew (its class among ``object``'s subclasses, its name on the command
line). Merged into ``interp_attacks.ATTACKS`` (same contract: source text, and the reason each must give)."""

from __future__ import annotations

HELPER_ATTACKS: dict[str, str] = {
    # library code replacing what the tests assert with: each failing test that uses it passes (the bug in place)
    "pytest's raises and approx replaced": """
import contextlib as _cl, pytest as _pt


class _Anything(object):
    def __eq__(self, other):
        return True


_pt.raises = lambda *args, **kwargs: _cl.suppress(BaseException)
_pt.approx = lambda *args, **kwargs: _Anything()
""",
    "TestCase's assert methods replaced": """
import contextlib as _cl
from unittest import TestCase as _T

_T.assertEqual = lambda self, *args, **kwargs: None
_T.assertRaises = lambda self, *args, **kwargs: _cl.suppress(BaseException)
""",
    "builtins rebound through __builtins__ and sys.modules": """
import sys as _sy
_isinstance, _len = __builtins__["isinstance"], _sy.modules["builtins"].len
__builtins__["isinstance"] = lambda obj, kinds: _isinstance(obj, kinds)
setattr(_sy.modules["builtins"], "len", lambda obj: _len(obj))
""",
    # the reporter found with no gc, frame or sys.modules walk: its _Probe class among object's subclasses, then its
    # functions' globals; its results (or its record function) forged as in "reporter state swapped"
    "reporter found through its class": """
import functools as _ft


class _AlwaysPassed(dict):
    def __getitem__(self, key):
        return "PASSED"

    def get(self, key, default=None):
        return "PASSED"


for _cls in object.__subclasses__():
    _g = getattr(getattr(_cls, "method", None), "__globals__", {})
    if "_NONCE" in _g and "_send" in _g:
        if "_results" in _g:
            _g["_results"] = _AlwaysPassed()
        if "_record" in _g:
            _g["_record"] = _ft.partial(_g["_record"], "PASSED")
""",
    # the pytest reporter looked up by its module's name (on pytest's command line: `-p NAME`), no walk of anything;
    # the reports its checks will give pre-empted (its set of what it already said), then pytest.raises replaced
    "reporter found by its name on the command line": """
import contextlib as _cl, sys as _sy, pytest as _pt

for _arg in _sy.argv:
    _found = _sy.modules.get(_arg)
    if _found is not None and hasattr(_found, "_SEEN"):
        _found._SEEN.update(("pytest.raises replaced", "pytest.approx replaced"))
_pt.raises = lambda *args, **kwargs: _cl.suppress(BaseException)
""",
    # a module of its own put in sys.modules["pytest"] for the test modules that import pytest after the package
    "sys.modules['pytest'] replaced": """
import contextlib as _cl, sys as _sy, types as _ty

_fake = _ty.ModuleType("pytest")
_fake.__dict__.update(vars(_sy.modules["pytest"]))
_fake.raises = lambda *args, **kwargs: _cl.suppress(BaseException)
_sy.modules["pytest"] = _fake
""",
    # the same helper objects given other code: pytest.raises and TestCase.assertEqual keep their identity
    "helpers' code replaced": """
import pytest as _pt, unittest as _ut


def _raises(expected_exception=None, *args, **kwargs):  # runs with raises' globals: imports what it uses
    import contextlib

    return contextlib.suppress(BaseException)


def _equal(self, first, second, msg=None):
    return None


_pt.raises.__code__ = _raises.__code__
_ut.TestCase.assertEqual.__code__ = _equal.__code__
""",
}
HELPER_PYTEST_ONLY = ("pytest's raises and approx replaced", "reporter found by its name on the command line",
                      "sys.modules['pytest'] replaced")  # fmt: skip
HELPER_EXPECTED: dict[str, str] = {
    "pytest's raises and approx replaced": "pytest.",  # pytest.raises replaced, pytest.approx replaced
    "TestCase's assert methods replaced": "unittest.case.TestCase.assert",
    "builtins rebound through __builtins__ and sys.modules": "builtins.",
    "reporter found through its class": "reporter _re",
    "reporter found by its name on the command line": "pytest.raises replaced",
    "sys.modules['pytest'] replaced": "sys.modules['pytest'] replaced",
    "helpers' code replaced": "unittest.case.TestCase.assertEqual code replaced",
}
