"""The reporter for runners that are not pytest (source text written into the container, never imported here).

``python <reporter> SCRIPT ARGS...`` or ``python <reporter> -m MODULE ARGS...`` takes the channel (the descriptor
named by ``$SWE_SRL_CHANNEL_FD``, dup()ed and the original closed), announces a nonce, hooks the runner, and only
then runs the script as ``__main__`` (``sys.path[0]`` its folder, ``sys.argv`` its own), so it is loaded before any
code under test. It streams ``@swe-srl NONCE STATUS ID`` lines as tests finish and ``@swe-srl NONCE end`` at the
runner's session end; nothing after it is written:

* **unittest** (django's ``tests/runtests.py``, ``python -m unittest``): ``unittest.TestResult``'s ``add*``
  methods, which every result class calls; a test's ids are ``str(test)`` and, when it has one, its docstring's
  first line (the id SWE-bench's django parser takes from ``getDescription``). An expected failure is reported
  ``SKIPPED``, not passing, for unittest and sympy alike: their SWE-bench parsers give it no status. The session ends at the outermost
  ``stopTestRun``; records come from this process only (a forked worker's events are replayed in the parent).
* **sympy's runner** (``bin/test``, in the package: ``sympy/testing/runtests.py`` or ``sympy/utilities/...``),
  hooked as the module is imported: ``PyTestReporter``'s ``test_*`` methods under the name ``entering_test``
  gave; the session ends at ``finish``.

Tampering is reported (``@swe-srl NONCE tampered WHAT``): at every test and at the end the runner's classes must
hold the same methods as when they were hooked (methods added since, such as compatibility aliases, are not
looked at), a success must not be reported while the test's outcome says it
failed or an exception is being handled, and only this module may write records. Python 3.5 syntax.
"""

from swe_srl.benchmark.report_identity import IDENTITY
from swe_srl.benchmark.report_integrity import INTEGRITY
from swe_srl.benchmark.verdicts import TEST_PATH

