"""The Docker backend: one container per episode, a persistent bash over a pipe, a control shell beside it.

PID 1 of the container is bash reading its stdin until EOF (``tether.py``, no ``--init``): the kernel never
delivers a signal from inside the container to PID 1, so ``kill -9 -1`` or ``pkill -9 bash`` cannot stop the
container, and it reaps orphans. Limits (memory+swap, CPUs, pids, network) come from ``spec.limits``; the disk budget
(``Limits.disk``) is a file-size rlimit in the session plus polling of the writable layer's size while a command
runs. Each ``run()`` goes through the persistent session (see ``shell.py``); the "control" shell, made of builtins
for killing, stops the command's processes on timeout even when a fork bomb holds every pid (all non-infrastructure
processes, background jobs included; when they keep forking, everything but PID 1 and the control shell). A session
or control shell that dies (``exit``, ``kill -9 -1``, a timeout kill) is replaced (``ExecResult.session_restarted``);
only a container that is really gone is ``ContainerDied``.

``diff()`` / ``patch()`` run in the control shell (``patching.py`` through ``control_script``): no ``docker exec``.
``exec_count`` counts every ``docker exec`` this sandbox made (shell starts included). ``diff()`` on a deleted workdir
(``rm -rf /testbed``) returns ``""``: there is nothing left to diff. A repo that cannot be diffed in place (``.git``
deleted or re-initialised) is diffed against a pristine copy: a fresh container of the image.

The container ends with this process, however it dies (SIGKILL included): PID 1's stdin is a socket only this
process holds, and the container is auto-removed (``tether.py``).
"""

from __future__ import annotations

import contextlib
import time
import uuid

import docker
import requests

from swe_srl.core.shells import PER_ACTION
from swe_srl.errors import ConfigError, ImageNotFound, SandboxError, SandboxTimeout
from swe_srl.infra.engine import docker_client, engine_cpus, engine_name
from swe_srl.infra.executables import session_init
from swe_srl.infra.sandbox import enforcement, janitor, owner_watch
from swe_srl.infra.sandbox.base import ExecResult, Patch, SandboxSpec
from swe_srl.infra.sandbox.files import ContainerFiles
from swe_srl.infra.sandbox.patching import PRISTINE_DIR, RepoBroken, diff_in
from swe_srl.infra.sandbox.shell import Reply, Shell, ShellEOF, ShellExpired, ShellStopped, per_action
from swe_srl.infra.sandbox.shell_keeper import STARTUP_S, ShellKeeper
from swe_srl.infra.sandbox.start_limit import start_permit
from swe_srl.infra.sandbox.tether import release, run_tethered

DEFAULT_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "TERM": "dumb",
    "PIP_PROGRESS_BAR": "off",
}
MIN_MEMORY = 8 << 20
DISK_CHECK_S = 0.5
PIDS_FULL = 0.9
"""Share of ``Limits.pids`` in use after a command at which the background processes are killed."""
"""A command that ran at least this long has the writable layer's size checked once more when it ends."""


