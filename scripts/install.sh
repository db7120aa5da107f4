#!/usr/bin/env bash
# Installs swe-srl into .venv (Python package + training extras + dev tools) and makes sure a Docker engine runs
# and the base images exist (`swe-srl setup`), then builds the bundled task suite (`swe-srl tasks build`). Idempotent: a second run only checks. Sourced by setup.sh and test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  # System site-packages are visible so a machine that already has torch & co. does not download them again.
  "$PYTHON" -m venv --system-site-packages .venv
fi
# shellcheck disable=SC1091
source .venv/bin/activate
if ! python -c "import torch" 2>/dev/null; then
  echo "==> installing torch (CPU build if a local wheel is available)"
  python -m pip install -q "torch==2.13.0" || python -m pip install -q torch
fi
echo "==> installing swe-srl[train,dev,ray]"
python -m pip install -q -e ".[train,dev,ray]" 2>&1 | grep -v -E "^WARNING: (Location|Running pip)" || true
# The swebench package's spec table and log parsers, without its heavy dependencies (modal, ghapi, ...).
python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('swebench') is None)" 2>/dev/null \
  || python -m pip install -q --no-deps "swebench==4.1.0"
python -c "import swe_srl, trl, gymnasium, docker" # fails loudly if the install did not take

# Headless Chromium for the viewer's browser tests (tests/e2e/test_view_browser.py): Debian's packages, no
# browser download. Selenium drives it through /usr/bin/chromedriver.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  echo "==> installing chromium and chromium-driver (Debian packages)"
  if command -v apt-get >/dev/null && [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "warning: install chromium and chromium-driver (root, apt-get) for the viewer's browser tests" >&2
  fi
fi

echo "==> swe-srl setup (Docker engine + base images)"
swe-srl setup
echo "==> swe-srl tasks build (the bundled suite: PyPI sdists once, validated in containers)"
swe-srl tasks build
