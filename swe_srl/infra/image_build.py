"""Build plumbing shared by the image layers: a docker build of a generated context, logged commands, file locks."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import docker
from rich.console import Console

from swe_srl import paths
from swe_srl.errors import ImageBuildError
from swe_srl.infra import podman_build
from swe_srl.infra.engine import docker_client, image_exists
from swe_srl.infra.orphan_guard import guarded
from swe_srl.infra.sandbox.janitor import OWNER, OWNER_LABEL, container_labels

LOG_TAIL_LINES = 40
GUARD_STOP_S = 30.0


@contextmanager
def file_lock(tag: str) -> Iterator[None]:
    """Serialize builds of one tag across processes (another builder's result is then reused)."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in tag)
    with open(paths.cache_dir("locks") / f"{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_logged(
    cmd: list[str],
    what: str,
    console: Console | None,
    stdin: IO[bytes] | None = None,
    cleanup: Path | None = None,
    *,
    log: Path | None = None,
    env: dict[str, str] | None = None,
    reap_build: str | None = None,
) -> None:
    """Run ``cmd`` showing its last output line as progress; ``ImageBuildError`` with the log tail on failure.

    ``cmd`` runs under :mod:`orphan_guard`: it and everything it started end with this process, SIGKILL included,
    and the guard then removes ``cleanup`` (what only this process would have removed) and the working containers
    of the Podman build marked ``reap_build``. ``log``: where the whole output goes (default: named after
    ``what``); ``env``: the command's environment."""
    console = console or Console(stderr=True)
    tail: collections.deque[str] = collections.deque(maxlen=LOG_TAIL_LINES)
    log = log or (
        paths.cache_dir("logs")
        / f"{what.split()[0]}-{what.split()[-1].replace('/', '_').replace(':', '_')}.log"
    )
    with console.status(what) as status, open(log, "w") as out:
        proc = subprocess.Popen(guarded(cmd, cleanup, reap_build), stdin=stdin, stdout=subprocess.PIPE, env=env,
                                stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)  # fmt: skip
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                out.write(line)
                tail.append(line.rstrip())
                status.update(f"{what}: {line.strip()[:100]}")
            code = proc.wait()
        except BaseException:  # Ctrl-C, SIGTERM: the command and everything it started end with the run
            _end_group(proc)
            raise
    if code != 0:
        body = "\n".join(tail)
        raise ImageBuildError(f"{what} failed with exit code {code} (full log: {log}); last lines:\n{body}")


def _end_group(proc: subprocess.Popen) -> None:
    """Stop the guard (its own session): SIGTERM, up to :data:`GUARD_STOP_S` for it to end what it runs and
    remove what that left, then SIGKILL."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=GUARD_STOP_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def build_context(
    tag: str,
    dockerfile: str,
    files: dict[str, bytes],
    console: Console | None,
    *,
    context: Path | None = None,
) -> None:
    """The engine's build of ``dockerfile`` + ``files`` (written into ``context`` or a temp dir) tagged ``tag``:
    through Docker's API, or by the local ``podman build`` where it shares the Podman service's storage."""
    if context is None:
        with tempfile.TemporaryDirectory(prefix="swe-srl-build-") as tmp:
            build_context(tag, dockerfile, files, console, context=Path(tmp))
        return
    for name, data in files.items():
        (context / name).parent.mkdir(parents=True, exist_ok=True)
        (context / name).write_bytes(data)
    text, local_podman = run_labelled(dockerfile), podman_build.local_store() is not None
    if local_podman:  # Podman pulls a short name only through a search list
        text = podman_build.qualify_from(text, image_exists)
    (context / "Dockerfile").write_text(text)
    if local_podman:
        _podman_build(tag, context, console or Console(stderr=True))
    else:
        _docker_build(tag, context, console or Console(stderr=True))


def build_log_path(tag: str) -> Path:
    """Where the whole log of a failed ``docker build`` of ``tag`` is kept (the error names it)."""
    return paths.cache_dir("logs") / f"build-{tag.replace('/', '_').replace(':', '_')}.log"


def run_labelled(dockerfile: str) -> str:
    """``dockerfile`` whose step containers carry this run's labels (``swe-srl.run-id``, ``swe-srl.pid``...), like
    the sandboxes, so the janitor and a stopped run's checks see them: a ``LABEL`` after each ``FROM`` (the engine's
    step containers take the labels of the image so far), cleared again at the end so the image holds no run's."""
    labels = container_labels()
    own = "LABEL " + " ".join(f'"{key}"="{value}"' for key, value in labels.items())
    clear = "LABEL " + " ".join(f'"{key}"=""' for key in labels if key != OWNER_LABEL)
    lines = [line for text in dockerfile.splitlines() for line in ([text, own] if _is_from(text) else [text])]
    return "\n".join([*lines, clear]) + "\n"


