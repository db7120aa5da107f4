#!/usr/bin/env bash
# Build a swe-srl base root filesystem offline-first, from the Debian mirror only (no registry).
#   bootstrap.sh SUITE ROOTFS CACHE_DIR CA_BUNDLE PACKAGES_FILE [MIRROR]
# Result: Debian minbase + python3 + git + procps ..., a venv at /opt/venv, the host CA bundle trusted.
# The caller tars ROOTFS into `docker import` (see swe_srl/images.py).
set -euo pipefail
suite=$1 rootfs=$2 cache=$3 ca_bundle=$4 packages_file=$5
mirror=${6:-http://deb.debian.org/debian}

include=$(grep -v '^\s*#' "$packages_file" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
mkdir -p "$cache" "$rootfs"
debootstrap --variant=minbase --include="$include" --cache-dir="$cache" "$suite" "$rootfs" "$mirror"

# Trust the host's CA bundle (TLS to package indexes goes through a local CA on some machines).
install -m 0644 "$ca_bundle" "$rootfs/etc/ssl/certs/swe-srl-host-ca.crt"
cat "$ca_bundle" >> "$rootfs/etc/ssl/certs/ca-certificates.crt"

# The venv every later layer installs into; first on PATH via `docker import --change ENV PATH=...`.
chroot "$rootfs" /usr/bin/python3 -m venv /opt/venv
chroot "$rootfs" /usr/bin/git config --system user.email swe-srl@localhost
chroot "$rootfs" /usr/bin/git config --system user.name swe-srl
chroot "$rootfs" /usr/bin/git config --system --add safe.directory '*'
chroot "$rootfs" /usr/bin/git config --system init.defaultBranch main

# Slim down: package caches and lists are rebuilt by `apt-get update` in env layers.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/tmp/* \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
printf 'deb %s %s main\n' "$mirror" "$suite" > "$rootfs/etc/apt/sources.list"
