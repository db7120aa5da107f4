"""A persistent bash process inside a container, spoken to over a pipe (``docker exec -i CID bash``; Podman:
``podman --remote exec``, see ``engine.engine_cli``).

A command is sent as one line: ``__swesrl_run $'<command>' </dev/null 2>&1`` (a function that ``eval``s it, so
a ``USR1`` trap doing ``return 124`` can abort the rest of a timed-out command) followed by a ``printf`` of a
sentinel unique to the session and the command (``__SWESRL_<token>_<n>__ <exit code> <oom kills> <pids> <cwd>``). The output is read
incrementally: at most ``limit`` bytes are kept (head + tail, cut in the middle), so megabytes of output cost no
memory. Caveat of the function: a top-level ``declare``/``typeset`` is local to the command (use ``export`` or plain
assignments, which persist). Stdin of every command is /dev/null, so ``python``, ``cat``, ``less`` and ``vi`` see EOF instead of waiting.
"""

from __future__ import annotations

import os
import re
import select
import shlex
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from swe_srl.infra.engine import engine_cli
from swe_srl.infra.sandbox.base import TRUNCATION_MARKER

Watch = Callable[[], "str | None"]
WATCH_S, WATCH_MAX_S = 1.0, 8.0
"""A running command's watch (the disk budget) is asked after 1 s, then at doubling intervals up to 8 s."""
WINDOW = 8192
"""Bytes kept beyond the tail half so a sentinel line (with a long cwd) is always found whole."""

# Shell functions defined in every session/control shell. Builtins only: they must work when the pids limit is hit.
# __swesrl_kill PID...: SIGKILL every process but PID 1, this shell and PID...; rounds until no new process shows up
# (a dying process is counted once), status 1 when new ones keep appearing after 30 rounds (a fork bomb).
PRELUDE = r"""
__swesrl_oom() { __swesrl_o=0; local k v f; for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do [ -r "$f" ] || continue; while read -r k v; do [ "$k" = oom_kill ] && __swesrl_o=$v; done < "$f"; break; done; }
for __swesrl_e in vi vim view nano emacs pico joe mcedit; do eval "$__swesrl_e() { echo \"swe-srl: '$__swesrl_e' is a full-screen editor and cannot run without a terminal; edit files with sed, a heredoc, python or str_replace_editor\" >&2; return 1; }"; done
__swesrl_pids() { __swesrl_n=0; local f; for f in /sys/fs/cgroup/pids.current /sys/fs/cgroup/pids/pids.current; do [ -r "$f" ] && { read -r __swesrl_n < "$f"; return; }; done; }
trap 'return 124' USR1
__swesrl_run() { eval "$1"; }
__swesrl_kill() { local keep=" 1 $$ $* " seen=" " d p i n c st pp; for ((i = 0; i < 30; i++)); do n=0; for d in /proc/[0-9]*; do p=${d#/proc/}; case "$keep" in *" $p "*) continue;; esac; read -r _ c st pp _ < "$d/stat" 2>/dev/null || continue; { [ "$st" = Z ] || { [ "$pp" = 1 ] && [ "$c" = "(sleep)" ]; }; } && continue; kill -9 "$p" 2>/dev/null || continue; case "$seen" in *" $p "*) ;; *) seen+="$p "; n=$((n+1));; esac; done; [ $n = 0 ] && return 0; done; return 1; }
"""

_ESCAPES = {ord("\\"): "\\\\", ord("'"): "\\'", ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}
_ESCAPES.update({c: f"\\x{c:02x}" for c in [*range(32), 127] if c not in _ESCAPES})


def ansi_c_quote(text: str) -> str:
    """``text`` as a bash ``$'...'`` word: one line, no interpretation of its content (pure function)."""
    return "$'" + text.translate(_ESCAPES) + "'"


def per_action_setup(workdir: str) -> str:
    """Session lines noting the initial working directory and environment (``env -0``, less ``_``) that every
    :func:`per_action` command starts from (run after the session init, so the image's activation is in it)."""
    return (
        f"__swesrl_home={shlex.quote(workdir)}; __swesrl_env=(); while IFS= read -r -d '' __swesrl_v; do "
        'case $__swesrl_v in _=*) ;; *) __swesrl_env+=("$__swesrl_v");; esac; done < <(env -0)\n'
    )


def per_action(command: str) -> str:
    """``command`` as a fresh ``bash -c`` process in the initial working directory with the initial environment
    (:func:`per_action_setup`): nothing it sets (``cd``, ``export``, variables, functions) reaches the next one."""
    return (  # the launching session's own job notice ("Killed …") goes to /dev/null, the process's stderr does not
        '{ ( cd -- "$__swesrl_home" && exec env -i "${__swesrl_env[@]}" bash --noprofile --norc -c '
        f"{ansi_c_quote(command)} ) 2>&3 3>&-; }} 3>&2 2>/dev/null"
    )


class ShellExpired(Exception):
    """The deadline passed before the sentinel arrived (internal)."""


class ShellEOF(Exception):
    """The shell process ended (``exit``, killed, container gone) (internal)."""


class ShellStopped(Exception):
    """A watch (the disk budget) asked to stop the running command (internal); ``args[0]`` says why."""


@dataclass
class Reply:
    """What one framed command produced."""

    data: bytes
    """Output (head + marker + tail when over the limit), still bytes."""
    exit_code: int
    oom_kills: int
    cwd: str
    truncated: bool
    pids: int = 0
    """Processes (and threads) in the container when the command ended (the pids cgroup; 0 if unreadable)."""


