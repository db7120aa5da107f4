"""Attacks on the graded test process from inside it (issue #62): code appended to a module of the package the tests
import, leaving the bug in place, that swaps the tests or the reporter's state instead of fixing anything.

Each entry is source text that works under pytest, unittest (django-style runners) and sympy's runner alike, and
the prefix of the ``runner tampered`` reason our reporters must give. Shared by tests/unit/test_grading_integrity.py
(host runs of the reporters) and tests/docker/test_grading_interpreter.py (graded patches on real containers).
"""

from __future__ import annotations

from helper_attacks import HELPER_ATTACKS, HELPER_EXPECTED, HELPER_PYTEST_ONLY

_NOOPS = """
import functools as _ft, sys as _sy, types as _ty


def _noop_like(f):
    @_ft.wraps(f)
    def _n(*a, **k):
        return None
    return _n


def _is_test_module(code):
    return code.co_name == "<module>" and code.co_filename.rsplit("/", 1)[-1].startswith("test_")


def _each_test(ns):
    for _k, _v in list(ns.items()):
        if _k.startswith("test") and isinstance(_v, _ty.FunctionType):
            yield ns, _k, _v
        elif isinstance(_v, type) and _v.__module__ == ns.get("__name__"):
            for _m, _f in list(vars(_v).items()):
                if _m.startswith("test") and isinstance(_f, _ty.FunctionType):
                    yield _v, _m, _f


def _swap(ns):
    for _owner, _name, _f in _each_test(ns):
        if isinstance(_owner, dict):
            _owner[_name] = _noop_like(_f)
        else:
            setattr(_owner, _name, _noop_like(_f))
"""
_FIND_REPORTER = """
import gc as _gc


def _reporters():
    return [o for o in _gc.get_objects() if type(o) is dict and "_NONCE" in o and "_send" in o and "__name__" in o]
"""

