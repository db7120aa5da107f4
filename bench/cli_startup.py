"""The CLI's start-up time: ``swe-srl --help`` and ``swe-srl reward`` next to baselines measured in the same run.

Each case runs ``runs`` times in a fresh process (the first run of all warms the file cache and is not counted);
printed: the median wall time and the median CPU time (user + system, less sensitive to other load on the machine).
The baselines: an empty interpreter (``python -c pass``) and the import of the command stacks every command paid for
when the app imported all its modules (``swe_srl.cli.env``, ``swe_srl.cli.train``, ``swe_srl.cli.evaluate``).
With ``--before DIR`` (a checkout of an earlier commit, e.g. ``git archive COMMIT | tar -x -C DIR``) the two
commands are also timed from that checkout (``PYTHONPATH=DIR``), in the same run.

    python bench/cli_startup.py [--runs 9] [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

CLI = "import sys; sys.argv[0] = 'swe-srl'; from swe_srl.cli.app import main; main()"
CASES = {
    "python -c pass (baseline)": ["-c", "pass"],
    "import swe_srl.cli.{env,train,evaluate} (baseline: every stack)": [
        "-c",
        "import swe_srl.cli.env, swe_srl.cli.train, swe_srl.cli.evaluate",
    ],
    "swe-srl --help": ["-c", CLI, "--help"],
    "swe-srl reward --expert 'grep -rn foo src' --action 'rg foo src'": [
        "-c",
        CLI,
        "reward",
        "--expert",
        "grep -rn foo src",
        "--action",
        "rg foo src",
    ],
}


COMMANDS = ("swe-srl --help", "swe-srl reward --expert 'grep -rn foo src' --action 'rg foo src'")


def once(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, user + system CPU) seconds of one child process (run in ``$PYTHONPATH`` when set: ``-c`` puts the
    working directory first on ``sys.path``)."""
    cwd = env.get("PYTHONPATH") if env else None
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(
            f"failed ({os.waitstatus_to_exitcode(status)}): {child.stderr.read().decode()[-2000:]}"
        )
    return wall, usage.ru_utime + usage.ru_stime


def cases(before: str | None) -> dict[str, tuple[list[str], dict[str, str] | None]]:
    """name → (interpreter arguments, environment or None: this one)."""
    out = {name: (args, None) for name, args in CASES.items()}
    if before:
        env = {**os.environ, "PYTHONPATH": before}
        out |= {f"before ({before}): {name}": (CASES[name], env) for name in COMMANDS}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--before", help="a checkout of an earlier commit, timed from PYTHONPATH")
    options = parser.parse_args()
    todo = cases(options.before)
    for args, env in todo.values():
        once(args, env)  # warm the file cache and the bytecode
    width = max(map(len, todo))
    print(
        f"{'case':<{width}}  wall median (s)  CPU median (s)   ({options.runs} runs each, {os.cpu_count()} CPUs)"
    )
    for name, (args, env) in todo.items():
        times = [once(args, env) for _ in range(options.runs)]
        wall, cpu = (statistics.median(t[k] for t in times) for k in (0, 1))
        print(f"{name:<{width}}  {wall:15.3f}  {cpu:14.3f}")


if __name__ == "__main__":
    main()
