#!/usr/bin/python3
"""PyTorch DistributedDataParallel (gloo) peer of vigil's bench_allreduce (issue 15).

Usage (Debian's python3-torch under /usr/bin/python3):
    /usr/bin/python3 bench/peers/torch_ddp.py --model mlp --ranks 2 --steps 400
    /usr/bin/python3 bench/peers/torch_ddp.py --model cnn --ranks 1 --steps 40

Starts --ranks processes on this host (torch.multiprocessing, gloo backend over TCP on
127.0.0.1), each with --threads threads, training the same model as bench_allreduce on
its own shard of Fashion-MNIST with a per-rank batch of 64 (MLP 784-256-256-10 + SGD
0.1; CNN conv5x5x32, pool, conv5x5x64, pool, dense 128, dense 10 + Adam 1e-3). DDP
averages the gradients with bucketed allreduce overlapped with backward. Rank 0 prints
one JSON line: median step time and the job's samples/s over the timed steps.

Across hosts (bench/multihost_bench.sh: one process per network namespace):
    ip netns exec HOST /usr/bin/python3 bench/peers/torch_ddp.py --model cnn --ranks 2 \
        --rank R --init-method tcp://10.77.0.1:29517
runs this process only, as rank R of --ranks (GLOO_SOCKET_IFNAME=eth0 picks the link).
"""
import argparse
import gzip
import json
import os
import struct
import time


def cli():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=None, help="timed steps (mlp 400, cnn 40)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--port", type=int, default=29517)
    ap.add_argument("--rank", type=int, default=None, help="with --init-method: this process's rank only")
    ap.add_argument("--init-method", default=None, help="e.g. tcp://10.77.0.1:29517 (one process per host)")
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    return ap.parse_args()


def read_idx(path):
    import numpy as np
    with gzip.open(path, "rb") as fh:
        raw = fh.read()
    (magic,) = struct.unpack_from(">I", raw, 0)
    ndim = magic & 0xFF
    dims = struct.unpack_from(">" + "I" * ndim, raw, 4)
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def worker(rank, opt):
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(opt.threads)
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch import nn
    torch.set_num_threads(opt.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(opt.port)
    if opt.ranks > 1 and opt.init_method:
        dist.init_process_group("gloo", init_method=opt.init_method, rank=rank, world_size=opt.ranks)
    elif opt.ranks > 1:
        dist.init_process_group("gloo", rank=rank, world_size=opt.ranks)
    try:
        x = read_idx(os.path.join(opt.data_dir, "train-images-idx3-ubyte.gz")).astype(np.float32) / 255.0
        y = read_idx(os.path.join(opt.data_dir, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    except OSError:
        rng = np.random.default_rng(1)
        x = rng.random((60000, 28, 28), dtype=np.float32)
        y = rng.integers(0, 10, 60000)
    x = torch.from_numpy(np.ascontiguousarray(x[rank::opt.ranks]))
    y = torch.from_numpy(np.ascontiguousarray(y[rank::opt.ranks]))
    torch.manual_seed(0)
    if opt.model == "mlp":
        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                            nn.Linear(256, 10))
        inp = x.reshape(-1, 784)
    else:
        net = nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                            nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
        inp = x.reshape(-1, 1, 28, 28)
    model = nn.parallel.DistributedDataParallel(net) if opt.ranks > 1 else net
    optim = torch.optim.SGD(model.parameters(), lr=0.1) if opt.model == "mlp" else \
        torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    b = opt.batch
    nb = inp.shape[0] // b
    batches = [(inp[i * b:(i + 1) * b].contiguous(), y[i * b:(i + 1) * b].contiguous()) for i in range(min(nb, 200))]
    steps = opt.steps or (400 if opt.model == "mlp" else 40)
    warm = 30 if opt.model == "mlp" else 5
    times = []
    if opt.ranks > 1:
        dist.barrier()
    t0 = None
    for i in range(-warm, steps):
        xb, yb = batches[(i + warm) % len(batches)]
        if i == 0:
            t0 = time.perf_counter()
        ts = time.perf_counter()
        optim.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optim.step()
        if i >= 0:
            times.append(time.perf_counter() - ts)
    wall = time.perf_counter() - t0
    if opt.ranks > 1:
        dist.barrier()
    if rank == 0:
        times.sort()
        print(json.dumps({"bench": "torch_ddp", "backend": "gloo", "model": opt.model, "ranks": opt.ranks,
                          "threads": opt.threads, "batch_per_rank": b, "steps": steps,
                          "median_step_ms": round(times[len(times) // 2] * 1e3, 3),
                          "samples_per_s": round(steps * b * opt.ranks / wall, 1),
                          "torch": torch.__version__}), flush=True)
    if opt.ranks > 1:
        dist.destroy_process_group()


def main():
    opt = cli()
    if opt.ranks == 1 or opt.init_method:
        worker(opt.rank or 0, opt)
        return
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(opt,), nprocs=opt.ranks, join=True)


if __name__ == "__main__":
    main()
