"""The interpreter and test-identity checks our in-container reporters share (source text, never imported here).

``INTEGRITY`` is pasted into both reporters (``report_pytest.py``, ``report_unittest.py``) after their ``_os`` and
``_sys`` imports and their ``_tampered``; like them it is stdlib-only, Python 3.5 syntax. docs/grading.md says what
it guarantees.

* **Interpreter state** (``_snapshot`` before any code under test runs, ``_integrity(where)`` at every test and at
  the session's end): the profile and trace hooks (``sys``'s, ``threading``'s for new threads, ``sys.monitoring``'s
  tools) must be those of the snapshot; ``builtins``' callables the same objects; no ``sys.meta_path`` or
  ``sys.path_hooks`` entry whose code is the code under test (files under the cwd that are not test files) added;
  the reporter's own globals (its containers and functions, their code, defaults and closures) and the ``os``,
  ``os.path`` and ``sys`` functions it calls unchanged.
* **Test identity** (``_verify(obj, name)``, before each test runs): the callable the runner is about to call must
  end, through its wrappers (``__wrapped__``, or a library wrapper's closure), in a function whose code (file,
  first line, bytecode) is the code compiled from a test file as read before any code under test ran
  (``_test_file``; after pytest's assertion rewriting where ``_REWRITERS`` holds it), named as the test is unless
  the file binds that name by assignment; and it may carry no more wrappers than its definition has decorators
  (its own and its classes', pytest marks aside). A library wrapper from outside the repository (``mock.patch``,
  ``contextlib``, a runner plugin's) is not counted unless its closure holds the code under test's objects.
"""

