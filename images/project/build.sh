#!/usr/bin/env bash
# Build the project image of docker-compose.yml offline-first:
#   1. the debootstrapped Debian base (swe_srl.images.ensure_base_image; Debian mirror only, needs root),
#   2. tagged swe-srl/base:py3.11 (the Dockerfile's default BASE_IMAGE),
#   3. `docker-compose build` (or `docker compose build`).
# With a registry instead: SWE_SRL_BASE_IMAGE=python:3.11-slim images/project/build.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${SWE_SRL_BASE_IMAGE:-}" ]; then
    tag=$(python3 -c 'from swe_srl.images import ensure_base_image; print(ensure_base_image("3.11"))')
    docker tag "$tag" swe-srl/base:py3.11
    export SWE_SRL_BASE_IMAGE=swe-srl/base:py3.11
fi
if command -v docker-compose >/dev/null; then
    docker-compose build "$@"
else
    docker compose build "$@"
fi
