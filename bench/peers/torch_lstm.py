#!/usr/bin/python3
"""PyTorch peer of bench/bench_lstm.c: torch.nn.LSTM(28, 128) over 28 time steps,
batch 64 (time-major input [28, 64, 28]), the last step's h through Linear(128, 10),
cross-entropy, Adam (lr 1e-3); times forward + backward + optimizer step.

Usage: /usr/bin/python3 bench/peers/torch_lstm.py --threads 1 --steps 200
Prints one JSON line: {"threads", "median_ms", "mean_ms", "p10_ms", "p90_ms", "steps"}.
Thread counts go into OMP/OPENBLAS/MKL_NUM_THREADS before torch loads (Debian's torch
multiplies through the system OpenBLAS) and into torch.set_num_threads.
"""
import argparse
import json
import os
import time

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--steps", type=int, default=200)
ap.add_argument("--warmup", type=int, default=20)
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--time", type=int, default=28)
ap.add_argument("--input", type=int, default=28)
ap.add_argument("--units", type=int, default=128)
OPT = ap.parse_args()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(OPT.threads)

import torch  # noqa: E402
from torch import nn  # noqa: E402

torch.set_num_threads(OPT.threads)
torch.manual_seed(0)
lstm = nn.LSTM(OPT.input, OPT.units)
dense = nn.Linear(OPT.units, 10)
params = list(lstm.parameters()) + list(dense.parameters())
opt = torch.optim.Adam(params, lr=1e-3)
lossf = nn.CrossEntropyLoss()
xs = [torch.rand(OPT.time, OPT.batch, OPT.input) for _ in range(16)]
ys = [torch.randint(0, 10, (OPT.batch,)) for _ in range(16)]


def step(k):
    opt.zero_grad()
    out, _ = lstm(xs[k % 16])
    loss = lossf(dense(out[-1]), ys[k % 16])
    loss.backward()
    opt.step()


for k in range(OPT.warmup):
    step(k)
ts = []
for k in range(OPT.steps):
    t0 = time.perf_counter()
    step(k)
    ts.append((time.perf_counter() - t0) * 1e3)
ts.sort()
n = len(ts)
print(json.dumps({"threads": OPT.threads, "median_ms": ts[n // 2], "mean_ms": sum(ts) / n,
                  "p10_ms": ts[n // 10], "p90_ms": ts[(9 * n) // 10], "steps": n}))
