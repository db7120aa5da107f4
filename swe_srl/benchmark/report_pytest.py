"""The pytest report plugin written into the container (source text, never imported here): see
``grading/runner.py`` for how it is loaded and docs/grading.md for what it guarantees.

Loaded first with ``pytest -p <random name>``. At import (before conftests, collection and pytest's fd capture) it
takes the channel: the descriptor named by ``$SWE_SRL_CHANNEL_FD`` (dup()ed, the original closed, so subprocesses
do not inherit it), the FIFO named in ``_FIFO`` (a runner that starts pytest itself, such as tox, passes neither
descriptors nor the environment; opened, then unlinked) or the file ``$SWE_SRL_REPORT`` (host runs, trusted). It
announces a nonce of its own, then writes one ``@swe-srl NONCE STATUS NODEID`` line (unicode_escape'd: one line,
ASCII) per finished test and ``@swe-srl NONCE end`` at session end.

Tampering is reported, never trusted (``@swe-srl NONCE tampered WHAT``): at every test's end and at session end
the implementations of the hooks that run and report tests (``pytest_runtest_*``, ``pytest_pyfunc_call``,
``pytest_report_teststatus``, ``pytest_sessionfinish``) must be those of session start, apart from conftest
modules (the base commit's: a patch's are dropped) and the plugins their ``pytest_plugins`` name; an xfail
(which counts as passing) raised by ``pytest.xfail()`` from a file under the rootdir that is not a test file
(``_TEST_PATH``, written before the source like ``_FIFO``) is the code under test's doing; the plugin
manager's own callables and the functions of pytest's and pluggy's runner, report and call machinery must be the
same objects; a report whose call raised must not say ``passed`` (xfail aside); and only this module's own
functions may write records. Imports nothing beyond ``os``, ``sys`` and pytest (already loaded), so modules a patch
adds cannot shadow them.

It sets pytest's ``_pytest.assertion.rewrite._rewrite_test`` (where that function hands the rewriter ``str(fn)``
and the source) to its own: a test file pytest imports is compiled from the text the reporter read before any
code under test ran, and its code objects are the identity check's reference (``_COMPILED``), so the check needs no
second rewriting pass over it.
"""

from swe_srl.benchmark.report_identity import IDENTITY
from swe_srl.benchmark.report_integrity import INTEGRITY
from swe_srl.benchmark.report_rewrite import REWRITE