INTEGRITY = """\
import __future__ as _future
import ast as _ast
import builtins as _builtins
import re as _re

_ROOT = _os.path.realpath(_os.getcwd())
_SELF = _os.path.realpath(globals().get("__file__") or "-")
_TEST_RE = _re.compile(globals().get("_TEST_PATH") or "(?!)")
_FUTURE = 0
for _feature in _future.all_feature_names:
    _FUTURE |= getattr(_future, _feature).compiler_flag
_SOURCES = {}
_INDEX = {}
_TEST_FILES = set()
_REWRITERS = []
_SNAP = {}
_SEEN = set()
_CLAIMS = {}


def _real(path):
    return _os.path.realpath(_os.path.join(_ROOT, path))


_FUNC = type(_real)
_CODE = type(_real.__code__)


class _Probe(object):
    def method(self):
        pass


_BOUND = type(_Probe().method)


def _rel(path):
    return path[len(_ROOT) + 1 :] if path.startswith(_ROOT + _os.sep) else path


def _is_test(path):
    return path in _TEST_FILES or (path.startswith(_ROOT + _os.sep) and _TEST_RE.search(_rel(path)) is not None)


def _untrusted_file(name):
    if name.startswith("<frozen"):
        return False
    if not _os.path.isabs(name):
        return True
    path = _os.path.realpath(name)
    return path != _SELF and path.startswith(_ROOT + _os.sep) and not _is_test(path)


def _read(path):
    if path not in _SOURCES:
        try:
            with open(path, "rb") as handle:
                _SOURCES[path] = handle.read()
        except (IOError, OSError, ValueError):
            _SOURCES[path] = None
    return _SOURCES[path]


def _test_file(path):
    path = _real(path)
    if path.endswith(".py") and _os.path.isfile(path):
        _TEST_FILES.add(path)
        _read(path)


def _codes(code, out):
    out.setdefault((code.co_name, code.co_firstlineno), []).append(code)
    for const in code.co_consts:
        if type(const) is _CODE:
            _codes(const, out)


def _dotted(node):
    while isinstance(node, _ast.Call):
        node = node.func
    parts = []
    while isinstance(node, _ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, _ast.Name):
        parts.insert(0, node.id)
    return ".".join(parts)


def _budgets(tree):
    # name -> the decorators its definitions carry (their own and their classes'), as dotted names
    budget, aliases = {}, set()

    def visit(node, inherited):
        for child in _ast.iter_child_nodes(node):
            if isinstance(child, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
                own = inherited + [_dotted(d) for d in child.decorator_list]
                if isinstance(child, _ast.ClassDef):
                    visit(child, own)
                else:
                    budget[child.name] = budget.get(child.name, []) + own
                    visit(child, inherited)
            elif isinstance(child, _ast.Assign):  # test_x = ..., Class.test_x = ...: bound by assignment
                aliases.update(t.id for t in child.targets if isinstance(t, _ast.Name))
                aliases.update(t.attr for t in child.targets if isinstance(t, _ast.Attribute))
                visit(child, inherited)
            else:
                visit(child, inherited)

    visit(tree, [])
    return budget, aliases


def _index(path):
    if path not in _INDEX:
        source, found, budget, aliases = _read(path), {}, {}, set()
        if source is not None:
            try:
                budget, aliases = _budgets(_ast.parse(source, path))
                for rewrite in _REWRITERS:
                    _codes(rewrite(path, source), found)
            except Exception:
                pass
            try:
                _codes(compile(source, path, "exec", 0, True), found)
            except Exception:
                pass
        _INDEX[path] = (found, budget, aliases)
    return _INDEX[path]


def _same(a, b):
    if type(a) is _CODE and type(b) is _CODE:
        return (
            a.co_code == b.co_code and a.co_names == b.co_names and a.co_varnames == b.co_varnames
            and a.co_freevars == b.co_freevars and a.co_cellvars == b.co_cellvars and a.co_name == b.co_name
            and a.co_firstlineno == b.co_firstlineno and a.co_argcount == b.co_argcount
            and a.co_kwonlyargcount == b.co_kwonlyargcount and a.co_flags & ~_FUTURE == b.co_flags & ~_FUTURE
            and len(a.co_consts) == len(b.co_consts) and all(_same(x, y) for x, y in zip(a.co_consts, b.co_consts))
        )
    return type(a) is type(b) and (a == b or repr(a) == repr(b))


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


def _matches(code):
    path = _real(code.co_filename)
    return _is_test(path) and any(_same(code, c) for c in _index(path)[0].get((code.co_name, code.co_firstlineno), ()))


def _inner(obj):
    try:
        found = vars(obj).get("__wrapped__")
    except TypeError:
        found = None
    if found is None and type(obj) is _FUNC and not _is_test(_real(obj.__code__.co_filename)):
        inner = [c for c in _cells(obj) if type(c) in (_FUNC, _BOUND)]  # a library wrapper without __wrapped__
        tests = [c for c in inner if _matches(getattr(c, "__func__", c).__code__)]
        found = (tests or inner or [None])[0]
    return found


def _counts(layer):
    # a wrapper counts against the decorators unless it is library code whose closure holds no code under test
    if type(layer) is not _FUNC or _untrusted_file(layer.__code__.co_filename):
        return True
    if _is_test(_real(layer.__code__.co_filename)):
        return True
    for value in _cells(layer):
        value = value.__func__ if type(value) is _BOUND else value
        if type(value) is _FUNC and _untrusted_file(value.__code__.co_filename):
            return True
        if type(value) is not _FUNC and any(_untrusted_file(f) for f in _files(type(value))):
            return True
    return False


def _outside(obj):
    # defined outside the repository (the stdlib, site-packages, C): such a decorator makes no wrapper that counts
    if type(obj).__name__ == "module":
        files = [getattr(obj, "__file__", None) or "<frozen>"]
    elif isinstance(obj, type) or type(obj) in (_FUNC, _BOUND):
        files = _files(obj)
    else:
        files = _files(type(obj))
    return all(not _os.path.isabs(f) or not _real(f).startswith(_ROOT + _os.sep) for f in files)


def _decorated(decorators, namespace):
    count = 0
    for dotted in decorators:
        parts = dotted.split(".")
        obj = namespace.get(parts[0], vars(_builtins).get(parts[0])) if parts[0] else None
        for part in parts[1:]:
            try:
                obj = getattr(obj, part, None) if obj is not None else None
            except Exception:
                obj = None
        count += obj is None or not _outside(obj)
    return count


def _verify(obj, name, namespace=None):
    chain, current = [], obj
    while current is not None and len(chain) < 32:
        current = current.__func__ if type(current) is _BOUND else current
        chain.append(current)
        current = _inner(current)
    last = chain[-1]
    if type(last) is not _FUNC:
        return "not a function of a test file: " + _describe(last)
    code = last.__code__
    path = _real(code.co_filename)
    if not _is_test(path):
        return "defined in " + _where(code) + ", not in a test file"
    found, budget, aliases = _index(path)
    for layer in chain:
        if type(layer) is _FUNC and _is_test(_real(layer.__code__.co_filename)) and not _matches(layer.__code__):
            return "the code at " + _where(layer.__code__) + " is not the file's"
    if name and code.co_name != name and name not in aliases and not budget.get(name):  # decorated: a wrapper
        return "runs " + code.co_name + " (" + _where(code) + ")"
    extra = [layer for layer in chain[:-1] if _counts(layer)]
    if extra and code.co_name not in aliases and len(extra) > _decorated(budget.get(code.co_name, ()), last.__globals__):
        return "wrapped by " + _describe(extra[0])
    if namespace is not None and path == namespace[0] and last.__globals__ is not namespace[1]:
        return "runs with globals other than its module's"
    return None


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
        ("sys.setprofile", _sys.getprofile()), ("sys.settrace", _sys.gettrace()),
        ("threading.setprofile", getattr(threads, "_profile_hook", None)),
        ("threading.settrace", getattr(threads, "_trace_hook", None)), ("sys.monitoring", tools),
    ]


_USED = (
    (_os, "write"), (_os, "getpid"), (_os, "getcwd"), (_os.path, "realpath"), (_os.path, "join"),
    (_os.path, "isabs"), (_os.path, "isfile"), (_sys, "_getframe"), (_sys, "exc_info"), (_sys, "getprofile"),
    (_sys, "gettrace"),
)


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


def _snapshot(hooks_only=False):
    _SNAP["hooks"] = _hook_state()
    if not hooks_only:
        _SNAP["finders"] = (list(_sys.meta_path), list(_sys.path_hooks))
        _SNAP["builtins"] = dict((k, v) for k, v in vars(_builtins).items() if callable(v))


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
    for label, was, now in (("sys.meta_path", _SNAP["finders"][0], _sys.meta_path),
                            ("sys.path_hooks", _SNAP["finders"][1], _sys.path_hooks)):
        for entry in list(now):
            if not any(entry is old for old in was) and any(_untrusted_file(f) for f in _files(entry)):
                claimed = _claims(entry) if label == "sys.meta_path" else "added"
                if claimed:
                    _report(label + " entry of the code under test " + claimed + ": " + _describe(entry), where)
    current = vars(_builtins)
    for name, value in _SNAP["builtins"].items():
        if current.get(name) is not value and (not lenient or _foreign(current.get(name))):
            _report("builtins." + name + " replaced", where)
    now, own = _own(), dict(_OWN)
    for name in set(now) | set(own):
        was, is_ = own.get(name), now.get(name)
        same = was is is_ or (type(was) is tuple and type(is_) is tuple and len(was) == len(is_)
                              and all(a is b for a, b in zip(was, is_)))
        if name is None and same is False and lenient:
            same = not any(a is not b and _foreign(b) for a, b in zip(was, is_))
        if not same and name != "_OWN":
            _report("reporter " + ("os/sys functions" if name is None else name) + " changed", where)
"""
"""Paste after the reporter's imports and ``_tampered``; end the reporter with ``_OWN = tuple(_own().items())`` (a
tuple: a snapshot that cannot be edited in place)."""
