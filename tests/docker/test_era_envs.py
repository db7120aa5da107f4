"""Era-pinned env images for real (PyPI through the era index in a container) and the Python fallback."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from swe_srl.benchmark.era import EraEnv
from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.specs import env_setup_script
from swe_srl.errors import ImageBuildError


def _run(image: str, script: str) -> str:
    proc = subprocess.run(
        ["docker", "run", "--rm", image, "bash", "-c", script], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_env_resolves_in_its_era(docker_engine) -> None:
    """Floor 2021-01-21 with the pin Jinja2==3.0.3 (uploaded 2021-11-09): the bound moves to the pin, unpinned
    docutils resolves as of then (0.18, not today's), and MarkupSafe, which had no cp311 wheel by then, comes as the
    first release that has one (2.1.2) rather than an sdist."""
    from swe_srl.infra.images import EnvRecipe, ensure_env_image

    spec = {"pip_packages": ["Jinja2==3.0.3", "docutils"]}
    era = EraEnv(floor="2021-01-21T15:36:24Z", pins=("Jinja2==3.0.3",))
    tag = ensure_env_image(
        EnvRecipe(name="era-test", python="3.11", setup_script=env_setup_script(spec, era))
    )
    out = _run(
        tag,
        "cat /opt/swe-srl/era-bound; python -c 'import docutils, jinja2, markupsafe; "
        "print(docutils.__version__, jinja2.__version__, markupsafe.__version__)'; "
        "ls /opt/venv/lib/python3.11/site-packages | grep -i '^markupsafe-.*dist-info'; pip --version",
    ).split("\n")
    assert out[0].startswith("2021-11-09")
    assert out[1].split() == ["0.18", "3.0.3", "2.1.2"]
    assert out[2] == "MarkupSafe-2.1.2.dist-info"
    # bookworm's own pip is newer than the era's: kept, not downgraded
    assert out[3].startswith("pip 23.0.1 ")


def test_pins_that_do_not_resolve_fall_back_to_the_base_below(docker_engine, tiny_repo, monkeypatch) -> None:
    """A spec asking for 3.10 whose env only builds on 3.9: the 3.11 env fails, the 3.9 one is built and used, and
    the provenance says so (python 3.9, approximate)."""
    from swe_srl.grading.validate import _tags
    from swe_srl.infra.images import env_image_tag, instance_image_tag
    from swe_srl.infra.recipes import (
        image_provenance,
        instance_image,
        instance_image_name,
        instance_image_names,
        instance_recipes,
    )

    monkeypatch.setenv("SWE_SRL_IMAGE_SOURCE", "debootstrap")
    repo, base, _ = tiny_repo
    env = {"python": "3.10", "test_cmd": "pytest", "test_files": ["t.py"],
           "env_setup": ["python -c 'import sys; assert sys.version_info[:2] == (3, 9), sys.version'"]}  # fmt: skip
    instance = Instance.from_record(
        {"instance_id": "era__fallback-1", "repo": "era/fallback", "base_commit": base, "patch": "", "test_patch": "",
         "problem_statement": "", "version": "1.0", "env": env, "repo_dir": str(repo)}
    )  # fmt: skip
    for python in ("3.11", "3.9"):  # from scratch every run: the 3.11 env fails, the 3.9 one is built
        env_recipe, recipe = instance_recipes(instance, source="debootstrap", python=python)
        for old in (instance_image_tag(recipe), env_image_tag(env_recipe)):
            subprocess.run(["docker", "rmi", "-f", old], capture_output=True, check=False)
    tag = instance_image(instance)
    assert instance_image_name(instance) == tag
    # tasks validate resumes on the fallback's image (and still knows the 3.11 tag it would try first)
    names = instance_image_names(instance)
    assert len(names) == 2 and names[1] == tag and _tags(instance, None) == [tag, names[0]]
    assert _run(tag, "python -c 'import sys; print(sys.version_info[:2])'").strip() == "(3, 9)"
    prov = image_provenance(instance, tag)
    assert (prov["python"], prov["spec_python"], prov["approximate_python"]) == ("3.9", "3.10", True)
    broken = Instance.from_record(
        {**instance.to_record(), "instance_id": "era__fallback-2", "env": {**env, "env_setup": ["exit 3"]}}
    )
    # fails on every base: the last one's error is raised
    with pytest.raises(ImageBuildError, match="non-zero code: 3") as err:
        instance_image(broken)
    log = re.search(r"full build log: (\S+);", str(err.value))
    assert log and "+ exit 3" in Path(log.group(1)).read_text()  # the whole build's log is kept, and named
