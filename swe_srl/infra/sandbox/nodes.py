"""Sandbox nodes of a Ray cluster: start one (``swe-srl worker``), stop it, warm instance images on every one.

A sandbox node is a Ray node that declares :data:`~swe_srl.infra.sandbox.placement.SANDBOX_RESOURCE` = its sandbox
slots, started by ``ray start`` (a head on ``port`` when no head address is given) after its engine and limits
were checked: a node that would refuse its sandboxes never joins. Its raylet inherits this process's environment
(``SWE_SRL_ENGINE``, ``DOCKER_HOST``), so its sandboxes use the engine checked here.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from swe_srl.benchmark.instances import Instance
from swe_srl.errors import ConfigError, ExecutorError
from swe_srl.infra.executor.ray_backend import KEEP_FAULTHANDLER_ENV
from swe_srl.infra.recipes import instance_image
from swe_srl.infra.sandbox.placement import SANDBOX_RESOURCE
from swe_srl.infra.sandbox.remote import actor_options, connected_ray, wait_for

START_TIMEOUT_S = 180.0


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
    args = ["start", *where, f"--resources={json.dumps({SANDBOX_RESOURCE: slots})}", "--disable-usage-stats"]
    return args + ([f"--num-cpus={cpus}"] if cpus is not None else [])


def start_node(slots: int, address: str | None, port: int, cpus: int | None = None) -> str:
    """Start this machine's Ray node with ``slots`` sandbox slots (joining ``address``, or as a head on ``port``);
    returns the cluster's address. ``ExecutorError`` with ``ray start``'s output when it fails."""
    env = {**os.environ, KEEP_FAULTHANDLER_ENV: os.environ.get(KEEP_FAULTHANDLER_ENV, "1")}
    args = start_args(slots, address, port, cpus)
    try:
        proc = subprocess.run([*ray_command(), *args], capture_output=True, text=True, env=env,
                              timeout=START_TIMEOUT_S)  # fmt: skip
    except subprocess.TimeoutExpired:
        stop_node()
        raise ExecutorError(
            f"`ray {' '.join(args)}` did not finish in {START_TIMEOUT_S:g}s; stopped it"
        ) from None
    if proc.returncode != 0:
        raise ExecutorError(
            f"`ray {' '.join(args)}` failed ({proc.returncode}): {(proc.stderr or proc.stdout)[-1500:]}"
        )
    return address or f"{_node_ip()}:{port}"


def _node_ip() -> str:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))  # no packet is sent: the route's source address
            return probe.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def stop_node() -> str:
    """``ray stop``: every Ray process this machine's ``ray start`` began (its sandboxes' containers end with their
    actors' processes)."""
    proc = subprocess.run([*ray_command(), "stop"], capture_output=True, text=True, timeout=120)
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    return lines[-1] if lines else "ray stop: nothing to stop"


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
    options = actor_options() | {"resources": {}}
    refs = {
        f"{node['NodeManagerAddress']} ({node['NodeID'][:8]})": build.options(
            **options, scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        ).remote(list(instances), str(repos_dir) if repos_dir else None)
        for node in nodes
    }
    return {where: wait_for(ray, ref, f"images on {where}") for where, ref in refs.items()}


def _build_images(instances: list[Instance], repos_dir: str | None) -> list[str]:
    return [instance_image(i, repos_dir=Path(repos_dir) if repos_dir else None) for i in instances]
