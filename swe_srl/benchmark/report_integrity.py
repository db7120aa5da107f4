"""The interpreter-state checks our in-container reporters share (source text, never imported here).

``INTEGRITY`` is pasted into both reporters (``report_pytest.py``, ``report_unittest.py``) after their ``_os`` and
``_sys`` imports and their ``_tampered``; like them it is stdlib-only, Python 3.5 syntax. docs/grading.md says what
it guarantees.

* **Interpreter state** (``_snapshot`` before any code under test runs, ``_integrity(where)`` at every test and at
  the session's end): the profile and trace hooks (``sys``'s, ``threading``'s for new threads, ``sys.monitoring``'s
  tools) must be those of the snapshot; ``builtins``' callables the same objects; no ``sys.path_hooks`` entry of
  the code under test added, and no ``sys.meta_path`` entry of it that answers for a test module; the reporter's
  own globals (its containers and functions, their code, defaults and closures) and the ``os``, ``os.path`` and
  ``sys`` functions it calls unchanged; the callables the tests assert with (``_HELPERS``: the ``pytest`` and
  ``unittest`` modules, ``TestCase``, pytest's ``raises``/``approx``/``warns`` classes) not the code under test's. At each test, hooks, builtins and ``os``/``sys`` functions count as
  changed only when the new value is the code under test's; at the session's end, any change.
* **Cost.** These checks run at every test, so they first compare, in C (``_identical``), the objects they read
  with those of the last check that found no change (``_FAST``); only when one differs is the full comparison made
  (and a state it finds unchanged becomes the one compared with next). What is reported is the full comparison's.
* The helpers both parts use: where code comes from (``_files``, ``_untrusted_file``: the code under test is a
  file under the cwd that is not a test file, or code compiled from a string) and how it is named in a report.

The test-identity checks (``report_identity.py: IDENTITY``) are pasted right after this text.
"""