class Capture:
    """Incremental output of one command: keeps the first ``limit/2`` bytes and a bounded tail."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.limit = limit
        self.buf = bytearray()
        self.head: bytes | None = None
        self.dropped = 0
        self.scanned = 0

    def add(self, chunk: bytes) -> None:
        self.buf += chunk
        if self.head is None and len(self.buf) > self.limit + WINDOW:
            self.head = bytes(self.buf[: self.half])
            del self.buf[: self.half]
            self.scanned = max(0, self.scanned - self.half)
        if self.head is not None and len(self.buf) > 2 * (self.half + WINDOW):
            cut = len(self.buf) - (self.half + WINDOW)
            del self.buf[:cut]
            self.dropped += cut
            self.scanned = max(0, self.scanned - cut)

    def find(self, pattern: re.Pattern[bytes]) -> re.Match[bytes] | None:
        start = max(0, self.scanned - WINDOW)
        self.scanned = len(self.buf)
        return pattern.search(self.buf, start)

    def result(self, end: int) -> tuple[bytes, bool]:
        """The output before offset ``end`` of the buffer, cut in the middle when over the limit."""
        body = bytes(self.buf[:end])
        if self.head is None:
            if len(body) <= self.limit:
                return body, False
            head, body, dropped = body[: self.half], body[self.half :], 0
        else:
            head, dropped = self.head, self.dropped
        total = len(head) + dropped + len(body)
        marker = TRUNCATION_MARKER.format(dropped=total - len(head) - min(len(body), self.half)).encode()
        return head + marker + body[-self.half :], True


class Shell:
    """One ``bash --noprofile --norc`` in a container, fed over stdin; stderr of the shell itself (and of
    ``docker exec``) goes to a temporary file, read only to explain a shell that failed (``stderr_tail``)."""

    def __init__(self, container_id: str, workdir: str) -> None:
        cmd = [*engine_cli(), "exec", "-i", "-w", workdir, container_id, "bash", "--noprofile", "--norc"]
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, bufsize=0
        )
        self.fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self.pending = b""
        self.token = uuid.uuid4().hex[:12]
        self.count = 0
        self.pid: int | None = None
        """The shell's pid inside the container (set by the owner after the first command)."""

    def send(self, text: str) -> None:
        try:
            self.proc.stdin.write(text.encode("utf-8", errors="replace"))  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            raise ShellEOF from None

    def read(self, deadline: float) -> bytes:
        """The next chunk of output; ``ShellExpired`` at ``deadline`` (monotonic), ``ShellEOF`` at end."""
        if self.pending:
            chunk, self.pending = self.pending, b""
            return chunk
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ShellExpired
        ready, _, _ = select.select([self.fd], [], [], remaining)
        if not ready:
            raise ShellExpired
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            raise ShellEOF
        return chunk

    def command(
        self,
        text: str,
        limit: int,
        deadline: float,
        capture: Capture | None = None,
        watch: Watch | None = None,
    ) -> Reply:
        """Run ``text`` framed by a fresh sentinel and read its reply (``capture`` lets a caller resume after a kill).

        ``watch`` is called every ``WATCH_S`` seconds while the command runs; a reason it returns stops the wait
        with ``ShellStopped`` (the caller kills the command)."""
        self.count += 1
        marker = f"__SWESRL_{self.token}_{self.count}__"
        line = (
            f"__swesrl_run {ansi_c_quote(text)} < /dev/null 2>&1; __swesrl_rc=$?; __swesrl_o=0; "
            f"[ $__swesrl_rc -ge 128 ] && __swesrl_oom; "
            f'__swesrl_pids; printf \'\\n%s %s %s %s %s\\n\' {marker} "$__swesrl_rc" "$__swesrl_o" "$__swesrl_n" "$PWD"\n'
        )
        self.send(line)
        return self.wait(marker, capture or Capture(limit), deadline, watch)

    def wait(self, marker: str, capture: Capture, deadline: float, watch: Watch | None = None) -> Reply:
        pattern = re.compile(re.escape(f"\n{marker} ".encode()) + rb"(-?\d+) (\d+) (\d+) ([^\n]*)\n")
        self.last = (marker, capture)
        interval = WATCH_S
        next_watch = time.monotonic() + interval if watch is not None else float("inf")
        while True:
            try:
                chunk = self.read(min(deadline, next_watch))
            except ShellExpired:
                if watch is None or time.monotonic() >= deadline:
                    raise
                interval = min(2 * interval, WATCH_MAX_S)
                next_watch = time.monotonic() + interval
                if reason := watch():
                    raise ShellStopped(reason) from None
                continue
            capture.add(chunk)
            match = capture.find(pattern)
            if match:
                self.pending = bytes(capture.buf[match.end() :])
                data, truncated = capture.result(match.start())
                cwd = match.group(4).decode("utf-8", errors="replace")
                code, oom, pids = (int(match.group(k)) for k in (1, 2, 3))
                return Reply(data, code, oom, cwd, truncated, pids)

    def drain(self, quiet_s: float = 0.05, limit_s: float = 1.0) -> None:
        """Discard what killed processes still wrote into the pipe, until it is quiet for ``quiet_s``."""
        self.pending = b""
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            try:
                self.read(min(end, time.monotonic() + quiet_s))
            except (ShellExpired, ShellEOF):
                return
        self.pending = b""

    def resume(self, deadline: float) -> Reply:
        """Keep waiting for the reply of the last command (after its processes were killed)."""
        marker, capture = self.last
        return self.wait(marker, capture, deadline)

    def stderr_tail(self, limit: int = 600) -> str:
        """The last ``limit`` bytes the shell (or ``docker exec``) wrote to stderr."""
        try:
            self.err.seek(max(0, self.err.seek(0, os.SEEK_END) - limit))
            return self.err.read().decode("utf-8", errors="replace").strip()
        except (OSError, ValueError):
            return ""

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self.proc.wait()
        self.err.close()
