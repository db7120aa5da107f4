"""The Docker backend: one container per episode (``sleep infinity`` under ``--init``), a persistent bash over a pipe.

Limits (memory+swap, CPUs, pids, network) come from ``spec.limits``. Each ``run()`` goes through the persistent
session (see ``shell.py``); a second "control" shell made of builtins only kills the command's processes on timeout,
even when a fork bomb holds every pid. On timeout every process except the infrastructure (init, ``sleep``, the two
shells) is SIGKILLed — background jobs of earlier commands included; if the session itself is stuck (a busy builtin
loop) it is killed too and a fresh one starts in the last cwd (``ExecResult.session_restarted``).

``diff()`` on a repo that was deleted (``rm -rf /testbed``) returns ``""``: there is nothing left to diff.
"""

from __future__ import annotations

import contextlib
import errno
import io
import posixpath
import shlex
import tarfile
import time
import uuid

import docker
import requests

from swe_srl.errors import ConfigError, ContainerDied, ImageNotFound, SandboxError, SandboxTimeout
from swe_srl.infra.engine import docker_client
from swe_srl.infra.sandbox import janitor
from swe_srl.infra.sandbox.base import ExecResult, SandboxSpec, truncate_output
from swe_srl.infra.sandbox.session import PRELUDE, Shell, ShellEOF, ShellExpired
from swe_srl.infra.sandbox.slots import start_slot

DEFAULT_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "TERM": "dumb",
    "PIP_PROGRESS_BAR": "off",
}
STARTUP_S = 30.0
KILL_GRACE_S = 2.0
MIN_MEMORY = 8 << 20


