#!/usr/bin/env bash
# The main job: train a classifier on Fashion-MNIST under a monitored session, with
# checkpoints, summaries and a progress line; rerunning resumes from the last checkpoint.
# Extra arguments go to `vigil train` (see `build/vigil train --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" --target vigil_cli >/dev/null
exec build/vigil train "$@"
