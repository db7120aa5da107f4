"""Keeping a sandbox's two shells alive: the session (the policy's persistent bash) and the control shell.

With ``SandboxSpec.shell`` ``per-action`` the session only launches each command as a fresh bash
(``shell.per_action``), from the working directory and environment it noted at its start.

The control shell (``/``, builtins for killing) stops a timed-out or over-budget command's processes, replaces a
session the policy killed, and runs the diffs (``patching.py``). Either shell can die (``exit``, ``kill -9 -1``,
``pkill -9 bash``): it is replaced, and only a container that is really gone is ``ContainerDied``. Mixed into
:class:`~swe_srl.infra.sandbox.docker.DockerSandbox`, which provides ``_require_session``, ``_container_running``
and ``_death_report``.
"""

from __future__ import annotations

import shlex
import time
from typing import Any

from swe_srl.core.shells import PER_ACTION
from swe_srl.errors import ContainerDied, SandboxError, SandboxTimeout
from swe_srl.infra.sandbox.base import ExecResult, SandboxSpec
from swe_srl.infra.sandbox.shell import PRELUDE, Reply, Shell, ShellEOF, ShellExpired, per_action_setup

STARTUP_S = 30.0
KILL_GRACE_S = 2.0
CONTROL_S = 20.0


class ShellKeeper:
    """The session and control shells of one container (``self.container_id``)."""

    spec: SandboxSpec
    container_id: str | None
    exec_count: int
    _session: Shell | None
    _control: Shell | None
    _cwd: str
    _oom_seen: int
    _deadline: float
    _session_init: str
    _require_session: Any
    _container_running: Any
    _death_report: Any

    def _shell(self, workdir: str) -> Shell:
        assert self.container_id is not None
        self.exec_count += 1
        return Shell(self.container_id, workdir)

    def _restart_control(self, *, kill_others: bool = False) -> Shell:
        """A fresh control shell (the old one is dead or stuck); with ``kill_others`` everything but the session goes."""
        if self._control is not None:
            self._control.close()
        if self._session is not None and not self._container_running():
            raise ContainerDied(self._death_report("when its control shell ended"))
        self._control = self._shell("/")
        self._control.send(PRELUDE)
        try:
            reply = self._control.command("echo $$", 4096, time.monotonic() + STARTUP_S)
            self._control.pid = int(reply.data.decode().split()[-1])
            if kill_others:
                keep = str(self._session.pid) if self._session is not None and self._session.pid else ""
                self._control.command(f"__swesrl_kill {keep}", 4096, time.monotonic() + CONTROL_S)
        except (ShellEOF, ShellExpired, ValueError, IndexError):
            raise ContainerDied(
                self._death_report("while starting its control shell", self._control)
            ) from None
        return self._control

    def _control_command(self, text: str, limit: int, timeout: float) -> tuple[Shell, Reply]:
        """Run ``text`` in the control shell, replacing it once if the policy killed it; ``ShellExpired`` passes."""
        for attempt in (0, 1):
            control = self._control
            if control is None or control.proc.poll() is not None:
                control = self._restart_control()
            try:
                return control, control.command(text, limit, time.monotonic() + timeout)
            except ShellEOF:
                if attempt:
                    raise ContainerDied(
                        self._death_report("while using its control shell", control)
                    ) from None
                self._control = None
        raise AssertionError("unreachable")

    def _open_session(self, deadline: float) -> None:
        """A new session shell; the image's session init (official images: conda's ``testbed``) runs first, at top
        level as in SWE-bench's eval script, and its failure is the image's fault (``SandboxError``)."""
        self._session = session = self._shell(self.spec.workdir)
        init = (
            f"{{ {self._session_init}\n}} >/dev/null 2>&1; __swesrl_init=$?\n" if self._session_init else ""
        )
        session.send(PRELUDE + f"ulimit -f {max(1, self.spec.limits.disk_bytes // 1024)}\n" + init)
        if self.spec.shell == PER_ACTION:  # commands run as fresh bashes: the session's cwd never moves
            session.send(per_action_setup(self.spec.workdir))
        reply = session.command(
            f"cd {shlex.quote(self._cwd)} 2>/dev/null; echo ${{__swesrl_init:-0}} $$", 4096, deadline
        )
        status, pid = reply.data.decode().split()[-2:]
        session.pid = int(pid)
        if status != "0":
            raise SandboxError(
                f"the session init of {self.spec.image!r} ({self._session_init!r}) failed with exit code {status}"
            )

    def _note_oom(self, kills: int) -> bool:
        oom = kills > self._oom_seen
        self._oom_seen = max(self._oom_seen, kills)
        return oom

    def _stop(self, started: float, note: str, *, timed_out: bool = False, disk: bool = False) -> ExecResult:
        """Kill the running command's processes; keep the session if it answers, else restart it."""
        session = self._require_session()
        restarted = self._kill_processes(keep_session=True)
        if not restarted:
            try:
                reply = session.resume(time.monotonic() + KILL_GRACE_S)
                data, oom = reply.data, self._note_oom(reply.oom_kills)
                session.drain()  # output of the killed processes is not the next command's
            except (ShellExpired, ShellEOF):
                restarted = True
        if restarted:
            data = session.last[1].result(len(session.last[1].buf))[0]
            self._kill_processes(keep_session=False)
            oom = self._restart_session()
        text, truncated = data.decode("utf-8", errors="replace"), session.last[1].head is not None
        if timed_out and time.monotonic() >= self._deadline:
            raise SandboxTimeout(f"episode wall clock of {self.spec.limits.episode_timeout_s:g}s is spent")
        text += f"\n[swe-srl: {note}]"
        duration = time.monotonic() - started
        code = 124 if timed_out else 137
        return ExecResult(text, code, timed_out, truncated, duration, oom, restarted, disk)

    def _after_eof(self, started: float, session: Shell) -> ExecResult:
        """The session shell ended (``exit``, ``kill -9 $$``, ``kill -9 -1``, OOM): report it and start a fresh one."""
        data = session.last[1].result(len(session.last[1].buf))[0]
        code = session.proc.wait()
        oom = self._restart_session()
        text = (
            data.decode("utf-8", errors="replace")
            + "\n[swe-srl: the shell was killed or exited; a new session was started in the same directory]"
        )
        return ExecResult(text, code, False, False, time.monotonic() - started, oom, session_restarted=True)

    def kill_background(self) -> None:
        """Kill every process but the infrastructure and the (idle) session: what earlier commands left running."""
        session = self._require_session()
        self._control_command(f"__swesrl_kill {session.pid}", 4096, CONTROL_S)

    def _kill_processes(self, *, keep_session: bool) -> bool:
        """Kill every process but PID 1, the control shell (and the session); True when the session died too.

        When processes keep appearing (a fork bomb), ``kill -9 -1`` takes all but PID 1 and the control shell."""
        session = self._session if keep_session else None
        keep = str(session.pid) if session is not None and session.pid else ""
        abort = f"kill -USR1 {keep} 2>/dev/null; " if keep else ""
        script = (
            f"{abort}__swesrl_kill {keep} || {{ kill -9 -1 2>/dev/null; __swesrl_kill; echo __swesrl_all; }}"
        )
        try:
            _, reply = self._control_command(script, 4096, CONTROL_S)
        except ShellExpired:
            raise ContainerDied(self._death_report("while killing processes", self._control)) from None
        return keep != "" and b"__swesrl_all" in reply.data

    def _restart_session(self) -> bool:
        """Replace the session shell (cwd restored); True when the container's OOM counter moved."""
        if self._session is not None:
            self._session.close()
        if not self._container_running():
            raise ContainerDied(self._death_report("after its shell ended"))
        for attempt in (0, 1):
            try:
                self._open_session(time.monotonic() + STARTUP_S)
                break
            except (ShellEOF, ShellExpired, ValueError, IndexError):
                if attempt:
                    raise ContainerDied(
                        self._death_report("while restarting its shell", self._session)
                    ) from None
                self._kill_processes(keep_session=False)  # e.g. a fork bomb left behind holds every pid
        _, reply = self._control_command("__swesrl_oom; echo $__swesrl_o", 4096, CONTROL_S)
        return self._note_oom(int(reply.data.decode().split()[-1] or 0))
