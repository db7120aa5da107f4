#!/usr/bin/env bash
# The test command: installs what is missing (package, Docker engine, base images), then runs the whole suite.
# Exits non-zero on any failure, and also when pytest collected no test (its exit code 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/install.sh

status=0
python -m pytest tests "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "error: pytest collected no tests" >&2
  exit 1
fi
# Nothing the suite started may outlive it.
left=$(docker ps -aq --filter label=swe-srl.owner=swe-srl | wc -l)
if [ "$left" -gt 0 ]; then
  echo "error: $left swe-srl container(s) left after the tests:" >&2
  docker ps -a --filter label=swe-srl.owner=swe-srl >&2
  swe-srl janitor --all || true
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