class DockerSandbox(ShellKeeper, ContainerFiles):
    """A sandbox in a fresh container of ``spec.image``; ``start()`` (or ``with``) creates it, ``close()`` removes it."""

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self.container_id: str | None = None
        self.exec_count = 0
        """``docker exec`` calls made so far (each shell start is one; commands and diffs are none)."""
        self._container = None
        self._stdin = None
        self._session: Shell | None = None
        self._control: Shell | None = None
        self._cwd = spec.workdir
        self._oom_seen = 0
        self._deadline = float("inf")
        self._closed = False
        self._session_init = ""
        """The image's session init (``executables.SESSION_INIT_LABEL``), run first in every session shell."""

    @property
    def container(self):
        """The docker-py container (started sandboxes only)."""
        if self._container is None:
            raise SandboxError("the sandbox is not started; call start() or use it as a context manager")
        return self._container

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
        if limits.cpus > (cpus := engine_cpus()):  # Podman would accept it and give what the host has
            raise ConfigError(
                f"Limits.cpus={limits.cpus:g}: the engine's host has {cpus} CPUs; use at most {cpus}"
            )
        unenforced = enforcement.require_enforced()  # once per process: refused unless allowed
        if engine_name() == "podman":  # Podman leaves a dead owner's containers: a watcher removes them
            owner_watch.ensure_watcher()
        try:
            self._session_init = session_init(client.images.get(self.spec.image).labels)
        except docker.errors.ImageNotFound:
            raise ImageNotFound(
                f"image {self.spec.image!r} does not exist locally; build it (`swe-srl setup` for base images, "
                "`swe-srl images build` / swe_srl.infra.images.ensure_instance_image for task images)"
            ) from None
        try:
            with start_permit():  # back-pressure: $SWE_SRL_MAX_STARTS container starts per node (executor.py)
                self._container, self._stdin = run_tethered(
                    client,
                    self.spec.image,
                    entrypoint=[],
                    name=f"swe-srl-{uuid.uuid4().hex[:12]}",
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
            self._restart_control()
            self._open_session(time.monotonic() + STARTUP_S)
            if not unenforced:
                enforcement.check_inside(self, limits)
        except BaseException:
            self.close()
            raise
        self.restart_clock()
        return self

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
        release(self._stdin)  # after the removal: close() returns with the container gone

    def __enter__(self) -> DockerSandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- commands --------------------------------------------------------------------------------------------
    def run(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run ``command`` in the persistent session (``spec.shell`` ``per-action``: as a fresh bash launched from
        it); failures, timeouts and a killed shell are results."""
        session = self._require_session()
        if self.spec.shell == PER_ACTION:
            command = per_action(command)
        limits = self.spec.limits
        started = time.monotonic()
        if started >= self._deadline:
            raise SandboxTimeout(
                f"episode wall clock of {limits.episode_timeout_s:g}s is spent; reset the episode"
            )
        wanted = limits.command_timeout_s if timeout is None else timeout
        deadline = min(started + wanted, self._deadline)
        try:
            reply = session.command(command, limits.output_limit_bytes, deadline, watch=self._disk_over)
        except ShellExpired:
            return self._stop(started, f"command timed out after {wanted:g}s and was killed", timed_out=True)
        except ShellStopped as stop:
            return self._stop(started, f"the command was stopped: {stop.args[0]}", disk=True)
        except ShellEOF:
            return self._after_eof(started, session)
        oom = self._note_oom(reply.oom_kills)
        self._cwd = reply.cwd
        text = reply.data.decode("utf-8", errors="replace")
        duration = time.monotonic() - started
        over = self._disk_over() if duration >= DISK_CHECK_S else None
        if over:
            text += f"\n[swe-srl: {over}]"
        if reply.pids >= PIDS_FULL * limits.pids:  # e.g. a fork bomb left running in the background
            self.kill_background()
            text += f"\n[swe-srl: the sandbox was at its process limit ({limits.pids}); background processes were killed]"
        return ExecResult(
            text, reply.exit_code, False, reply.truncated, duration, oom, disk_exceeded=bool(over)
        )

    def disk_used(self) -> int | None:
        """Bytes in the container's writable layer (an engine call that walks the layer; None if unknown)."""
        try:
            api = self.container.client.api
            info = api._result(
                api._get(api._url("/containers/{0}/json", self.container_id), params={"size": 1}), True
            )
        except (docker.errors.DockerException, requests.RequestException):
            return None
        return info.get("SizeRw")

    def _disk_over(self) -> str | None:
        used, disk = self.disk_used(), self.spec.limits.disk
        if used is None or used <= self.spec.limits.disk_bytes:
            return None
        return f"the sandbox's disk budget of {disk} is exceeded ({used / 2**20:.0f} MiB written); delete files to go on"

    def _require_session(self) -> Shell:
        if self._closed:
            raise SandboxError("this sandbox is closed; create a new DockerSandbox")
        if self._session is None:
            raise SandboxError("the sandbox is not started; call start() or use it as a context manager")
        return self._session

    def _container_running(self) -> bool:
        try:
            self._container.reload()  # type: ignore[union-attr]
        except docker.errors.NotFound:
            return False
        return self._container.status == "running"  # type: ignore[union-attr]

    def _death_report(self, when: str, shell: Shell | None = None) -> str:
        try:
            self._container.reload()  # type: ignore[union-attr]
            state = self._container.attrs["State"]  # type: ignore[union-attr]
        except docker.errors.NotFound:
            return f"container {self.container_id} of {self.spec.image!r} was removed {when}; start a new sandbox"
        except (docker.errors.DockerException, requests.RequestException) as exc:
            return f"the Docker engine did not answer about container {self.container_id} {when}: {exc}"
        if state["Status"] != "running":
            what = f"is {state['Status']} (exit code {state['ExitCode']}, OOMKilled={state['OOMKilled']})"
            return f"container {self.container_id} of {self.spec.image!r} {what} {when}; start a new sandbox"
        why = shell.stderr_tail() if shell is not None else ""
        return (
            f"container {self.container_id} of {self.spec.image!r} is running but a shell in it failed {when}"
            + (f": {why}" if why else " (no error from docker exec)")
        )

    # -- the repo --------------------------------------------------------------------------------------------
    def diff(self) -> str:
        """``git diff --binary`` of the worktree (untracked files included) vs ``spec.base_commit`` (HEAD if None).

        Binary-safe and complete (expert state snapshots restore from it). ``""`` when the workdir is gone."""
        return self._diff(binary=True).text

    def patch(self) -> Patch:
        """The graded text patch: binary files and files over ``Limits.patch_file_bytes`` left out (noted)."""
        return self._diff(binary=False)

    def control_script(self, script: str, limit: int, timeout: float) -> Reply | None:
        """Run ``script`` in the control shell (the diffs); None when it ran past ``timeout``: then every process
        but the session is killed and the control shell replaced."""
        try:
            return self._control_command(script, limit, timeout)[1]
        except ShellExpired:
            self._restart_control(kill_others=True)
            return None

    def _diff(self, *, binary: bool) -> Patch:
        workdir = self.spec.workdir.rstrip("/") or "/"
        try:
            return diff_in(self, workdir, f"{workdir}/.git", binary=binary)
        except RepoBroken:
            return self._pristine_diff(workdir, binary=binary)

    def _pristine_diff(self, workdir: str, *, binary: bool) -> Patch:
        """The diff of the worktree against a fresh container of the image (its ``.git`` at the base, untouched)."""
        with DockerSandbox(self.spec) as helper:
            helper.run(f"mkdir -p {PRISTINE_DIR}")
            stream, _ = self.container.get_archive(workdir)
            helper.container.put_archive(PRISTINE_DIR, stream)
            tree = f"{PRISTINE_DIR}/{workdir.rsplit('/', 1)[-1]}"
            patch = diff_in(helper, tree, f"{workdir}/.git", binary=binary, pristine=True)
        return Patch(patch.text, patch.left_out, pristine=True)
