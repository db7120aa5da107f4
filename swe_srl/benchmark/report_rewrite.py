"""pytest's assertion rewriting as the pytest reporter's test-identity check needs it (source text, never imported
here): pasted into ``report_pytest.py``'s plugin right after ``report_identity.IDENTITY``; stdlib and pytest only,
Python 3.5 syntax.

* The test files named on the command line are read (``_test_file``) before conftests and collection.
* ``_rewritten``, the identity check's rewriter (``_REWRITERS``): a test file's top-level statements as this
  pytest's ``rewrite_asserts`` makes them (pytest < 5.3 takes a py.path, tried once on a probe).
* ``_rewrite_test``: where pytest's own ``_rewrite_test`` hands the rewriter ``str(fn)`` and the source, it is
  replaced by ours, which compiles a test file from the text read before any code under test ran and keeps its code
  objects (``_COMPILED``) as the identity check's reference, so no second rewriting pass is needed.
"""

REWRITE = """\
for _arg in _sys.argv[1:]:  # the test files named: read before conftests and collection
    _test_file(_arg.split("::")[0])
_REWRITE_ASSERTS = getattr(_sys.modules.get("_pytest.assertion.rewrite"), "rewrite_asserts", None)


def _module(body):
    module = _ast.Module(body=body)
    if "type_ignores" in _ast.Module._fields:
        module.type_ignores = []
    return module


def _rewrite_form(path):
    # how this pytest's rewriter takes the module's path (pytest < 5.3 wants a py.path, whose absence it finds at the
    # first assert): tried once on a probe, never on a test file's statements (a failed try leaves them half-rewritten)
    if "rewrite_form" not in _state:
        code, local = _REWRITE_ASSERTS.__code__, getattr(getattr(_sys.modules.get("py"), "path", None), "local", None)
        _state["rewrite_form"] = None
        text = b"def test_probe():\\n    assert probe\\n"
        for form in [str] + ([local] if local else []):
            probe = _ast.parse(text, path)
            try:
                if "source" in code.co_varnames[: code.co_argcount]:
                    _REWRITE_ASSERTS(probe, text, form(path), _state["config"])
                else:
                    _REWRITE_ASSERTS(probe, form(path), _state["config"])
            except AttributeError:
                continue
            _state["rewrite_form"] = form
            break
    return _state["rewrite_form"]


def _rewritten(path, source, body):
    # the code of ``body`` (top-level statements of the test file at ``path``, text ``source``) as pytest's assertion
    # rewriter makes it (pytest >= 5 passes the source too); the statements are rewritten in place
    if _REWRITE_ASSERTS is None or "config" not in _state or _rewrite_form(path) is None:
        return compile("", path, "exec", 0, True)
    module = _module(body)
    if "source" in _REWRITE_ASSERTS.__code__.co_varnames[: _REWRITE_ASSERTS.__code__.co_argcount]:
        _REWRITE_ASSERTS(module, source, _state["rewrite_form"](path), _state["config"])
    else:
        _REWRITE_ASSERTS(module, _state["rewrite_form"](path), _state["config"])
    return compile(module, path, "exec", 0, True)


_REWRITERS.append(_rewritten)
_PYTEST_REWRITE = getattr(_sys.modules.get("_pytest.assertion.rewrite"), "_rewrite_test", None)
_HASH = getattr(_sys.modules.get("importlib.util"), "source_hash", None)


def _rewrite_test(fn, config):
    # pytest's reading and rewriting of a module it imports (the versions whose _rewrite_test passes the rewriter
    # str(fn) and the source): a test file is compiled from the text read before any code under test ran
    # (_SOURCES), and its code objects kept (_COMPILED) as the identity check's rewritten code, so the check needs
    # no second rewriting pass over the file
    path, names = _real(str(fn)), _PYTEST_REWRITE.__code__.co_varnames
    source = _SOURCES.get(path)
    if path not in _TEST_FILES or source is None:
        return _PYTEST_REWRITE(fn, config)
    first = _HASH(source) if "source_hash" in names else _os.stat(str(fn))
    tree = _ast.parse(source, filename=str(fn))
    _REWRITE_ASSERTS(tree, source, str(fn), config)
    code = compile(tree, str(fn), "exec", dont_inherit=True)
    found = {}
    _codes(code, found)
    _COMPILED[path] = found
    return first, code


if (
    _PYTEST_REWRITE is not None
    and _PYTEST_REWRITE.__code__.co_varnames[:2] == ("fn", "config")
    and "strfn" in _PYTEST_REWRITE.__code__.co_varnames
    and ("source_hash" in _PYTEST_REWRITE.__code__.co_varnames and _HASH is not None or "stat" in _PYTEST_REWRITE.__code__.co_varnames)
    and _REWRITE_ASSERTS is not None
    and "source" in _REWRITE_ASSERTS.__code__.co_varnames[: _REWRITE_ASSERTS.__code__.co_argcount]
):
    _sys.modules["_pytest.assertion.rewrite"]._rewrite_test = _rewrite_test
"""