class DockerSandbox:
    """A sandbox in a fresh container of ``spec.image``; ``start()`` (or ``with``) creates it, ``close()`` removes it."""

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self.container_id: str | None = None
        self._container = None
        self._session: Shell | None = None
        self._control: Shell | None = None
        self._infra_pids: list[str] = []
        self._cwd = spec.workdir
        self._oom_seen = 0
        self._deadline = float("inf")
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> DockerSandbox:
        if self._closed:
            raise SandboxError("this sandbox was closed; create a new DockerSandbox")
        if self._container is not None:
            return self
        limits = self.spec.limits
        if limits.memory_bytes < MIN_MEMORY:
            raise ConfigError(f"Limits.memory={limits.memory!r}: Docker needs at least 8m; use e.g. '512m'")
        client = docker_client()
        try:
            client.images.get(self.spec.image)
        except docker.errors.ImageNotFound:
            raise ImageNotFound(
                f"image {self.spec.image!r} does not exist locally; build it (`swe-srl setup` for base images, "
                "`swe-srl images build` / swe_srl.infra.images.ensure_instance_image for task images)"
            ) from None
        try:
            with start_slot():  # back-pressure: $SWE_SRL_MAX_STARTS container starts per node (executor.py)
                self._container = client.containers.run(
                    self.spec.image,
                    ["sleep", "infinity"],
                    name=f"swe-srl-{uuid.uuid4().hex[:12]}",
                    detach=True,
                    init=True,
                    labels={**self.spec.labels, **janitor.container_labels(self.spec.run_id)},
                    mem_limit=limits.memory_bytes,
                    memswap_limit=limits.memory_bytes,
                    nano_cpus=int(limits.cpus * 1e9),
                    pids_limit=limits.pids,
                    network_mode="bridge" if limits.network else "none",
                    working_dir=self.spec.workdir,
                    environment={**DEFAULT_ENV, **self.spec.env},
                )
        except docker.errors.APIError as exc:
            if exc.status_code == 400:
                raise ConfigError(
                    f"Docker rejected the limits {limits}: {exc.explanation}; fix the Limits"
                ) from None
            raise SandboxError(f"could not start a container of {self.spec.image!r}: {exc}") from None
        self.container_id = self._container.id
        janitor.register(self)
        try:
            self._start_shells()
        except BaseException:
            self.close()
            raise
        self.restart_clock()
        return self

    def _start_shells(self) -> None:
        assert self.container_id is not None
        self._control = Shell(self.container_id, "/")
        self._session = Shell(self.container_id, self.spec.workdir)
        deadline = time.monotonic() + STARTUP_S
        self._control.send(PRELUDE)
        find_sleep = (
            'for __i in $(seq 100); do for __d in /proc/[0-9]*; do read -r __c < "$__d/comm"; '
            '[ "$__c" = sleep ] && __s="${__d#/proc/}"; done; [ -n "$__s" ] && break; sleep 0.05; done; echo "$$ $__s"'
        )
        try:
            self._infra_pids = self._control.command(find_sleep, 4096, deadline).data.decode().split()
            self._control.pid = int(self._infra_pids[0])
            self._open_session(deadline)
        except (ShellEOF, ShellExpired):
            raise ContainerDied(self._death_report("while starting its shells")) from None

    def _open_session(self, deadline: float) -> None:
        assert self._session is not None
        self._session.send(PRELUDE)
        reply = self._session.command(f"cd {shlex.quote(self._cwd)} 2>/dev/null; echo $$", 4096, deadline)
        self._session.pid = int(reply.data.decode().split()[-1])

    def alive(self) -> bool:
        """True when started, not closed, and the session shell is still running (no engine round trip)."""
        session = self._session
        return not self._closed and session is not None and session.proc.poll() is None

    def restart_clock(self) -> None:
        """Start the episode's wall clock now (a warm pool calls this when it hands a sandbox out)."""
        self._deadline = time.monotonic() + self.spec.limits.episode_timeout_s

    def close(self) -> None:
        """Remove the container and its shells. Idempotent; never raises for an engine that is already gone."""
        if self._closed:
            return
        self._closed = True
        janitor.unregister(self)
        for shell in (self._session, self._control):
            if shell is not None:
                shell.close()
        if self._container is not None:
            # Already gone, or the engine is down: the janitor reaps it later.
            with contextlib.suppress(docker.errors.DockerException, requests.RequestException):
                self._container.remove(force=True)

    def __enter__(self) -> DockerSandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- commands --------------------------------------------------------------------------------------------
    def run(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run ``command`` in the persistent session; failures and timeouts are results, not exceptions."""
        session = self._require_session()
        limits = self.spec.limits
        started = time.monotonic()
        if started >= self._deadline:
            raise SandboxTimeout(
                f"episode wall clock of {limits.episode_timeout_s:g}s is spent; reset the episode"
            )
        wanted = limits.command_timeout_s if timeout is None else timeout
        deadline = min(started + wanted, self._deadline)
        try:
            reply = session.command(command, limits.output_limit_bytes, deadline)
        except ShellExpired:
            return self._after_timeout(started, wanted)
        except ShellEOF:
            return self._after_eof(started, session)
        oom = self._note_oom(reply.oom_kills)
        self._cwd = reply.cwd
        text = reply.data.decode("utf-8", errors="replace")
        return ExecResult(text, reply.exit_code, False, reply.truncated, time.monotonic() - started, oom)

    def _require_session(self) -> Shell:
        if self._closed:
            raise SandboxError("this sandbox is closed; create a new DockerSandbox")
        if self._session is None:
            raise SandboxError("the sandbox is not started; call start() or use it as a context manager")
        return self._session

    def _note_oom(self, kills: int) -> bool:
        oom = kills > self._oom_seen
        self._oom_seen = max(self._oom_seen, kills)
        return oom

    def _after_timeout(self, started: float, wanted: float) -> ExecResult:
        """Kill the command's processes; keep the session if it answers, else restart it."""
        session = self._require_session()
        self._kill_processes(keep_session=True)
        restarted = False
        try:
            reply = session.resume(time.monotonic() + KILL_GRACE_S)
            data, oom = reply.data, self._note_oom(reply.oom_kills)
        except (ShellExpired, ShellEOF):
            data = session.last[1].result(len(session.last[1].buf))[0]
            self._kill_processes(keep_session=False)
            oom = self._restart_session()
            restarted = True
        text, truncated = data.decode("utf-8", errors="replace"), session.last[1].head is not None
        if time.monotonic() >= self._deadline:
            raise SandboxTimeout(f"episode wall clock of {self.spec.limits.episode_timeout_s:g}s is spent")
        text += f"\n[swe-srl: command timed out after {wanted:g}s and was killed]"
        duration = time.monotonic() - started
        return ExecResult(text, 124, True, truncated, duration, oom, session_restarted=restarted)

    def _after_eof(self, started: float, session: Shell) -> ExecResult:
        """The session shell ended (``exit``, ``kill -9 $$``, OOM): report it and start a fresh one."""
        data = session.last[1].result(len(session.last[1].buf))[0]
        code = session.proc.wait()
        oom = self._restart_session()
        text = (
            data.decode("utf-8", errors="replace")
            + "\n[swe-srl: the shell exited; a new session was started]"
        )
        return ExecResult(text, code, False, False, time.monotonic() - started, oom, session_restarted=True)

    def _kill_processes(self, *, keep_session: bool) -> None:
        keep = list(self._infra_pids)
        if keep_session and self._session is not None and self._session.pid:
            keep.append(str(self._session.pid))
        try:
            assert self._control is not None
            abort = f"kill -USR1 {self._session.pid} 2>/dev/null; " if keep_session and self._session else ""
            self._control.command(f"{abort}__swesrl_kill {' '.join(keep)}", 4096, time.monotonic() + 10)
        except (ShellEOF, ShellExpired, AssertionError):
            raise ContainerDied(self._death_report("while killing a timed-out command")) from None

    def _restart_session(self) -> bool:
        """Replace the session shell (cwd restored); True when the container's OOM counter moved."""
        assert self.container_id is not None and self._control is not None
        if self._session is not None:
            self._session.close()
        if not self._container_running():
            raise ContainerDied(self._death_report("after its shell ended"))
        self._session = Shell(self.container_id, self.spec.workdir)
        try:
            self._open_session(time.monotonic() + STARTUP_S)
            oom = self._control.command("__swesrl_oom; echo $__swesrl_o", 4096, time.monotonic() + 10)
        except (ShellEOF, ShellExpired):
            raise ContainerDied(self._death_report("while restarting its shell")) from None
        return self._note_oom(int(oom.data.decode().split()[-1] or 0))

    def _container_running(self) -> bool:
        try:
            self._container.reload()  # type: ignore[union-attr]
        except docker.errors.NotFound:
            return False
        return self._container.status == "running"  # type: ignore[union-attr]

    def _death_report(self, when: str) -> str:
        try:
            self._container.reload()  # type: ignore[union-attr]
            state = self._container.attrs["State"]  # type: ignore[union-attr]
            what = f"is {state['Status']} (exit code {state['ExitCode']}, OOMKilled={state['OOMKilled']})"
        except docker.errors.NotFound:
            what = "was removed"
        return f"container {self.container_id} of {self.spec.image!r} {what} {when}; start a new sandbox"

    # -- files and the repo ----------------------------------------------------------------------------------
    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.spec.workdir, path))

    def exec(self, script: str, *, workdir: str | None = None) -> tuple[int, bytes, bytes]:
        """Run ``bash -c script`` in a separate ``docker exec`` (not the session; output not capped)."""
        if self._container is None or self._closed:
            raise SandboxError("the sandbox is not running; call start() first")
        try:
            code, (out, err) = self._container.exec_run(
                ["bash", "-c", script], workdir=workdir or "/", demux=True
            )
        except docker.errors.APIError as exc:
            if not self._container_running():
                raise ContainerDied(self._death_report("during an exec")) from None
            raise SandboxError(f"docker exec in {self.container_id} failed: {exc}") from None
        return code, out or b"", err or b""

    def read_file(self, path: str, _depth: int = 0) -> bytes:
        """The bytes of ``path`` (relative to the workdir); ``FileNotFoundError`` when missing."""
        full = self._abs(path)
        try:
            stream, _ = self._container.get_archive(full)  # type: ignore[union-attr]
        except docker.errors.NotFound:
            if not self._container_running():
                raise ContainerDied(self._death_report("during read_file")) from None
            raise FileNotFoundError(errno.ENOENT, "no such file in the sandbox", full) from None
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            if member is None or member.isdir():
                raise IsADirectoryError(errno.EISDIR, "is a directory", full)
            if member.issym() and _depth < 8:
                return self.read_file(posixpath.join(posixpath.dirname(full), member.linkname), _depth + 1)
            handle = tar.extractfile(member)
            return handle.read() if handle else b""

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Write ``data`` to ``path`` (parents created), binary-safe."""
        full = self._abs(path)
        payload = data.encode("utf-8") if isinstance(data, str) else data
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(posixpath.basename(full))
            info.size, info.mode, info.mtime = len(payload), mode, int(time.time())
            tar.addfile(info, io.BytesIO(payload))
        parent = posixpath.dirname(full)
        try:
            self._container.put_archive(parent, buf.getvalue())  # type: ignore[union-attr]
        except docker.errors.NotFound:
            code, _, err = self.exec(f"mkdir -p {shlex.quote(parent)}")
            if code != 0:
                raise SandboxError(
                    f"cannot create {parent!r} in the sandbox: {err.decode(errors='replace')}"
                ) from None
            self._container.put_archive(parent, buf.getvalue())  # type: ignore[union-attr]

    def diff(self) -> str:
        """``git diff --binary`` of the worktree (untracked files included) vs ``spec.base_commit`` (HEAD if None).

        Uses a temporary index (``GIT_INDEX_FILE``) so the repo's own index is untouched. ``""`` when the repo is gone.
        """
        base = shlex.quote(self.spec.base_commit or "HEAD")
        script = (
            '[ -d .git ] || exit 3; t=$(mktemp); trap \'rm -f "$t"\' EXIT; cp -p .git/index "$t" 2>/dev/null; '
            f'export GIT_INDEX_FILE="$t"; git add -A >&2 && git diff --cached --binary {base}'
        )
        code, out, err = self.exec(f"cd {shlex.quote(self.spec.workdir)} 2>/dev/null || exit 3; {script}")
        if code == 3:
            return ""
        if code != 0:
            raise SandboxError(
                f"diff() in {self.spec.workdir} failed ({code}): {err.decode(errors='replace')[-800:]}"
            )
        return out.decode("utf-8", errors="replace")

    def apply_patch(self, patch: str) -> ExecResult:
        """Apply ``patch`` in the workdir: ``git apply``, falling back to ``patch --fuzz``; exit 0 when applied."""
        started = time.monotonic()
        name = f"/tmp/swe-srl-{uuid.uuid4().hex[:8]}.patch"
        self.write_file(name, patch if patch.endswith("\n") else patch + "\n")
        script = (
            f"git apply --verbose {name} 2>&1 || {{ patch --batch --fuzz=5 -p1 --dry-run -i {name} >/dev/null 2>&1 "
            f"&& patch --batch --fuzz=5 -p1 -i {name} 2>&1; }}; rc=$?; rm -f {name}; exit $rc"
        )
        code, out, err = self.exec(script, workdir=self.spec.workdir)
        text, truncated = truncate_output(out + err, self.spec.limits.output_limit_bytes)
        return ExecResult(text, code, truncated=truncated, duration_s=time.monotonic() - started)
