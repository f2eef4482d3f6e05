#!/usr/bin/env python3
"""PyTorch peer of bench/bench_models.c: the same models, the same step (forward, loss,
backward, update), timed the same way. Prints one JSON line with median_ms.

  mobilenet: MobileNet v1 as slim lays it out (see bench_models.c): conv 3x3/2 x32, 13
  depthwise separable blocks (depthwise 3x3 + BN + ReLU6, pointwise 1x1 + BN + ReLU6),
  global average pool, 1x1 conv logits; no conv biases, BN without scale (affine bias
  only is not expressible: affine=True, the weight frozen at 1), eps 0.001, momentum
  0.0003; cross-entropy; RMSprop(lr 0.01, alpha 0.9, eps 1.0, momentum 0.9).
  cifar10: the CIFAR-10 tutorial (examples/tf1/cifar10): conv 5x5x64 + ReLU, max pool
  3x3/2, LRN (TF's depth_radius 4, alpha 0.001/9, beta 0.75 = PyTorch's size 9, alpha
  0.001), conv 5x5x64 + ReLU, LRN, pool, dense 384, 192, 10; cross-entropy + 0.004 x
  the L2 loss of the two hidden dense weights; SGD 0.1 and a moving average (0.9999,
  TF's num_updates schedule) of every parameter after each step; 24x24x3, batch 128.
  resnet: the CIFAR ResNet-32 of examples/tf1/resnet (pre-activation units, batch norm
  eps 0.001, leaky ReLU 0.1, 16/32/64 filters, 5 units per stage, average-pool + zero
  channel-pad shortcuts); cross-entropy + 0.0002 x the L2 loss of the conv and dense
  weights; SGD momentum 0.9, lr 0.1; 32x32x3, batch 128.
  ptb_lm: the PTB word LSTM language model (tensorflow/models ptb_word_lm.py, see
  bench/models/ptb_lm.c): nn.Embedding(10000, 256), dropout 0.5, nn.LSTM(256, 512, 2
  layers, dropout 0.5 between them) from a zero state, dropout 0.5, Linear(512, 10000),
  cross-entropy summed over the steps and averaged over the batch (sequence_loss +
  reduce_sum), clip_grad_norm_ 5, SGD 1.0; init uniform(-0.05, 0.05); int inputs and
  targets [batch 20, --size 35 steps] uniform in [0, 10000).
  graph_net: a graph-network block (graph_nets' InteractionNetwork, bench/models/graph_net.c):
  2048 nodes, 12288 edges (a fixed random graph), latent --size (128); index_select of
  the nodes at receivers and senders, edge MLP on [edges, receiver, sender] (Linear 384->128,
  ReLU, Linear 128->128, ReLU, LayerNorm eps 1e-12 as TF's contrib layer_norm), index_add_
  of the new edges onto the receivers, node MLP on [aggregated, nodes] (256->128->128 +
  LayerNorm), Linear decoder to 2, MSE against random targets, Adam 1e-3; --batch unused.
  dnc: DeepMind's DNC (google-deepmind/dnc dnc/*.py, ported op for op as
  examples/tf1/dnc is): snt.LSTM controller of 64 (gates i, j, f, o, forget bias 1),
  MemoryAccess with memory 16 x 16, 4 read heads, 1 write head (content addressing by
  cosine weights and a softplus-weighted softmax, temporal link and precedence,
  freeness and allocation by top_k sort, exclusive cumprod and the inverse permutation,
  erase and write, reads), output linear, clip 20; masked sigmoid cross-entropy; over a
  time-major repeat-copy batch of --size steps (9) and --batch 16, the same layout
  bench/models/dnc.c feeds; gradients clipped to global norm 50, RMSprop (lr 1e-4,
  alpha 0.9, eps 1e-10; TF's RMSProp starts its mean square at 1 and adds epsilon
  inside the square root: the same work).
--precision bf16: forward and loss under torch.cpu.amp.autocast(dtype=torch.bfloat16)
(PyTorch's CPU mixed precision), the peer of bench_models --precision bf16.
"""
import argparse, contextlib, json, time
import torch
import torch.nn as nn

PRECISION = "fp32"


def amp():
    """The autocast context of --precision (a no-op for fp32)."""
    if PRECISION == "bf16":
        return torch.cpu.amp.autocast(dtype=torch.bfloat16)
    return contextlib.nullcontext()

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


