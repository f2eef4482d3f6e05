#!/bin/sh
# blas_compare.sh [rounds] - build bench/blas_compare.c once per library and run the
# builds interleaved, `rounds` times (default 3), all single-threaded.
#
# Needs Debian's libopenblas-dev (the system BLAS), libblis-dev (its serial build,
# libblis-serial-dev, is linked by full path so -lopenblas and the libblas.so.3
# alternative stay OpenBLAS) and libdnnl-dev (oneDNN 2.6, OpenMP runtime).
#
# Output: one JSON line per library variant per round (openblas, blis, dnnl,
# dnnl_matmul), then one summary line: per variant, the median over rounds of each
# workload's GFLOP/s and of each conv's step time. Per-shape medians are on stderr.
set -eu
ROUNDS=${1:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${BLAS_COMPARE_DIR:-/tmp/vigil_blas_compare}
mkdir -p "$OUT"
ML=/usr/lib/x86_64-linux-gnu
CC=${CC:-gcc}
CFLAGS="-std=c11 -O2 -Wall -Wextra -Wno-unused-parameter"

$CC $CFLAGS -DUSE_OPENBLAS -o "$OUT/bc_openblas" "$HERE/blas_compare.c" -lopenblas -lm
$CC $CFLAGS -DUSE_BLIS -isystem /usr/include/x86_64-linux-gnu/blis-serial -o "$OUT/bc_blis" "$HERE/blas_compare.c" \
    "$ML/blis-serial/libblis.so.4" -Wl,-rpath,"$ML/blis-serial" -lpthread -lm
$CC $CFLAGS -DUSE_DNNL -fopenmp -o "$OUT/bc_dnnl" "$HERE/blas_compare.c" -ldnnl -lm

# One thread everywhere (BLIS serial has none; OpenBLAS and OpenMP also set in code).
export OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1 OMP_NUM_THREADS=1
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE 2>/dev/null || true

: >"$OUT/results.jsonl"
r=0
while [ "$r" -lt "$ROUNDS" ]; do
    # rotate the order each round so drift on a noisy machine spreads evenly
    case $((r % 3)) in
    0) order="openblas blis dnnl" ;;
    1) order="blis dnnl openblas" ;;
    *) order="dnnl openblas blis" ;;
    esac
    for lib in $order; do
        "$OUT/bc_$lib" | tee -a "$OUT/results.jsonl"
    done
    r=$((r + 1))
done

python3 - "$OUT/results.jsonl" <<'EOF'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    runs.setdefault(d["lib"], []).append(d)
med = statistics.median
summary = {"rounds": max(len(v) for v in runs.values()), "gflops": {}, "conv_step_us": {}}
for lib, rs in runs.items():
    summary["gflops"][lib] = {w: round(med(r["workloads"][w]["gflops"] for r in rs), 2)
                              for w in rs[0]["workloads"]}
    if "conv" in rs[0]:
        for k in rs[0]["conv"]:
            summary["conv_step_us"].setdefault(k, {})
            for part in ("fwd_us", "bwd_filter_us", "bwd_input_us", "step_us"):
                summary["conv_step_us"][k][lib + ":" + part] = round(med(r["conv"][k][part] for r in rs), 1)
# per-shape table on stderr
libs = list(runs)
print("%-22s" % "shape (median GFLOP/s)" + "".join("%13s" % l for l in libs), file=sys.stderr)
for s in runs[libs[0]][0]["shapes"]:
    print("%-22s" % s + "".join("%13.2f" % med(r["shapes"][s]["gflops"] for r in runs[l]) for l in libs),
          file=sys.stderr)
print(json.dumps({"summary": summary}))
EOF