_HEAD = """\
import os as _os
import sys as _sys

_NONCE = _os.urandom(12).hex()
_PID = _os.getpid()
_SYMPY = ("sympy.testing.runtests", "sympy.utilities.runtests")


def _channel():
    number = _os.environ.pop("SWE_SRL_CHANNEL_FD", "")
    try:
        fd = _os.dup(int(number))
        _os.close(int(number))
        return fd
    except (ValueError, OSError):
        return -1


_FD = _channel()
_sent = [0]
_done = []
_said = set()
_watched = []
_depth = [0]
_current = [None, None]  # sympy's runner: the test running, its file
_started = set()


def _send(*words):
    if _sys._getframe(1).f_globals is not globals():
        words = ("tampered", "a record written from outside the reporter")
    if _FD >= 0 and not _done and _os.getpid() == _PID:
        try:
            _os.write(_FD, ("@swe-srl " + _NONCE + " " + " ".join(words) + "\\n").encode())
            if words[0] not in ("start", "end"):
                _sent[0] += 1
        except OSError:
            pass


def _escaped(text):
    return text.encode("unicode_escape").decode("ascii")


def _record(status, *keys):
    for key in dict.fromkeys(k for k in keys if k):
        _send(status, _escaped(key))


def _tampered(what):
    if what not in _said:
        _said.add(what)
        _send("tampered", _escaped(what))
"""
_BODY = """\


def _methods(owner):
    out = {}
    for k, v in vars(owner).items():
        if callable(v) or isinstance(v, (classmethod, staticmethod)):
            out[k] = (id(v),) + ((id(v.__code__),) + tuple(id(c) for c in _cells(v)) if type(v) is _FUNC else ())
    return out


def _watch(owner):
    _watched.append((owner, _methods(owner)))


def _check(where):
    _integrity(where)
    for owner, seen in _watched:
        now = _methods(owner)
        if any(now.get(name) != value for name, value in seen.items()):
            _tampered("runner " + owner.__module__ + "." + owner.__name__ + " changed at " + where)


def _end():
    _check("session end")
    _send("end", str(_sent[0]))
    _done.append(True)


def _verify_test(test):
    # the method about to run must be the one its test file defines (unittest's own placeholders aside)
    name, cls = getattr(test, "_testMethodName", None), type(test)
    if not name or cls.__module__.split(".")[0] in ("unittest", "doctest") and cls is getattr(
        _sys.modules.get(cls.__module__), cls.__name__, None
    ):
        return
    try:
        method = getattr(test, name)
    except Exception:
        return
    reason = _verify(method, name)
    if reason:
        _tampered("test replaced: " + str(test) + ": " + reason)


def _keys(test):
    doc = test.shortDescription() if hasattr(test, "shortDescription") else None
    return (str(test), doc)


def _hook_unittest():
    import unittest.case as case
    import unittest.result as result
    import unittest.runner as runner
    import unittest.suite as suite

    base = result.TestResult

    def wrap(name, status):
        original = getattr(base, name)

        def method(self, test, *args):
            _check(str(test))
            if name == "addSuccess" and getattr(getattr(test, "_outcome", None), "success", True) is False:
                _tampered("success reported for a failed outcome: " + str(test))
            elif name == "addSuccess" and id(test) not in _started:  # TestCase.run replaced: no startTest
                _tampered("success reported for a test that never started: " + str(test))
            elif name == "addSubTest":
                if args[-1] is not None:
                    _record("FAILED", *_keys(test))
            else:
                _record(status, *_keys(test))
            return original(self, test, *args)

        method.__name__ = name
        setattr(base, name, method)

    for name, status in (("addSuccess", "PASSED"), ("addFailure", "FAILED"), ("addError", "ERROR"),
                         ("addSkip", "SKIPPED"), ("addExpectedFailure", "SKIPPED"),
                         ("addUnexpectedSuccess", "FAILED"), ("addSubTest", None)):
        wrap(name, status)
    start, stop, start_test = base.startTestRun, base.stopTestRun, base.startTest

    def startTest(self, test):
        _check(str(test))
        _verify_test(test)
        _started.add(id(test))
        return start_test(self, test)

    def startTestRun(self):
        _depth[0] += 1
        return start(self)

    def stopTestRun(self):
        value = stop(self)
        _depth[0] -= 1
        if _depth[0] == 0:
            _end()
        return value

    base.startTestRun, base.stopTestRun, base.startTest = startTestRun, stopTestRun, startTest
    for owner in (base, case.TestCase, suite.TestSuite, suite.BaseTestSuite,
                  runner.TextTestResult, runner.TextTestRunner):
        _watch(owner)


def _hook_sympy(module):
    reporter = getattr(module, "PyTestReporter", None)
    if reporter is None or reporter.__module__ != module.__name__:
        return

    def wrap(name, status):
        original = getattr(reporter, name)

        def method(self, *args, **kwargs):
            if name == "entering_test":
                _current[0] = getattr(args[0], "__name__", None)
                _check(str(_current[0]))
                reason = _verify(args[0], None)
                if reason:
                    _tampered("test replaced: " + str(_current[0]) + ": " + reason)
            elif name == "entering_filename":
                _current[0], root = None, getattr(self, "_root_dir", "") or ""
                _current[1] = args[0][len(root) + 1 :] if root and args[0].startswith(root) else args[0]
            elif name == "finish":
                _end()
            elif name == "test_pass" and _sys.exc_info()[0] is not None:
                _tampered("success reported while an exception is handled: " + str(_current[0]))
            elif status and _current[0]:  # by its name, and by its file's path and its name
                _record(status, _current[0], _current[1] and _current[1] + "::" + _current[0])
            return original(self, *args, **kwargs)

        setattr(reporter, name, method)

    for name, status in (("entering_test", None), ("entering_filename", None), ("finish", None),
                         ("test_pass", "PASSED"), ("test_fail", "FAILED"), ("test_exception", "ERROR"),
                         ("test_skip", "SKIPPED"), ("test_xfail", "SKIPPED"), ("test_xpass", "FAILED")):
        wrap(name, status)
    _watch(reporter)
    _watch(module.SymPyTests)


class _Finder(object):
    def find_spec(self, name, path=None, target=None):
        if name not in _SYMPY:
            return None
        for finder in _sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and hasattr(spec.loader, "exec_module"):
                original = spec.loader.exec_module

                def exec_module(module):
                    original(module)
                    _hook_sympy(module)

                spec.loader.exec_module = exec_module
                return spec
        return None


def _main():
    import runpy

    here = _os.path.dirname(_os.path.abspath(__file__))
    _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    _send("start")
    _hook_unittest()
    _sys.meta_path.insert(0, _Finder())
    args = _sys.argv[1:]
    folder = _os.path.dirname(_os.path.abspath(args[0])) if args[:1] != ["-m"] else _os.getcwd()
    for arg in args[1:]:  # the test files named: read before the runner imports any code under test
        if not arg.startswith("-"):
            _test_file(arg)
            for where in (folder, _os.getcwd()):
                _test_file(_os.path.join(where, arg.replace(".", _os.sep) + ".py"))
    _snapshot()
    if args[:1] == ["-m"]:
        _sys.argv = args[1:]
        _sys.path.insert(0, _os.getcwd())
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        _sys.argv = args
        _sys.path.insert(0, _os.path.dirname(_os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")


_OWN = tuple(_own().items())
if __name__ == "__main__":
    _main()
"""
UNITTEST_REPORTER = f"_TEST_PATH = {TEST_PATH.pattern!r}\n" + _HEAD + INTEGRITY + IDENTITY + _BODY
