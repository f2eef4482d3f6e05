#!/usr/bin/env bash
# Training across hosts (issue 33): `vigil train` (MLP, Fashion-MNIST) on 1 host of one
# rank, then 2 and 4 hosts of one rank each (scripts/multihost.sh, 10gbit profile; 4
# hosts oversubscribe a 2-core machine), the same epochs; the accuracies side by side
# (within 0.5 points of the 1-rank run is the goal), and a check that only rank 0 (host
# vgh0: event files carry the writer's host name) wrote in the checkpoint directory.
# Then the MPI ports examples/tf1/horovod_mnist (STEPS global steps) and ecosystem_mnist
# (its self-test mode) at 2 and 4 hosts. Root only.
#   scripts/multihost-train.sh [BUILD_DIR=build]     EPOCHS (default 2), STEPS (400),
#                                                     HOSTS (default "1 2 4")
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
epochs="${EPOCHS:-2}"
steps="${STEPS:-400}"
mh=scripts/multihost.sh
work="$(mktemp -d /tmp/vg_mhtrain_XXXXXX)"
fail=0
declare -A acc
for k in ${HOSTS:-1 2 4}; do
  ck="$work/ck$k"
  t0=$(date +%s.%N)
  $mh run "$k" -- "$build/vigil" train --epochs "$epochs" --threads 1 --save-checkpoint-steps 200 \
     --checkpoint-dir "$ck" >"$work/train$k.log" 2>&1 || { echo "vigil train on $k hosts failed:"; tail -20 "$work/train$k.log"; fail=1; continue; }
  dt=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
  acc[$k]="$(sed -n 's/^test_accuracy=//p' "$work/train$k.log")"
  writers="$(ls "$ck" | sed -n 's/^events\.out\.tfevents\.[0-9]*\.//p' | sort -u | tr '\n' ' ')"
  sps="$(grep -o 'after it [0-9.]* steps/s ([0-9]* samples/s)' "$work/train$k.log" | tail -1)"
  echo "vigil train, $k host(s) x 1 rank, $epochs epochs: test_accuracy=${acc[$k]} (${dt} s; $sps); event files written by: $writers"
  [ "$k" = 1 ] || [ "$writers" = "vgh0 " ] || { echo "  FAIL: a rank other than 0 wrote events"; fail=1; }
done
if [ -n "${acc[1]:-}" ]; then
  for k in 2 4; do
    [ -n "${acc[$k]:-}" ] || continue
    d=$(awk -v a="${acc[$k]}" -v b="${acc[1]}" 'BEGIN { printf "%.2f", (a - b) * 100 }')
    ok=$(awk -v d="$d" 'BEGIN { print (d <= 0.5 && d >= -0.5) ? "within 0.5 points" : "MORE than 0.5 points off" }')
    echo "  $k hosts vs 1: ${d} points ($ok)"
  done
fi
for k in 1 2 4; do
  ck="$work/hvd$k"
  if $mh run "$k" -- "$build/horovod_mnist" --steps "$steps" --train-limit 8000 --checkpoint-dir "$ck" >"$work/hvd$k.log" 2>&1; then
    echo "horovod_mnist, $k host(s): $(grep -m1 'final loss' "$work/hvd$k.log"), event files by: $(ls "$ck" | sed -n 's/^events\.out\.tfevents\.[0-9]*\.//p' | sort -u | tr '\n' ' ')"
  else
    echo "horovod_mnist on $k hosts failed:"; tail -20 "$work/hvd$k.log"; fail=1
  fi
done
for k in 2 4; do
  workers="$(seq -s, -f '10.77.0.%g:2223' 1 "$k")"
  if $mh run "$k" -- "$build/ecosystem_mnist" --job_name worker --ps_hosts 10.77.0.1:2222 --worker_hosts "$workers" \
       >"$work/eco$k.log" 2>&1; then
    echo "ecosystem_mnist, $k hosts: $(grep -m1 -i 'loss' "$work/eco$k.log" || echo finished)"
  else
    echo "ecosystem_mnist on $k hosts failed:"; tail -20 "$work/eco$k.log"; fail=1
  fi
done
[ "$fail" = 0 ] && rm -rf "$work"
exit "$fail"
