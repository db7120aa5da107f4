"""Sandbox benchmark, ours vs the baseline measured in the same run.

1. trivial action latency: ``DockerSandbox.run("true")`` (pipe into a running bash) vs ``docker exec CID true``;
2. reset → first action: a cold start vs a warm pool (``WarmPool``);
3. 8 sandboxes in parallel: throughput and failures;
4. ``SWEEnv.step`` of a fixed trivial action (default reward mode) vs one ``docker exec``, in the same run, and a step
   after writing a 100 MB file (``--instance ID`` of the bundled suite).

    python bench/sandbox.py [--image TAG] [--n 200] [--parallel 8] [--instance ID] [--skip-parallel]
"""

from __future__ import annotations

import argparse
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from swe_srl.infra.images import ensure_base_image
from swe_srl.infra.sandbox.base import Limits, SandboxSpec
from swe_srl.infra.sandbox.docker import DockerSandbox
from swe_srl.infra.sandbox.pool import WarmPool


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def row(name: str, values: list[float]) -> str:
    return f"  {name:<34} p50 {pct(values, 0.5) * 1000:9.2f} ms   p95 {pct(values, 0.95) * 1000:9.2f} ms   n={len(values)}"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def action_latency(spec: SandboxSpec, n: int) -> None:
    with DockerSandbox(spec) as box:
        ours = [timed(lambda: box.run("true")) for _ in range(n)]
        cmd = ["docker", "exec", box.container_id, "true"]
        theirs = [timed(lambda: subprocess.run(cmd, check=True)) for _ in range(max(n // 5, 10))]
    print("trivial action (`true`):")
    print(row("ours: persistent bash over a pipe", ours))
    print(row("baseline: docker exec", theirs))
    print(f"  speed-up (p50): {pct(theirs, 0.5) / pct(ours, 0.5):.0f}x (target >= 20x)")


def reset_latency(spec: SandboxSpec, n: int) -> None:
    def cold() -> None:
        with DockerSandbox(spec) as box:
            box.run("true")

    cold_times = [timed(cold) for _ in range(n)]
    warm_times = []
    with WarmPool(size=2) as pool:
        pool.prefill(spec)
        for _ in range(n):
            while pool.ready_count(spec) < 1:
                time.sleep(0.05)
            start = time.perf_counter()
            box = pool.acquire(spec)
            box.run("true")
            warm_times.append(time.perf_counter() - start)
            pool.release(box)
    print("reset -> first action done:")
    print(row("cold: start container + shells", cold_times))
    print(row("warm pool (size 2)", warm_times))
    print(f"  warm p50 {pct(warm_times, 0.5):.3f} s (target <= 0.3 s)")


def parallel(spec: SandboxSpec, workers: int, actions: int) -> None:
    commands = [
        "ls -la /",
        "python -c 'print(sum(range(10**5)))'",
        "echo hi > /tmp/f && cat /tmp/f",
        "git --version",
    ]

    def episode(i: int) -> int:
        failures = 0
        with DockerSandbox(spec) as box:
            for k in range(actions):
                failures += box.run(commands[k % len(commands)]).exit_code != 0
        return failures

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as ex:
        failures = list(ex.map(episode, range(workers)))
    wall = time.perf_counter() - start
    total = workers * actions
    print(f"{workers} sandboxes in parallel, {actions} actions each (start + run + close):")
    print(f"  wall {wall:.2f} s, {total / wall:.1f} actions/s incl. starts, failures {sum(failures)}/{total}")


def env_steps(instance_id: str, n: int) -> None:
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.core.actions import format_output
    from swe_srl.env.swe_env import SWEEnv

    instance = next(i for i in load_instances("bundled") if i.instance_id == instance_id)
    env = SWEEnv(instances=[instance])
    try:
        env.reset(options={"instance_id": instance_id})
        box, action = env.sandbox, format_output("check", "true")
        execs = box.exec_count
        steps = [timed(lambda: env.step(action)) for _ in range(n)]
        cmd = ["docker", "exec", box.container_id, "true"]
        theirs = [timed(lambda: subprocess.run(cmd, check=True)) for _ in range(max(n // 5, 10))]
        made = box.exec_count - execs
        big = format_output("big", "head -c 100000000 /dev/urandom > big.bin")
        big_s = timed(lambda: env.step(big))
        after_s = timed(lambda: env.step(action))
        patch_s = timed(env.patch)
    finally:
        env.close()
    print(f"SWEEnv.step (reward mode outcome, `true`) on {instance_id}:")
    print(row("env.step", steps))
    print(row("baseline: docker exec", theirs))
    print(
        f"  speed-up (p50): {pct(theirs, 0.5) / pct(steps, 0.5):.0f}x (target >= 20x); docker execs by steps: {made}"
    )
    print(f"  step writing 100 MB: {big_s:.2f} s; next step {after_s * 1000:.1f} ms; patch {patch_s:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--image", help="image to use (default: the 3.11 base image)")
    parser.add_argument("--n", type=int, default=200, help="trivial actions to time")
    parser.add_argument("--resets", type=int, default=8, help="cold/warm resets to time")
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument(
        "--instance", default="inflection__inflection-m011", help="bundled task for env steps"
    )
    parser.add_argument("--skip-parallel", action="store_true", help="only the latency rows and env steps")
    args = parser.parse_args()
    spec = SandboxSpec(
        image=args.image or ensure_base_image("3.11"), workdir="/", limits=Limits(memory="512m")
    )
    print(
        f"image {spec.image}; cores: {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()}"
    )
    action_latency(spec, args.n)
    env_steps(args.instance, args.n)
    if not args.skip_parallel:
        reset_latency(spec, args.resets)
        parallel(spec, args.parallel, 25)


if __name__ == "__main__":
    main()
