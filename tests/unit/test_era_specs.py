"""Spec → recipe translation for every repo/version of the SWE-bench spec table (env script, install script, chosen
Python, era bound, the spec's pins), environment.yml → pip, the tox-current-env fix, the Python fallback order."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from swe_srl.benchmark.era import (
    ERA_DIR,
    INSTALL_ERA_ON,
    PYTHON_RELEASED,
    conda_to_pip,
    era_floor,
    exact_pins,
    yml_requirements,
)
from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.repos import git_snapshot
from swe_srl.benchmark.specs import (
    BASE_PYTHONS,
    COMPILER_LINES,
    approximate_python,
    base_python,
    env_setup_script,
    install_script,
    instance_era,
    needs_compiler,
    python_candidates,
    tox_env_lines,
)
from swe_srl.errors import TaskError

ROOT = Path(__file__).resolve().parents[2]
SPECS_FILE = Path(os.environ.get("SWE_SRL_SHARED", ROOT / "../shared")) / "data" / "swebench-specs-py.json"
TABLES = json.loads(SPECS_FILE.read_text()) if SPECS_FILE.is_file() else {}
TABLE = TABLES.get("MAP_REPO_VERSION_TO_SPECS_PY", {})
CASES = [(repo, version) for repo, versions in sorted(TABLE.items()) for version in sorted(versions)]
CREATED = "2022-08-08T23:07:49Z"
YML = """name: testbed
channels: [conda-forge]
dependencies:
  - python=3.10
  - numpy<1.24
  - dask-core
  - hdf5
  - h5py=3.7
  - pip
  - pip:
      - pytest-env==0.8.1
"""


@pytest.fixture(scope="module")
def specs_dump(tmp_path_factory: pytest.TempPathFactory):
    """The shared spec dump as ``SWE_SRL_SWEBENCH_SPECS`` (the air-gapped path) for this module's tests."""
    if not TABLE:
        pytest.skip(f"no spec table at {SPECS_FILE} (the shared data is absent)")
    from swe_srl.benchmark import specs

    before = os.environ.get("SWE_SRL_SWEBENCH_SPECS")
    os.environ["SWE_SRL_SWEBENCH_SPECS"] = str(SPECS_FILE)
    specs.swebench_table.cache_clear()
    yield TABLES
    if before is None:
        os.environ.pop("SWE_SRL_SWEBENCH_SPECS")
    else:
        os.environ["SWE_SRL_SWEBENCH_SPECS"] = before
    specs.swebench_table.cache_clear()


