"""Patch extraction on repos built in place: ignored compiled files over the size cap never fail the diff.

Compiled extensions (``*.so`` over ``Limits.patch_file_bytes``) that the repo's ``.gitignore`` ignores are left out
silently, as ``git diff`` leaves them out; a large file the policy created or changed is left out with a note. Checked
in a plain git repo (the script itself), in a container in place, and through the pristine copy (``.git`` deleted).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from swe_srl.infra.sandbox.base import Limits, SandboxSpec
from swe_srl.infra.sandbox.docker import DockerSandbox
from swe_srl.infra.sandbox.patching import diff_script, parse_output

CAP = 1 << 20
SO = "pkg/_speedups.cpython-311-x86_64-linux-gnu.so"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}  # fmt: skip
BIG = "python -c \"import os,sys; open(sys.argv[1], 'wb').write(os.urandom(2 << 20))\""


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout


def _ignoring_repo(repo: Path) -> str:
    """A repo whose ``.gitignore`` ignores compiled files and build outputs; returns its commit."""
    _git(repo, "init", "-q", "-b", "dev")
    (repo / ".gitignore").write_text("*.so\nbuild/\n__pycache__/\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "vendored.so").write_bytes(b"\0" * 16)  # tracked although ignored (git add -f)
    _git(repo, "add", "-A")
    _git(repo, "add", "-f", "vendored.so")
    _git(repo, "commit", "-q", "-m", "base")
    return _git(repo, "rev-parse", "HEAD").strip()


def test_plain_repo_ignored_big_files_and_an_empty_repo_are_left_out_without_failing(tmp_path: Path) -> None:
    base = _ignoring_repo(tmp_path)
    for path in (SO, "build/lib/_ext.so", "new_data.txt", "vendored.so"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(b"x\n" * CAP)  # 2 MiB of text
    (tmp_path / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "scratch").mkdir()
    _git(
        tmp_path / "scratch", "init", "-q"
    )  # a policy's `git init`: git add cannot add a repo without a commit
    script = diff_script(base, str(tmp_path), str(tmp_path / ".git"), binary=False, file_cap=CAP)
    proc = subprocess.run(["bash", "-c", script], capture_output=True)
    assert proc.returncode == 0, proc.stdout.decode()[-800:]
    patch = parse_output(proc.stdout)
    assert "+    return a + b" in patch.text and "_speedups" not in patch.text
    notes = [f"{p} (over {CAP} bytes)" for p in ("new_data.txt", "vendored.so")]
    assert sorted(patch.left_out) == sorted([*notes, "scratch (a git repository without a commit)"])
    status = _git(tmp_path, "status", "--porcelain").splitlines()
    assert status == [" M pkg/calc.py", " M vendored.so", "?? new_data.txt", "?? scratch/"], (
        "the repo's own index is untouched"
    )


@pytest.fixture(scope="module")
def built_in_place(docker_engine, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """An instance image whose install step builds a 2 MiB ignored ``*.so`` in ``/testbed``: (tag, base)."""
    from swe_srl.infra.images import EnvRecipe, InstanceRecipe, ensure_env_image, ensure_instance_image

    repo = tmp_path_factory.mktemp("built-in-place")
    base = _ignoring_repo(repo)
    env = ensure_env_image(EnvRecipe(name="tiny", python="3.11", setup_script="python -V\n"))
    install = f"{BIG} {SO}\nmkdir -p build/lib && {BIG} build/lib/_ext.so\n"
    recipe = InstanceRecipe(
        name="built-in-place", env_image=env, repo_dir=repo, base_commit=base, install_script=install
    )
    return ensure_instance_image(recipe), base


def _box(built: tuple[str, str]) -> DockerSandbox:
    tag, base = built
    return DockerSandbox(SandboxSpec(image=tag, base_commit=base, limits=Limits(command_timeout_s=30)))


@pytest.mark.docker
@pytest.mark.parametrize("broken_git", [False, True], ids=["in_place", "pristine"])
def test_ignored_compiled_files_over_the_cap_never_fail_the_patch(
    built_in_place: tuple[str, str], broken_git: bool
) -> None:
    with _box(built_in_place) as box:
        assert box.run(f"test $(stat -c %s {SO}) -gt {CAP} && git check-ignore -q {SO}").exit_code == 0
        box.run("sed -i 's/a - b/a + b/' pkg/calc.py && " + BIG + " new_data.bin && " + BIG + " build/x.so")
        if broken_git:
            assert box.run("rm -rf .git && git init -q").exit_code == 0
        patch = box.patch()
        binary = box.diff()
    assert patch.pristine is broken_git
    assert "+    return a + b" in patch.text and "_speedups" not in patch.text
    notes = [n for n in patch.left_out if "pristine" not in n]
    assert notes == [f"new_data.bin (over {CAP} bytes)"], patch.left_out
    assert "pkg/calc.py" in binary and "new_data.bin" in binary and ".so" not in binary
