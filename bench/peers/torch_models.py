#!/usr/bin/env python3
"""PyTorch peer of bench/bench_models.c: the same models, the same step (forward, loss,
backward, update), timed the same way. Prints one JSON line with median_ms.

  mobilenet: MobileNet v1 as slim lays it out (see bench_models.c): conv 3x3/2 x32, 13
  depthwise separable blocks (depthwise 3x3 + BN + ReLU6, pointwise 1x1 + BN + ReLU6),
  global average pool, 1x1 conv logits; no conv biases, BN without scale (affine bias
  only is not expressible: affine=True, the weight frozen at 1), eps 0.001, momentum
  0.0003; cross-entropy; RMSprop(lr 0.01, alpha 0.9, eps 1.0, momentum 0.9).
"""
import argparse, json, time
import torch
import torch.nn as nn

DEFS = [(1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512), (1, 512),
        (1, 512), (1, 512), (1, 512), (1, 512), (2, 1024), (1, 1024)]


def bn(c):
    b = nn.BatchNorm2d(c, eps=0.001, momentum=0.0003)
    b.weight.requires_grad_(False)  # slim: scale=False
    return b


def mobilenet_v1(classes):
    layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), bn(32), nn.ReLU6()]
    ch = 32
    for s, d in DEFS:
        layers += [nn.Conv2d(ch, ch, 3, s, 1, groups=ch, bias=False), bn(ch), nn.ReLU6(),
                   nn.Conv2d(ch, d, 1, 1, 0, bias=False), bn(d), nn.ReLU6()]
        ch = d
    layers += [nn.AdaptiveAvgPool2d(1), nn.Conv2d(ch, classes, 1), nn.Flatten()]
    return nn.Sequential(*layers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mobilenet")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    classes = 1000
    model = mobilenet_v1(classes)
    # TF's SAME padding for the stride-2 3x3 convolutions pads (0,1) where PyTorch pads
    # (1,1): the same work, so the timing is comparable.
    opt = torch.optim.RMSprop([p for p in model.parameters() if p.requires_grad], lr=0.01, alpha=0.9,
                              eps=1.0, momentum=0.9)
    x = torch.rand(a.batch, 3, a.size, a.size).contiguous(memory_format=torch.channels_last)
    model = model.to(memory_format=torch.channels_last)
    y = torch.randint(0, classes, (a.batch,))
    lossf = nn.CrossEntropyLoss()
    t = []
    for i in range(a.steps + 1):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        if i > 0:
            t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    print(json.dumps({"model": a.model, "threads": a.threads, "batch": a.batch, "median_ms": t[len(t) // 2],
                      "loss": float(loss)}))


if __name__ == "__main__":
    main()
