"""Podman as the engine: install it (Debian), write its configuration, and run its API service for this user.

``swe-srl setup --engine podman`` installs :data:`PACKAGES` with apt when Podman is missing (root only), writes a
``containers.conf`` and a ``storage.conf`` of its own into the cache (``podman/``) and starts
``podman system service --time=0`` on a socket there, with ``CONTAINERS_CONF`` / ``CONTAINERS_STORAGE_CONF``
pointing at those files: nothing under /etc is edited. The service runs until ``swe-srl setup --stop`` or
``swe-srl janitor --engine``; later commands find it again through its pid file and socket. Stopping it ends its
processes (rootless Podman re-executes itself inside the user namespace: the child is the one serving) and the
pause process it started (rootless Podman's holder of that namespace), unless some other Podman process of the
user still lives in it. A start that :func:`stopped_if_refused` guards leaves nothing running when it is refused.

What the configuration sets, and why:

* ``runtime = "runc"``: crun refuses hosts with hybrid cgroups (v1 controllers beside a v2 mount).
* ``default_ulimits``: Podman gives a root container nofile=1048576 and nproc=4194304 unless told otherwise; a root
  without ``CAP_SYS_RESOURCE`` (a container, a locked-down node) may not raise its limits, and every start fails
  with ``error setting rlimit``. The defaults are the service's own hard limits (read back after it starts).
* ``exit_command_delay = 5``: the ``conmon`` of an API exec session waits this long (Podman's default: 300 s)
  before it cleans up and exits, so a run leaves no ``conmon`` behind for minutes.
* overlay storage (rootless: through ``fuse-overlayfs`` when installed) instead of a rootless ``vfs``, which copies
  every layer of every container.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from swe_srl import paths
from swe_srl.errors import DockerUnavailable
from swe_srl.infra import podman_procs as procs

PACKAGES = ("podman", "runc", "uidmap", "slirp4netns", "fuse-overlayfs")
FIX = "start it with `swe-srl setup --engine podman` (it prints DOCKER_HOST), or point DOCKER_HOST at a Podman socket"
EXIT_COMMAND_DELAY_S = 5
START_S = 30.0


def service_dir() -> Path:
    """Where the service's socket, pid file, configuration and log live (``$SWE_SRL_HOME/podman``)."""
    return paths.cache_dir("podman")


def socket_path() -> Path:
    return service_dir() / "podman.sock"


