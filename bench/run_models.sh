#!/bin/sh
# run_models.sh - issue 30's model suite in one command: every model of bench_models at 1
# and 2 threads, vigil and its peers (PyTorch, libtorch) in the same run, then the table
# that opens bench/README.md (markdown, on stdout) and the JSON lines (in OUT.jsonl).
#
# Usage: bench/run_models.sh [BUILD_DIR] [ROUNDS] [STEPS] [OUT]
#   BUILD_DIR  the build with benches (default build); ROUNDS (default 3) and STEPS (default 5)
#   are bench_models' --rounds and --steps; OUT (default models) names OUT.jsonl.
# Set MODELS="resnet dnc" to run some of them, THREADS="1" for one thread count, PROFILE=1 to
# add each model's census at 1 thread (on stderr, into OUT.census.txt), BF16=1 to add the
# bfloat16 columns (vigil's mixed-precision rewrite and PyTorch's bfloat16 autocast, timed in
# the same rounds; issue 34).
set -eu
BUILD=${1:-build}
ROUNDS=${2:-3}
STEPS=${3:-5}
OUT=${4:-models}
MODELS=${MODELS:-"mobilenet cifar10 resnet ptb_lm graph_net dnc"}
THREADS=${THREADS:-"1 2"}
BIN="$BUILD/bench_models"
[ -x "$BIN" ] || { echo "run_models.sh: $BIN not built (configure with -DVIGIL_BENCH=ON)" >&2; exit 2; }
: > "$OUT.jsonl"
for m in $MODELS; do
    for t in $THREADS; do
        echo "run_models.sh: $m, $t thread(s)" >&2
        if [ "${BF16:-0}" = 1 ]; then PREC="--precision bf16"; else PREC=""; fi
        # shellcheck disable=SC2086
        "$BIN" --model "$m" --threads "$t" --rounds "$ROUNDS" --steps "$STEPS" $PREC 2>/dev/null >> "$OUT.jsonl"
    done
    if [ "${PROFILE:-0}" = 1 ]; then
        echo "== $m" >> "$OUT.census.txt"
        "$BIN" --model "$m" --threads 1 --rounds 1 --steps "$STEPS" --no-peer --profile 2>> "$OUT.census.txt" >/dev/null
    fi
done
CPU=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
python3 - "$OUT.jsonl" "$CPU" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
one = {r["model"]: r["vigil_median_ms"] for r in rows if r["threads"] == 1}
print("CPU: %s; vigil's backend: %s" % (sys.argv[2], rows[0]["backend"] if rows else "?"))
print()
bf = any("bf16_median_ms" in r for r in rows)
extra = " vigil bf16 ms | bf16 / float32 | PyTorch bf16 ms | vigil bf16 / PyTorch bf16 |" if bf else ""
print("| model | threads | vigil ms | PyTorch ms | libtorch ms | vigil / PyTorch | vigil / libtorch | 2-thread speed-up |" + extra)
print("| --- | --- | --- | --- | --- | --- | --- | --- |" + (" --- | --- | --- | --- |" if bf else ""))
f = lambda v: "%.3g" % v if v >= 0 else "-"
for r in rows:
    up = ""
    if r["threads"] > 1 and r["model"] in one:
        up = "%.2fx" % (one[r["model"]] / r["vigil_median_ms"])
    tail = ""
    if bf:
        tail = " %s | %s | %s | %s |" % (f(r.get("bf16_median_ms", -1)), f(r.get("bf16_over_f32", -1)),
                                          f(r.get("pytorch_bf16_median_ms", -1)), f(r.get("bf16_ratio_pytorch_bf16", -1)))
    print("| %s | %d | %s | %s | %s | %s | %s | %s |" % (r["model"], r["threads"], f(r["vigil_median_ms"]),
          f(r["pytorch_median_ms"]), f(r["libtorch_median_ms"]), f(r["ratio_pytorch"]), f(r["ratio_libtorch"]), up) + tail)
PY
