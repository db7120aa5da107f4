"""Files a model patch may not use to steer how its tests are collected, run or reported (pure rules).

Two treatments, both applied by ``grading.runner.grade`` on top of ``benchmark.verdicts.strip_test_edits``:

* **dropped** from the patch (:func:`drop_control_files`): ``conftest.py``, ``pytest.ini`` / ``.pytest.ini`` /
  ``pytest.toml`` / ``.pytest.toml``, ``sitecustomize.py`` / ``usercustomize.py``, ``*.pth``,
  ``*.egg-info|*.dist-info/entry_points.txt`` anywhere in the tree, and a *new* top-level module (``X.py`` or
  ``X/__init__.py`` at the root or under ``src/``) named like a stdlib module or one of pytest's own, which
  ``python -m pytest`` (cwd first on ``sys.path``) would import instead of the real one;
* **restored** to the base commit's (:func:`restore_pytest_sections`): the pytest sections of ``pyproject.toml``
  (``[tool.pytest...]``), ``setup.cfg`` and ``tox.ini`` (``[tool:pytest]``, ``[pytest]``) anywhere in the tree;
  the file's other edits stay (a gold patch may bump ``install_requires`` in setup.cfg: pylint-dev__pylint-4661).
  When the pytest part cannot be cut out textually (inline tables, dotted keys), the whole file is the base's.
"""

from __future__ import annotations

import posixpath
import re
import sys
import tomllib

from swe_srl.core.patches import drop_sections, file_diffs

PYTEST_CONFIGS = ("pyproject.toml", "setup.cfg", "tox.ini")
"""Files whose pytest sections are restored (their other sections are the patch's business)."""
_DROPPED_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "pytest.toml",
        ".pytest.toml",
        "sitecustomize.py",
        "usercustomize.py",
    }
)
_PYTEST_DEPS = frozenset(
    {"pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "tomli", "exceptiongroup", "colorama",
     "attr", "attrs", "more_itertools", "atomicwrites", "six", "importlib_metadata", "zipp", "pkg_resources",
     "setuptools", "_distutils_hack", "typing_extensions", "pygments"}
)  # fmt: skip
SHADOWED = frozenset(sys.stdlib_module_names) | _PYTEST_DEPS
_INI_HEADER = re.compile(r"^\[([^\]\n]*)\]", re.MULTILINE)
_TOML_HEADER = re.compile(r"^[ \t]*\[\[?[^\n]*\]\]?[ \t]*(#[^\n]*)?$", re.MULTILINE)


def _new_shadow(path: str) -> bool:
    parts = path.split("/")
    if parts[0] == "src":
        parts = parts[1:]
    if len(parts) == 1 and parts[0].endswith(".py"):
        return parts[0].removesuffix(".py") in SHADOWED
    return len(parts) == 2 and parts[1] == "__init__.py" and parts[0] in SHADOWED


def is_control_file(path: str, *, added: bool = False) -> bool:
    """Whether a patch may not add or change ``path`` (``added``: the patch creates it)."""
    name = posixpath.basename(path)
    if name in _DROPPED_NAMES or name.endswith(".pth"):
        return True
    parent = posixpath.basename(posixpath.dirname(path))
    if name == "entry_points.txt" and parent.endswith((".egg-info", ".dist-info")):
        return True
    return added and _new_shadow(path)


def drop_control_files(patch: str) -> tuple[str, list[str]]:
    """``patch`` without the sections touching control files, and the paths dropped."""
    created = {f.target for f in file_diffs(patch) if f.target and (f.added or f.renamed)}
    return drop_sections(patch, lambda path: is_control_file(path, added=path in created))


def is_pytest_config(path: str) -> bool:
    """Whether ``path`` is a config file whose pytest sections grading restores."""
    return posixpath.basename(path) in PYTEST_CONFIGS