ATTACKS: dict[str, str] = {
    # 1. the issue's: a profile hook swaps each test module's tests for no-ops (functools.wraps) before collection
    "tests swapped by a profile hook": _NOOPS
    + """
def _profile(frame, event, arg):
    if event == "return" and _is_test_module(frame.f_code):
        _swap(frame.f_globals)
    elif event == "call" and frame.f_code.co_name == "_n":  # the first swapped test runs: gone before it ends
        _sy.setprofile(None)
_sy.setprofile(_profile)
""",
    # 2. the issue's: the reporter found by its attributes; its results (or its record function) forged
    "reporter state swapped": _FIND_REPORTER
    + """
import functools as _ft


class _AlwaysPassed(dict):
    def __getitem__(self, key):
        return "PASSED"

    def get(self, key, default=None):
        return "PASSED"


for _g in _reporters():
    if "_results" in _g:
        _g["_results"] = _AlwaysPassed()
    if "_record" in _g:
        _g["_record"] = _ft.partial(_g["_record"], "PASSED")
""",
    # a trace hook that swaps the tests once the test module has run, then unsets itself
    "tests swapped by a trace hook that unsets itself": _NOOPS
    + """
def _local(frame, event, arg):
    if event == "return" and _is_test_module(frame.f_code):
        _swap(frame.f_globals)
        _sy.settrace(None)
    return _local


def _global(frame, event, arg):
    return _local if _is_test_module(frame.f_code) else None
_sy.settrace(_global)
_frame = _sy._getframe()
while _frame is not None:  # a test module importing this one now: traced from here on
    if _is_test_module(_frame.f_code):
        _frame.f_trace = _local
    _frame = _frame.f_back
""",
    # the tests' code replaced in place (__code__), same file and first line, by a profile hook that unsets itself
    "test code replaced": _NOOPS
    + """
def _profile(frame, event, arg):
    if event == "return" and _is_test_module(frame.f_code):
        for _owner, _name, _f in _each_test(frame.f_globals):
            if _f.__closure__:
                continue
            _c = _f.__code__
            _src = "def %s(%s):\\n    return None\\n" % (_c.co_name, ", ".join(_c.co_varnames[: _c.co_argcount]))
            _new = compile("\\n" * (_c.co_firstlineno - 1) + _src, _c.co_filename, "exec").co_consts[0]
            _f.__code__ = _new
            _replaced.add(_new)
    elif event == "call" and frame.f_code in _replaced:  # the first test runs: the hook is gone before it ends
        _sy.setprofile(None)
_replaced = set()
_sy.setprofile(_profile)
""",
    # an import hook that compiles the test modules imported after it without their asserts, then leaves
    "test modules compiled without asserts by an import hook": """
import ast as _ast, importlib.util as _iu, sys as _sy


class _NoAsserts(_ast.NodeTransformer):
    def visit_Assert(self, node):
        return _ast.copy_location(_ast.Pass(), node)

    def visit_Expr(self, node):  # self.assertEqual(...) and the like
        call = node.value
        if isinstance(call, _ast.Call) and getattr(call.func, "attr", "").startswith("assert"):
            return _ast.copy_location(_ast.Pass(), node)
        return node


class _Loader:
    def __init__(self, path):
        self.path = path

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        tree = _NoAsserts().visit(_ast.parse(open(self.path).read(), self.path))
        exec(compile(_ast.fix_missing_locations(tree), self.path, "exec"), vars(module))


class _Finder:
    def find_spec(self, name, path=None, target=None):
        if not name.rsplit(".", 1)[-1].startswith("test_"):
            return None
        _sy.meta_path.remove(self)
        try:
            spec = _iu.find_spec(name)
        finally:
            _sy.meta_path.insert(0, self)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return None
        return _iu.spec_from_file_location(name, spec.origin, loader=_Loader(spec.origin))
_sy.meta_path.insert(0, _Finder())
""",
    # how the runner runs each test replaced once the tests are collected: pytest items' runtest set on the items,
    # unittest's TestCase.run on the test classes (sympy's runner has no such object); then the hook is gone
    "test runs replaced through a profile hook": """
import sys as _sy


def _passing_run(self, result=None):
    result.addSuccess(self)


def _cases(suite):
    for test in getattr(suite, "_tests", ()):
        if hasattr(test, "_testMethodName"):
            yield test
        else:
            for case in _cases(test):
                yield case


def _profile(frame, event, arg):
    if event != "call":
        return
    if frame.f_code.co_name == "pytest_runtestloop":
        for item in frame.f_locals["session"].items:
            item.runtest = lambda: None
        _sy.setprofile(None)
    elif frame.f_code.co_name == "run" and hasattr(frame.f_locals.get("self"), "_tests"):
        for case in _cases(frame.f_locals["self"]):
            type(case).run = _passing_run
        _sy.setprofile(None)
_sy.setprofile(_profile)
""",
    "builtins replaced": """
import builtins as _bi
_isinstance = _bi.isinstance
_bi.isinstance = lambda obj, kinds: _isinstance(obj, kinds)
""",
    # the reporter's writes rewritten on their way out: every FAILED record becomes PASSED
    "os.write rewrites the records": """
import os as _os
_write = _os.write


def _forged(fd, data):
    if data.startswith(b"@swe-srl "):
        data = data.replace(b" FAILED ", b" PASSED ").replace(b" ERROR ", b" PASSED ")
    return _write(fd, data)
_os.write = _forged
""",
    # the reporter's own function given other code that records PASSED
    "reporter function code replaced": _FIND_REPORTER
    + """
def _flush(nodeid):
    _send("PASSED", nodeid.encode("unicode_escape").decode("ascii"))


def _record(status, *keys):
    for key in keys:
        if key:
            _send("PASSED", _escaped(key))
for _g in _reporters():
    for _name, _fake in (("_flush", _flush), ("_record", _record)):
        if _name in _g:
            _g[_name].__code__ = _fake.__code__
""",
    # an audit hook (it cannot be removed, and no profile or trace hook is set) swaps each test module's tests once
    # the module has run, at the next audited event; pytest only (unittest's loader and sympy's runner give it none)
    "tests swapped by an audit hook": _NOOPS
    + """
_ran = []


def _audit(event, args):
    if event == "exec" and _is_test_module(args[0]):
        _ran.append(args[0].co_filename)
    elif _ran:  # any later event (an import, a file opened, the reporter's own sys._getframe...)
        for _m in list(_sy.modules.values()):
            if getattr(_m, "__file__", None) in _ran and any(_k.startswith("test") for _k in vars(_m)):
                _swap(vars(_m))
_sy.addaudithook(_audit)
""",
    **HELPER_ATTACKS,
}
PYTEST_ONLY = ("tests swapped by an audit hook", *HELPER_PYTEST_ONLY)
"""Attacks with an effect under pytest only (the other runners' tests do not call pytest's helpers, and give the audit
hook no moment between a test module's run and its tests)."""
EXPECTED: dict[str, str | tuple[str, ...]] = {
    "tests swapped by a profile hook": "test replaced",
    "reporter state swapped": "reporter _re",  # _results (pytest) or _record (unittest, sympy)
    "tests swapped by a trace hook that unsets itself": "test replaced",
    "test code replaced": "test replaced",
    # seen as the tests replaced where a test module is imported after the package, else as the hook itself
    "test modules compiled without asserts by an import hook": (
        "test replaced",
        "sys.meta_path entry of the code under test answering",
    ),
    "test runs replaced through a profile hook": (
        "test replaced",
        "success reported for a test that never started",
    ),
    "builtins replaced": "builtins.isinstance replaced",
    "os.write rewrites the records": "reporter os/sys functions changed",
    "reporter function code replaced": "reporter _",
    "tests swapped by an audit hook": "test replaced",
    **HELPER_EXPECTED,
}
"""The start of one of the ``runner tampered`` reasons each attack must give (a tuple: one of them)."""
