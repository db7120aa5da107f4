"""Files of a running container over the Docker API (archives, not the shell), and the one ``docker exec`` helper.

Mixed into :class:`~swe_srl.infra.sandbox.docker.DockerSandbox`. Output of an exec is read incrementally into a
bounded buffer: docker-py's own ``exec_run(demux=True)`` joins frames with ``bytes +=``, quadratic in the output.
"""

from __future__ import annotations

import errno
import io
import posixpath
import shlex
import tarfile
import time
import uuid
from typing import TYPE_CHECKING, Any

import docker

from swe_srl.errors import ContainerDied, SandboxError
from swe_srl.infra.sandbox.base import ExecResult, truncate_output

if TYPE_CHECKING:
    from swe_srl.infra.sandbox.base import SandboxSpec


class ContainerFiles:
    """read_file / write_file / apply_patch / exec of a started container (``self._container``)."""

    spec: SandboxSpec
    container_id: str | None
    exec_count: int
    _container: Any
    _closed: bool
    # DockerSandbox provides _container_running() and _death_report(when).

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.spec.workdir, path))

    def exec(self, script: str, *, workdir: str | None = None) -> tuple[int, bytes, bytes]:
        """Run ``bash -c script`` in a separate ``docker exec`` (not the session); output capped at
        ``Limits.patch_limit_bytes`` per stream. Counted in ``exec_count``."""
        if self._container is None or self._closed:
            raise SandboxError("the sandbox is not running; call start() first")
        self.exec_count += 1
        api, cap = self._container.client.api, self.spec.limits.patch_limit_bytes
        out, err = bytearray(), bytearray()
        try:
            exec_id = api.exec_create(self.container_id, ["bash", "-c", script], workdir=workdir or "/")["Id"]
            for chunk_out, chunk_err in api.exec_start(exec_id, stream=True, demux=True):
                for buf, chunk in ((out, chunk_out), (err, chunk_err)):
                    if chunk and len(buf) < cap:
                        buf += chunk[: cap - len(buf)]
            code = api.exec_inspect(exec_id)["ExitCode"]
        except docker.errors.APIError as exc:
            if not self._container_running():
                raise ContainerDied(self._death_report("during an exec")) from None
            raise SandboxError(f"docker exec in {self.container_id} failed: {exc}") from None
        return code if code is not None else -1, bytes(out), bytes(err)

    def read_file(self, path: str, _depth: int = 0) -> bytes:
        """The bytes of ``path`` (relative to the workdir); ``FileNotFoundError`` when missing."""
        full = self._abs(path)
        try:
            stream, _ = self._container.get_archive(full)
        except docker.errors.NotFound:
            if not self._container_running():
                raise ContainerDied(self._death_report("during read_file")) from None
            raise FileNotFoundError(errno.ENOENT, "no such file in the sandbox", full) from None
        data = bytearray()
        for chunk in stream:
            data += chunk
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
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
            self._container.put_archive(parent, buf.getvalue())
        except docker.errors.NotFound:
            code, _, err = self.exec(f"mkdir -p {shlex.quote(parent)}")
            if code != 0:
                raise SandboxError(
                    f"cannot create {parent!r} in the sandbox: {err.decode(errors='replace')}"
                ) from None
            self._container.put_archive(parent, buf.getvalue())

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