def _is_from(line: str) -> bool:
    return line.strip().upper().startswith("FROM ")


def _docker_build(tag: str, context: Path, console: Console) -> None:
    """The engine's build of ``context`` through its API. Docker cancels the build and removes its step container
    (``forcerm``) when this process's connection closes, so an interrupted or killed run (SIGKILL included)
    leaves no build container behind (a Podman service does not: :func:`_podman_build`)."""
    tail: collections.deque[str] = collections.deque(maxlen=LOG_TAIL_LINES)
    api = docker_client().api
    error = None
    log = build_log_path(tag)
    with console.status(f"building {tag}") as status, open(log, "w", encoding="utf-8") as out:
        try:
            stream = api.build(
                path=str(context),
                tag=tag,
                rm=True,
                forcerm=True,
                decode=True,
                labels={OWNER_LABEL: OWNER},
            )
            for chunk in stream:
                text = str(chunk.get("stream") or chunk.get("status") or "").rstrip()
                if "error" in chunk:
                    error = str(chunk["error"]).strip()
                    tail.append(error)
                    out.write(error + "\n")
                for line in text.splitlines():
                    tail.append(line)
                    out.write(line + "\n")
                    status.update(f"building {tag}: {line.strip()[:100]}")
        except docker.errors.APIError as exc:
            error = str(exc)
    if error:
        body = "\n".join(tail)
        raise ImageBuildError(f"building {tag} failed: {error}; full build log: {log}; last lines:\n{body}")
    log.unlink(missing_ok=True)  # built: the image is the record
    console.print(f"[green]built[/] {tag}")


def _podman_build(tag: str, context: Path, console: Console) -> None:
    """Podman's build of ``context`` by the local ``podman build`` (:mod:`podman_build`): under the guard it ends
    with this process, SIGKILL included, and its working containers are removed."""
    token = uuid.uuid4().hex
    cmd = podman_build.build_command(tag, context, {OWNER_LABEL: OWNER}, container_labels(), token)
    log = build_log_path(tag)
    run_logged(cmd, f"building {tag}", console, log=log, env=podman_build.cli_env(), reap_build=token)
    log.unlink(missing_ok=True)  # built: the image is the record
    console.print(f"[green]built[/] {tag}")


def init_submodule(dest: Path, path: str) -> None:
    """Register the submodule at ``path`` (already checked out) in ``dest``'s config, as ``git submodule init``
    does: ``git submodule status`` then shows it up to date, so installs that check it (astropy's
    ``ah_bootstrap``) do not clone it again."""
    proc = subprocess.run(["git", "-C", str(dest), "submodule", "init", "--", path], capture_output=True,
                          text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise ImageBuildError(f"git submodule init {path} in {dest} failed: {proc.stderr.strip()[-500:]}")


def checkout_base_commit(repo_dir: Path, commit: str, dest: Path) -> None:
    """``dest`` = a new repo holding only ``commit`` of ``repo_dir`` on branch ``main``, no remotes or other refs."""
    if not (repo_dir / ".git").exists() and not (repo_dir / "HEAD").exists():
        raise ImageBuildError(
            f"repo_dir {str(repo_dir)!r} is not a git repository; clone the task's repo there"
        )
    steps = [
        ["git", "init", "-q", "-b", "main", str(dest)],
        ["git", "-C", str(dest), "fetch", "-q", "--depth", "1", f"file://{repo_dir.resolve()}", commit],
        ["git", "-C", str(dest), "checkout", "-q", "-B", "main", "FETCH_HEAD"],
        ["git", "-C", str(dest), "reflog", "expire", "--expire=now", "--all"],
    ]
    for step in steps:
        proc = subprocess.run(step, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ImageBuildError(
                f"checking out {commit!r} of {str(repo_dir)!r} failed ({' '.join(step[:4])}...): "
                f"{proc.stderr.strip()[-800:]}; check that the commit exists in that repo"
            )
    (dest / ".git" / "FETCH_HEAD").unlink(missing_ok=True)
