"""A static screen of a model patch: code it adds outside test files that reaches into the test runner or the
interpreter's internals (pure; ``grading.runner.grade`` records its flags, and ``strict`` grading fails them).

A flag is not a proof: a grader sharing the test process cannot see everything such code does, so a patch whose
library code walks the interpreter's objects for the runner, registers pytest hooks, writes to the process's
descriptors or exits behind the runner's back is suspect however its tests end. Test files (and control files,
which grading drops anyway) are not screened. Measured: no flag on the gold patches of SWE-bench Verified
(``tests/unit/test_grading_screen.py``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.verdicts import RUNNER_IS_CODE, is_test_file
from swe_srl.core.patches import FileDiff, file_diffs
from swe_srl.grading.neutralize import is_control_file
from swe_srl.grading.screen_compare import always_equal

RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pytest internals (_pytest)", re.compile(r"\b_pytest\b")),
    (
        "pytest hook or plugin API",
        re.compile(
            r"\bpluginmanager\b|\bhookimpl\b|\bhookwrapper\b|\bpytest_(runtest|pyfunc|report|sessionfinish|"
            r"collection_finish|configure|plugin_registered)\w*|\bpluggy\b|\bHookimplMarker\b|\bget_hookimpls\b"
        ),
    ),
    (
        "walks the interpreter's objects",
        re.compile(
            r"\bgc\s*\.\s*(get_objects|get_referrers|get_referents)\b|\b(object|type)\s*\.\s*__subclasses__\b"
            r"|\b__base__\s*\.\s*__subclasses__\b|\b__mro__\s*\[\s*-\s*1\s*\]"
        ),
    ),
    (
        "walks sys.modules",
        re.compile(
            r"\bsys\s*\.\s*modules\s*\.\s*(values|items|copy)\s*\(|\bfor\b.*\bin\s+(list\s*\(\s*|dict\s*\(\s*|tuple\s*\(\s*)?"
            r"sys\s*\.\s*modules\b|\b(list|dict|tuple|set|sorted|vars)\s*\(\s*sys\s*\.\s*modules\b"
        ),
    ),
    (
        "the process's descriptors",
        re.compile(r"/proc/(self|\$\$|\{[^}]*\}|\"\s*\+)[^\s'\"]*/?fd\b|/proc/self/fd"),
    ),
    ("descriptor takeover (os.dup2)", re.compile(r"\bdup2\s*\(")),
    ("exit behind the runner (os._exit)", re.compile(r"\b_exit\s*\(")),
    ("exit hook", re.compile(r"\batexit\s*\.\s*register\b|\bsys\s*\.\s*exitfunc\b")),
    (
        "unittest or sympy runner internals",
        re.compile(
            r"\bunittest\s*\.\s*(result|TestResult|TextTestResult|TextTestRunner)\b|\bPyTestReporter\b|\bSymPyTests\b"
            r"|\baddSuccess\b|\bstopTestRun\b"
        ),
    ),
    (
        "test outcome raised by library code",
        re.compile(
            r"\bpytest\s*\.\s*(xfail|skip|fail|exit)\s*(\.\s*Exception\s*)?\(|\bXFail(ed)?\b|\bSkipTest\b"
        ),
    ),
    ("our reporter", re.compile(r"swe[-_]srl|SWE_SRL|@swe-srl")),
    (
        "profile or trace hook",
        re.compile(r"\bset(profile|trace)(_all_threads)?\b|\bsys\s*\.\s*monitoring\b"),
    ),
    ("import system hooks", re.compile(r"\bmeta_path\b|\bpath_hooks\b|\bpath_importer_cache\b")),
    (
        "code object replaced",
        re.compile(r"\b__code__\s*=(?!=)|[\"']__code__[\"']|\bCodeType\b|\.replace\s*\(\s*co_\w+\s*="),
    ),
    (
        "reaches into frames",
        re.compile(
            r"\b_getframe\b|\bf_(globals|locals|back|builtins)\b|\btb_frame\b|\bcurrentframe\s*\("
            r"|\binspect\s*\.\s*(stack|trace|getouterframes|getinnerframes)\s*\("
        ),
    ),
    (
        "looks modules up by their attributes",
        re.compile(
            r"=\s*sys\s*\.\s*modules\s*(#.*)?$|\*\s*sys\s*\.\s*modules\b|\bsys\s*\.\s*modules\s*\.\s*keys\s*\("
            r"|\b(iter|filter|map|any|all|next|enumerate|zip)\s*\([^)]*\bsys\s*\.\s*modules\s*(\)|,)"
            r"|\bModuleType\s*\)|\bgetattr\s*\(\s*sys\s*,|\bvars\s*\(\s*sys\s*\)|\bsys\s*\.\s*__dict__\b"
        ),
    ),
    (
        "builtins rebound",
        re.compile(
            r"\bbuiltins\s*\.\s*\w+\s*(\[[^\]]*\]\s*)?=(?!=)|\b(set|del)attr\s*\(\s*(builtins|__builtins__)\b"
            r"|\bbuiltins\s*\.\s*__dict__\b|\bvars\s*\(\s*builtins\s*\)|\b__builtins__\s*(\[[^\]]*\]\s*=(?!=)|\.)"
            r"|\bmodules\s*(\[|\.\s*get\s*\()\s*[\"']builtins[\"']"
        ),
    ),
    (
        "test helpers replaced",
        re.compile(
            r"(?<![\w.])(pytest|unittest(?!\s*\.\s*(result|TestResult|TextTestResult|TextTestRunner)\b)|TestCase"
            r"|((np|numpy|sympy)\s*\.\s*)?testing)\s*\.\s*(\w+\s*\.\s*)*\w+\s*=(?!=)"
            r"|\b(set|del)attr\s*\(\s*(pytest|unittest|TestCase|((np|numpy|sympy)\s*\.\s*)?testing)\s*[,.]"
            r"|\.\s*__(enter|exit)__\s*=(?!=)"
        ),
    ),
    (
        "interpreter hooks",
        re.compile(
            r"\baddaudithook\b|\b(sys|threading)\s*\.\s*(excepthook|unraisablehook|displayhook|breakpointhook)\s*=(?!=)"
            r"|\bgc\s*\.\s*callbacks\b|\b(importlib|imp)\s*\.\s*reload\s*\(|\bimport\s+reload\b"
        ),
    ),
    (
        "signal handler or timer",
        re.compile(
            r"\bsignal\s*\.\s*(signal|alarm|setitimer|set_wakeup_fd|pthread_kill)\s*\(|\bfaulthandler\b"
        ),
    ),
    (
        "the runner's output replaced",
        re.compile(
            r"\bsys\s*\.\s*(__)?(stdout|stderr)(__)?\s*=(?!=)|\bos\s*\.\s*(write|close|closerange)\s*\(\s*[0-9]"
        ),
    ),
    (
        "os or sys functions replaced",
        re.compile(
            r"(?<![\w.])os\s*\.\s*(path\s*\.\s*)?(?!environ\b)\w+\s*=(?!=)|\b(set|del)attr\s*\(\s*(os|sys)(\s*\.\s*path)?\s*,"
            r"|(?<![\w.])sys\s*\.\s*(_getframe|exc_info|getprofile|gettrace|exit|audit|getrecursionlimit)\s*=(?!=)"
        ),
    ),
    (
        "sys.modules entry replaced",  # a module's own entry (sys.modules[__name__] = ...) aside
        re.compile(
            r"\bsys\s*\.\s*modules\s*\[\s*(?!__name__\s*\])[^\]]*\]\s*=(?!=)"
            r"|\bsys\s*\.\s*modules\s*\.\s*(update|setdefault|__setitem__)\s*\("
        ),
    ),
    (
        "raw memory (ctypes)",
        re.compile(r"\bpythonapi\b|\bmemmove\b|\bmemset\b|\bfrom_address\b|\bpy_object\b|\bPyObject\b"),
    ),
)
ALWAYS_EQUAL = "comparison that ignores its other argument"
_PYTEST_OWN = {"pytest internals (_pytest)", "pytest hook or plugin API", "import system hooks", "reaches into frames",
               "code object replaced", "test helpers replaced"}  # fmt: skip


@dataclass(frozen=True)
class Flag:
    """One added line the screen flags: where, what it matched, and the line."""

    path: str
    rule: str
    line: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.path}: {self.rule}: {self.line.strip()[:160]}"


def _rules(repo: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The rules for ``repo``: pytest's own repository legitimately edits pytest's internals and hooks."""
    return tuple(r for r in RULES if not (repo in RUNNER_IS_CODE and r[0] in _PYTEST_OWN))


