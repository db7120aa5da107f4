"""A container that ends with the process that started it, whatever kills that process (SIGKILL included).

PID 1 reads its stdin until EOF (:data:`PID1`). That stdin is attached once, by the owner (``StdinOnce``), through a
socket only the owner holds: when the owner dies the kernel closes the socket, the engine closes the container's
stdin, PID 1 exits and the engine removes the container (``auto_remove``). Nothing inside the container can stop
PID 1 (the kernel drops signals sent to a namespace's init from inside unless it handles them, and bash as PID 1
handles none); PID 1 also reaps orphans. No janitor needed.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any

import docker

PID1 = "while read -r _; do :; done"
"""Runs until stdin ends (the owner's socket closed); a line written into it does not end it."""
HOST_KEYS = ("mem_limit", "memswap_limit", "nano_cpus", "pids_limit", "network_mode", "init")
"""``containers.run`` keywords that belong to the host config."""


def run_tethered(client: docker.DockerClient, image: str, **kwargs: Any) -> tuple[Any, socket.socket]:
    """Like ``client.containers.run(image, ["bash", "-c", PID1], detach=True, **kwargs)`` for a container tied to
    this process; returns (container, the stdin socket to keep open while the container is wanted)."""
    kwargs.pop("detach", None)
    host = {key: kwargs.pop(key) for key in HOST_KEYS if key in kwargs}
    name = kwargs.pop("name", None)
    api = client.api
    config = api.create_container_config(
        image,
        ["bash", "-c", PID1],
        stdin_open=True,
        host_config=api.create_host_config(auto_remove=True, **host),
        **kwargs,
    )
    config["StdinOnce"] = (
        True  # the engine closes stdin when the owner's attachment ends (docker-py has no keyword)
    )
    container = client.containers.get(api.create_container_from_config(config, name)["Id"])
    try:
        stdin = container.attach_socket(params={"stdin": 1, "stream": 1})
        container.start()
    except BaseException:
        with contextlib.suppress(docker.errors.DockerException):
            container.remove(force=True)
        raise
    return container, stdin


def release(stdin: Any) -> None:
    """Close the owner's end (the container ends if it still runs); idempotent, ``None`` is nothing to close."""
    if stdin is None:
        return
    with contextlib.suppress(OSError):
        getattr(stdin, "_sock", stdin).close()
        stdin.close()
