#!/usr/bin/env bash
# Builds vigil (Release with debug info) and runs the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DVIGIL_WERROR=ON
cmake --build build -j"$(nproc)"
cd build && ctest --output-on-failure -j2
