#!/usr/bin/python3
"""The alpha-beta scaling model of docs/distributed.md ("Scaling model"), fitted to
bench/multihost_bench.sh's JSON lines and checked against them.

Usage: bench/multihost_bench.sh build 1 > m.jsonl; bench/scaling_model.py m.jsonl

Model. A ring allreduce of S bytes over N ranks:
    T_ring(N, S) = 2 (N - 1) alpha + 2 (N - 1) / N * S / B
alpha and B are fitted per profile (least squares on T = 2 alpha + S / B) to the bare
MPI_Allreduce between 2 hosts of 4 B .. 1 MB (the buckets' sizes; larger messages
through tbf are reported apart). fp16 halves S. A step is
    T_step = T_c + max(0, T_comm - h T_c)
with T_c the compute step with the machine shared as at 2 hosts (the "pair" control:
two 1-rank trainings at once), T_comm the fused allreduce predicted for S, and h the
hidden fraction: 0 here (2 cores, no idle core for the communication thread: see the
doc), 2/3 where a spare core exists. Medians everywhere (the machine is shared)."""
import json
import statistics
import sys


def load(paths):
    rows = []
    for p in paths:
        for line in open(p):
            line = line.strip()
            if line.startswith("{") and '"profile"' in line:
                rows.append(json.loads(line))
    return rows


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fit(rows, profile):
    pts = [(r["bytes"], r["median_ms"] * 1e-3) for r in rows
           if r.get("profile") == profile and r.get("bench") == "mpi_allreduce_size" and r["bytes"] <= (1 << 20)]
    by = {}
    for s, t in pts:
        by.setdefault(s, []).append(t)
    xs = sorted(by)
    ts = [med(by[s]) for s in xs]
    # T = 2 alpha + S * (1 / B): ordinary least squares in (1, S)
    n = len(xs)
    mx, mt = sum(xs) / n, sum(ts) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (t - mt) for x, t in zip(xs, ts)) / sxx
    icpt = mt - slope * mx
    alpha = max(icpt / 2, min(ts) / 2 if ts else 0)
    return alpha, 1 / slope


def t_ring(n, s, alpha, bw):
    return 2 * (n - 1) * alpha + 2 * (n - 1) / n * s / bw


def main():
    rows = load(sys.argv[1:])
    S = {"mlp": 1077288, "cnn": 1819688}
    for prof in sorted({r["profile"] for r in rows}):
        alpha, bw = fit(rows, prof)
        print(f"## {prof}: alpha = {alpha * 1e6:.1f} us, B = {bw / 1e9:.3f} GB/s (fit on 4 B .. 1 MB)")
        big = [(r["bytes"], r["median_ms"]) for r in rows if r.get("profile") == prof and
               r.get("bench") == "mpi_allreduce_size" and r["bytes"] > (1 << 20)]
        if big:
            print("   larger messages: " + ", ".join(f"{b >> 20} MB {t:.1f} ms (model {t_ring(2, b, alpha, bw) * 1e3:.1f})"
                                              for b, t in big))
        print("| model | hosts | wire | allreduce predicted | measured | error |")
        print("| --- | --- | --- | --- | --- | --- |")
        for m in ("mlp", "cnn"):
            for k in (2, 4):
                for c in ("fp32", "fp16"):
                    ms = [r["fused_median_ms"] for r in rows if r.get("profile") == prof and r.get("config") == c and
                          r.get("model") == m and r.get("hosts") == k and r.get("bench") == "fused_allreduce"]
                    if not ms:
                        continue
                    p = t_ring(k, S[m] * (0.5 if c == "fp16" else 1), alpha, bw) * 1e3
                    print(f"| {m} | {k} | {c} | {p:.2f} ms | {med(ms):.2f} ms | {(med(ms) - p) / med(ms) * 100:+.0f}% |")
        print()
        print("| model | config | T_c (pair) | predicted step | measured step | error | samples/s (median step) | efficiency |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for m in ("mlp", "cnn"):
            def sel(cfg, hosts):
                return [r for r in rows if r.get("profile") == prof and r.get("model") == m and
                        r.get("config") == cfg and r.get("hosts") == hosts and r.get("bench") in ("dist_train", "torch_ddp")]
            one = sel("plain", 1)
            pair = sel("pair", 1)
            if not one or not pair:
                continue
            t1 = med([r["median_step_ms"] for r in one])
            tc = med([r["median_step_ms"] for r in pair])
            sps1 = 64 / (t1 * 1e-3)
            print(f"| {m} | 1 host | - | - | {t1:.2f} ms | - | {sps1:.0f} | - |")
            for cfg in ("plain", "overlap", "fp16", "overlap+fp16"):
                rs = sel(cfg, 2)
                if not rs:
                    continue
                t2 = med([r["median_step_ms"] for r in rs])
                s = S[m] * (0.5 if "fp16" in cfg else 1)
                p = tc + t_ring(2, s, alpha, bw) * 1e3
                sps2 = 2 * 64 / (t2 * 1e-3)
                print(f"| {m} | 2 hosts {cfg} | {tc:.2f} ms | {p:.2f} ms | {t2:.2f} ms | "
                      f"{(t2 - p) / t2 * 100:+.0f}% | {sps2:.0f} | {sps2 / (2 * sps1):.2f} |")
            d1, d2 = sel("ddp", 1), sel("ddp", 2)
            if d1 and d2:
                a, b = med([r["median_step_ms"] for r in d1]), med([r["median_step_ms"] for r in d2])
                print(f"| {m} | DDP gloo 1 host / 2 hosts | - | - | {a:.2f} / {b:.2f} ms | - | "
                      f"{64 / (a * 1e-3):.0f} / {128 / (b * 1e-3):.0f} | {(128 / b) / (2 * 64 / a):.2f} |")
        print()


if __name__ == "__main__":
    main()