@pytest.fixture(scope="module")
def yml_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A real git repo whose one commit holds an environment.yml at every path the table names."""
    tree = tmp_path_factory.mktemp("yml-repo")
    for path in {p for paths in TABLES.get("MAP_REPO_TO_ENV_YML_PATHS", {}).values() for p in paths} | {
        "environment.yml"
    }:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(YML)
    return tree, git_snapshot(tree, "env")


def table_instance(repo: str, version: str, commit: str = "") -> Instance:
    return Instance.from_record(
        {"instance_id": f"{repo.replace('/', '__')}-1", "repo": repo, "base_commit": commit or "0" * 40,
         "patch": "", "test_patch": "", "problem_statement": "", "version": version, "created_at": CREATED,
         "environment_setup_commit": commit}
    )  # fmt: skip


def bash_parses(script: str, spec: dict | None = None) -> None:
    """``script`` parses as bash, the spec's own lines aside (copied verbatim, as the official harness runs them:
    matplotlib 1.0's ``pre_install`` has ``&& &&``)."""
    verbatim = {
        *(spec or {}).get("pre_install", []),
        *(spec or {}).get("env_setup", []),
        (spec or {}).get("install"),
    }
    ours = "\n".join(":" if line in verbatim else line for line in script.split("\n"))
    proc = subprocess.run(["bash", "-n"], input=ours, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def heredoc(script: str, path: str) -> str:
    match = re.search(rf"cat > {re.escape(path)} <<'(\w+)'\n(.*?)\n\1\n", script, re.S)
    assert match, f"{path} is not written by the env script"
    return match.group(2)


@pytest.mark.parametrize(
    ("repo", "version"), CASES or [pytest.param("-", "-", marks=pytest.mark.skip("no table"))]
)
def test_every_spec_translates(specs_dump, yml_repo, repo: str, version: str) -> None:
    spec = dict(TABLE[repo][version])
    repo_dir, commit = yml_repo
    instance = table_instance(repo, version, commit)
    era = instance_era(instance, spec, repo_dir)
    assert era is not None
    env = env_setup_script(spec, era)
    bash_parses(env, spec)
    lines = env.splitlines()
    assert lines[0] == "set -euxo pipefail"
    # the era index is written and started before any pip runs; its config carries the era and the spec's pins
    start = lines.index(f"source {ERA_DIR}/era-on.sh")
    assert start < lines.index("python -m pip install -U pip setuptools wheel")
    assert not any("pip install" in line for line in lines[:start] if not line.startswith(("cat ", "#")))
    config = json.loads(heredoc(env, f"{ERA_DIR}/era.json"))
    pip_packages = spec.get("pip_packages") or []
    pip_packages = pip_packages.split() if isinstance(pip_packages, str) else pip_packages
    assert (
        config["floor"] == era_floor(instance, repo_dir) != CREATED
    )  # the setup commit's date, not created_at
    assert set(exact_pins(pip_packages)) <= set(config["pins"])
    compile(heredoc(env, f"{ERA_DIR}/era_index.py"), "era_index.py", "exec")
    for package in pip_packages:  # every pip package, in the spec's order, after the yml requirements
        assert shlex.quote(package) in env or f"'{package}'" in env
    if pip_packages:
        assert env.index("python -m pip install '") > env.index("-U pip setuptools wheel")
    for line in spec.get("env_setup", []):
        assert line in lines
    if spec.get("packages") == "environment.yml":
        assert era.yml_requirements == ("numpy<1.24", "dask", "h5py==3.7.*", "pytest-env==0.8.1")
        assert "pytest-env==0.8.1" in config["pins"]
        yml_line = next(i for i, line in enumerate(lines) if "'h5py==3.7.*'" in line)
        assert not pip_packages or yml_line < next(
            i for i, line in enumerate(lines) if line.startswith(f"python -m pip install '{pip_packages[0]}'")
        )
    else:
        assert era.yml_requirements == ()
    script = install_script(instance, spec)
    bash_parses(script, spec)
    body = script.splitlines()
    assert body[:2] == ["set -euxo pipefail", INSTALL_ERA_ON]
    assert [line for line in spec.get("pre_install", []) if line not in body] == []
    if spec.get("install"):
        assert spec["install"] in body
    tox = "tox --current-env" in spec.get("test_cmd", "")
    assert any(".tox/" in line for line in body) == tox
    # the chosen Python: debootstrap's nearest base at or above the spec's, then the one below; flagged when not exact
    want = str(spec.get("python", "3.11"))
    candidates = python_candidates(want)
    assert candidates[0] == base_python(want) and set(candidates) <= set(BASE_PYTHONS)
    assert approximate_python(want, candidates[0]) == (want not in BASE_PYTHONS)
    if len(candidates) == 2:
        assert tuple(map(int, candidates[1].split("."))) < tuple(map(int, want.split(".")))


def test_bundled_envs_build_as_before(specs_dump) -> None:
    spec = {
        "python": "3.11",
        "pip_packages": ["pytest==8.3.3"],
        "install": "pip install -e .",
        "test_cmd": "pytest",
    }
    instance = Instance.from_record(
        {"instance_id": "b-1", "repo": "o/r", "base_commit": "a", "patch": "", "test_patch": "", "problem_statement": "",
         "env": spec}
    )  # fmt: skip
    assert instance_era(instance, spec, None) is None
    assert env_setup_script(spec) == (
        "set -euxo pipefail\npython -m pip install -U pip setuptools wheel\npython -m pip install 'pytest==8.3.3'\n"
    )
    assert install_script(instance, spec) == "set -euxo pipefail\npip install -e .\n"


def test_era_floor_falls_back_to_created_at_and_yml_must_exist(specs_dump, tmp_path: Path) -> None:
    instance = table_instance("pydata/xarray", "2022.09", "f" * 40)
    assert era_floor(instance, tmp_path) == CREATED  # the setup commit is not in that (empty) folder
    assert era_floor(table_instance("o/r", "1"), None) == CREATED
    with pytest.raises(TaskError, match=r"packages=environment.yml but none of .*environment.yml"):
        instance_era(instance, TABLE["pydata/xarray"]["2022.09"], tmp_path)


def test_era_never_before_the_envs_python() -> None:
    # requests 2.0 (2013, no pins) on 3.9: resolving in 2013 gave pytest 2.4 (no `pytest` command, no 3.9 support)
    old = Instance.from_record(
        {"instance_id": "psf__requests-1", "repo": "psf/requests", "base_commit": "0" * 40, "patch": "",
         "test_patch": "", "problem_statement": "", "version": "2.0", "created_at": "2013-11-04T21:04:26Z"}
    )  # fmt: skip
    spec = {
        "python": "3.9",
        "packages": "pytest",
        "install": "python -m pip install .",
        "test_cmd": "pytest -rA",
    }
    assert era_floor(old, None) == "2013-11-04T21:04:26Z"
    assert era_floor(old, None, "3.9") == PYTHON_RELEASED["3.9"] == instance_era(old, spec, None).floor
    assert (
        instance_era(old, spec, None, "3.11").floor == PYTHON_RELEASED["3.11"]
    )  # a fallback base: its release
    assert (
        era_floor(table_instance("o/r", "1"), None, "3.9") == CREATED
    )  # later than 3.9's release: unchanged
    by_minor = [PYTHON_RELEASED[v] for v in sorted(PYTHON_RELEASED, key=lambda v: int(v.split(".")[1]))]
    assert by_minor == sorted(by_minor)


def test_repos_that_compile_get_a_compiler_first() -> None:
    spec = {"python": "3.9", "install": "python -m pip install -e .[test]", "test_cmd": "pytest -rA"}
    astropy, sympy = table_instance("astropy/astropy", "4.3"), table_instance("sympy/sympy", "1.1")
    assert needs_compiler(astropy) and not needs_compiler(sympy)
    lines = env_setup_script(spec, instance_era(astropy, spec, None), compiler=True).splitlines()
    assert lines[1] == COMPILER_LINES[0] and "build-essential" in lines[1]
    assert lines.index(COMPILER_LINES[0]) < next(i for i, line in enumerate(lines) if "pip install" in line)
    assert COMPILER_LINES[0] not in env_setup_script(spec, instance_era(sympy, spec, None))
    bundled = Instance.from_record({**astropy.to_record(), "env": spec})
    assert not needs_compiler(bundled)  # a record with its own env spec builds as it says


def test_conda_dependencies_as_pip_requirements() -> None:
    assert [conda_to_pip(d) for d in ("numpy", "python=3.10", "h5py=3.7", "scipy=1.11.1", "pint 0.22.*")] == [
        "numpy", None, "h5py==3.7.*", "scipy==1.11.1", "pint==0.22.*"
    ]  # fmt: skip
    assert [conda_to_pip(d) for d in ("conda-forge::matplotlib-base>=3.5", "fsspec!=2021.7.0", "lxml  # pydap")] == [
        "matplotlib>=3.5", "fsspec!=2021.7.0", "lxml"
    ]  # fmt: skip
    assert yml_requirements("dependencies: [pip, hdf5, cfgrib, {pip: ['a==1', 'b']}]") == ["a==1", "b"]
    assert exact_pins(["a==1", "b>=2", "c[x]==3; python_version<'4'", "d==1.*"]) == ["a==1", "c==3"]
    with pytest.raises(TaskError, match="environment.yml does not parse"):
        yml_requirements("dependencies: [a\n")


def test_python_fallback_order() -> None:
    assert [python_candidates(v) for v in ("3.6", "3.9", "3.10", "3.11", "3.12")] == [
        ["3.9"], ["3.9"], ["3.11", "3.9"], ["3.11"], ["3.13", "3.11"]
    ]  # fmt: skip
    assert approximate_python("3.10", "3.9") and approximate_python("3.6", "3.9")
    assert not approximate_python("3.9", "3.9") and not approximate_python("3.9.18", "3.9")


def test_tox_env_python_runs_inside_the_venv(tmp_path: Path) -> None:
    """The tox-current-env way (a link to the venv's python) starts outside a venv whose python is itself a link;
    the scripts :func:`tox_env_lines` writes start inside it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--symlinks", str(venv)], check=True)
    work = tmp_path / "testbed"
    (work / ".tox/py39/bin").mkdir(parents=True)
    env = {**os.environ, "PATH": f"{venv}/bin:{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    prefix = "import sys; print(sys.prefix)"
    link = work / "link-python"
    link.symlink_to(venv / "bin" / "python")
    outside = subprocess.run([str(link), "-c", prefix], capture_output=True, text=True, env=env, check=True)
    assert Path(outside.stdout.strip()) != venv  # the bug: a link to the venv's python is not in the venv
    lines = tox_env_lines("tox --current-env -epy39 -v --")
    subprocess.run(["bash", "-euxo", "pipefail", "-c", "\n".join(lines)], cwd=work, env=env, check=True)
    for exe in ("python", "python3", f"python3.{sys.version_info[1]}"):
        inside = subprocess.run(
            [str(work / ".tox/py39/bin" / exe), "-c", prefix], capture_output=True, text=True, env=env
        )
        assert Path(inside.stdout.strip()) == venv, (exe, inside.stderr)
    assert tox_env_lines("pytest -rA") == []
    assert [line.split()[2] for line in tox_env_lines("tox --current-env -e py39,py310 --")[::2]] == [
        ".tox/py39/bin", ".tox/py310/bin"
    ]  # fmt: skip


def test_report_lists_the_approximate_python_instances() -> None:
    from swe_srl.eval.report import build_report

    def rec(iid: str, python: str, spec: str) -> dict:
        image = {"image": f"i/{iid}", "python": python, "spec_python": spec,
                 "approximate_python": approximate_python(spec, python)}  # fmt: skip
        return {
            "instance_id": iid,
            "repo": "o/r",
            "status": "resolved",
            "exit_reason": "direct",
            "image": image,
        }

    report = build_report(
        [rec("a", "3.9", "3.10"), rec("b", "3.9", "3.9"), rec("c", "3.11", "3.10")], policy="gold"
    )
    assert report["provenance"]["approximate_python_ids"] == ["a", "c"]
    assert report["provenance"]["pythons"] == ["3.11", "3.9"]


def _era_index():
    import importlib.util

    spec = importlib.util.spec_from_file_location("era_index", ROOT / "images" / "era_index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


class _Pages:
    """Upstream JSON pages as data (the docker test reads PyPI's own)."""

    def __init__(self, files: dict[str, list[tuple[str, str]]]) -> None:
        self.pages = {p: [{"filename": n, "url": f"https://files.example/{n}", "upload-time": t,
                           "hashes": {"sha256": "ab" * 32}, "requires-python": ">=3.6", "yanked": False}
                          for n, t in fs] for p, fs in files.items()}  # fmt: skip

    def files(self, project: str):
        return self.pages.get(project)


def test_era_index_keeps_the_era_the_pins_and_the_first_wheel_for_this_python() -> None:
    era_index = _era_index()
    here = next(iter(era_index.sys_tags()))  # a wheel tag this interpreter installs
    pages = _Pages({
        "docutils": [("docutils-0.16.tar.gz", "2020-01-01T00:00:00Z"), ("docutils-0.18.tar.gz", "2021-10-26T00:00:00Z"),
                     ("docutils-0.21-py3-none-any.whl", "2024-04-01T00:00:00Z")],
        "jinja2": [("Jinja2-3.0.3-py3-none-any.whl", "2021-11-09T00:00:00.5Z")],
        "numpy": [("numpy-1.17.0.tar.gz", "2019-07-01T00:00:00Z"), ("numpy-1.17.0-cp27-cp27m-win32.whl", "2019-07-01T00:00:00Z"),
                  ("numpy-1.20.0rc1-" + str(here) + ".whl", "2020-12-01T00:00:00Z"),
                  ("numpy-1.20.0-" + str(here) + ".whl", "2021-01-30T00:00:00Z"),
                  ("numpy-1.21.0-" + str(here) + ".whl", "2021-06-22T00:00:00Z")],
    })  # fmt: skip
    pinned = era = era_index.Era(pages, "2019-12-01T00:00:00Z", ["Jinja2==3.0.3", "docutils>=0.1"])
    assert era.bound == "2021-11-09T00:00:00.5Z"  # the pin's upload, later than the floor
    assert [f["filename"] for f in era.kept("docutils")] == ["docutils-0.16.tar.gz", "docutils-0.18.tar.gz"]
    # no numpy of the era installs here as a wheel: the first final release that does is added, not the rc
    era = era_index.Era(pages, "2019-12-01T00:00:00Z", [])
    assert [era_index.file_version(f["filename"]) for f in era.kept("numpy")] == [
        "1.17.0",
        "1.17.0",
        "1.20.0",
    ]
    assert era.kept("no-such-project") is None
    assert era.kept("jinja2") == []  # 3.0.3 is past this era and not pinned here
    html = era_index.page("docutils", pinned.kept("docutils"))
    assert (
        'href="https://files.example/docutils-0.16.tar.gz#sha256=' in html
        and 'data-requires-python="&gt;=3.6"' in html
    )
    assert era_index.parse_pin("Foo_Bar[x]==1.2; python_version<'4'") == ("foo-bar", "1.2")


def test_a_bare_spec_dump_takes_the_other_tables_from_the_package(tmp_path: Path, monkeypatch) -> None:
    from swe_srl.benchmark import specs

    if not TABLE:
        pytest.skip(f"no spec table at {SPECS_FILE}")
    bare = tmp_path / "specs.json"
    bare.write_text(json.dumps({"pylint-dev/pylint": TABLE["pylint-dev/pylint"]}))
    monkeypatch.setenv("SWE_SRL_SWEBENCH_SPECS", str(bare))
    specs.swebench_table.cache_clear()
    try:
        assert list(specs.swebench_specs()) == ["pylint-dev/pylint"]
        reqs = specs.swebench_table("MAP_REPO_TO_REQS_PATHS")
        if specs.importlib.util.find_spec("swebench") is None:
            assert reqs == {}
        else:
            assert reqs["pylint-dev/pylint"] == TABLES["MAP_REPO_TO_REQS_PATHS"]["pylint-dev/pylint"]
    finally:
        monkeypatch.undo()
        specs.swebench_table.cache_clear()
