"""Sandbox nodes of a Ray cluster: start one (``swe-srl worker``), stop it, warm instance images on every one.

A sandbox node is a Ray node that declares :data:`~swe_srl.infra.sandbox.placement.SANDBOX_RESOURCE` = its sandbox
slots, started by ``ray start`` (a head on ``port`` when no head address is given) after its engine and limits
were checked: a node that would refuse its sandboxes never joins. Its raylet inherits this process's environment
(``SWE_SRL_ENGINE``, ``DOCKER_HOST``), so its sandboxes use the engine checked here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from swe_srl.benchmark.instances import Instance
from swe_srl.errors import ConfigError, ExecutorError
from swe_srl.infra.executor.ray_backend import KEEP_FAULTHANDLER_ENV
from swe_srl.infra.recipes import instance_image
from swe_srl.infra.sandbox.placement import NODE_RESOURCE, NODE_TASKS, SANDBOX_RESOURCE
from swe_srl.infra.sandbox.remote import actor_options, connected_ray, wait_for
from swe_srl.paths import atomic_write_text, cache_dir

START_TIMEOUT_S = 180.0
RAY_MARKS = (b"site-packages/ray/", b"/ray/core/src/ray/", b"-m\x00ray.")
"""How a Ray process's command line reads (besides ``ray::NAME``, which its agents and workers rename to)."""


def ray_command() -> list[str]:
    """The ``ray`` CLI of this Python (its virtualenv's, else PATH's)."""
    beside = Path(sys.executable).with_name("ray")
    found = str(beside) if beside.exists() else shutil.which("ray")
    if not found:
        raise ConfigError("`ray` is not installed: pip install 'swe-srl[ray]'")
    return [found]


def start_args(slots: int, address: str | None, port: int, cpus: int | None) -> list[str]:
    """``ray start`` arguments of a sandbox node (pure): a head on ``port`` when ``address`` is None."""
    if slots < 1:
        raise ConfigError(f"--sandboxes {slots}: a sandbox node needs at least 1 slot")
    where = ["--address", address] if address else ["--head", f"--port={port}", "--include-dashboard=false"]
    args = [
        "start",
        *where,
        f"--resources={json.dumps({SANDBOX_RESOURCE: slots, NODE_RESOURCE: NODE_TASKS})}",
        "--disable-usage-stats",
    ]
    return args + ([f"--num-cpus={cpus}"] if cpus is not None else [])


def start_node(slots: int, address: str | None, port: int, cpus: int | None = None) -> str:
    """Start this machine's Ray node with ``slots`` sandbox slots (joining ``address``, or as a head on ``port``);
    returns the cluster's address. The Ray processes it started are recorded (:func:`stop_node` ends those only).
    ``ExecutorError`` with ``ray start``'s output when it fails (what it started is stopped)."""
    env = {**os.environ, KEEP_FAULTHANDLER_ENV: os.environ.get(KEEP_FAULTHANDLER_ENV, "1")}
    args = start_args(slots, address, port, cpus)
    before = ray_processes()
    try:
        proc = subprocess.run([*ray_command(), *args], capture_output=True, text=True, env=env,
                              timeout=START_TIMEOUT_S)  # fmt: skip
    except subprocess.TimeoutExpired:
        proc = None
    started = {pid: mark for pid, mark in ray_processes().items() if before.get(pid) != mark}
    head = address or f"{_node_ip()}:{port}"
    if proc is None or proc.returncode != 0:
        _end(started)
        why = f"did not finish in {START_TIMEOUT_S:g}s" if proc is None else f"failed ({proc.returncode})"
        out = "" if proc is None else f": {(proc.stderr or proc.stdout)[-1500:]}"
        raise ExecutorError(f"`ray {' '.join(args)}` {why}; stopped what it started{out}")
    record = {"address": head, "processes": {str(pid): mark for pid, mark in started.items()}}
    atomic_write_text(node_file(), json.dumps(record, indent=1))
    return head


def ray_processes() -> dict[int, str]:
    """Ray's processes on this machine (their command line runs Ray's binaries or modules): pid → start time."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            mark = (entry / "stat").read_text().rsplit(")", 1)[1].split()[19]  # starttime: the pid's identity
        except (OSError, IndexError):
            continue
        if cmdline.startswith(b"ray::") or any(mark in cmdline for mark in RAY_MARKS):
            found[int(entry.name)] = mark
    return found


def _end(processes: dict[int, str], grace_s: float = 10.0) -> int:
    """SIGTERM the recorded processes still running (same pid and start time), SIGKILL those left after
    ``grace_s``; returns how many were running."""

    def alive() -> list[int]:
        now = ray_processes()
        return [pid for pid, mark in processes.items() if now.get(pid) == mark]

    running = alive()
    for pid in running:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in alive():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(running)


def _node_ip() -> str:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))  # no packet is sent: the route's source address
            return probe.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def stop_node() -> str:
    """End the Ray processes ``swe-srl worker`` started on this machine (not other Ray nodes or clusters here);
    the sandboxes' containers end with their actors' processes."""
    path = node_file()
    if not path.exists():
        return "no swe-srl worker node runs here"
    record = json.loads(path.read_text(encoding="utf-8"))
    ended = _end({int(pid): mark for pid, mark in record["processes"].items()})
    path.unlink()
    return f"stopped the sandbox node of {record['address']} ({ended} Ray process(es) ended)"


def node_file() -> Path:
    """What :func:`start_node` started on this machine (the cluster's address, the processes)."""
    return cache_dir("worker") / "node.json"


def sandbox_nodes(ray) -> list[dict[str, Any]]:
    """The live nodes that declare sandbox slots."""
    return [n for n in ray.nodes() if n["Alive"] and n["Resources"].get(SANDBOX_RESOURCE, 0) > 0]


def warm_images(
    instances: Sequence[Instance], address: str = "auto", repos_dir: Path | None = None
) -> dict[str, list[str]]:
    """Build (or pull) the images of ``instances`` on every sandbox node, one node's builds in one task; returns
    node address → image tags."""
    ray = connected_ray(address)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    build = ray.remote(max_retries=0)(_build_images)
    nodes = sandbox_nodes(ray)
    if not nodes:
        raise ExecutorError(f"no node of the cluster at {address!r} declares {SANDBOX_RESOURCE}: start "
                            "`swe-srl worker --sandboxes N` on the sandbox nodes")  # fmt: skip
    refs = {}
    for node in nodes:  # one task on each node (its own strategy instead of SPREAD)
        there = NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        options = actor_options(NODE_RESOURCE) | {"scheduling_strategy": there}
        where = f"{node['NodeManagerAddress']} ({node['NodeID'][:8]})"
        refs[where] = build.options(**options).remote(list(instances), str(repos_dir) if repos_dir else None)
    return {where: wait_for(ray, ref, f"images on {where}") for where, ref in refs.items()}


def _build_images(instances: list[Instance], repos_dir: str | None) -> list[str]:
    return [instance_image(i, repos_dir=Path(repos_dir) if repos_dir else None) for i in instances]