def service_pid() -> int | None:
    """The pid of the service this user started with swe-srl, when it still runs (None otherwise)."""
    try:
        pid = int((service_dir() / "service.pid").read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if b"podman" in cmdline[0] and b"service" in cmdline else None


def service_url() -> str | None:
    """``unix://…/podman.sock`` of the running service, or None when none runs."""
    return f"unix://{socket_path()}" if service_pid() is not None and socket_path().exists() else None


def service_env(url: str) -> dict[str, str]:
    """What a user's shell exports to use the service (``swe-srl setup --engine podman`` prints it)."""
    return {"SWE_SRL_ENGINE": "podman", "DOCKER_HOST": url}


def conf_text(nofile: tuple[int, int], nproc: tuple[int, int]) -> str:
    """The ``containers.conf`` the service runs with (pure function; the module doc says why each line)."""
    ulimits = f'"nofile={nofile[0]}:{nofile[1]}", "nproc={nproc[0]}:{nproc[1]}"'
    return (
        "# written by swe-srl (swe_srl/infra/podman.py); used through CONTAINERS_CONF, /etc is not touched\n"
        f"[containers]\ndefault_ulimits = [{ulimits}]\n\n"
        f'[engine]\nruntime = "runc"\nevents_logger = "file"\nexit_command_delay = {EXIT_COMMAND_DELAY_S}\n'
    )


def storage_conf_text(rootless: bool, home: Path, runtime_dir: str, fuse: str | None) -> str:
    """The ``storage.conf``: overlay, in Podman's usual places for root or for this user (pure function)."""
    if not rootless:
        graph, run = "/var/lib/containers/storage", "/run/containers/storage"
    else:
        graph, run = str(home / ".local/share/containers/storage"), f"{runtime_dir}/containers"
    text = f'[storage]\ndriver = "overlay"\ngraphroot = "{graph}"\nrunroot = "{run}"\n'
    if rootless and fuse:
        text += f'\n[storage.options.overlay]\nmount_program = "{fuse}"\n'
    return text


def process_limits(pid: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(nofile, nproc) as (soft, hard) of process ``pid`` (``/proc/PID/limits``)."""
    found = {}
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        for key, name in (("Max open files", "nofile"), ("Max processes", "nproc")):
            if line.startswith(key):
                soft, hard = line[len(key) :].split()[:2]
                found[name] = tuple(1 << 20 if v == "unlimited" else int(v) for v in (soft, hard))
    return found["nofile"], found["nproc"]  # type: ignore[return-value]


def ensure_podman(console) -> str:
    """Install Podman if missing (root with apt-get) and start the service; a one-line account of what was done."""
    done = []
    if shutil.which("podman") is None:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            raise DockerUnavailable(
                f"podman is not installed and only root with apt-get can install it here: ask for "
                f"`{' '.join(PACKAGES)}` (or `apt-get install -y {' '.join(PACKAGES)}` as root)"
            )
        with console.status(f"installing {', '.join(PACKAGES)} with apt-get"):
            for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *PACKAGES]):
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                                      env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})  # fmt: skip
                if proc.returncode != 0:
                    raise DockerUnavailable(f"`{' '.join(cmd)}` failed: {proc.stderr.strip()[-800:]}")
        done.append(f"installed {' '.join(PACKAGES)}")
    done.append(start_service(console))
    return ", ".join(done)


def start_service(console) -> str:
    """Start ``podman system service`` on :func:`socket_path` unless it runs; its ulimit defaults are its own."""
    if (pid := service_pid()) is not None and socket_path().exists():
        return f"Podman service already runs (pid {pid})"
    limits = process_limits(os.getpid())
    with console.status(f"starting podman system service (log: {service_dir() / 'service.log'})"):
        for _ in range(2):
            _write_conf(*limits)
            pid = _spawn()
            own = process_limits(pid)  # Podman lowers its nproc at start: containers may not exceed it
            if own == limits:
                break
            stop_service()
            limits = own
    return f"started podman system service (pid {pid}) at unix://{socket_path()}"


@contextlib.contextmanager
def stopped_if_refused(console) -> Iterator[None]:
    """Guard a start and its checks: when the block raises (a refused limits check, Ctrl-C), the service it started
    is stopped again, with the pause process that service started. A service that ran before is left alone."""
    before = service_pid()
    try:
        yield
    except BaseException:
        if (pid := service_pid()) is not None and pid != before:
            console.print(f"[yellow]refused:[/] {stop_service()}")
        raise


def _write_conf(nofile: tuple[int, int], nproc: tuple[int, int]) -> None:
    root = service_dir()
    fuse = shutil.which("fuse-overlayfs")
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    paths.atomic_write_text(root / "containers.conf", conf_text(nofile, nproc))
    storage = storage_conf_text(os.geteuid() != 0, Path.home(), runtime_dir, fuse)
    paths.atomic_write_text(root / "storage.conf", storage)


def _spawn() -> int:
    root, sock = service_dir(), socket_path()
    pause_before = procs.pause_pid()
    sock.unlink(missing_ok=True)
    env = {**os.environ, "CONTAINERS_CONF": str(root / "containers.conf"),
           "CONTAINERS_STORAGE_CONF": str(root / "storage.conf")}  # fmt: skip
    with open(root / "service.log", "ab") as log:
        proc = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{sock}"], env=env,
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)  # fmt: skip
    paths.atomic_write_text(root / "service.pid", f"{proc.pid}\n")
    deadline = time.monotonic() + START_S
    while not _answers(sock):
        if proc.poll() is not None or time.monotonic() > deadline:
            procs.note_pause(pause_before, root / "pause.pid")
            tail = (root / "service.log").read_text(errors="replace")[-1200:]
            stop_service()
            raise DockerUnavailable(f"podman system service did not answer on {sock}; its log ends:\n{tail}")
        time.sleep(0.2)
    procs.note_pause(pause_before, root / "pause.pid")
    return proc.pid


def _answers(sock: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as conn:
        try:
            conn.connect(str(sock))
        except OSError:
            return False
    return True


def stop_service() -> str:
    """Stop the service swe-srl started: its processes (SIGTERM, then SIGKILL after ``podman_procs.STOP_S``) and
    the pause process it started; a one-line account."""
    pid = service_pid()
    if pid is not None:
        procs.end(procs.service_processes(pid))
    (service_dir() / "service.pid").unlink(missing_ok=True)
    socket_path().unlink(missing_ok=True)
    pause = procs.stop_own_pause(service_dir() / "pause.pid")
    if pid is None:
        return "no Podman service of swe-srl runs" + (
            f"; stopped its pause process (pid {pause})" if pause else ""
        )
    return f"stopped the Podman service (pid {pid})" + (
        f" and its pause process (pid {pause})" if pause else ""
    )
