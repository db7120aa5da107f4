"""The test-identity check our in-container reporters share (source text, never imported here): pasted right after
``report_integrity.INTEGRITY``, whose helpers it uses; stdlib-only, Python 3.5 syntax. docs/grading.md says what it
guarantees.

``_verify(obj, name)``, called before each test runs: the callable the runner is about to call must end, through its
wrappers (``__wrapped__``, or a library wrapper's closure), in a function whose code (file, first line, bytecode) is
the code compiled from a test file as read before any code under test ran (``_test_file``; after pytest's assertion
rewriting: the runner's own compile where the reporter made it, ``_COMPILED``, else ``_REWRITERS``' pass), named as the test is unless the file binds that name by assignment or
decorates it; and it may carry no more wrappers than its definition has decorators of the repository's own (its own
and its classes'). A library wrapper from outside the repository (``mock.patch``, ``contextlib``, a runner plugin's)
is not counted unless its closure holds the code under test's objects.
"""

IDENTITY = """\
import __future__ as _future
import ast as _ast
import bisect as _bisect

_FUTURE = 0
for _feature in _future.all_feature_names:
    _FUTURE |= getattr(_future, _feature).compiler_flag
_SOURCES = {}
_INDEX = {}
_COMPILED = {}
_TREES = {}
_SHAPES = {}
_REWRITERS = []


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
    # the file's code objects by (name, first line), compiled plainly
    if path not in _INDEX:
        source, found = _read(path), {}
        if source is not None:
            try:
                _codes(compile(source, path, "exec", 0, True), found)
            except Exception:
                pass
        _INDEX[path] = found
    return _INDEX[path]


def _scope_imports(body, out):
    # the import statements that bind names in the module's scope (in if/try/with/for blocks too, not in defs and
    # classes): the compiler reads which global names are imported when it compiles a function (3.11+: a method
    # call on an imported module is a plain attribute load)
    for node in body:
        if isinstance(node, _ast.Import) or isinstance(node, _ast.ImportFrom) and node.module != "__future__":
            out.append(node)
        elif not isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                block = getattr(node, name, None)
                if isinstance(block, list):
                    _scope_imports(block, out)
    return out


def _tree(path):
    # (the file's lines, its docstring and __future__ imports, its module-scope imports, each top-level statement's
    # first line, decorators included, and the first line after it), or None; the syntax tree itself is not kept (its
    # nodes would slow every garbage collection of the run)
    if path not in _TREES:
        try:
            source = _read(path) or b""
            tree = _ast.parse(source, path)
        except Exception:
            _TREES[path] = None
            return None
        head = []
        for n, node in enumerate(tree.body):
            future = isinstance(node, _ast.ImportFrom) and node.module == "__future__" and not node.level
            value = node.value if isinstance(node, _ast.Expr) else None
            text = getattr(value, "s" if type(value).__name__ == "Str" else "value", 0)
            if not (future or (not n and isinstance(text, str))):
                break
            head.append(node)
        starts = [min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())]) for node in tree.body]
        try:
            lines = source.decode("utf-8").split("\\n")
        except UnicodeDecodeError:  # another encoding: whole-file rewriting only
            lines = None
        ends, nxt, end = [], None, len(lines or ()) + 1
        for start in reversed(starts):  # the first line of the next statement that starts on a later line
            if start != nxt:
                nxt, end = start, nxt or end
            ends.append(end)
        ends.reverse()
        _TREES[path] = (lines, head, _scope_imports(tree.body, []), starts, ends)
    return _TREES[path]


def _rewritten_at(path, line):
    # the code objects of the top-level statement (def, class...) holding ``line``, as the runner rewrites it: that
    # statement alone (parsed from its lines, at its own line numbers), after the file's docstring and __future__
    # imports (its flags, its rewriting opt-out) and its module-scope imports, so its bytecode, names and line
    # numbers are those of the whole file rewritten, at the cost of the one statement
    parsed = _tree(path) if _REWRITERS else None
    if parsed is None:
        return {}
    lines, head, imports, starts, ends = parsed
    k = _bisect.bisect_right(starts, line) - 1
    if k < len(head):
        return {}
    key = (path, k) if lines is not None else (path, "whole")
    if key not in _INDEX:
        found, source = {}, _read(path)
        try:
            if lines is None:
                body = _ast.parse(source, path).body
            else:
                text = "\\n" * (starts[k] - 1) + "\\n".join(lines[starts[k] - 1 : ends[k] - 1])
                body = head + imports + _ast.parse(text, path).body
                # the rewriter reads each assert's text from the source by line: the statement's own lines, at their
                # numbers, are all it needs (the whole file would be tokenized again for every test)
                source = text.encode("utf-8")
        except Exception:
            body = []
        for rewrite in _REWRITERS if body else ():
            try:
                _codes(rewrite(path, source, body), found)
            except Exception:
                pass
        _INDEX[key] = found
    return _INDEX[key]


def _shape(path):
    # (decorators of each name, the names bound by assignment), read from the file's syntax tree when needed
    if path not in _SHAPES:
        try:
            _SHAPES[path] = _budgets(_ast.parse(_read(path) or b"", path))
        except Exception:
            _SHAPES[path] = ({}, set())
    return _SHAPES[path]


def _same(a, b):
    if type(a) is _CODE and type(b) is _CODE:
        return (
            a.co_code == b.co_code
            and a.co_names == b.co_names
            and a.co_varnames == b.co_varnames
            and a.co_freevars == b.co_freevars
            and a.co_cellvars == b.co_cellvars
            and a.co_name == b.co_name
            and a.co_firstlineno == b.co_firstlineno
            and a.co_argcount == b.co_argcount
            and a.co_kwonlyargcount == b.co_kwonlyargcount
            and a.co_flags & ~_FUTURE == b.co_flags & ~_FUTURE
            and len(a.co_consts) == len(b.co_consts)
            and all(_same(x, y) for x, y in zip(a.co_consts, b.co_consts))
        )
    return type(a) is type(b) and (a == b or repr(a) == repr(b))


def _matches(code):
    path = _real(code.co_filename)
    key = (code.co_name, code.co_firstlineno)
    return _is_test(path) and (  # the code pytest >= 8 runs, ours (report_rewrite.py), first: no second compile
        any(_same(code, c) for c in _COMPILED.get(path, {}).get(key, ()))
        or any(_same(code, c) for c in _index(path).get(key, ()))
        or any(_same(code, c) for c in _rewritten_at(path, code.co_firstlineno).get(key, ()))
    )


def _inner(obj):
    try:
        found = vars(obj).get("__wrapped__")
    except TypeError:
        found = None
    if found is None and type(obj) is _FUNC and not _is_test(_real(obj.__code__.co_filename)):
        inner = [
            c for c in _cells(obj) if type(c) in (_FUNC, _BOUND)
        ]  # a library wrapper without __wrapped__
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
    for layer in chain:
        if (
            type(layer) is _FUNC
            and _is_test(_real(layer.__code__.co_filename))
            and not _matches(layer.__code__)
        ):
            return "the code at " + _where(layer.__code__) + " is not the file's"
    if name and code.co_name != name:
        budget, aliases = _shape(path)
        if name not in aliases and not budget.get(name):  # decorated: a wrapper of the test file's
            return "runs " + code.co_name + " (" + _where(code) + ")"
    extra = [layer for layer in chain[:-1] if _counts(layer)]
    if extra:
        budget, aliases = _shape(path)
        if code.co_name not in aliases and len(extra) > _decorated(
            budget.get(code.co_name, ()), last.__globals__
        ):
            return "wrapped by " + _describe(extra[0])
    if namespace is not None and path == namespace[0] and last.__globals__ is not namespace[1]:
        return "runs with globals other than its module's"
    return None
"""
