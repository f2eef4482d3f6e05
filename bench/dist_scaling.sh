#!/usr/bin/env bash
# Issue 15's benchmark set, one JSON line each, in one run: vigil 1 rank x 1 thread vs
# 2 ranks x 1 thread (MLP, CNN), the PyTorch DDP gloo peer the same way, and the fused
# allreduce vs a bare MPI_Allreduce. Usage: bench/dist_scaling.sh [BUILD_DIR] [ROUNDS]
set -uo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
rounds="${2:-1}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
echo "{\"host\":\"$(hostname)\",\"nproc\":$(nproc),\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
for r in $(seq "$rounds"); do
  for m in mlp cnn; do
    "$build/bench_allreduce" --mode train --model "$m"
    mpirun -np 2 --bind-to none "$build/bench_allreduce" --mode train --model "$m"
    if [ -z "${VG_BENCH_NO_PEER:-}" ]; then
      /usr/bin/python3 bench/peers/torch_ddp.py --model "$m" --ranks 1
      /usr/bin/python3 bench/peers/torch_ddp.py --model "$m" --ranks 2
    fi
    mpirun -np 2 --bind-to none "$build/bench_allreduce" --mode fused --model "$m" --average 0
    mpirun -np 2 --bind-to none "$build/bench_allreduce" --mode fused --model "$m" --average 1
  done
done