class Cifar10(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 5, padding=2)
        self.conv2 = nn.Conv2d(64, 64, 5, padding=2)
        self.pool = nn.MaxPool2d(3, 2, padding=1)
        self.lrn = nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0)
        self.local3 = nn.Linear(6 * 6 * 64, 384)
        self.local4 = nn.Linear(384, 192)
        self.softmax_linear = nn.Linear(192, 10)

    def forward(self, x):
        x = self.lrn(self.pool(torch.relu(self.conv1(x))))
        x = self.pool(self.lrn(torch.relu(self.conv2(x))))
        x = torch.relu(self.local3(x.flatten(1)))
        return self.softmax_linear(torch.relu(self.local4(x)))

    def decay(self):
        return 0.004 * 0.5 * (self.local3.weight.pow(2).sum() + self.local4.weight.pow(2).sum())


class Unit(nn.Module):
    def __init__(self, cin, cout, stride, before):
        super().__init__()
        self.before, self.cin, self.cout, self.stride = before, cin, cout, stride
        self.bn1, self.bn2 = nn.BatchNorm2d(cin, eps=0.001), nn.BatchNorm2d(cout, eps=0.001)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)

    def forward(self, x):
        act = lambda t: nn.functional.leaky_relu(t, 0.1)
        if self.before:
            x = act(self.bn1(x))
            orig = x
        else:
            orig = x
            x = act(self.bn1(x))
        x = self.conv2(act(self.bn2(self.conv1(x))))
        if self.cin != self.cout:
            orig = nn.functional.avg_pool2d(orig, self.stride, self.stride)
            p = (self.cout - self.cin) // 2
            orig = nn.functional.pad(orig, (0, 0, 0, 0, p, p))
        return x + orig


class ResNet(nn.Module):
    def __init__(self, units=5):
        super().__init__()
        f = [16, 16, 32, 64]
        layers = []
        for stage, (stride, before) in enumerate([(1, True), (2, False), (2, False)]):
            layers.append(Unit(f[stage], f[stage + 1], stride, before))
            layers += [Unit(f[stage + 1], f[stage + 1], 1, False) for _ in range(units - 1)]
        self.init_conv = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.units = nn.Sequential(*layers)
        self.final_bn = nn.BatchNorm2d(64, eps=0.001)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.units(self.init_conv(x))
        x = nn.functional.leaky_relu(self.final_bn(x), 0.1).mean((2, 3))
        return self.fc(x)

    def decay(self):
        return 0.0002 * 0.5 * sum(p.pow(2).sum() for n, p in self.named_parameters()
                                  if p.dim() in (2, 4) and "bn" not in n)


class PtbLM(nn.Module):
    def __init__(self, vocab=10000, emb=256, hidden=512, layers=2, keep=0.5):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.drop = nn.Dropout(1 - keep)
        self.lstm = nn.LSTM(emb, hidden, layers, dropout=1 - keep, batch_first=True)
        self.softmax = nn.Linear(hidden, vocab)
        self.layers, self.hidden, self.vocab = layers, hidden, vocab
        for p in self.parameters():
            nn.init.uniform_(p, -0.05, 0.05)

    def forward(self, x):
        z = torch.zeros(self.layers, x.shape[0], self.hidden)
        out, _ = self.lstm(self.drop(self.embedding(x)), (z, z))
        return self.softmax(self.drop(out)).view(-1, self.vocab)


class MLPNorm(nn.Module):
    """graph_nets' make_mlp_model: MLP([latent] * 2, activate_final=True) + layer norm."""

    def __init__(self, cin, latent):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(cin, latent), nn.ReLU(), nn.Linear(latent, latent), nn.ReLU(),
                                 nn.LayerNorm(latent, eps=1e-12))

    def forward(self, x):
        return self.net(x)


class GraphNet(nn.Module):
    def __init__(self, latent, out=2):
        super().__init__()
        self.edge_model = MLPNorm(3 * latent, latent)
        self.node_model = MLPNorm(2 * latent, latent)
        self.decoder = nn.Linear(latent, out)

    def forward(self, nodes, edges, senders, receivers):
        collected = torch.cat([edges, nodes.index_select(0, receivers), nodes.index_select(0, senders)], -1)
        new_edges = self.edge_model(collected)
        agg = torch.zeros(nodes.shape[0], new_edges.shape[1]).index_add_(0, receivers, new_edges)
        return self.decoder(self.node_model(torch.cat([agg, nodes], -1)))


