#!/usr/bin/env bash
# Issue 33's measurements across shaped links (docs/distributed.md, "Scaling model"):
# K hosts are network namespaces on a bridge made by scripts/multihost.sh (tbf-shaped
# veth links, Open MPI over TCP only). For each profile (10gbit, 1gbit) it prints JSON
# lines of bench_allreduce and of the PyTorch DDP (gloo) peer:
#   * a bare MPI_Allreduce over 4 B .. 64 MB between 2 hosts (alpha and beta);
#   * the fused allreduce of the MLP's and the CNN's gradients at 2 and 4 hosts,
#     float32 and fp16 on the wire;
#   * MLP and CNN training at 1 host and 2 hosts (one rank, one compute thread per
#     host, batch 64 per rank): plain (one 64 MB bucket), overlap (--inter 2 and
#     256 KB buckets: buckets reduce while back-propagation goes on), fp16, both;
#   * "plain-yield": plain with Open MPI's mpi_yield_when_idle (a waiting rank gives its
#     core away instead of polling; 4 hosts always run so);
#   * "pair": two 1-rank trainings at once in two hosts, no allreduce: the compute step
#     when two ranks share this machine's cores (the model's T_c at 2 hosts);
#   * DDP: torch_ddp.py at 1 host and one process per host at 2 (init_method tcp://).
# Usage (root): bench/multihost_bench.sh [BUILD_DIR] [ROUNDS] [PROFILES]
#   BUILD_DIR with bench_allreduce (-DVIGIL_BENCH=ON), ROUNDS (1), PROFILES ("10gbit 1gbit").
# MULTIHOST=path/to/multihost.sh (default scripts/multihost.sh). The hosts here are named
# vgb0.. (bridge vgbbr), not multihost.sh's vgh0.., so that a test using the script at
# the same time keeps its own.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
build="$(cd "${1:-build}" && pwd)"
rounds="${2:-1}"
profiles="${3:-10gbit 1gbit}"
mh="${MULTIHOST:-$root/scripts/multihost.sh}"
[ -x "$mh" ] || { echo "multihost_bench: no $mh (set MULTIHOST)" >&2; exit 2; }
py=/usr/bin/python3
tmp="$(mktemp -d)"
sed -e 's/^PREFIX=vgh$/PREFIX=vgb/' -e 's/^BR=vgbr$/BR=vgbbr/' "$mh" >"$tmp/multihost.sh"
sed 's/vgh/vgb/g' "$(dirname "$mh")/multihost-agent.sh" >"$tmp/multihost-agent.sh"
cp "$(dirname "$mh")/multihost-pingpong.c" "$tmp/" 2>/dev/null || true
chmod +x "$tmp/multihost.sh" "$tmp/multihost-agent.sh"
MH="$tmp/multihost.sh"
trap '"$MH" down >/dev/null 2>&1; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
B="$build/bench_allreduce"

tag() { # PROFILE HOSTS CONFIG: prefixes each JSON line with where it ran
  sed -u "s/^{/{\"profile\":\"$1\",\"hosts\":$2,\"config\":\"$3\",/"
}
vrun() { # PROFILE HOSTS CONFIG ARGS... (4 hosts share 2 cores: MPI yields when idle)
  local p="$1" k="$2" c="$3" extra=""
  shift 3
  { [ "$k" -gt 2 ] || [ -n "${YIELD:-}" ]; } && extra="--mca mpi_yield_when_idle 1"
  MULTIHOST_MPIRUN_ARGS="$extra" "$MH" run "$k" --profile "$p" -- "$B" "$@" 2>/dev/null | grep '^{' |
    tag "$p" "$k" "$c"
}
pair() { # PROFILE MODEL: two 1-rank trainings at once, one per host, no allreduce: the
  # compute step when two ranks share this machine's cores (the model's T_c at 2 hosts)
  local p="$1" m="$2"
  "$MH" up 2 --profile "$p" >/dev/null
  ip netns exec vgb1 "$B" --mode train --model "$m" --threads 1 >"$tmp/pair1.out" 2>/dev/null &
  ip netns exec vgb0 "$B" --mode train --model "$m" --threads 1 >"$tmp/pair0.out" 2>/dev/null
  wait
  cat "$tmp/pair0.out" "$tmp/pair1.out" | grep '^{' | tag "$p" 1 pair
  "$MH" down >/dev/null
}
ddp() { # PROFILE HOSTS MODEL
  local p="$1" k="$2" m="$3" i pids=()
  "$MH" up "$k" --profile "$p" >/dev/null
  for ((i = k - 1; i >= 0; i--)); do
    ip netns exec "vgb$i" env GLOO_SOCKET_IFNAME=eth0 "$py" bench/peers/torch_ddp.py --model "$m" --ranks "$k" \
      --rank "$i" --init-method "tcp://10.77.0.1:29517" >"$tmp/ddp$i.out" 2>"$tmp/ddp$i.err" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
  grep '^{' "$tmp/ddp0.out" | tag "$p" "$k" ddp
  "$MH" down >/dev/null
}

echo "{\"host\":\"$(hostname)\",\"nproc\":$(nproc),\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
for r in $(seq "$rounds"); do
  for p in $profiles; do
    vrun "$p" 2 bare --mode sizes --reps 30
    for m in mlp cnn; do
      for k in 2 4; do
        vrun "$p" "$k" fp32 --mode fused --model "$m" --reps 50 --average 1
        vrun "$p" "$k" fp16 --mode fused --model "$m" --reps 50 --average 1 --compression fp16
      done
      # interleaved: 1 host, then 2 hosts in each configuration, then the peer
      vrun "$p" 1 plain --mode train --model "$m" --threads 1
      pair "$p" "$m"
      vrun "$p" 2 plain --mode train --model "$m" --threads 1
      YIELD=1 vrun "$p" 2 plain-yield --mode train --model "$m" --threads 1
      vrun "$p" 2 overlap --mode train --model "$m" --threads 1 --inter 2 --fusion-threshold 262144
      vrun "$p" 2 fp16 --mode train --model "$m" --threads 1 --compression fp16
      vrun "$p" 2 overlap+fp16 --mode train --model "$m" --threads 1 --inter 2 --fusion-threshold 262144 \
        --compression fp16
      if [ -z "${VG_BENCH_NO_PEER:-}" ]; then
        ddp "$p" 1 "$m"
        ddp "$p" 2 "$m"
      fi
    done
  done
done
