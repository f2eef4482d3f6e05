#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS_PER_HARNESS] - builds the libFuzzer harnesses (clang,
# ASan + UBSan, CRC checks off in this build only) into build-fuzz/ and runs each one
# for SECONDS_PER_HARNESS seconds (default 60), one after the other, with
# -malloc_limit_mb=64 on inputs up to 64 KB (-max_len=65536). Corpora grow in
# build-fuzz/corpus/<harness>, seeded from fuzz/seeds/<harness> and, when present,
# tests/data. Crashes, leaks, timeouts and oversized allocations fail the script;
# reproducers are left in build-fuzz/artifacts/. Prints executions and coverage per
# harness. Environment: FUZZ_JOBS (parallel build jobs, default 2), FUZZ_ONLY (one
# harness name), FUZZ_NICE (nice level, default 15), FUZZ_PAR (harnesses run at the
# same time, default: the number of CPUs; each is one process, so N CPUs fuzz N
# harnesses for the full SECONDS_PER_HARNESS each).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
jobs="${FUZZ_JOBS:-2}"
nicelvl="${FUZZ_NICE:-15}"
par="${FUZZ_PAR:-$(nproc)}"
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (Debian package clang)" >&2; exit 2; }
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIGIL_FUZZ=ON -DVIGIL_SANITIZE=ON -DBUILD_SHARED_LIBS=OFF \
  -DVIGIL_TESTS=OFF -DVIGIL_TOOLS=OFF -DVIGIL_EXAMPLES=OFF -DVIGIL_BENCH=OFF >/dev/null
nice -n "$nicelvl" cmake --build build-fuzz -j"$jobs" >/dev/null
harnesses="fuzz_sstable fuzz_bundle fuzz_ckpt_state fuzz_events fuzz_idx fuzz_graphdef fuzz_example fuzz_import fuzz_image fuzz_npy fuzz_reader_data fuzz_iterator_state fuzz_flags fuzz_wav fuzz_vocab fuzz_npz fuzz_hparams fuzz_pickle fuzz_cli fuzz_regex"
[ -n "${FUZZ_ONLY:-}" ] && harnesses="$FUZZ_ONLY"
mkdir -p build-fuzz/artifacts
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TMPDIR="$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)" # scratch files of the harnesses
trap 'rm -rf "$TMPDIR"' EXIT
# One harness: corpus, run, one summary line in build-fuzz/<h>.line (rc first).
run_one() {
  local h=$1 corpus="build-fuzz/corpus/$1" log="build-fuzz/$1.log" extra="" rc execs cov
  mkdir -p "$corpus"
  cp -n fuzz/seeds/"$h"/* "$corpus"/ 2>/dev/null || true
  if [ -d tests/data ]; then
    case "$h" in
      fuzz_sstable) find tests/data -name '*.index' -size -64k -exec cp -n {} "$corpus"/ \; ;;
      fuzz_ckpt_state) find tests/data -name 'checkpoint*' -type f -size -64k -exec cp -n {} "$corpus"/ \; ;;
      fuzz_events) find tests/data -name '*tfevents*' -size -64k -exec cp -n {} "$corpus"/ \; ;;
      fuzz_graphdef) find tests/data -name '*.pb' -size -64k | while read -r f; do
                       cp -n "$f" "$corpus/$(echo "$f" | tr / _)"; done ;;
    esac
  fi
  [ "$h" = fuzz_cli ] && extra="-close_fd_mask=3" # usage errors on stderr
  set +e
  nice -n "$nicelvl" build-fuzz/fuzz/"$h" "$corpus" -max_total_time="$secs" -max_len=65536 -malloc_limit_mb=64 \
    -rss_limit_mb=2048 -timeout=10 -artifact_prefix=build-fuzz/artifacts/"$h"- -print_final_stats=1 $extra >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || echo "cov: ?")
  echo "$h: rc=$rc executions=$execs $cov corpus=$(ls "$corpus" | wc -l)" > "build-fuzz/$h.line"
}
# FUZZ_PAR harnesses at a time; a slot frees when any one ends.
running=0
for h in $harnesses; do
  rm -f "build-fuzz/$h.line"
  if [ "$running" -ge "$par" ]; then wait -n || true; running=$((running - 1)); fi
  run_one "$h" &
  running=$((running + 1))
done
wait
fail=0
summary=""
for h in $harnesses; do
  line=$(cat "build-fuzz/$h.line" 2>/dev/null || echo "$h: rc=? (no result)")
  echo "$line"
  summary="$summary$line"$'\n'
  case "$line" in
    *" rc=0 "*) ;;
    *) fail=1
       echo "---- $h failed; tail of build-fuzz/$h.log:" >&2
       tail -40 "build-fuzz/$h.log" >&2 || true ;;
  esac
done
printf '%s' "$summary" > build-fuzz/summary.txt
exit "$fail"
