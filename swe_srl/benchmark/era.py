"""Era-pinned offline environments: SWE-bench env images resolved as PyPI stood in the environment's era.

The official images were built with the pip, setuptools and unpinned packages of their day; resolving today gets
pip 26 (no legacy editable installs), setuptools 82 (finder-hook editables) and docutils releases sphinx 3.x never
saw. Every ``pip`` in a SWE-bench env or instance build therefore goes through the era index
(``images/era_index.py``, started by ``/opt/swe-srl/era-on.sh``), which shows only what PyPI held at the bound:
the commit date of the version's ``environment_setup_commit`` (else the instance's ``created_at``), never before
the release of the env's Python (a 2013 requests env on 3.9 would get pytest 2.4, which has no ``pytest`` command and
predates 3.9; the official images resolved their unpinned packages years later) or, when later, the upload of the
newest exact pin in the spec. ``pip install -U pip setuptools wheel`` then keeps the base's own
tools unless the era's are newer.

``packages: environment.yml`` (xarray, matplotlib): the file at ``environment_setup_commit`` (as the official
harness reads it) becomes pip requirements (:func:`yml_requirements`), installed before the spec's
``pip_packages`` like ``conda env update`` is; conda-only entries are left out and what pip cannot install is
skipped one by one, with a line in the build log.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from swe_srl import paths
from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.repos import git
from swe_srl.errors import TaskError

ERA_DIR = "/opt/swe-srl"
HEREDOC = "SWE_SRL_ERA_EOF"
CONDA_ONLY = frozenset(
    {"python", "pip", "hdf5", "libnetcdf", "cdms2", "c-compiler", "cxx-compiler", "compilers", "nodejs", "tk",
     "ffmpeg", "graphviz", "pkg-config", "make", "libgfortran", "openblas", "mkl", "blas", "gdal", "proj", "geos",
     "libblas", "liblapack"}
)  # fmt: skip
"""conda packages that are not the Python package of that name on PyPI (libraries, tools, the interpreter)."""
NEEDS_CONDA_LIBRARY = frozenset({"cfgrib", "eccodes", "python-eccodes"})
"""conda packages whose PyPI twin needs a C library that conda brings and pip does not: pip installs cfgrib, whose
import then raises ``RuntimeError: Cannot find the ecCodes library`` (not an ImportError: xarray's conftest dies);
left out, the tests that need them skip."""
CONDA_TO_PYPI = {
    "dask-core": "dask",
    "matplotlib-base": "matplotlib",
    "pytables": "tables",
    "python-graphviz": "graphviz",
    "iris": "scitools-iris",
    "msgpack-python": "msgpack",
    "pytorch": "torch",
    "pyqt": "PyQt5",
}
PYTHON_RELEASED = {
    "3.5": "2015-09-13T00:00:00Z", "3.6": "2016-12-23T00:00:00Z", "3.7": "2018-06-27T00:00:00Z",
    "3.8": "2019-10-14T00:00:00Z", "3.9": "2020-10-05T00:00:00Z", "3.10": "2021-10-04T00:00:00Z",
    "3.11": "2022-10-24T00:00:00Z", "3.12": "2023-10-02T00:00:00Z", "3.13": "2024-10-07T00:00:00Z",
}  # fmt: skip
"""The day each CPython minor version was released: an env never resolves before its interpreter existed."""
_CONDA_SPEC = re.compile(r"^([A-Za-z0-9_.\-]+)\s*(.*)$")


@dataclass(frozen=True)
class EraEnv:
    """What an env image resolves against: the era ``floor`` (ISO UTC), exact ``pins`` shown whatever their date,
    and the pip requirements taken from the repo's ``environment.yml``."""

    floor: str | None
    pins: tuple[str, ...] = ()
    yml_requirements: tuple[str, ...] = field(default=())

    def config(self) -> dict[str, Any]:
        """The era index's config (``era.json``)."""
        return {"floor": self.floor, "pins": list(self.pins)}


def utc_iso(stamp: str) -> str:
    """``stamp`` (ISO 8601, any offset, ``Z`` allowed) as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC."""
    try:
        moment = datetime.fromisoformat(stamp.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise TaskError(f"era date {stamp!r} is not an ISO 8601 time (e.g. 2022-08-08T23:07:49Z)") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def era_floor(instance: Instance, repo_dir: Path | None, python: str | None = None) -> str | None:
    """The env's era: the commit date of ``environment_setup_commit`` in ``repo_dir``, else ``created_at``; never
    before ``python``'s release (:data:`PYTHON_RELEASED`)."""
    commit, floor = instance.environment_setup_commit, None
    if commit and repo_dir is not None:
        date = git(repo_dir, "log", "-1", "--format=%cI", commit, "--", check=False).strip()
        floor = utc_iso(date) if date else None
    created = instance.extra.get("created_at")
    floor = floor or (utc_iso(str(created)) if created else None)
    released = PYTHON_RELEASED.get(".".join(str(python).split(".")[:2])) if python else None
    return max(floor, released) if floor and released else floor or released


def exact_pins(requirements: list[str] | tuple[str, ...]) -> list[str]:
    """The ``name==version`` entries of ``requirements`` (extras and markers dropped)."""
    pins = []
    for req in requirements:
        match = re.match(
            r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*([^\s;,*]+)\s*(?:;.*)?$", req
        )
        if match:
            pins.append(f"{match.group(1)}=={match.group(2)}")
    return pins


def conda_to_pip(dep: str) -> str | None:
    """One conda dependency as a pip requirement (``x=1.2`` → ``x==1.2.*``, builds dropped); None: conda-only."""
    text = dep.split("#")[0].strip().split("::")[-1]
    match = _CONDA_SPEC.match(text)
    if not match:
        return None
    name, rest = match.group(1), match.group(2).strip()
    if name.lower() in CONDA_ONLY | NEEDS_CONDA_LIBRARY:
        return None
    name = CONDA_TO_PYPI.get(name.lower(), name)
    if not rest:
        return name
    if rest[0] not in "<>=!~":  # "name 1.2.*" (space-separated version)
        rest = "==" + rest.split()[0]
    elif rest.startswith("=") and not rest.startswith("=="):
        version = rest[1:].split("=")[0]  # "name=1.2=build"
        rest = f"=={version}" if "*" in version or version.count(".") >= 2 else f"=={version}.*"
    return name + rest.replace(" ", "")


def yml_requirements(text: str) -> list[str]:
    """The pip-installable part of a conda ``environment.yml``: conda deps mapped (:func:`conda_to_pip`), then the
    ``pip:`` list as written (pins kept)."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise TaskError(f"environment.yml does not parse: {exc}") from exc
    conda, pip = [], []
    for dep in data.get("dependencies") or [] if isinstance(data, dict) else []:
        if isinstance(dep, dict):
            pip += [str(p).strip() for p in dep.get("pip") or [] if str(p).strip()]
        elif (req := conda_to_pip(str(dep))) is not None:
            conda.append(req)
    return conda + pip


def environment_yml(instance: Instance, repo_dir: Path | None, paths: list[str]) -> str | None:
    """The first of ``paths`` at ``environment_setup_commit`` (else ``base_commit``) in ``repo_dir``."""
    commit = instance.environment_setup_commit or instance.base_commit
    for path in paths if repo_dir is not None else []:
        text = git(repo_dir, "show", f"{commit}:{path}", check=False)  # type: ignore[arg-type]
        if text.strip():
            return text
    return None


def era_setup_lines(era: EraEnv) -> list[str]:
    """Env-script lines: write the era index and its config to ``/opt/swe-srl``, then start it."""
    source = (paths.resource_dir("images") / "era_index.py").read_text(encoding="utf-8")
    return [
        f"mkdir -p {ERA_DIR}",
        f"cat > {ERA_DIR}/era_index.py <<'{HEREDOC}'\n{source.rstrip()}\n{HEREDOC}",
        f"cat > {ERA_DIR}/era.json <<'{HEREDOC}'\n{json.dumps(era.config(), indent=1)}\n{HEREDOC}",
        f"cat > {ERA_DIR}/era-on.sh <<'{HEREDOC}'\n{ERA_ON.rstrip()}\n{HEREDOC}",
        *ERA_START,
    ]


ERA_ON = f"""# source me: pip resolves through the era index until this shell exits
rm -f /tmp/swe-srl-era.port
python {ERA_DIR}/era_index.py {ERA_DIR}/era.json /tmp/swe-srl-era.port >/tmp/swe-srl-era.log 2>&1 &
SWE_SRL_ERA_PID=$!
trap 'kill $SWE_SRL_ERA_PID 2>/dev/null || true' EXIT
for _ in $(seq 600); do [ -s /tmp/swe-srl-era.port ] && break; kill -0 $SWE_SRL_ERA_PID || break; sleep 0.1; done
cat /tmp/swe-srl-era.log
[ -s /tmp/swe-srl-era.port ] || {{ echo "swe-srl: the era index did not start" >&2; exit 1; }}
export PIP_INDEX_URL="http://127.0.0.1:$(cat /tmp/swe-srl-era.port)/simple/" PIP_EXTRA_INDEX_URL="" PIP_FIND_LINKS=""
"""
ERA_START = [f"source {ERA_DIR}/era-on.sh"]
INSTALL_ERA_ON = f"if [ -f {ERA_DIR}/era-on.sh ]; then source {ERA_DIR}/era-on.sh; fi"
"""Instance-script line: the era index again, when the env image has one."""


def yml_install_lines(requirements: tuple[str, ...]) -> list[str]:
    """Install ``requirements`` at once, else one by one skipping (and naming) what pip cannot install."""
    if not requirements:
        return []
    quoted = " ".join(shlex.quote(r) for r in requirements)
    return [
        f'python -m pip install {quoted} || for req in {quoted}; do python -m pip install "$req" '
        '|| echo "swe-srl: skipped $req from environment.yml (pip cannot install it here)"; done'
    ]
