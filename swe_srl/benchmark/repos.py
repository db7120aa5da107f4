"""Where a repository's source comes from: ``--repos-dir`` local clones, the cache, a GitHub clone, or a PyPI sdist."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from swe_srl import paths
from swe_srl.errors import TaskError

# Fixed identity and dates make synthesized commits (and so base_commit ids) reproducible.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "swe-srl",
    "GIT_AUTHOR_EMAIL": "swe-srl@localhost",
    "GIT_COMMITTER_NAME": "swe-srl",
    "GIT_COMMITTER_EMAIL": "swe-srl@localhost",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00",
}


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run ``git -C repo args`` with the fixed identity; ``TaskError`` with git's message on failure."""
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(paths.home())}
    proc = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(repo), *args], capture_output=True, text=True, env=env
    )
    if check and proc.returncode != 0:
        raise TaskError(f"git {' '.join(args[:3])} in {repo} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def git_snapshot(tree: Path, message: str) -> str:
    """Make ``tree`` a fresh git repo whose single commit holds its files; returns the commit sha."""
    shutil.rmtree(tree / ".git", ignore_errors=True)
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A", "-f")
    git(tree, "commit", "-q", "--no-gpg-sign", "-m", message)
    return git(tree, "rev-parse", "HEAD").strip()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_sdist(name: str, version: str, sha256: str | None = None) -> Path:
    """The sdist of ``name==version`` from PyPI (cached); verified against ``sha256`` when given."""
    folder = paths.cache_dir("sdists") / f"{name}-{version}"
    found = sorted(folder.glob("*.tar.gz")) + sorted(folder.glob("*.zip"))
    if not found:
        with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-d",
                tmp,
            ]
            proc = subprocess.run([*cmd, f"{name}=={version}"], capture_output=True, text=True)
            files = list(Path(tmp).iterdir())
            if proc.returncode != 0 or len(files) != 1:
                raise TaskError(
                    f"cannot download the sdist of {name}=={version} from PyPI: {proc.stderr[-400:]}"
                )
            folder.mkdir(parents=True, exist_ok=True)
            os.replace(files[0], folder / files[0].name)
        found = [folder / files[0].name]
    if sha256 and sha256_file(found[0]) != sha256:
        raise TaskError(
            f"{found[0]}: sha256 {sha256_file(found[0])} != recipe's {sha256}; delete it to re-download"
        )
    return found[0]


def submodule_sources(
    repo_dir: Path, commit: str, repos_dir: Path | None
) -> tuple[tuple[str, str, str], ...]:
    """The git submodules of ``commit`` as ``(path, commit, local clone)``: each GitHub submodule whose clone
    :func:`repo_source` finds (in ``repos_dir``, else the cache or GitHub). Instance images then hold them checked
    out (astropy 3.x's ``astropy_helpers``, which its install would clone from GitHub); one without a clone is left
    as it was (an offline install that needs it fails, naming it)."""
    text = git(repo_dir, "show", f"{commit}:.gitmodules", check=False)
    if not text.strip():
        return ()
    config = subprocess.run(["git", "config", "-f", "-", "--get-regexp", r"^submodule\..*\.(path|url)$"],
                            input=text, capture_output=True, text=True, check=False).stdout  # fmt: skip
    entries: dict[str, dict[str, str]] = {}
    for line in config.splitlines():
        key, _, value = line.partition(" ")
        name, _, field = key[len("submodule.") :].rpartition(".")
        entries.setdefault(name, {})[field] = value.strip()
    out = []
    for entry in entries.values():
        match = re.match(
            r"^(?:https?://|git@|git://)github\.com[/:]([^/]+)/([^/]+?)(?:\.git)?/?$", entry.get("url", "")
        )
        listed = git(repo_dir, "ls-tree", commit, "--", entry.get("path", ""), check=False).split()
        if not match or len(listed) < 3 or listed[1] != "commit":
            continue
        try:
            source = repo_source(f"{match.group(1)}/{match.group(2)}", repos_dir)
        except TaskError:
            continue
        out.append((entry["path"], listed[2], str(source)))
    return tuple(sorted(out))


def extract_sdist(sdist: Path, dest: Path) -> Path:
    """Extract ``sdist`` into ``dest`` (replaced) with its top-level folder stripped; returns ``dest``."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp, tarfile.open(sdist) as tar:
        tar.extractall(tmp, filter="data")
        (top,) = list(Path(tmp).iterdir())
        os.replace(top, dest)
    return dest


def repo_source(repo: str, repos_dir: Path | None = None) -> Path:
    """A local clone of GitHub ``owner/name``: from ``repos_dir``, else the cache, else ``git clone`` from GitHub.

    In ``repos_dir`` (``--repos-dir``) the repository may be a normal clone or a bare mirror (``git clone
    --mirror``), or a symlink to either, named ``owner__name``, ``name``, ``owner/name``, ``owner+name`` or
    ``owner+name/repo`` (the last two: a mirror directory layout). Only ``base_commit`` must be in it; the tags
    are used, when present, for the version setuptools_scm-based repos report (see :func:`scm_version`).
    """
    owner, _, name = repo.partition("/")
    if repos_dir is not None:
        candidates = [f"{owner}__{name}", name, f"{owner}/{name}", f"{owner}+{name}", f"{owner}+{name}/repo"]
        for candidate in (repos_dir / c for c in candidates):
            if (candidate / ".git").exists() or (candidate / "HEAD").is_file():
                return candidate
        raise TaskError(
            f"no clone of {repo} in --repos-dir {repos_dir} (looked for {', '.join(candidates)}); "
            f"e.g. `git clone --mirror https://github.com/{repo} {repos_dir}/{owner}__{name}`"
        )
    cached = paths.cache_dir("repos") / f"{owner}__{name}"
    if not (cached / ".git").exists():
        tmp = cached.with_name(cached.name + f".tmp{os.getpid()}")
        proc = subprocess.run(
            ["git", "clone", "-q", f"https://github.com/{repo}", str(tmp)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise TaskError(
                f"cannot clone https://github.com/{repo}: {proc.stderr.strip()[-300:]}; offline, pass --repos-dir"
            )
        os.replace(tmp, cached)
    return cached


def scm_version(repo_dir: Path, commit: str) -> str | None:
    """A PEP 440 version for ``commit`` from the nearest tag (``git describe --tags``), or None without tags.

    Instance images hold ``base_commit`` alone (no tags), so setuptools_scm would report ``0.1.dev1`` and repos
    that check their own version (pytest's ``minversion``) fail; the image build pretends this version instead.
    ``5.4.0`` 593 commits later → ``5.4.0.post593``; ``7.2.0.dev0`` → ``7.2.0.dev157``; astropy's ``v5.1.dev``
    → ``5.1.dev623`` (as setuptools_scm makes it; ``5.1.dev.post623`` is no version and stopped the install).
    """
    described = git(repo_dir, "describe", "--tags", "--long", commit, check=False).strip()
    match = re.fullmatch(r"v?(\d[\w.]*?)-(\d+)-g[0-9a-f]+", described)
    if not match:
        return None
    tag, distance = match.group(1), int(match.group(2))
    if distance == 0:
        return tag
    if re.search(r"\.?dev\d*$", tag):
        return re.sub(r"\.?dev\d*$", f".dev{distance}", tag)
    return f"{tag}.post{distance}"
