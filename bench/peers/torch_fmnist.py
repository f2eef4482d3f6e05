#!/usr/bin/python3
"""PyTorch peer for vigil's Fashion-MNIST benchmarks (bench_train, bench_fmnist).

Usage (Debian's python3-torch lives under /usr/bin/python3):
    /usr/bin/python3 bench/peers/torch_fmnist.py --model mlp --threads 1 --steps 1000 --epochs 0
    /usr/bin/python3 bench/peers/torch_fmnist.py --model cnn --threads 2 --steps 0 --epochs 1

Models (batch 64 by default):
  mlp  784 -> 256 -> 256 -> 10, ReLU, cross-entropy, SGD (lr 0.1)
  cnn  conv 5x5x32 same, ReLU, maxpool 2, conv 5x5x64 same, ReLU, maxpool 2,
       dense 3136 -> 128, ReLU, dense 10; Adam (lr 1e-3)

--precision bf16 runs forward and loss under torch.cpu.amp.autocast(dtype=torch.bfloat16)
(PyTorch's CPU mixed precision: bfloat16 matmuls and convolutions through its bundled
oneDNN, float32 weights and optimizer), the peer of vigil's `--precision bf16`.

--steps N > 0 times N single training steps (after a warm-up) on batches sliced
beforehand; --epochs E > 0 trains a fresh model E epochs over shuffled data and
evaluates test accuracy after each.  Output: one JSON object on one line, with
"timing" {median_ms, mean_ms, p10_ms, p90_ms, min_ms, steps_per_s, samples_per_s,
gflops_at_median} and/or "training" {test_acc, epoch_s, ...}, plus "peak_rss_mb".

Thread counts go into OMP/OPENBLAS/MKL_NUM_THREADS before torch loads, because
Debian's torch multiplies matrices through the system OpenBLAS, whose pool size
torch.set_num_threads() does not change.
"""
import argparse
import gzip
import json
import os
import resource
import struct
import time

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def cli():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=1, help="epochs of training with evaluation (0 skips)")
    ap.add_argument("--steps", type=int, default=300, help="timed steps (0 skips)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed steps first (mlp 50, cnn 10)")
    ap.add_argument("--blas-threads", type=int, default=None, help="OpenBLAS pool size (default --threads)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=None, help="mlp 0.1 (SGD), cnn 1e-3 (Adam)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                    help="bf16: torch.cpu.amp.autocast(dtype=torch.bfloat16) around forward and loss")
    ap.add_argument("--data-dir", default=DEFAULT_DATA)
    return ap.parse_args()


OPT = cli()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(OPT.threads)
if OPT.blas_threads is not None:
    os.environ["OPENBLAS_NUM_THREADS"] = str(OPT.blas_threads)

import numpy as np  # noqa: E402  (after the thread variables)
import torch  # noqa: E402
from torch import nn  # noqa: E402


def peak_mb():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def read_idx(path):
    """An IDX file of unsigned bytes (gzip'd): 0x0000 08 ndim, ndim big-endian u32 dims, data."""
    with gzip.open(path, "rb") as fh:
        raw = fh.read()
    (magic,) = struct.unpack_from(">I", raw, 0)
    if (magic >> 8) & 0xFF != 0x08:
        raise ValueError(f"{path}: element type 0x{(magic >> 8) & 0xFF:02x} is not ubyte")
    ndim = magic & 0xFF
    dims = struct.unpack_from(">" + "I" * ndim, raw, 4)
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {body.size} bytes of data for dims {dims}")
    return body.reshape(dims)


def dataset(root):
    def x(name):
        return torch.from_numpy(read_idx(os.path.join(root, name)).astype(np.float32) / 255.0)

    def y(name):
        return torch.from_numpy(read_idx(os.path.join(root, name)).astype(np.int64))

    return (x("train-images-idx3-ubyte.gz"), y("train-labels-idx1-ubyte.gz"),
            x("t10k-images-idx3-ubyte.gz"), y("t10k-labels-idx1-ubyte.gz"))


def build(kind, lr):
    torch.manual_seed(OPT.seed)
    if kind == "mlp":
        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                            nn.Linear(256, 10))
        return net, torch.optim.SGD(net.parameters(), lr=0.1 if lr is None else lr)
    net = nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    return net, torch.optim.Adam(net.parameters(), lr=1e-3 if lr is None else lr)


def step_flops(kind, batch):
    """2 x multiply-adds of one step: forward, weight gradients, input gradients (not layer 1's)."""
    if kind == "mlp":
        layers = [784 * 256, 256 * 256, 256 * 10]
    else:
        layers = [28 * 28 * 32 * 25, 14 * 14 * 64 * 25 * 32, 3136 * 128, 128 * 10]
    return 2 * batch * (2 * sum(layers) + sum(layers[1:]))


