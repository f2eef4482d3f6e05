#!/usr/bin/python3
"""The alpha-beta scaling model of docs/distributed.md ("Scaling model"), fitted to
bench/multihost_bench.sh's JSON lines and checked against them.

Usage: bench/multihost_bench.sh build 1 > m.jsonl; bench/scaling_model.py m.jsonl [more.jsonl]
       bench/scaling_model.py --extrapolate      (64 and 1,024 ranks at 25 Gbit/s)

Model. A ring allreduce of S bytes over N ranks:
    T_ring(N, S) = 2 (N - 1) alpha + 2 (N - 1) / N * S / B
alpha and B are taken per profile from the bare MPI_Allreduce between 2 hosts (see
fit(); every size is listed with the model's time beside it). fp16 halves S. A step is
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
    """alpha = half the 2-host allreduce of 4 B (2 alpha: one message each way);
    B = the best S / (T - 2 alpha) over sizes of 256 KB and more, each size's best round
    (the link's rate when no stall hits: tbf-shaped TCP stalls some transfers by tens of
    ms, see the doc)."""
    by = {}
    for r in rows:
        if r.get("profile") == profile and r.get("bench") == "mpi_allreduce_size":
            by.setdefault(r["bytes"], []).append(r["median_ms"] * 1e-3)
    alpha = med(by[min(by)]) / 2
    # sizes past tbf's 128 KB bucket (smaller ones pass unshaped), best round of each
    bw = max(s / (min(t) - 2 * alpha) for s, t in by.items() if s >= (256 << 10))
    return alpha, bw, by


def t_ring(n, s, alpha, bw):
    return 2 * (n - 1) * alpha + 2 * (n - 1) / n * s / bw


def extrapolate():
    """64 and 1,024 ranks on 25 Gbit/s: every combination of fp16 (S / 2 on the wire
    plus two conversions at 2 G elements/s), buckets (1: no overlap; 4: overlap, up to
    2/3 of T_c hidden, 4 rings' latencies), hierarchical (G = 8 ranks per node: the ring
    over N / 8 leaders plus a reduce and a broadcast of S at 10 GB/s in the node); the
    best one and the plain default (flat, one bucket, float32) side by side."""
    bw = 3.0e9  # 25 Gbit/s at the 97% of line rate TCP reached on the 10gbit profile
    models = (("MLP, 1 core/rank", 1077288, 0.457e-3), ("CNN, 1 core/rank", 1819688, 23.7e-3),
              ("CNN, 16 cores/rank", 1819688, 1.5e-3), ("100M params, 1 core/rank", 400e6, 0.21))
    print("| model | ranks | alpha | plain: T_comm, efficiency | best: settings, T_comm, efficiency |")
    print("| --- | --- | --- | --- | --- |")
    for alpha in (25e-6, 3.2e-6):
        for name, size, tc in models:
            for n in (64, 1024):
                res = []
                for fp16 in (False, True):
                    for nb in (1, 4):
                        for g in (1, 8):
                            m = n // g
                            s = size * (0.5 if fp16 else 1)
                            t = nb * 2 * (m - 1) * alpha + 2 * (m - 1) / m * s / bw
                            if g > 1:
                                t += 2 * s / 10e9
                            if fp16:
                                t += 2 * (size / 4) / 2e9
                            h = 2 / 3 if nb > 1 else 0
                            eff = tc / (tc + max(0.0, t - h * tc))
                            res.append((eff, fp16, nb, g, t))
                plain = [r for r in res if not r[1] and r[2] == 1 and r[3] == 1][0]
                best = max(res, key=lambda r: (round(r[0], 3), -r[4]))
                st = ", ".join(x for x in ("fp16" if best[1] else "", "overlap (4 buckets)" if best[2] > 1 else "",
                                           "hierarchical 8/node" if best[3] > 1 else "") if x) or "plain"
                print(f"| {name} | {n} | {alpha * 1e6:.1f} us | {plain[4] * 1e3:.2f} ms, {plain[0]:.2f} | "
                      f"{st}: {best[4] * 1e3:.2f} ms, {best[0]:.2f} |")


def main():
    if sys.argv[1:] == ["--extrapolate"]:
        extrapolate()
        return
    rows = load(sys.argv[1:])
    S = {"mlp": 1077288, "cnn": 1819688}
    for prof in sorted({r["profile"] for r in rows}):
        alpha, bw, by = fit(rows, prof)
        print(f"## {prof}: alpha = {alpha * 1e6:.1f} us, B = {bw / 1e9:.3f} GB/s")
        print("   bare allreduce, 2 hosts, median [rounds] (model): " +
              ", ".join(f"{b >> 10} KB {med(t) * 1e3:.2f} ms [{' '.join(f'{x * 1e3:.1f}' for x in t)}] "
                        f"({t_ring(2, b, alpha, bw) * 1e3:.2f})" for b, t in sorted(by.items()) if b >= 4096))
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
            for cfg in ("plain", "plain-yield", "overlap", "fp16", "overlap+fp16"):
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
