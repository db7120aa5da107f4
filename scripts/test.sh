#!/usr/bin/env bash
# The test command: installs what is missing (package, Docker engine, base images), then runs the whole suite.
# Exits non-zero on any failure, and also when pytest collected no test (its exit code 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/install.sh

before=$(docker ps -aq --filter label=swe-srl.owner=swe-srl | sort)
status=0
# A crash of a test process (a signal) gets every thread's native stack from its core file, beside the Python
# traceback that pytest's faulthandler prints.
ulimit -c unlimited 2>/dev/null || true
since=$(mktemp)
run_pytest() {
  local rc=0
  python -m pytest "$@" || rc=$?
  if [ "$rc" -gt 128 ]; then
    bash scripts/crash_report.sh "$since" "$PWD" "$(dirname "$since")"
  else
    bash scripts/crash_report.sh --remove "$since" "$PWD" "$(dirname "$since")"
  fi
  if [ "$rc" -eq 5 ]; then
    echo "error: pytest collected no tests ($*)" >&2
    rc=1
  fi
  [ "$rc" -eq 0 ] || status=$rc
}
if [ $# -eq 0 ]; then
  # The whole suite (pyproject's testpaths). Ray's driver leaves native threads running in its process after
  # ray.shutdown(), and a second session in one process is known to crash it: each module with Ray tests runs in
  # a pytest process of its own, after the rest.
  run_pytest -m "not ray"
  for module in $(grep -rlE --include='test_*.py' 'mark\.ray\b' tests | sort); do
    run_pytest "$module" -m ray
  done
else
  # Arguments go to pytest as they are (paths, -m, -k ...), in one process.
  run_pytest "$@"
fi
rm -f "$since"
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
