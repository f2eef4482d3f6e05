#!/usr/bin/env bash
# The MPI fault drill with more kills than CTest runs (issue 15): SIGKILL one rank of
# `mpirun -np 2 vigil train` at random moments KILLS times (default 20); each time the
# job must end within 10 s with a non-zero status, the relaunch resumes from the last
# checkpoint and the global step never goes backwards; the last run must reach
# test_accuracy >= 0.7. Usage: scripts/mpi-faults.sh [KILLS] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-20}"
build="${2:-build}"
[ -x "$build/test_cli_mpi" ] || cmake --build "$build" -j2 --target test_cli_mpi vigil_cli
VG_MPI_KILLS="$kills" "$build/test_cli_mpi"