_HEAD = """\
import os as _os
import sys as _sys
import pytest as _pytest
import _pytest.hookspec as _hookspec
import _pytest.python as _python

_NONCE = _os.urandom(12).hex()
_RUNNER_DIRS = ()
if globals().get("_RUNNER_IS_CODE"):  # pytest's own repository: its _pytest and pytest are the runner
    _RUNNER_DIRS = tuple(
        _os.path.dirname(_os.path.realpath(m.__file__)) + _os.sep if m.__file__.endswith("__init__.py")
        else _os.path.realpath(m.__file__)
        for m in (_sys.modules["_pytest"], _pytest)
    )
_UNSET = _os.environ.pop("SWE_SRL_UNSET", "").split()
_FIFO = globals().get("_FIFO", "")
_TEST_PATH = globals().get("_TEST_PATH", "")
_GUARDED = ("pytest_runtest_", "pytest_pyfunc_call", "pytest_report_teststatus", "pytest_sessionfinish")
_CRITICAL = (
    ("_pytest.runner", None), ("_pytest.runner", "CallInfo"), ("_pytest.reports", "TestReport"),
    ("_pytest.reports", "BaseReport"), ("_pytest.python", None), ("_pytest.python", "Function"),
    ("_pytest.skipping", None), ("_pytest.unittest", None), ("_pytest.unittest", "TestCaseFunction"),
    ("_pytest.main", "Session"), ("_pytest.assertion.rewrite", None), ("_pytest.assertion.rewrite", "AssertionRewriter"),
    ("_pytest.assertion.rewrite", "AssertionRewritingHook"), ("ast", None), ("pluggy._callers", None), ("pluggy.callers", None), ("pluggy._hooks", None),
    ("pluggy._hooks", "HookCaller"), ("pluggy._hooks", "_HookCaller"), ("pluggy.hooks", "_HookCaller"),
    ("pluggy._manager", "PluginManager"), ("pluggy.manager", "PluginManager"),
)


def _channel():
    path = _os.environ.pop("SWE_SRL_REPORT", "")
    number = _os.environ.pop("SWE_SRL_CHANNEL_FD", "")
    if path:
        return _os.open(path, _os.O_WRONLY | _os.O_CREAT | _os.O_TRUNC | _os.O_APPEND, 0o600)
    try:
        if _FIFO:
            fd = _os.open(_FIFO, _os.O_WRONLY)
            _os.unlink(_FIFO)
            return fd
        fd = _os.dup(int(number))
        _os.close(int(number))
        return fd
    except (ValueError, OSError):
        return -1  # no channel here (an xdist worker inherits the environment, not the descriptor)


_FD = _channel()
_sent = [0]
_results = {}
_pending = []
_state = {}
_raised = {}
_said = set()


def _send(*words):
    caller = _sys._getframe(1).f_globals
    if caller is not globals():
        words = ("tampered", "a record written from outside the reporter")
    if _FD >= 0:
        try:
            _os.write(_FD, ("@swe-srl " + _NONCE + " " + " ".join(words) + "\\n").encode())
            if words[0] not in ("start", "end"):
                _sent[0] += 1
        except OSError:
            pass


def _tampered(what):
    if what in _said:
        return
    _said.add(what)
    _send("tampered", what.encode("unicode_escape").decode("ascii"))


def _flush(nodeid):
    if nodeid in _results:
        _send(_results[nodeid], nodeid.encode("unicode_escape").decode("ascii"))


_send("start")
"""
_BODY = """\
_snapshot()


def _conftest_plugins(pm):
    # the plugin names the conftests name in their pytest_plugins (read once a check, not once a hook)
    out = []
    for other in pm.get_plugins():
        if getattr(other, "__file__", "").endswith("conftest.py"):
            named = getattr(other, "pytest_plugins", ())
            out.extend([named] if isinstance(named, str) else list(named))
    return out


def _allowed(plugin, named):
    if getattr(plugin, "__file__", "").endswith("conftest.py"):
        return True
    name = getattr(plugin, "__name__", None)
    return bool(name) and name in named


def _hooks(pm):
    out, named = {}, _conftest_plugins(pm)
    for name in dir(pm.hook):
        if not name.startswith(_GUARDED):
            continue
        caller = getattr(pm.hook, name)
        impls = caller.get_hookimpls() if hasattr(caller, "get_hookimpls") else []
        kept = tuple((id(i.plugin), id(i.function)) for i in impls if not _allowed(i.plugin, named))
        out[name] = (id(caller), id(getattr(caller, "_hookexec", None)), kept)
    return out


def _code(value):
    return callable(value) or isinstance(value, (classmethod, staticmethod, property))


def _machinery(pm):
    out = {"pm": tuple(sorted((k, id(v)) for k, v in getattr(pm, "__dict__", {}).items() if callable(v)))}
    for module, cls in _CRITICAL:
        owner = _owner(module, cls)
        if owner is not None:
            out[(module, cls)] = tuple(
                sorted((k, id(v), id(v.__code__) if type(v) is _FUNC else 0) for k, v in vars(owner).items() if _code(v))
            )
    return out


def _spaces(pm):
    # the namespaces _machinery reads, with their owners
    out = [(pm, getattr(pm, "__dict__", {}))]
    for module, cls in _CRITICAL:
        owner = _owner(module, cls)
        out.append((owner, vars(owner) if owner is not None else {}))
    return out


def _machinery_kept():
    # after a check that found the machinery as at session start: the objects to compare the next check with
    kept = []
    for owner, space in _spaces(_state["pm"]):
        keys, values = tuple(space), tuple(space.values())
        funcs = tuple(v for v in values if type(v) is _FUNC)
        kept.append((owner, keys, values, tuple(map(callable, values)), funcs, tuple(map(_PARTS[0], funcs))))
    _FAST["machinery"] = kept


def _machinery_unchanged():
    # True when every object _machinery reads (each namespace's owner, its names and their values, whether they
    # are callable, the functions' code) is the one it was at the last check that found no change, so _machinery
    # would give what it gave then; False sends the check to _machinery itself. Compared in place, in C: a name
    # given a new value keeps its key object and its place, one removed or added changes the keys
    kept, spaces = _FAST.get("machinery"), _spaces(_state["pm"])
    if kept is None or len(kept) != len(spaces):
        return False
    for (owner, space), (was, keys, values, callables, funcs, codes) in zip(spaces, kept):
        if owner is not was or len(space) != len(keys) or not all(map(_IS, space, keys)):
            return False
        if not all(map(_IS, space.values(), values)) or not all(map(_IS, map(callable, values), callables)):
            return False
        if not all(map(_IS, map(_PARTS[0], funcs), codes)):
            return False
    return True


def _check(config, where):
    if "pm" not in _state:
        return
    _integrity(where)
    pm = config.pluginmanager
    hooks = _hooks(pm)
    for name, seen in _state["hooks"].items():
        if hooks.get(name) != seen:
            _tampered("hook " + name + " changed at " + where)
    if pm is not _state["pm"] or not _machinery_unchanged():
        machinery = _machinery(pm)
        changed = [key for key, seen in _state["machinery"].items() if machinery.get(key) != seen]
        for key in changed:
            _tampered("runner " + str(key) + " changed at " + where)
        if pm is _state["pm"] and not changed:
            _machinery_kept()
    for name in set(hooks) - set(_state["hooks"]):
        if hooks[name][2]:
            _tampered("hook " + name + " added at " + where)


def pytest_configure(config):
    for name in _UNSET:
        _os.environ.pop(name, None)
    # registered: out of sys.modules, so code under test cannot look this module up by the name on the command line
    _sys.modules.pop(__name__, None)


@_pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    pm = session.config.pluginmanager
    _state.update(pm=pm, config=session.config, hooks=_hooks(pm), machinery=_machinery(pm))
    _integrity("session start", lenient=True)  # hooks set by plugins and conftests (not the code under test) stay
    _snapshot(hooks_only=True)


def pytest_collectstart(collector):
    if isinstance(collector, _python.Module) and type(collector).__name__ != "DoctestModule":
        _test_file(str(getattr(collector, "path", None) or collector.fspath))


@_pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    # the function about to run must be the one its test file defines
    testcase, namespace = getattr(item, "_testcase", None), None
    if testcase is not None:
        obj, name = getattr(testcase, item.name, None), item.name
    elif isinstance(item, _python.Function):
        obj, name = item.obj, getattr(item, "originalname", None) or item.name.split("[")[0]
        module = getattr(item, "module", None)
        if getattr(module, "__file__", None):
            namespace = (_real(module.__file__), vars(module))
    else:
        return
    reason = _verify(obj, name, namespace)
    shadowed = [k for k, v in vars(item).items() if callable(v) and not k.startswith("_") and hasattr(type(item), k)]
    if shadowed:  # item.runtest = ...: the item's own methods replaced on the instance
        reason = reason or "its " + ", ".join(sorted(shadowed)) + " replaced on the item"
    if reason:
        _tampered("test replaced: " + item.nodeid + ": " + reason)


def _xfail_caller(item, excinfo):
    # the file that called pytest.xfail(): under the rootdir and not a test file, it is the code under test
    if not _TEST_PATH or excinfo is None or type(excinfo.value).__name__ != "XFailed":
        return None
    caller, tb = None, excinfo.tb
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        caller = caller if "_pytest" in name.split(_os.sep) else name
        tb = tb.tb_next
    root = str(getattr(item.config, "rootpath", None) or item.config.rootdir)
    if caller and caller.startswith(root + _os.sep):
        import re

        if not re.search(_TEST_PATH, caller[len(root) + 1 :]):
            return caller
    return None


@_pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    _raised[(item.nodeid, call.when)] = call.excinfo is not None
    caller = _xfail_caller(item, call.excinfo)
    if caller:
        _tampered("xfail raised by the code under test (" + caller + "): " + item.nodeid)


def pytest_runtest_logreport(report):
    raised = _raised.pop((report.nodeid, report.when), False)
    if raised and report.outcome == "passed" and not hasattr(report, "wasxfail"):
        _tampered("passed report of a call that raised: " + report.nodeid)
        return
    if report.when == "call" or report.outcome != "passed":
        if hasattr(report, "wasxfail"):
            status = "PASSED" if report.outcome == "passed" else "XFAIL"
        elif report.outcome == "passed":
            status = "PASSED"
        elif report.outcome == "skipped":
            status = "SKIPPED"
        else:
            status = "FAILED" if report.when == "call" else "ERROR"
        if _results.get(report.nodeid) not in ("FAILED", "ERROR"):
            _results[report.nodeid] = status
        if report.nodeid not in _pending:
            _pending.append(report.nodeid)


if hasattr(_hookspec, "pytest_runtest_logfinish"):

    def pytest_runtest_logfinish(nodeid):
        if "config" in _state:
            _check(_state["config"], nodeid)
        if nodeid in _pending:
            _pending.remove(nodeid)
            _flush(nodeid)


@_pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    _check(session.config, "session end")
    for nodeid in _pending:
        _flush(nodeid)
    del _pending[:]
    _send("end", str(_sent[0]))


_OWN = tuple(_own().items())
"""
PYTEST_REPORT_PLUGIN = _HEAD + INTEGRITY + IDENTITY + REWRITE + _BODY
