#!/usr/bin/env bash
# Runs the kernel test suites of a build under QEMU's user-mode emulator as two other
# CPUs (issue 10: "the binary must run on any x86-64-v2 machine and use AVX-512 where
# present"):
#   Nehalem     x86-64-v2, no AVX: the baseline clones of the vectorised loops, oneDNN's
#               SSE4.1 kernels, OpenBLAS's Nehalem kernels; an AVX instruction outside
#               a runtime check dies with SIGILL here;
#   SandyBridge AVX without FMA or AVX2: the baseline clones again, oneDNN's AVX
#               kernels, OpenBLAS's Sandybridge kernels;
#   Haswell-v4  AVX2 + FMA, no AVX-512: the x86-64-v3 clones, vigil's AVX2 direct
#               convolutions (Winograd is off), oneDNN's AVX2 kernels.
# A machine with AVX-512 runs none of these natively. Each suite must pass as it does
# natively. The suites run with VIGIL_TEST_EMULATED=1 (tests/test_util.h tu_emulated):
# they skip 2-thread repeats of kernels already run at 1 thread, whose emulated FMAs
# made test_backend alone take 8 minutes as Haswell-v4. Needs qemu-user (Debian: apt-get install qemu-user, 7.2 or later for AVX2).
# Usage: scripts/isa-test.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
command -v qemu-x86_64 > /dev/null || { echo "isa-test: qemu-x86_64 not found (apt-get install qemu-user)" >&2; exit 2; }
# the suites of the kernels (math, nn, conv, rnn, optimizers, data vectorisation, half,
# crc32c, layers, losses, metrics, backends, the fused element-wise / matmul-sum kernels,
# softmax rows, L2Loss, the DNC kernels); others exercise no ISA-specific code
suites=$(cd "$build" && ls | grep -E '^test_(math_|nn_|conv_|rnn|optimizer|data_vectorize|half|io_crc32c|batch_norm|losses|layers|core_tensor|backend|image_ops|array_|einsum|linalg|matrix_diag|random_ops|moving_averages|ema|index_ext|metrics|train_lib|dnc_addressing|dnc_kernels|fusion_|softmax_|l2loss)' | grep -v '\.' || true)
[ -n "$suites" ] || { echo "isa-test: no test binaries in $build (build it first)" >&2; exit 2; }
logdir=$(mktemp -d)
# One CPU model's pass over the suites; its report goes to $logdir/$cpu.report, and
# $logdir/$cpu.failed exists when a suite failed.
run_cpu() {
  local cpu=$1 t start
  for t in $suites; do
    start=$(date +%s)
    # TCG warns about CPU model features it lacks (pcid, x2apic, ...): not instructions
    if (cd "$build" && VIGIL_TEST_EMULATED=1 timeout 900 qemu-x86_64 -cpu "$cpu" "./$t") > "$logdir/$cpu.$t.log" 2>&1; then
      echo "isa-test: $cpu $t ok ($(( $(date +%s) - start )) s)"
    else
      echo "isa-test: $cpu $t FAILED:"
      grep -v "TCG doesn't support requested feature" "$logdir/$cpu.$t.log" | grep -v '^ok ' | tail -30 || true
      touch "$logdir/$cpu.failed"
    fi
  done > "$logdir/$cpu.report"
}
cpus="Nehalem SandyBridge Haswell-v4"
# the three passes side by side (each suite is mostly one emulated thread)
for cpu in $cpus; do run_cpu "$cpu" & done
wait
fail=0
for cpu in $cpus; do
  cat "$logdir/$cpu.report"
  [ -e "$logdir/$cpu.failed" ] && fail=1
done
rm -rf "$logdir"
[ "$fail" = 0 ] && echo "isa-test: every suite passed as Nehalem, SandyBridge and Haswell-v4"
exit "$fail"
