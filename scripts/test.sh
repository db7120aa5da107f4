#!/usr/bin/env bash
# The test command: installs what is missing (package, Docker engine, base images), then runs the whole suite.
# Exits non-zero on any failure, and also when pytest collected no test (its exit code 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/install.sh

before=$(docker ps -aq --filter label=swe-srl.owner=swe-srl | sort)
status=0
# No arguments: the whole suite (pyproject's testpaths). Arguments go to pytest as they are (paths, -m, -k ...).
python -m pytest "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "error: pytest collected no tests" >&2
  exit 1
fi
# Nothing the suite started may outlive it: the janitor reaps containers whose process is gone; any of those
# that did not exist before the tests is a leak.
reaped=$(swe-srl janitor | grep -o '([0-9a-f]\{12\})' | tr -d '()' | sort || true)
leaked=$(comm -13 <(echo "$before") <(echo "$reaped") | grep -c . || true)
if [ "$leaked" -gt 0 ]; then
  echo "error: the tests left $leaked swe-srl container(s) behind (removed now by the janitor)" >&2
  [ "$status" -ne 0 ] || status=1
fi
# The Podman job (the whole suite only; SWE_SRL_PODMAN=0 skips it): root Podman runs the sandbox, shell, fault,
# lifecycle and interrupt tests and leaves nothing behind; rootless Podman on cgroup v1 is refused.
if [ $# -eq 0 ] && [ "${SWE_SRL_PODMAN:-1}" = 1 ]; then
  bash scripts/test_podman.sh || status=1
fi
exit "$status"
