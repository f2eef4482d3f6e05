#!/usr/bin/env bash
# Installs dependencies (as root), builds vigil and runs the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DVIGIL_WERROR=ON
cmake --build build -j"$(nproc)"
cd build && ctest --output-on-failure -j2
