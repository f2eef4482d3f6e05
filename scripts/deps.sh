#!/usr/bin/env bash
# Installs the Debian packages vigil needs (when run as root and something is missing).
set -euo pipefail
pkgs="build-essential cmake pkg-config libopenblas-dev libdnnl-dev libsnappy-dev libkissfft-dev libzip-dev libpcre2-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev dataset-fashion-mnist libopenmpi-dev openmpi-bin"
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends $missing
  else
    echo "vigil needs these Debian packages:$missing (run as root to install them)" >&2
    exit 1
  fi
fi
