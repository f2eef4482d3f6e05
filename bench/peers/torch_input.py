#!/usr/bin/env python3
"""torch_input.py - the PyTorch DataLoader peer of bench_input: the same TFRecord file of
Fashion-MNIST tf.train.Examples (image_raw: 784 bytes, label: int64), read into memory,
each record's Example decoded in Python (a minimal protobuf wire-format reader; no
TensorFlow), image -> float32 / 255, DataLoader(batch_size=64, shuffle=True,
drop_last=True, num_workers=W). Prints one JSON line with batches/s for each W.

usage: torch_input.py PATH [--seconds S] [--workers 0,1]
"""
import json
import struct
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


def read_records(path):
    recs = []
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        pos += 12
        recs.append(data[pos:pos + n])
        pos += n + 4
    return recs


def varint(b, p):
    r = s = 0
    while True:
        c = b[p]
        p += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, p


def fields(b):
    """(field number, wire type, value) of a message; value: int or bytes."""
    p = 0
    while p < len(b):
        k, p = varint(b, p)
        wt = k & 7
        if wt == 0:
            v, p = varint(b, p)
        elif wt == 2:
            n, p = varint(b, p)
            v = b[p:p + n]
            p += n
        elif wt == 5:
            v = b[p:p + 4]
            p += 4
        elif wt == 1:
            v = b[p:p + 8]
            p += 8
        else:
            raise ValueError("bad wire type")
        yield k >> 3, wt, v


def parse_example(rec):
    """Example{features{feature map<string, Feature>}} -> (image bytes, label)."""
    img = lab = None
    for f, _, features in fields(rec):
        if f != 1:
            continue
        for f2, _, entry in fields(features):
            if f2 != 1:
                continue
            key = val = None
            for f3, _, v in fields(entry):
                if f3 == 1:
                    key = v
                elif f3 == 2:
                    val = v
            for kind, _, lst in fields(val):
                if key == b"image_raw" and kind == 1:  # BytesList
                    for _, _, x in fields(lst):
                        img = x
                elif key == b"label" and kind == 3:  # Int64List (packed or not)
                    for _, wt, x in fields(lst):
                        lab = varint(x, 0)[0] if wt == 2 else x
    return img, lab


class Records(Dataset):
    def __init__(self, recs):
        self.recs = recs

    def __len__(self):
        return len(self.recs)

    def __getitem__(self, i):
        img, lab = parse_example(self.recs[i])
        x = torch.frombuffer(bytearray(img), dtype=torch.uint8).to(torch.float32).div_(255.0)
        return x, lab


def rate(recs, workers, seconds):
    dl = DataLoader(Records(recs), batch_size=64, shuffle=True, drop_last=True, num_workers=workers)
    n, t0, warm = 0, None, 20
    while True:
        for _ in dl:
            if warm:
                warm -= 1
                if not warm:
                    t0 = time.perf_counter()
                continue
            n += 1
            if time.perf_counter() - t0 >= seconds:
                return n / (time.perf_counter() - t0)


def main():
    path = sys.argv[1]
    seconds, workers = 3.0, [0, 1]
    a = sys.argv[2:]
    for i, v in enumerate(a):
        if v == "--seconds":
            seconds = float(a[i + 1])
        if v == "--workers":
            workers = [int(w) for w in a[i + 1].split(",")]
    torch.set_num_threads(1)
    recs = read_records(path)
    out = {"bench": "torch_dataloader", "records": len(recs), "torch": torch.__version__}
    for w in workers:
        out["workers%d_batches_per_s" % w] = round(rate(recs, w, seconds), 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