def time_steps(a, opt, loss_fn, after_backward=None, after_step=None):
    """a.steps + 1 training steps: zero_grad, loss_fn() under amp(), backward,
    after_backward(), opt.step(), after_step(i). The step times in ms but the first's
    (the warm-up), and the last loss."""
    t = []
    for i in range(a.steps + 1):
        t0 = time.perf_counter()
        opt.zero_grad()
        with amp():
            loss = loss_fn()
        loss.backward()
        if after_backward is not None:
            after_backward()
        opt.step()
        if after_step is not None:
            after_step(i)
        if i > 0:
            t.append((time.perf_counter() - t0) * 1e3)
    return t, loss


def report(a, t, loss):
    """The result line: the median step time of t (ms) and the last loss, as JSON."""
    t.sort()
    print(json.dumps({"model": a.model, "threads": a.threads, "batch": a.batch, "median_ms": t[len(t) // 2],
                      "loss": float(loss)}))


def graph_net_main(a):
    nn_, ne = 2048, 12288
    model = GraphNet(a.size)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    nodes, edges, targets = torch.rand(nn_, a.size), torch.rand(ne, a.size), torch.rand(nn_, 2)
    senders, receivers = torch.randint(0, nn_, (ne,)), torch.randint(0, nn_, (ne,))
    lossf = nn.MSELoss()
    report(a, *time_steps(a, opt, lambda: lossf(model(nodes, edges, senders, receivers), targets)))


EPS = 1e-6


def trunc_normal(shape, std):
    return nn.Parameter(nn.init.trunc_normal_(torch.empty(*shape), std=std, a=-2 * std, b=2 * std))


class Linear(nn.Module):
    """snt.Linear: w [in, out] truncated normal 1/sqrt(in), b zeros."""
    def __init__(self, n_in, n_out):
        super().__init__()
        self.w = trunc_normal((n_in, n_out), n_in ** -0.5)
        self.b = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return x @ self.w + self.b


def reduce_prod(x, axis):  # util.reduce_prod: cumprod(reverse=True)[:, 0]
    return torch.flip(torch.cumprod(torch.flip(x, [axis]), axis), [axis]).select(axis, 0)


def vector_norms(m):
    return torch.sqrt((m * m).sum(2, keepdim=True) + EPS)


def cosine_weights(memory, keys, strengths):
    dot = torch.matmul(keys, memory.transpose(1, 2))
    norm = torch.matmul(vector_norms(keys), vector_norms(memory).transpose(1, 2))
    similarity = dot / (norm + EPS)
    sharp = similarity * nn.functional.softplus(strengths).unsqueeze(-1)
    return torch.softmax(sharp, -1)


class DNC(nn.Module):
    def __init__(self, in_size, out_size, hidden=64, N=16, W=16, R=4, H=1, clip=20.0):
        super().__init__()
        self.N, self.W, self.R, self.H, self.hidden, self.clip = N, W, R, H, hidden, clip
        eq = in_size + R * W + hidden
        self.w_gates = trunc_normal((eq, 4 * hidden), eq ** -0.5)
        self.b_gates = trunc_normal((4 * hidden,), eq ** -0.5)
        lin = lambda n: Linear(hidden, n)
        self.write_vectors, self.erase_vectors = lin(H * W), lin(H * W)
        self.free_gate, self.allocation_gate, self.write_gate = lin(R), lin(H), lin(H)
        self.read_mode, self.write_keys, self.write_strengths = lin(R * (1 + 2 * H)), lin(H * W), lin(H)
        self.read_keys, self.read_strengths = lin(R * W), lin(R)
        self.output_linear = Linear(hidden + R * W, out_size)

    def initial_state(self, B):
        z = lambda *s: torch.zeros(B, *s)
        N, W, R, H = self.N, self.W, self.R, self.H
        return dict(access_output=z(R, W), memory=z(N, W), read_weights=z(R, N), write_weights=z(H, N),
                    link=z(H, N, N), precedence=z(H, N), usage=z(N), hidden=z(self.hidden), cell=z(self.hidden))

    def allocation(self, usage):
        usage = EPS + (1 - EPS) * usage
        nonusage = 1 - usage
        sorted_nonusage, indices = torch.topk(nonusage, self.N, 1)
        sorted_usage = 1 - sorted_nonusage
        prod = torch.cumprod(sorted_usage, 1)  # exclusive: shifted right by one, 1 first
        prod_sorted_usage = torch.cat([torch.ones_like(prod[:, :1]), prod[:, :-1]], 1)
        sorted_allocation = sorted_nonusage * prod_sorted_usage
        ar = torch.arange(self.N).expand_as(indices)
        inverse = torch.empty_like(indices).scatter_(1, indices, ar)  # batch_invert_permutation
        return torch.gather(sorted_allocation, 1, inverse)  # batch_gather

    def step(self, x, s):
        B, N, W, R, H = x.shape[0], self.N, self.W, self.R, self.H
        clip = lambda t: torch.clamp(t, -self.clip, self.clip)
        # controller: snt.LSTM
        ctrl_in = torch.cat([x, s["access_output"].reshape(B, -1)], 1)
        gates = torch.cat([ctrl_in, s["hidden"]], 1) @ self.w_gates + self.b_gates
        i, j, f, o = torch.split(gates, self.hidden, 1)
        cell = torch.sigmoid(f + 1.0) * s["cell"] + torch.sigmoid(i) * torch.tanh(j)
        hidden = torch.tanh(cell) * torch.sigmoid(o)
        out = clip(hidden)
        n = {"hidden": clip(hidden), "cell": clip(cell)}
        # MemoryAccess._read_inputs
        write_vectors = self.write_vectors(out).view(B, H, W)
        erase_vectors = torch.sigmoid(self.erase_vectors(out)).view(B, H, W)
        free_gate = torch.sigmoid(self.free_gate(out))
        allocation_gate = torch.sigmoid(self.allocation_gate(out))
        write_gate = torch.sigmoid(self.write_gate(out))
        read_mode = torch.softmax(self.read_mode(out).view(-1, 1 + 2 * H), -1).view(B, R, 1 + 2 * H)
        write_keys = self.write_keys(out).view(B, H, W)
        write_strengths = self.write_strengths(out)
        read_keys = self.read_keys(out).view(B, R, W)
        read_strengths = self.read_strengths(out)
        # Freeness
        ww_prev = s["write_weights"].detach()
        usage = s["usage"] + (1 - s["usage"]) * (1 - reduce_prod(1 - ww_prev, 1))
        phi = reduce_prod(1 - free_gate.unsqueeze(-1) * s["read_weights"], 1)
        usage = usage * phi
        # _write_weights
        write_content = cosine_weights(s["memory"], write_keys, write_strengths)
        wg = (allocation_gate * write_gate).unsqueeze(-1)
        u, alloc = usage, []
        for k in range(H):
            alloc.append(self.allocation(u))
            u = u + (1 - u) * wg[:, k, :] * alloc[k]
        alloc = torch.stack(alloc, 1)
        ag, wgate = allocation_gate.unsqueeze(-1), write_gate.unsqueeze(-1)
        ww = wgate * (ag * alloc + (1 - ag) * write_content)
        # _erase_and_write
        reset_gate = reduce_prod(1 - ww.unsqueeze(3) * erase_vectors.unsqueeze(2), 1)
        memory = s["memory"] * reset_gate + torch.matmul(ww.transpose(1, 2), write_vectors)
        # TemporalLinkage
        wi, wj = ww.unsqueeze(3), ww.unsqueeze(2)
        link = (1 - wi - wj) * s["link"] + wi * s["precedence"].unsqueeze(2)
        link = link * (1 - torch.eye(N))  # matrix_set_diag(link, 0)
        precedence = (1 - ww.sum(2, keepdim=True)) * s["precedence"] + ww
        # _read_weights
        content = cosine_weights(memory, read_keys, read_strengths)
        expanded = torch.stack([s["read_weights"]] * H, 1)
        fwd = torch.matmul(expanded, link.transpose(2, 3)).permute(0, 2, 1, 3)
        bwd = torch.matmul(expanded, link).permute(0, 2, 1, 3)
        rw = (read_mode[:, :, 2 * H].unsqueeze(2) * content + (read_mode[:, :, H:2 * H].unsqueeze(3) * fwd).sum(2)
              + (read_mode[:, :, :H].unsqueeze(3) * bwd).sum(2))
        read_words = torch.matmul(rw, memory)
        output = clip(self.output_linear(torch.cat([out, read_words.reshape(B, -1)], 1)))
        n.update(access_output=read_words, memory=memory, read_weights=rw, write_weights=ww, link=link,
                 precedence=precedence, usage=usage)
        return output, n

    def forward(self, xs):  # dynamic_rnn, time major
        s = self.initial_state(xs.shape[1])
        outs = []
        for t in range(xs.shape[0]):
            y, s = self.step(xs[t], s)
            outs.append(y)
        return torch.stack(outs, 0)


def repeat_copy_batch(T, B, bits=4):
    """The batch bench/models/dnc.c feeds: a pattern of L vectors repeated R times."""
    L, R = 2, 2
    while L > 1 and L * (R + 1) + 3 > T:
        L -= 1
    while R > 1 and L * (R + 1) + 3 > T:
        R -= 1
    obs, targ, mask = torch.zeros(T, B, bits + 2), torch.zeros(T, B, bits + 1), torch.zeros(T, B)
    pat = torch.randint(0, 2, (L, B, bits)).float()
    obs[0, :, bits] = 1
    obs[1:L + 1, :, :bits] = pat
    obs[L + 1, :, bits + 1] = R / 10.0
    for r in range(R):
        targ[L + 2 + r * L:L + 2 + (r + 1) * L, :, :bits] = pat
    targ[L + 2 + R * L, :, bits] = 1
    mask[L + 2:L + 3 + R * L] = 1
    return obs, targ, mask


def run_dnc(a):
    obs, targ, mask = repeat_copy_batch(a.size, a.batch)
    model = DNC(obs.shape[2], targ.shape[2])
    params = list(model.parameters())
    opt = torch.optim.RMSprop(params, lr=1e-4, alpha=0.9, eps=1e-10)

    def loss_fn():
        logits = model(obs)
        xent = nn.functional.binary_cross_entropy_with_logits(logits, targ, reduction="none")
        return ((xent.sum(2) * mask).sum(0)).sum() / a.batch  # masked_sigmoid_cross_entropy
    return time_steps(a, opt, loss_fn, lambda: nn.utils.clip_grad_norm_(params, 50.0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mobilenet")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    a = ap.parse_args()
    global PRECISION
    PRECISION = a.precision
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    if a.model == "dnc":
        report(a, *run_dnc(a))
        return
    if a.model == "graph_net":
        return graph_net_main(a)
    classes = 1000 if a.model == "mobilenet" else 10
    # TF's SAME padding for stride-2 windows pads (0,1) where PyTorch pads (1,1): the
    # same work, so the timing is comparable.
    ema = None
    if a.model == "mobilenet":
        model = mobilenet_v1(classes)
        opt = torch.optim.RMSprop([p for p in model.parameters() if p.requires_grad], lr=0.01, alpha=0.9,
                                  eps=1.0, momentum=0.9)
    elif a.model == "cifar10":
        model = Cifar10()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        ema = [p.detach().clone() for p in model.parameters()]
    elif a.model == "resnet":
        model = ResNet()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    elif a.model == "ptb_lm":
        model = PtbLM()
        opt = torch.optim.SGD(model.parameters(), lr=1.0)
        x = torch.randint(0, 10000, (a.batch, a.size))
        y = torch.randint(0, 10000, (a.batch, a.size)).view(-1)
        # sequence_loss averaged across the batch, summed over the steps
        report(a, *time_steps(a, opt, lambda: nn.functional.cross_entropy(model(x), y, reduction="sum") / a.batch,
                              lambda: nn.utils.clip_grad_norm_(model.parameters(), 5.0)))
        return
    else:
        raise SystemExit("unknown model " + a.model)
    # channels_last: the faster layout for these convolutions on the CPU (measured)
    x = torch.rand(a.batch, 3, a.size, a.size).contiguous(memory_format=torch.channels_last)
    model = model.to(memory_format=torch.channels_last)
    y = torch.randint(0, classes, (a.batch,))
    lossf = nn.CrossEntropyLoss()

    def loss_fn():
        loss = lossf(model(x), y)
        if a.model != "mobilenet":
            loss = loss + model.decay()
        return loss

    def after_step(i):
        if ema is not None:  # tf.train.ExponentialMovingAverage(0.9999, global_step)
            d = min(0.9999, (1.0 + i) / (10.0 + i))
            with torch.no_grad():
                for e, p in zip(ema, model.parameters()):
                    e.mul_(d).add_(p, alpha=1 - d)
    report(a, *time_steps(a, opt, loss_fn, after_step=after_step))


if __name__ == "__main__":
    main()