def _code(line: str) -> str:
    """The line without a trailing comment (a ``#`` outside quotes ends the code)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#":
            return line[:i]
    return line


def _new_side(diff: FileDiff) -> list[list[tuple[str, bool]]]:
    """Each hunk's lines of the new file: (text, whether the patch adds it)."""
    if diff.parsed:
        return [
            [(line.value.rstrip("\r\n"), line.is_added) for line in hunk if not line.is_removed]
            for hunk in diff.hunks
        ]
    lines = [ln for ln in diff.text.splitlines() if not ln.startswith(("---", "+++", "-", "@@", "diff "))]
    return [[(ln[1:], ln.startswith("+")) for ln in lines]]


def _added(diff: FileDiff) -> list[str]:
    if diff.parsed:
        return [line.value.rstrip("\r\n") for hunk in diff.hunks for line in hunk if line.is_added]
    return [ln[1:] for ln in diff.text.splitlines() if ln.startswith("+") and not ln.startswith("+++")]


_MODULES = "sys|gc|os|atexit|inspect|threading|types|pytest|unittest|builtins|signal|importlib|ctypes"
_ALIAS = re.compile(
    rf"\b(?P<a2>\w+)\s*=\s*(?:__import__|importlib\s*\.\s*import_module)\s*\(\s*[\"'](?P<m2>{_MODULES})[\"']"
    r"|\b(?P<a3>\w+)\s*=\s*(?:\w+\s*\.\s*)?modules\s*(?:\[|\.\s*get\s*\()\s*[\"'](?P<m3>builtins|pytest|unittest)[\"']"
)