INTEGRITY = """\
import _operator
import builtins as _builtins
import itertools as _itertools
import re as _re

_ROOT = _os.path.realpath(_os.getcwd())
_SELF = _os.path.realpath(globals().get("__file__") or "-")
_TEST_RE = _re.compile(globals().get("_TEST_PATH") or "(?!)")
_RUNNER_DIRS = globals().get("_RUNNER_DIRS") or ()  # files of the runner under _ROOT (pytest's own repository)
_TEST_FILES = set()
_SNAP = {}
_SEEN = set()
_CLAIMS = {}
_REALS = {}
_FAST = {"missing": object()}
_IS = _operator.is_
_PARTS = (_operator.attrgetter("__code__"), _operator.attrgetter("__defaults__"), _operator.attrgetter("__kwdefaults__"))


def _real(path):
    # cached: the same few files are asked about at every test
    try:
        return _REALS[path]
    except KeyError:
        _REALS[path] = found = _os.path.realpath(_os.path.join(_ROOT, path))
        return found


def _identical(was, now):
    # the same objects, one by one (compared in C: the per-test checks below look at a few thousand objects)
    return len(was) == len(now) and all(map(_IS, was, now))


_FUNC = type(_real)
_CODE = type(_real.__code__)


class _Probe(object):
    def method(self):
        pass


_BOUND = type(_Probe().method)


def _rel(path):
    return path[len(_ROOT) + 1 :] if path.startswith(_ROOT + _os.sep) else path


def _is_test(path):
    return path in _TEST_FILES or (
        path.startswith(_ROOT + _os.sep) and _TEST_RE.search(_rel(path)) is not None
    )


def _untrusted_file(name):
    if name.startswith("<frozen"):
        return False
    if not _os.path.isabs(name):
        return True
    path = _os.path.realpath(name)
    return (
        path != _SELF
        and path.startswith(_ROOT + _os.sep)
        and not _is_test(path)
        and not path.startswith(_RUNNER_DIRS)
    )


def _where(code):
    return _rel(_real(code.co_filename)) + ":" + str(code.co_firstlineno)


def _describe(obj):
    obj = obj.__func__ if type(obj) is _BOUND else obj
    return _where(obj.__code__) if type(obj) is _FUNC else "a " + type(obj).__name__


def _cells(function):
    out = []
    for cell in function.__closure__ or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:
            pass
    return out


def _files(obj):
    owners = list(getattr(obj, "__mro__", ())) if isinstance(obj, type) else [obj] + list(type(obj).__mro__)
    out = []
    for owner in owners:
        values = [owner]
        try:
            values += list(vars(owner).values())
        except TypeError:
            pass
        for value in values:
            if isinstance(value, (classmethod, staticmethod)):
                value = value.__func__
            value = value.__func__ if type(value) is _BOUND else value
            if type(value) is _FUNC:
                out.append(value.__code__.co_filename)
    return out


def _hook_state():
    threads = _sys.modules.get("threading")
    monitoring = getattr(_sys, "monitoring", None)
    tools = tuple(monitoring.get_tool(i) for i in range(6)) if monitoring is not None else ()
    return [
        ("sys.setprofile", _sys.getprofile()),
        ("sys.settrace", _sys.gettrace()),
        ("threading.setprofile", getattr(threads, "_profile_hook", None)),
        ("threading.settrace", getattr(threads, "_trace_hook", None)),
        ("sys.monitoring", tools),
    ]


_USED = (
    (_os, "write"),
    (_os, "getpid"),
    (_os, "getcwd"),
    (_os.path, "realpath"),
    (_os.path, "join"),
    (_os.path, "isabs"),
    (_os.path, "isfile"),
    (_sys, "_getframe"),
    (_sys, "exc_info"),
    (_sys, "getprofile"),
    (_sys, "gettrace"),
)


_HELPERS = (
    ("pytest", None), ("_pytest.python_api", "RaisesContext"), ("_pytest.python", "RaisesContext"),
    ("_pytest.python_api", "ApproxBase"), ("_pytest.python_api", "ApproxScalar"), ("_pytest.raises", "AbstractRaises"),
    ("_pytest.raises", "RaisesExc"), ("_pytest.recwarn", "WarningsRecorder"), ("_pytest.recwarn", "WarningsChecker"),
    ("unittest", None), ("unittest.case", "TestCase"), ("unittest.case", "_AssertRaisesBaseContext"),
    ("unittest.case", "_AssertRaisesContext"), ("unittest.case", "_AssertWarnsContext"),
)


def _owner(module, cls):
    # the loaded module named ``module``, or its class ``cls``; None when not loaded
    owner = _sys.modules.get(module)
    return getattr(owner, cls, None) if cls else owner


def _helpers():
    # the callables of the modules and classes the tests assert with (pytest.raises, approx, TestCase.assert*...)
    out = []
    for module, cls in _HELPERS:
        owner = _owner(module, cls)
        if owner is not None:
            found = vars(owner)
            label = module + ("." + cls if cls else "")
            was = dict((k, v) for k, v in found.items() if callable(v))
            funcs = tuple((k, v) for k, v in was.items() if type(v) is _FUNC)
            codes = (funcs, tuple(v for _, v in funcs), tuple(v.__code__ for _, v in funcs))
            out.append((label, None if cls else owner, found, was, len(found), codes))
    return out


def _own():
    # module metadata the import system or warnings may set (__package__, __warningregistry__...) aside
    out = {}
    for name, value in list(globals().items()):
        if name.startswith("__") and name != "__builtins__":
            continue
        if type(value) is _FUNC:
            value = (value, value.__code__, value.__defaults__, value.__kwdefaults__) + tuple(_cells(value))
        out[name] = value
    out[None] = tuple(getattr(owner, name, None) for owner, name in _USED)
    return out


def _own_objects(names, funcs, closed):
    # every object _own() reads, flat: the globals ``names`` (absent: _FAST's marker), the code, defaults and cells
    # of ``funcs`` (``closed``: those with a closure) and the os/sys functions
    space, missing = globals(), _FAST["missing"]
    out = tuple(map(space.get, names, _itertools.repeat(missing, len(names))))
    out += tuple(value for get in _PARTS for value in map(get, funcs))
    out += tuple(value for function in closed for value in _cells(function))
    return out + tuple(map(getattr, [o for o, _ in _USED], [n for _, n in _USED], [None] * len(_USED)))


def _own_kept():
    # after a check that found every global as in _OWN: the objects to compare the next check with
    names = tuple(globals())
    funcs = tuple(v for v in map(globals().get, names) if type(v) is _FUNC)
    closed = tuple(f for f in funcs if f.__closure__)
    _FAST["own"] = (names, funcs, closed, _own_objects(names, funcs, closed))


def _own_unchanged():
    # True when every object _own() reads is the one it was at the last check that found no change, so _own()
    # would give what it gave then; False sends the check to the comparison with _OWN itself
    if "own" not in _FAST:
        return False
    names, funcs, closed, objects = _FAST["own"]
    return len(globals()) == len(names) and _identical(objects, _own_objects(names, funcs, closed))


def _snapshot(hooks_only=False):
    _SNAP["hooks"] = _hook_state()
    if not hooks_only:
        _SNAP["finders"] = (list(_sys.meta_path), list(_sys.path_hooks))
        _SNAP["builtins"] = dict((k, v) for k, v in vars(_builtins).items() if callable(v))
        _SNAP["helpers"] = _helpers()


def _report(what, where):
    if what not in _SEEN:  # once per change, with the first place it was seen
        _SEEN.add(what)
        _tampered(what + " (seen at " + where + ")")


def _claims(finder):
    # a finder of the code under test is tampering when it answers for a test module: vendored ones (six's
    # importer, requests' VendorImporter) answer only for their own names
    if id(finder) not in _CLAIMS:
        names = []
        for name, module in list(_sys.modules.items()):
            try:
                path = vars(module).get("__file__")
            except TypeError:
                continue
            if path and _is_test(_real(path[:-1] if path.endswith(".pyc") else path)):
                names.append(name)
        found = ""
        for name in names[:50]:
            try:
                find = getattr(finder, "find_spec", None) or getattr(finder, "find_module", None)
                answer = find(name, None)
            except Exception:
                answer = None
            if answer is not None:
                found = "answering for test module " + name
                break
        _CLAIMS[id(finder)] = (finder, found)
    return _CLAIMS[id(finder)][1]


def _foreign(value):
    return any(_untrusted_file(f) for f in _files(value))


def _integrity(where, lenient=None):
    # lenient (at each test): hooks, builtins and the os/sys functions count as changed only when the new value is
    # the code under test's (a fixture of wider scope may hold a patch of its own); at the session's end, any change
    if not _SNAP:
        return
    lenient = where != "session end" if lenient is None else lenient
    for (label, was), (_, now) in zip(_SNAP["hooks"], _hook_state()):
        if now is not was and not (type(now) is tuple and now == was):
            if not lenient or _foreign(now):
                _report(label + " changed to " + _describe(now), where)
    for label, was, now in (
        ("sys.meta_path", _SNAP["finders"][0], _sys.meta_path),
        ("sys.path_hooks", _SNAP["finders"][1], _sys.path_hooks),
    ):
        for entry in list(now):
            if not any(entry is old for old in was) and any(_untrusted_file(f) for f in _files(entry)):
                claimed = _claims(entry) if label == "sys.meta_path" else "added"
                if claimed:
                    _report(
                        label + " entry of the code under test " + claimed + ": " + _describe(entry), where
                    )
    current, builtin = vars(_builtins), _SNAP["builtins"]
    for name, value in () if all(map(_IS, builtin.values(), map(current.get, builtin))) else builtin.items():
        if current.get(name) is not value and (not lenient or _foreign(current.get(name))):
            _report("builtins." + name + " replaced", where)
    for label, module, found, was, size, codes in _SNAP["helpers"]:  # whatever the phase, only the code under test's
        if module is not None and _sys.modules.get(label) is not module and _foreign(_sys.modules.get(label)):
            _report("sys.modules[" + repr(label) + "] replaced", where)
        for name, value in () if all(map(_IS, was.values(), map(found.get, was))) else was.items():
            now = found.get(name)
            if now is not value and _foreign(now):
                _report(label + "." + name + " replaced", where)
        if len(found) != size:  # a method set on a class that inherited it
            for name, now in list(found.items()):
                if name not in was and callable(now) and _foreign(now):
                    _report(label + "." + name + " replaced", where)
        funcs, objects, code = codes  # the same functions, given other code (pytest.raises.__code__ = ...)
        for (name, function), was_code in () if all(map(_IS, map(_PARTS[0], objects), code)) else zip(funcs, code):
            if function.__code__ is not was_code and _untrusted_file(function.__code__.co_filename):
                _report(label + "." + name + " code replaced", where)
    if _own_unchanged():
        return
    now, own, kept = _own(), dict(_OWN), True
    for name in set(now) | set(own):
        was, is_ = own.get(name), now.get(name)
        same = was is is_ or (type(was) is tuple and type(is_) is tuple and _identical(was, is_))
        kept = kept and (same or name == "_OWN")
        if name is None and same is False and lenient:
            same = not any(a is not b and _foreign(b) for a, b in zip(was, is_))
        if not same and name != "_OWN":
            _report("reporter " + ("os/sys functions" if name is None else name) + " changed", where)
    if kept:
        _own_kept()
"""
"""Paste after the reporter's imports and ``_tampered``, then ``report_identity.IDENTITY``; end the reporter
with ``_OWN = tuple(_own().items())`` (a tuple: a snapshot that cannot be edited in place)."""
