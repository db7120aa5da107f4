#!/usr/bin/env bash
# The Podman job of scripts/test.sh (run there after the Docker suite; SWE_SRL_PODMAN=0 skips it):
#  1. root Podman: `swe-srl setup --engine podman` (installs it, starts its service), the 3.11 base and instance
#     images moved from Docker (`swe-srl images export | import`), then the sandbox, shell, fault, lifecycle, image
#     build, registry pull, grading attack and interrupt tests on real Podman containers; afterwards no swe-srl container, no working container of
#     a build, no Podman service and no conmon may be left;
#  2. rootless Podman (a user with subuid/subgid ranges) on this machine's cgroup v1: swe-srl must refuse it
#     before any work, in one line; a refused `swe-srl setup --engine podman` run by that user stops the service and
#     the pause process it started, and only those (that user's swe-srl: Debian's Python 3.11 in a venv of the core
#     dependencies, made once, and a copy of the package: the checkout's own venv lives under /root).
# Needs root (installs packages, creates the rootless user). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The interrupt tests under SIGKILL only (the path that leans on the engine: the owner cannot clean up), each once;
# SIGINT/SIGTERM run the same cleanup code as on Docker, whose suite runs them all. An image build is the exception:
# Podman's is the local `podman build` under the orphan guard, so its stop is tested under each signal.
INT=tests/e2e/test_interrupts.py
TESTS=(tests/docker/test_sandbox.py tests/docker/test_shell.py tests/docker/test_env_faults.py
       tests/docker/test_sandbox_lifecycle.py tests/docker/test_sandbox_limits.py tests/docker/test_images_transfer.py
       tests/docker/test_podman_build.py tests/docker/test_podman_registry.py tests/docker/test_grading_attacks.py
       "$INT::test_stopped_eval_during_an_image_build_leaves_nothing"
       "$INT::test_stopped_eval_leaves_nothing_and_resumes[SIGKILL]" "$INT::test_python_program_using_the_env_leaves_nothing[SIGKILL]"
       "$INT::test_stopped_shell_leaves_nothing[SIGKILL]" "$INT::test_stopped_train_leaves_nothing[SIGKILL]"
       "$INT::test_stopped_validate_does_not_wait_for_the_grading_in_flight")
ROOTLESS_USER=swesrl-rootless
archive=$(mktemp --suffix .tar)
rootless_pid=
cleanup() {
  rm -f "$archive" "${rootless_log:-}"
  rm -rf "${user_src:-}" "${user_home:-}"
  SWE_SRL_ENGINE=podman swe-srl janitor --engine >/dev/null 2>&1 || true
  if [ -n "$rootless_pid" ]; then # the service, then the user's namespace holder (rootless Podman's pause process)
    kill "$rootless_pid" 2>/dev/null || true
    wait "$rootless_pid" 2>/dev/null || true
    for pid in $(pgrep -u "$ROOTLESS_USER"); do kill "$pid" 2>/dev/null || true; done
  fi
}
trap cleanup EXIT

echo "==> Podman (root): setup, images from Docker, sandbox tests"
# a real registry for the official-image pulls through Podman (tests/docker/test_podman_registry.py)
command -v docker-registry >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-registry >/dev/null ||
  echo "warning: docker-registry could not be installed; the registry pull test is skipped" >&2
# the 3.11 base and the bundled suite's instance images (built by install.sh): one archive, shared layers once
mapfile -t images < <(swe-srl images build --dataset bundled 2>/dev/null | awk '{print $NF}')
swe-srl images export "$(swe-srl images base --python 3.11)" "${images[@]}" -o "$archive"
eval "$(swe-srl setup --engine podman --no-images)" # exports SWE_SRL_ENGINE=podman DOCKER_HOST=unix://…
swe-srl images import "$archive"
status=0
python -m pytest -q -p no:cacheprovider "${TESTS[@]}" "$@" || status=$?
left=$(python -c "from swe_srl.infra import podman_build as b; print(*(w.id[:12] for w in b.working_containers()))")
if [ -n "$left" ]; then # buildah's working containers of swe-srl builds (`podman ps --external`: Storage)
  echo "error: Podman builds left working containers behind: $left" >&2
  status=1
fi
swe-srl janitor --engine
for _ in $(seq 30); do pgrep -x conmon >/dev/null || break; sleep 0.5; done # exec conmons end 5 s after use
if pgrep -x conmon >/dev/null || pgrep -f "podman system service" >/dev/null; then
  echo "error: Podman left processes behind:" >&2
  pgrep -af "conmon|podman system service" | cut -c1-160 >&2
  status=1
fi
unset SWE_SRL_ENGINE DOCKER_HOST