_IMPORT = re.compile(
    r"^\s*(?:from\s+(?P<package>\w+(?:\s*\.\s*\w+)*)\s+)?import\s+\(?(?P<names>[^)]*)\)?\s*$"
)
_AS = re.compile(r"^(?P<name>\w+(?:\s*\.\s*\w+)*)\s+as\s+(?P<alias>\w+)$")


def _aliases(lines: list[str]) -> dict[str, str]:
    """Modules the added lines import under another name (``import sys as _s, pytest as _p``, ``_s =
    __import__("sys")``, ``_b = sys.modules["builtins"]``, ``import sympy.testing.pytest as _p``, ``from unittest
    import TestCase as _T``): alias → dotted name, so the rules read ``_s.modules`` as ``sys.modules``."""
    out = {}
    for line in lines:
        code = _code(line)
        statement = _IMPORT.match(code.split(";")[0])
        for part in statement.group("names").split(",") if statement else ():
            named = _AS.match(part.strip())
            if named:
                package = statement.group("package")
                name = (package + "." if package else "") + named.group("name")
                out[named.group("alias")] = re.sub(r"\s+", "", name)
        for match in _ALIAS.finditer(code):
            n = next(i for i in "23" if match.group("m" + i))
            out[match.group("a" + n)] = match.group("m" + n)
    return {alias: name for alias, name in out.items() if alias != name}


def _unaliased(code: str, aliases: dict[str, str]) -> str:
    for alias, module in aliases.items():
        code = re.sub(rf"(?<![\w.]){re.escape(alias)}\s*\.", module + ".", code)
    return code


def screen_patch(instance: Instance, patch: str) -> list[Flag]:
    """The flags for the lines ``patch`` adds to Python files that are neither test nor control files."""
    rules, flags = _rules(instance.repo), []
    for diff in file_diffs(patch):
        path = diff.path
        if not path or not path.endswith(".py") or is_test_file(path, instance) or is_control_file(path):
            continue
        lines = _added(diff)
        aliases = _aliases(lines)
        for line in lines:
            code = _unaliased(_code(line), aliases)
            flags += [Flag(path, name, line) for name, pattern in rules if pattern.search(code)]
        flags += [Flag(path, ALWAYS_EQUAL, line) for line in always_equal(_new_side(diff))]
    return flags
