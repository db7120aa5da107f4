"""grading.neutralize: control files dropped, pytest sections of config files put back to the base's; and the
SWE-bench Verified gold patches keep everything they need (only pylint-dev__pylint-4661 touches such a file)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.verdicts import strip_test_edits
from swe_srl.core.patches import patch_paths
from swe_srl.grading.neutralize import (
    drop_control_files,
    is_control_file,
    is_pytest_config,
    restore_pytest_sections,
)

VERIFIED = Path(__file__).resolve().parents[3] / "shared" / "data" / "swebench-verified.jsonl"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grading"


def new_file(path: str, text: str = "x = 1\n") -> str:
    body = "".join("+" + line + "\n" for line in text.splitlines())
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{text.count(chr(10))} @@\n{body}"  # fmt: skip


def changed_file(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"


@pytest.mark.parametrize(
    "path, added, dropped",
    [
        ("conftest.py", False, True),
        ("src/pkg/sub/conftest.py", True, True),
        (".pytest.ini", True, True),
        ("docs/pytest.ini", True, True),
        ("pytest.toml", True, True),
        ("sitecustomize.py", True, True),
        ("lib/usercustomize.py", False, True),
        ("evil.pth", True, True),
        ("pkg.egg-info/entry_points.txt", False, True),
        ("x-1.0.dist-info/entry_points.txt", True, True),
        ("json.py", True, True),  # a new stdlib-named module at the root: python -m pytest would import it
        ("src/_pytest/__init__.py", True, True),
        ("pluggy/__init__.py", True, True),
        ("src/_pytest/python.py", False, False),  # pytest-dev's own sources stay editable
        ("src/_pytest/newmodule.py", True, False),
        ("json.py", False, False),  # an existing module of the repo may change
        ("pkg/json.py", True, False),  # not top level
        ("docs/entry_points.txt", True, False),
        ("setup.cfg", False, False),  # restored section-wise, not dropped
        ("pkg/core.py", False, False),
    ],
)
def test_control_files(path: str, added: bool, dropped: bool) -> None:
    assert is_control_file(path, added=added) is dropped


def test_drop_control_files_keeps_the_rest_byte_for_byte() -> None:
    keep = changed_file("pkg/core.py")
    patch = (
        new_file("sitecustomize.py")
        + keep
        + new_file("json.py")
        + changed_file("pkg.egg-info/entry_points.txt")
    )
    out, dropped = drop_control_files(patch)
    assert out == keep
    assert dropped == ["sitecustomize.py", "json.py", "pkg.egg-info/entry_points.txt"]
    assert drop_control_files(changed_file("json.py")) == (changed_file("json.py"), [])


SETUP_CFG = (
    "[metadata]\nname = x\n\n[tool:pytest]\naddopts = -rA\nmarkers =\n    slow\n\n[isort]\nline_length = 88\n"
)
PYPROJECT = (
    '[project]\nname = "x"\n\n[tool.pytest.ini_options]\naddopts = "-rA"\n\n[tool.black]\nline-length = 88\n'
)


@pytest.mark.parametrize(
    "path, base, new, expected",
    [
        # other sections' edits stay, the pytest section is the base's again
        (
            "setup.cfg",
            SETUP_CFG,
            SETUP_CFG.replace("-rA", "-rA -p evil").replace("88", "99"),
            SETUP_CFG.replace("88", "99"),
        ),  # fmt: skip
        ("setup.cfg", SETUP_CFG, SETUP_CFG.replace("88", "99"), SETUP_CFG.replace("88", "99")),
        # a pytest section added to a file that had none; a new file's pytest section
        (
            "setup.cfg",
            "[flake8]\nx = 1\n",
            "[flake8]\nx = 1\n[tool:pytest]\naddopts = -p evil\n",
            "[flake8]\nx = 1\n",
        ),
        ("tox.ini", None, "[pytest]\naddopts = -p evil\n[tox]\nenvlist = py\n", "[tox]\nenvlist = py\n"),
        # the section removed (its settings gone) comes back
        (
            "setup.cfg",
            SETUP_CFG,
            "[metadata]\nname = x\n",
            "[metadata]\nname = x\n"
            + SETUP_CFG[SETUP_CFG.index("[tool:pytest]") : SETUP_CFG.index("[isort]")],
        ),  # fmt: skip
        # a deleted file comes back when it held pytest settings, stays deleted when it did not
        ("setup.cfg", SETUP_CFG, None, SETUP_CFG),
        ("setup.cfg", "[flake8]\nx = 1\n", None, None),
        (
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace('"-rA"', '"-p evil"').replace("88", "99"),
            PYPROJECT.replace("88", "99"),
        ),  # fmt: skip
        ("pyproject.toml", PYPROJECT, PYPROJECT.replace("88", "99"), PYPROJECT.replace("88", "99")),
        (
            "pyproject.toml",
            '[project]\nname = "x"\n',
            '[project]\nname = "x"\n[tool.pytest.ini_options]\naddopts = "-p e"\n',
            '[project]\nname = "x"\n',
        ),  # fmt: skip
        # forms that cannot be cut out textually: the whole file is the base's
        ("pyproject.toml", PYPROJECT, PYPROJECT + '[tool]\npytest.ini_options.addopts = "-p e"\n', PYPROJECT),
        ("pyproject.toml", PYPROJECT, '[tool]\npytest = {ini_options = {addopts = "-p e"}}\n', PYPROJECT),
        ("pyproject.toml", PYPROJECT, "not toml [[[", PYPROJECT),
        (
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace("[tool.pytest.ini_options]", '[tool."pytest".ini_options]').replace(
                '"-rA"', '"-p e"'
            ),
            PYPROJECT,
        ),  # fmt: skip
        ("pyproject.toml", PYPROJECT, None, PYPROJECT),
    ],
)
def test_restore_pytest_sections(path: str, base: str | None, new: str | None, expected: str | None) -> None:
    assert restore_pytest_sections(path, base, new) == expected


def verified() -> list[dict]:
    return [json.loads(line) for line in VERIFIED.read_text().splitlines()]


@pytest.mark.skipif(not VERIFIED.is_file(), reason="shared SWE-bench Verified dump absent")
def test_verified_gold_patches_lose_nothing(tmp_path: Path) -> None:
    records = verified()
    assert len(records) == 500
    # no gold patch adds or changes a control file, nor a test file grading reverts
    for r in records:
        inst = Instance.from_record(r)
        assert drop_control_files(r["patch"])[1] == [], r["instance_id"]
        assert strip_test_edits(inst, r["patch"])[1] == [], r["instance_id"]
    # exactly one touches a config file with pytest sections: pylint-dev__pylint-4661 (setup.cfg: install_requires,
    # [isort], a new [mypy-appdirs]); its base [tool:pytest] is untouched, so the file stays as the patch made it
    touching = {
        r["instance_id"]: sorted(p for p in patch_paths(r["patch"]) if is_pytest_config(p)) for r in records
    }
    touching = {k: v for k, v in touching.items() if v}
    assert touching == {"pylint-dev__pylint-4661": ["setup.cfg"]}
    for instance_id, paths in touching.items():
        gold = next(r["patch"] for r in records if r["instance_id"] == instance_id)
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        for path in paths:
            base = (FIXTURES / f"{instance_id}.{path.replace('/', '_')}").read_text()
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(base)
        only = "".join(
            s for s in ("diff --git" + part for part in gold.split("diff --git")[1:]) if s.split("\n")[0].endswith(tuple(paths))
        )  # fmt: skip
        subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=only, text=True, check=True)
        for path in paths:
            base = (FIXTURES / f"{instance_id}.{path.replace('/', '_')}").read_text()
            new = (tmp_path / path).read_text()
            assert new != base and "appdirs>=1.4.0" in new
            assert restore_pytest_sections(path, base, new) == new
