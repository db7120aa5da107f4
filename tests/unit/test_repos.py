"""repos: where --repos-dir clones are found (normal clones, bare mirrors, symlinks) and tag-derived versions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swe_srl.benchmark.repos import git, repo_source, scm_version
from swe_srl.errors import TaskError


@pytest.fixture(scope="module")
def tagged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A repo with commits c0..c3 and tags: c0 = 1.0.0, c2 = 2.0.0.dev0; returns (repo, shas)."""
    repo = tmp_path_factory.mktemp("tagged")
    git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(4):
        (repo / "f.txt").write_text(str(i))
        git(repo, "add", "f.txt")
        git(repo, "commit", "-q", "--no-gpg-sign", "-m", f"c{i}")
        shas.append(git(repo, "rev-parse", "HEAD").strip())
    git(repo, "tag", "1.0.0", shas[0])
    git(repo, "tag", "-a", "-m", "dev", "2.0.0.dev0", shas[2])
    return repo, shas


@pytest.mark.parametrize(
    "index, expected",
    [
        (0, "1.0.0"),  # on the tag itself
        (1, "1.0.0.post1"),  # one commit after a release tag
        (2, "2.0.0.dev0"),  # on an annotated dev tag
        (3, "2.0.0.dev1"),  # after a dev tag: the distance becomes the dev number
    ],
)
def test_scm_version(tagged: tuple[Path, list[str]], index: int, expected: str) -> None:
    repo, shas = tagged
    assert scm_version(repo, shas[index]) == expected


def test_scm_version_after_a_dev_tag_without_number(tmp_path: Path) -> None:
    # astropy tags its dev cycles "v5.1.dev": 623 commits later setuptools_scm says 5.1.dev623, not 5.1.dev.post623
    git(tmp_path, "init", "-q", "-b", "main")
    for i in range(3):
        (tmp_path / "f").write_text(str(i))
        git(tmp_path, "add", "f")
        git(tmp_path, "commit", "-q", "--no-gpg-sign", "-m", f"c{i}")
        if i == 0:
            git(tmp_path, "tag", "-a", "-m", "dev", "v5.1.dev")
    assert scm_version(tmp_path, "HEAD") == "5.1.dev2"
    assert scm_version(tmp_path, "HEAD~2") == "5.1.dev"


def test_scm_version_without_tags_is_none(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "f").write_text("x")
    git(tmp_path, "add", "f")
    git(tmp_path, "commit", "-q", "--no-gpg-sign", "-m", "only")
    assert scm_version(tmp_path, "HEAD") is None


@pytest.mark.parametrize(
    "layout",
    [
        "octo__demo",  # owner__name, a normal clone
        "demo",  # name
        "octo/demo",  # owner/name
        "octo+demo",  # a mirror folder named owner+name
        "octo+demo/repo",  # ... holding the bare repo in repo/
    ],
)
@pytest.mark.parametrize("bare", [False, True])
def test_repo_source_layouts(tagged: tuple[Path, list[str]], tmp_path: Path, layout: str, bare: bool) -> None:
    repo, shas = tagged
    target = tmp_path / "repos" / layout
    target.parent.mkdir(parents=True, exist_ok=True)
    args = ["--mirror"] if bare else []
    subprocess.run(["git", "clone", "-q", *args, str(repo), str(target)], check=True)
    found = repo_source("octo/demo", tmp_path / "repos")
    assert found == target
    assert git(found, "cat-file", "-t", shas[3]).strip() == "commit"


def test_repo_source_symlink_to_bare_mirror(tagged: tuple[Path, list[str]], tmp_path: Path) -> None:
    repo, _ = tagged
    subprocess.run(["git", "clone", "-q", "--mirror", str(repo), str(tmp_path / "mirror")], check=True)
    (tmp_path / "repos").mkdir()
    (tmp_path / "repos" / "octo__demo").symlink_to(tmp_path / "mirror")
    assert repo_source("octo/demo", tmp_path / "repos") == tmp_path / "repos" / "octo__demo"


def test_repo_source_missing_names_the_layouts(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match=r"octo__demo.*git clone --mirror"):
        repo_source("octo/demo", tmp_path)


def test_submodules_come_from_local_clones_and_are_checked_out_initialized(tmp_path: Path) -> None:
    # astropy 3.x: astropy_helpers is a submodule its install would clone from GitHub; here it comes from --repos-dir
    from swe_srl.benchmark.repos import submodule_sources
    from swe_srl.infra.image_build import checkout_base_commit, init_submodule

    repos = tmp_path / "repos"
    helpers = repos / "astropy__astropy-helpers"
    helpers.mkdir(parents=True)
    git(helpers, "init", "-q", "-b", "main")
    (helpers / "ah.py").write_text("VERSION = 1\n")
    git(helpers, "add", "ah.py")
    git(helpers, "commit", "-q", "--no-gpg-sign", "-m", "helpers")
    pinned = git(helpers, "rev-parse", "HEAD").strip()
    (helpers / "ah.py").write_text("VERSION = 2\n")  # a later commit: the pinned one is what is checked out
    git(helpers, "commit", "-q", "--no-gpg-sign", "-am", "later")
    main = repos / "astropy__astropy"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    (main / ".gitmodules").write_text(
        '[submodule "astropy_helpers"]\n\tpath = astropy_helpers\n'
        "\turl = https://github.com/astropy/astropy-helpers.git\n"
        '[submodule "elsewhere"]\n\tpath = vendored\n\turl = https://gitlab.com/o/vendored.git\n'
    )
    git(main, "add", ".gitmodules")
    git(main, "update-index", "--add", "--cacheinfo", f"160000,{pinned},astropy_helpers")
    git(main, "commit", "-q", "--no-gpg-sign", "-m", "with submodule")
    commit = git(main, "rev-parse", "HEAD").strip()
    subs = submodule_sources(main, commit, repos)
    assert subs == (("astropy_helpers", pinned, str(helpers)),)  # the gitlab one has no clone: left as it was
    assert submodule_sources(helpers, pinned, repos) == ()  # no .gitmodules
    dest = tmp_path / "testbed"
    checkout_base_commit(main, commit, dest)
    for path, sha, source in subs:
        checkout_base_commit(Path(source), sha, dest / path)
        init_submodule(dest, path)
    assert (dest / "astropy_helpers" / "ah.py").read_text() == "VERSION = 1\n"
    status = git(dest, "submodule", "status")
    assert status.startswith(f" {pinned} astropy_helpers")  # no "-" (uninitialized) nor "+" (other commit)
    assert git(dest, "status", "--porcelain") == ""
