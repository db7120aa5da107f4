"""Per repo/version environment specs → image recipes and the test command.

SWE-bench instances use the ``swebench`` package's own table (``pip install --no-deps swebench==4.1.0``); only its
data modules are imported, never its heavy package ``__init__``. ``SWE_SRL_SWEBENCH_SPECS=FILE.json`` may point at a
JSON dump of ``MAP_REPO_VERSION_TO_SPECS_PY`` instead (air-gapped machines). The older one-module layout
(``harness/constants.py`` with ``MAP_REPO_VERSION_TO_SPECS``, lower-case repo keys) of forks such as SWE-Gym's
``SWE-Gym/SWE-Bench-Fork``, whose table adds SWE-Gym's repositories, is read too. Bundled/synthesized instances
carry their spec in ``extra["env"]``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import re
import sys
import threading
import types
from pathlib import Path
from typing import Any

from swe_srl.benchmark.era import (
    INSTALL_ERA_ON,
    EraEnv,
    environment_yml,
    era_floor,
    era_setup_lines,
    exact_pins,
    yml_install_lines,
    yml_requirements,
)
from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.published import published_spec
from swe_srl.benchmark.training_sets import HINTS, TRAINING_SETS
from swe_srl.core.patches import file_diffs
from swe_srl.errors import TaskError

BASE_PYTHONS = ("3.9", "3.11", "3.13")
NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
_IMPORT_LOCK = threading.RLock()
"""``import_swebench`` swaps ``sys.modules`` entries: two threads at once (``tasks validate --workers 2``) let one
remove the other's stubs mid-import, which then ran swebench's real ``__init__`` (``No module named 'bs4'``)."""
INSTALL_HINT = (
    "install the swebench spec tables with `pip install --no-deps swebench==4.1.0` "
    "or set SWE_SRL_SWEBENCH_SPECS to a JSON dump of MAP_REPO_VERSION_TO_SPECS_PY"
)


def import_swebench(module: str, stubs: tuple[str, ...] = ()) -> types.ModuleType:
    """Import ``swebench.<module>`` without running swebench's package ``__init__`` (which needs docker, bs4...).

    Parent packages are stubbed for the duration of the import only; ``stubs`` names extra modules to stub
    (empty modules with a ``TestSpec`` placeholder), e.g. ``harness.test_spec.test_spec`` for the log parsers.
    """
    with _IMPORT_LOCK:
        return _import_swebench(module, stubs)


def _import_swebench(module: str, stubs: tuple[str, ...]) -> types.ModuleType:
    spec = importlib.util.find_spec("swebench")
    if spec is None or spec.origin is None:
        raise TaskError(f"the swebench package is not installed: {INSTALL_HINT}")
    root = Path(spec.origin).parent
    before = set(sys.modules)
    for name in ("", "harness", "harness.test_spec", *stubs):
        full = "swebench" + (f".{name}" if name else "")
        if full in sys.modules:
            continue
        stub = types.ModuleType(full)
        stub.__path__ = [str(root / name.replace(".", "/"))]  # type: ignore[attr-defined]
        stub.TestSpec = object  # type: ignore[attr-defined]  # only used in annotations by the parsers
        sys.modules[full] = stub
    try:
        return importlib.import_module(f"swebench.{module}")
    finally:
        for name in set(sys.modules) - before:  # leave no stub (nor half-imported swebench) behind
            if name.startswith("swebench"):
                del sys.modules[name]


@functools.cache
def swebench_table(name: str) -> Any:
    """``harness.constants.python.<name>`` from the swebench package, or from the ``SWE_SRL_SWEBENCH_SPECS`` dump (a
    dump of the module's tables, or of the spec table alone): a table the dump lacks comes from the package when it
    is installed, else is empty."""
    dump = os.environ.get("SWE_SRL_SWEBENCH_SPECS")
    if dump:
        data = json.loads(Path(dump).read_text(encoding="utf-8"))
        tables = data if "MAP_REPO_VERSION_TO_SPECS_PY" in data else {"MAP_REPO_VERSION_TO_SPECS_PY": data}
        if name in tables:
            return tables[name]
        if importlib.util.find_spec("swebench") is None:
            return {}
    try:
        return getattr(import_swebench("harness.constants.python"), name)
    except ModuleNotFoundError:  # the older layout (SWE-Gym's fork): one module, the table without _PY
        constants = import_swebench("harness.constants")
        return getattr(constants, name, None) or getattr(constants, LEGACY_NAMES.get(name, name), {})


LEGACY_NAMES = {"MAP_REPO_VERSION_TO_SPECS_PY": "MAP_REPO_VERSION_TO_SPECS"}
"""swebench ≥ 3 table names → their names in the one-module ``harness/constants.py`` of swebench 2 and its forks."""


def repo_entry(table: dict[str, Any], repo: str, default: Any = None) -> Any:
    """``table[repo]``, else its lower-case key's entry (SWE-Gym's fork lower-cases its spec table's repos)."""
    return table.get(repo, table.get(repo.lower(), default))


def swebench_specs() -> dict[str, dict[str, dict[str, Any]]]:
    """``repo → version → spec`` from the swebench package (or the ``SWE_SRL_SWEBENCH_SPECS`` dump)."""
    return swebench_table("MAP_REPO_VERSION_TO_SPECS_PY")


def instance_spec(instance: Instance, *, published: bool = True) -> dict[str, Any]:
    """The environment spec of an instance: ``python``, ``pip_packages``, ``install``, ``test_cmd``...

    The record's ``extra['env']``, else the spec table's entry for its repo/version, else (``published``) for a
    SWE-smith record the test spec its published image runs (``published.published_spec``: SWE-smith's test
    command over the FAIL_TO_PASS files; no install recipe, so an offline build asks with ``published=False``).
    """
    if "env" in instance.extra:
        return dict(instance.extra["env"])
    table = swebench_specs()
    versions = repo_entry(table, instance.repo, {})
    if instance.version in versions:
        return dict(versions[instance.version])
    smith = published_spec(instance) if published else None
    if smith is not None:
        return smith
    source = instance.extra.get("source")
    if source in TRAINING_SETS:
        version = f" version {instance.version!r}" if instance.version else ""
        raise TaskError(
            f"{instance.instance_id}: {source} repo {instance.repo}{version} has no spec: not in the swebench spec "
            f"table ({HINTS[TRAINING_SETS[source]]}), and the record has no 'env' spec"
        )
    if not versions:
        raise TaskError(
            f"{instance.instance_id}: no environment spec for repo {instance.repo!r} "
            f"(known: {', '.join(sorted(table)[:6])}...); synthesized tasks must carry extra['env']"
        )
    raise TaskError(
        f"{instance.instance_id}: repo {instance.repo} has no spec for version {instance.version!r} "
        f"(known: {', '.join(versions)})"
    )


def _minor(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in str(version).split(".")[:2])


def base_python(requested: str) -> str:
    """The closest base image Python at or above ``requested`` (3.6 → 3.9, 3.10 → 3.11, 3.12 → 3.13)."""
    for candidate in BASE_PYTHONS:
        if _minor(candidate) >= _minor(requested):
            return candidate
    return BASE_PYTHONS[-1]


def python_candidates(requested: str) -> list[str]:
    """The base Pythons to try for ``requested``, in order: :func:`base_python`, then, when that is not
    ``requested`` itself, the nearest base below it (3.10 → 3.11, 3.9; 3.12 → 3.13, 3.11; 3.6 → 3.9)."""
    first = base_python(requested)
    lower = [c for c in BASE_PYTHONS if _minor(c) < _minor(requested)]
    return [first, lower[-1]] if lower and _minor(first) != _minor(requested) else [first]


def approximate_python(requested: str, used: str) -> bool:
    """Whether an env on Python ``used`` grades a spec asking for ``requested`` on another minor version."""
    return _minor(requested) != _minor(used)


def test_files(instance: Instance) -> list[str]:
    """The test directives: files the test_patch touches (or ``extra['env']['test_files']``, or a SWE-smith
    record's FAIL_TO_PASS files), SWE-bench style."""
    env = instance.extra.get("env") or published_spec(instance) or {}
    if env.get("test_files"):
        return list(env["test_files"])
    paths = [f.path for f in file_diffs(instance.test_patch) if not f.path.endswith(NON_TEST_EXTS)]
    if instance.repo == "django/django":
        paths = [p.removesuffix(".py").removeprefix("tests/").replace("/", ".") for p in paths]
    return paths


def test_command(instance: Instance) -> str:
    """The repo/version test command followed by the test files, e.g. ``pytest -rA tests/test_x.py``."""
    spec = instance_spec(instance)
    return " ".join([spec["test_cmd"], *test_files(instance)])


def spec_cpus(instance: Instance) -> float | None:
    """The CPUs the spec gives the test container (``nano_cpus`` / 1e9, as SWE-bench's harness passes it to docker;
    pylint's specs ask for 2); None when the spec names none or there is no spec."""
    try:
        nano = instance_spec(instance).get("nano_cpus")
    except TaskError:
        return None
    return int(nano) / 1e9 if nano else None


def eval_prelude(instance: Instance) -> list[str]:
    """Commands the spec runs before the tests (locale exports for django...)."""
    return list(instance_spec(instance).get("eval_commands", []))


def _pip_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.split()
    return list(value or [])


def instance_era(
    instance: Instance, spec: dict[str, Any], repo_dir: Path | None, python: str | None = None
) -> EraEnv | None:
    """The era a SWE-bench instance's env resolves in (``benchmark/era.py``) on ``python`` (default: the spec's);
    None for bundled/synthesized tasks (their ``extra['env']`` builds as it always did)."""
    if "env" in instance.extra:
        return None
    yml: list[str] = []
    if spec.get("packages") == "environment.yml":
        paths = repo_entry(swebench_table("MAP_REPO_TO_ENV_YML_PATHS"), instance.repo, ["environment.yml"])
        text = environment_yml(instance, repo_dir, list(paths))
        if text is None:
            raise TaskError(
                f"{instance.instance_id}: spec says packages=environment.yml but none of {', '.join(paths)} is in "
                f"{repo_dir} at {instance.environment_setup_commit or instance.base_commit}; fetch that commit"
            )
        yml = yml_requirements(text)
    pins = exact_pins([*yml, *_pip_list(spec.get("pip_packages"))])
    floor = era_floor(instance, repo_dir, python or spec.get("python"))
    return EraEnv(floor=floor, pins=tuple(dict.fromkeys(pins)), yml_requirements=tuple(yml))


COMPILED_REPOS = frozenset({"astropy/astropy", "scikit-learn/scikit-learn", "matplotlib/matplotlib"})
"""Verified repositories whose install compiles C/C++/Cython extensions: their envs get a compiler and the Python
headers (the official base image has ``build-essential``; ours have neither, and astropy's editable install stopped
at ``gcc``, then at ``Python.h``). Other envs stay as they were."""
COMPILER_LINES = [
    "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "
    "build-essential python3-dev"
]


def needs_compiler(instance: Instance) -> bool:
    """Whether the env of a SWE-bench ``instance`` gets :data:`COMPILER_LINES` (:data:`COMPILED_REPOS`)."""
    return "env" not in instance.extra and instance.repo in COMPILED_REPOS


def env_setup_script(spec: dict[str, Any], era: EraEnv | None = None, *, compiler: bool = False) -> str:
    """Bash for the env image: pre-install packages + pip packages; runs as root with network. With ``era``, pip
    resolves through the era index and the ``environment.yml`` requirements come before the pip packages; with
    ``compiler``, a C/C++ toolchain is installed first."""
    lines = ["set -euxo pipefail", *(COMPILER_LINES if compiler else [])]
    lines += era_setup_lines(era) if era is not None else []
    lines.append("python -m pip install -U pip setuptools wheel")
    packages = spec.get("packages", "")
    if packages and packages not in ("requirements.txt", "environment.yml"):
        lines.append(f"python -m pip install {packages}")
    lines += yml_install_lines(era.yml_requirements) if era is not None else []
    if spec.get("pip_packages"):
        lines.append("python -m pip install " + " ".join(f"'{p}'" for p in _pip_list(spec["pip_packages"])))
    lines += list(spec.get("env_setup", []))
    return "\n".join(lines) + "\n"


def install_script(instance: Instance, spec: dict[str, Any]) -> str:
    """Bash for the instance image, run in /testbed: requirements files, pre_install, then the install command.

    SWE-bench instances resolve through the env's era index, and ``tox --current-env`` commands get
    :func:`tox_env_lines`."""
    lines = ["set -euxo pipefail"]
    table = swebench_table("MAP_REPO_TO_REQS_PATHS") if "env" not in instance.extra else {}
    lines += [INSTALL_ERA_ON] if "env" not in instance.extra else []
    if spec.get("packages") == "requirements.txt":
        for path in repo_entry(table, instance.repo, []):
            lines.append(f"if [ -f {path} ]; then python -m pip install -r {path}; fi")
    lines += list(spec.get("pre_install", []))
    if spec.get("install"):
        lines.append(spec["install"])
    lines += tox_env_lines(str(spec.get("test_cmd", "")))
    return "\n".join(lines) + "\n"


def tox_env_lines(test_cmd: str) -> list[str]:
    """For ``tox --current-env -eNAME``: ``.tox/NAME/bin/python*`` as scripts that exec the venv's Python.

    tox-current-env links them to ``sys.executable`` unless they exist; a link to the venv's python (itself a link
    to the system one) starts outside the venv (no ``pyvenv.cfg`` next to the link), so pytest is not found. A
    script exec'ing ``$VIRTUAL_ENV/bin/python`` starts it under its own path, inside the venv."""
    if "tox --current-env" not in test_cmd:
        return []
    match = re.search(r"(?:^|\s)-e\s*=?\s*(\S+)", test_cmd)
    names = (match.group(1) if match else "py").split(",")
    prefix = "$(python -c 'import sys; print(sys.prefix)')"
    minor = "$(python -c 'import sys; print(sys.version_info[1])')"
    lines = []
    for bindir in (f".tox/{name}/bin" for name in names):
        lines.append(
            f'mkdir -p {bindir} && printf \'#!/bin/sh\\nexec %s/bin/python "$@"\\n\' "{prefix}" > {bindir}/python'
        )
        lines.append(
            f"chmod +x {bindir}/python && ln -sf python {bindir}/python3 && ln -sf python {bindir}/python3.{minor}"
        )
    return lines