def as_input(x, kind):
    return x.reshape(-1, 784) if kind == "mlp" else x.reshape(-1, 1, 28, 28)


def accuracy(net, x, y):
    net.eval()
    hits = 0
    with torch.no_grad():
        for i in range(0, x.shape[0], 1000):
            hits += int((net(as_input(x[i:i + 1000], OPT.model)).argmax(1) == y[i:i + 1000]).sum())
    net.train()
    return hits / x.shape[0]


def train_step(net, opt, loss_fn, xb, yb):
    opt.zero_grad(set_to_none=True)
    if OPT.precision == "bf16":
        with torch.cpu.amp.autocast(dtype=torch.bfloat16):
            loss = loss_fn(net(xb), yb)
    else:
        loss = loss_fn(net(xb), yb)
    loss.backward()
    opt.step()
    return loss


def timing(xtr, ytr, loss_fn):
    net, opt = build(OPT.model, OPT.lr)
    warm = OPT.warmup if OPT.warmup is not None else (50 if OPT.model == "mlp" else 10)
    b = OPT.batch
    order = torch.randperm(xtr.shape[0], generator=torch.Generator().manual_seed(OPT.seed + 1))
    pre = []
    for i in range(min(xtr.shape[0] // b, 256)):
        idx = order[i * b:(i + 1) * b]
        pre.append((as_input(xtr[idx], OPT.model).contiguous(), ytr[idx].contiguous()))
    ms = []
    loss = None
    for s in range(warm + OPT.steps):
        xb, yb = pre[s % len(pre)]
        t0 = time.perf_counter()
        loss = train_step(net, opt, loss_fn, xb, yb)
        if s >= warm:
            ms.append((time.perf_counter() - t0) * 1e3)
    loss.item()
    ms = np.asarray(ms)
    med = float(np.median(ms))
    return {
        "warmup_steps": warm, "steps": OPT.steps, "median_ms": round(med, 4),
        "mean_ms": round(float(ms.mean()), 4), "p10_ms": round(float(np.percentile(ms, 10)), 4),
        "p90_ms": round(float(np.percentile(ms, 90)), 4), "min_ms": round(float(ms.min()), 4),
        "steps_per_s": round(1e3 / med, 2), "samples_per_s": round(b * 1e3 / med, 1),
        "gflops_at_median": round(step_flops(OPT.model, b) / (med * 1e-3) * 1e-9, 2),
    }


def training(xtr, ytr, xte, yte, loss_fn):
    net, opt = build(OPT.model, OPT.lr)
    gen = torch.Generator().manual_seed(OPT.seed + 2)
    b = OPT.batch
    per_epoch = xtr.shape[0] // b  # the partial last batch is dropped
    accs, secs = [], []
    loss = None
    for _ in range(OPT.epochs):
        t0 = time.perf_counter()
        order = torch.randperm(xtr.shape[0], generator=gen)
        for i in range(per_epoch):
            idx = order[i * b:(i + 1) * b]
            loss = train_step(net, opt, loss_fn, as_input(xtr[idx], OPT.model), ytr[idx])
        secs.append(round(time.perf_counter() - t0, 3))
        accs.append(round(accuracy(net, xte, yte), 4))
    return {"epochs": OPT.epochs, "steps_per_epoch": per_epoch, "test_acc": accs, "epoch_s": secs,
            "final_train_loss": round(float(loss.item()), 4)}


def main():
    torch.set_num_threads(OPT.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    caps = [line.split(":", 1)[1].strip() for line in torch.__config__.show().splitlines()
            if "CPU capability usage" in line]
    out = {
        "impl": "pytorch", "torch_version": torch.__version__, "model": OPT.model, "threads": OPT.threads,
        "torch_num_threads": torch.get_num_threads(),
        "openblas_num_threads": int(os.environ["OPENBLAS_NUM_THREADS"]), "seed": OPT.seed,
        "batch": OPT.batch, "precision": OPT.precision, "mkldnn": torch.backends.mkldnn.is_available(),
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
        "openblas_l2_size": os.environ.get("OPENBLAS_L2_SIZE"),
        "flops_per_step": step_flops(OPT.model, OPT.batch),
        "aten_cpu_capability": caps[0] if caps else None, "rss_after_import_mb": peak_mb(),
    }
    t0 = time.perf_counter()
    xtr, ytr, xte, yte = dataset(OPT.data_dir)
    out["load_s"] = round(time.perf_counter() - t0, 3)
    out["n_train"], out["n_test"] = int(xtr.shape[0]), int(xte.shape[0])
    out["rss_after_load_mb"] = peak_mb()
    loss_fn = nn.CrossEntropyLoss()
    if OPT.steps > 0:
        out["timing"] = timing(xtr, ytr, loss_fn)
    if OPT.epochs > 0:
        out["training"] = training(xtr, ytr, xte, yte, loss_fn)
    out["peak_rss_mb"] = peak_mb()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