echo "==> rootless Podman on this machine's cgroup v$(test -f /sys/fs/cgroup/cgroup.controllers && echo 2 || echo 1): must be refused"
id "$ROOTLESS_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$ROOTLESS_USER"
grep -q "^$ROOTLESS_USER:" /etc/subuid || usermod --add-subuids 200000-265535 --add-subgids 200000-265535 "$ROOTLESS_USER"
uid=$(id -u "$ROOTLESS_USER")
install -d -o "$ROOTLESS_USER" -m 700 "/run/user/$uid"
sock="/run/user/$uid/swe-srl-podman.sock"
cgroup_v1=$(test -f /sys/fs/cgroup/cgroup.controllers && echo 0 || echo 1)
live() { ps -o pid=,stat= -u "$ROOTLESS_USER" | awk '$2 !~ /^Z/ {print $1}' | sort -n | tr '\n' ' '; } # zombies have ended
if [ "$cgroup_v1" = 1 ]; then
  for pid in $(live); do kill "$pid" 2>/dev/null || true; done # what an aborted earlier run left
  user_venv="/home/$ROOTLESS_USER/.swe-srl-venv"
  [ -x "$user_venv/bin/python" ] || /usr/bin/python3 -m venv --without-pip "$user_venv"
  mapfile -t deps < <(python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep='\n')")
  python -m pip --python "$user_venv/bin/python" install -q "${deps[@]}" 2>&1 | { grep -v "^WARNING: Location" || true; } ||
    { echo "error: pip could not install swe-srl's dependencies for $ROOTLESS_USER" >&2; status=1; }
  user_src=$(mktemp -d) && cp -r swe_srl "$user_src/" && chmod -R a+rX "$user_src"
  user_home=$(mktemp -d) && chown "$ROOTLESS_USER" "$user_home" # its own Podman storage, as a new user's
  user_setup() { # the user's `swe-srl setup --engine podman`: it starts its own service (no DOCKER_HOST)
    runuser -u "$ROOTLESS_USER" -- env -i PATH=/usr/bin:/bin HOME="$user_home" XDG_RUNTIME_DIR="/run/user/$uid" \
      PYTHONPATH="$user_src" "$user_venv/bin/python" -m swe_srl.cli setup --engine podman --no-images 2>&1
  }
  out=$(user_setup) && rc=0 || rc=$?
  echo "$out"
  if [ "$rc" -ne 2 ] || ! grep -q "refused: stopped the Podman service" <<<"$out" || [ -n "$(live)" ]; then
    echo "error: a refused rootless setup (exit $rc) left processes running: $(live)" >&2
    ps -o pid,stat,args -u "$ROOTLESS_USER" >&2
    status=1
  fi
fi
rootless_log=$(mktemp)
runuser -u "$ROOTLESS_USER" -- env XDG_RUNTIME_DIR="/run/user/$uid" HOME="/home/$ROOTLESS_USER" \
  podman system service --time=0 "unix://$sock" >"$rootless_log" 2>&1 &
rootless_pid=$!
for _ in $(seq 240); do [ -S "$sock" ] && break; sleep 0.25; done # up to 60 s: a loaded machine starts it slowly
[ -S "$sock" ] || { echo "error: the rootless Podman service did not start; its log:" >&2; cat "$rootless_log" >&2; status=1; }
if [ "$cgroup_v1" = 0 ]; then
  echo "cgroup v2 here: the refusal check is for cgroup v1 hosts; skipped"
else
  out=$(SWE_SRL_ENGINE=podman DOCKER_HOST="unix://$sock" swe-srl setup --no-images 2>&1) && rc=0 || rc=$?
  echo "$out"
  if [ "$rc" -ne 2 ] || ! grep -q "podman (rootless, cgroup v1) cannot enforce the sandboxes' memory and pids" <<<"$out"; then
    echo "error: rootless Podman on cgroup v1 was not refused (exit $rc)" >&2
    status=1
  fi
  # the one way past it, explicit:
  if ! SWE_SRL_ENGINE=podman DOCKER_HOST="unix://$sock" swe-srl --allow-unlimited-sandboxes setup --no-images \
      2>/dev/null | grep -q "^export SWE_SRL_ENGINE=podman"; then
    echo "error: --allow-unlimited-sandboxes did not let rootless Podman through" >&2
    status=1
  fi
  # only what it started: the service above and its pause process are the user's, and stay
  kept=$(live)
  out=$(user_setup) && rc=0 || rc=$?
  if [ "$rc" -ne 2 ] || [ -z "$kept" ] || [ "$(live)" != "$kept" ]; then
    echo "error: a refused rootless setup (exit $rc) changed the user's processes: $kept -> $(live)" >&2
    status=1
  fi
fi
exit "$status"
