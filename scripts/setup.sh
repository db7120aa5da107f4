#!/usr/bin/env bash
# One command on a fresh Linux machine: install everything (package, Docker engine, images) and run the main job,
# SRL training with oracle files on the embedded default (bundled tasks, scripted expert, tiny CPU policy).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/install.sh
echo "==> swe-srl train --oracle-files"
swe-srl train --oracle-files "$@"
