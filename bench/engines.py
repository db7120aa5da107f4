"""Podman next to Docker, measured in the same run on the same image: a sandbox's start (container + both shells
+ the limits read back), a command in its persistent shell (what ``env.step`` pays per action), ``git status``,
the graded patch, ``close()``, and one bare CLI ``exec`` (what swe-srl's long-lived shells avoid paying per
command). Then what the Podman run left behind: swe-srl containers and ``conmon`` processes (after the 5 s exec
delay of swe-srl's containers.conf).

Each engine runs in a child process of its own (the engine is chosen once per process). Podman's service must run:
``swe-srl setup --engine podman --no-images``; the image must exist on both (``swe-srl images export`` /
``import``).

    python bench/engines.py [--image TAG] [--commands 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from swe_srl.infra import podman


def child(image: str, commands: int) -> dict:
    from swe_srl.infra.engine import engine_cli, engine_name
    from swe_srl.infra.sandbox.base import SandboxSpec
    from swe_srl.infra.sandbox.docker import DockerSandbox

    out: dict = {"engine": engine_name(), "start_s": [], "close_s": [], "echo_ms": [], "git_ms": []}
    out["exec_ms"] = []
    for _ in range(3):
        started = time.perf_counter()
        box = DockerSandbox(SandboxSpec(image=image, workdir="/tmp")).start()
        out["start_s"].append(time.perf_counter() - started)
        box.run(
            "git init -q /tmp/r && cd /tmp/r && echo a > f && git add f && git commit -qm a && echo b > f"
        )
        for _ in range(commands):
            out["echo_ms"].append(1000 * box.run("echo hi").duration_s)
        for _ in range(10):
            out["git_ms"].append(1000 * box.run("git status --short").duration_s)
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run([*engine_cli(), "exec", box.container_id, "true"], check=True, capture_output=True)
            out["exec_ms"].append(1000 * (time.perf_counter() - t))
        started = time.perf_counter()
        box.close()
        out["close_s"].append(time.perf_counter() - started)
    return out


def leftovers(wait_s: float = 8.0) -> dict:
    """swe-srl containers on the Podman service and conmon processes on this host, after ``wait_s``."""
    from swe_srl.infra.engine import docker_client

    time.sleep(wait_s)
    containers = docker_client().containers.list(all=True, filters={"label": "swe-srl.owner=swe-srl"})
    conmon = subprocess.run(["pgrep", "-c", "-x", "conmon"], capture_output=True, text=True).stdout.strip()
    return {"containers": len(containers), "conmon": int(conmon or 0)}


def run_child(engine: str, image: str, commands: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SWE_SRL_ENGINE", "DOCKER_HOST")}
    if engine == "podman":
        url = podman.service_url()
        if url is None:
            sys.exit("no Podman service runs: start it with `swe-srl setup --engine podman --no-images`")
        env |= podman.service_env(url)
    args = [sys.executable, __file__, "--child", "--image", image, "--commands", str(commands)]
    proc = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"{engine} run failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def med(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--image", default="")
    parser.add_argument("--commands", type=int, default=50)
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if not args.image:
        from swe_srl.infra.images import base_image_tag

        args.image = base_image_tag("3.11")
    if args.child:
        result = child(args.image, args.commands)
        if result["engine"] == "podman":
            result["left"] = leftovers()
        print(json.dumps(result))
        return
    rows = {engine: run_child(engine, args.image, args.commands) for engine in ("docker", "podman")}
    print(f"image {args.image}; 3 sandboxes per engine, {args.commands} commands each (medians)")
    print(f"{'':34}{'docker':>10}{'podman':>10}{'ratio':>8}")
    for key, label, unit in (("start_s", "sandbox start (s)", 1), ("echo_ms", "run('echo hi') = env step (ms)", 1),
                             ("git_ms", "run('git status') (ms)", 1), ("exec_ms", "bare CLI exec (ms)", 1),
                             ("close_s", "close (s)", 1)):  # fmt: skip
        d, p = med(rows["docker"][key]) * unit, med(rows["podman"][key]) * unit
        print(f"{label:34}{d:>10.3f}{p:>10.3f}{p / d:>7.2f}x")
    left = rows["podman"]["left"]
    print(f"left behind by the Podman run: {left['containers']} swe-srl containers, {left['conmon']} conmon")


if __name__ == "__main__":
    main()