# -- ini files (setup.cfg, tox.ini): sections start at a "[name]" line in column 0, as iniconfig reads them -------
def _ini_blocks(text: str) -> list[tuple[str | None, str]]:
    starts = [m.start() for m in _INI_HEADER.finditer(text)]
    bounds = [0, *starts, len(text)]
    blocks = []
    for begin, end in zip(bounds, bounds[1:], strict=False):
        match = _INI_HEADER.match(text, begin)
        name = match.group(1).strip() if match and begin in starts else None
        if end > begin:
            blocks.append((name, text[begin:end]))
    return blocks


def _ini_pytest(name: str | None) -> bool:
    return name in ("pytest", "tool:pytest")


def _ini_sections(text: str) -> list[tuple[str | None, str]]:
    return [(n, b) for n, b in _ini_blocks(text) if _ini_pytest(n)]


# -- pyproject.toml: a table belongs to pytest when its header's key path starts tool.pytest ----------------------
def _toml_pytest(text: str) -> object:
    return tomllib.loads(text).get("tool", {}).get("pytest")


def _toml_header_is_pytest(line: str) -> bool:
    try:
        return "pytest" in tomllib.loads(line.strip() + "\n").get("tool", {})
    except tomllib.TOMLDecodeError:
        return False


def _toml_blocks(text: str) -> list[tuple[bool, str]]:
    starts = [m.start() for m in _TOML_HEADER.finditer(text)]
    bounds = [0, *starts, len(text)]
    blocks = []
    for begin, end in zip(bounds, bounds[1:], strict=False):
        header = text[begin:end].split("\n", 1)[0]
        is_pytest = begin in starts and _toml_header_is_pytest(header)
        if end > begin:
            blocks.append((is_pytest, text[begin:end]))
    return blocks


def _merge(kept: list[tuple[bool, str]], restored: str) -> str:
    """``kept`` blocks with ``restored`` put where the first pytest block was (else at the end)."""
    out, placed = [], False
    for is_pytest, block in kept:
        if is_pytest:
            if not placed:
                out.append(restored)
                placed = True
            continue
        out.append(block)
    text = "".join(out)
    if not placed and restored:
        text = text + ("" if not text or text.endswith("\n") else "\n") + restored
    return text


def _restore_toml(base: str, new: str) -> str:
    try:
        wanted = _toml_pytest(base)
        if _toml_pytest(new) == wanted:
            return new
        restored = "".join(b for p, b in _toml_blocks(base) if p)
        merged = _merge(
            _toml_blocks(new), restored if restored.endswith("\n") or not restored else restored + "\n"
        )
        if _toml_pytest(merged) == wanted:
            return merged
    except tomllib.TOMLDecodeError:
        pass
    return base


def _restore_ini(base: str, new: str) -> str:
    wanted = [b for _, b in _ini_sections(base)]
    if [b for _, b in _ini_sections(new)] == wanted:
        return new
    restored = "".join(b if b.endswith("\n") else b + "\n" for b in wanted)
    merged = _merge([(_ini_pytest(n), b) for n, b in _ini_blocks(new)], restored)
    return (
        merged
        if [b.rstrip("\n") for _, b in _ini_sections(merged)] == [b.rstrip("\n") for b in wanted]
        else base
    )


def restore_pytest_sections(path: str, base: str | None, new: str | None) -> str | None:
    """The text ``path`` gets for grading: ``new`` with its pytest configuration put back to ``base``'s.

    ``None`` for either side means the file is absent there; the result is ``None`` when the file should not exist.
    A file the patch deleted comes back when the base's had pytest settings.
    """
    toml = posixpath.basename(path) == "pyproject.toml"
    if new is None:
        return base if base is not None and _has_pytest(base, toml) else None
    return _restore_toml(base or "", new) if toml else _restore_ini(base or "", new)


def _has_pytest(text: str, toml: bool) -> bool:
    if not toml:
        return bool(_ini_sections(text))
    try:
        return _toml_pytest(text) is not None
    except tomllib.TOMLDecodeError:
        return True
