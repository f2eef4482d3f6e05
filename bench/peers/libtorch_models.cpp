// libtorch_models.cpp - the libtorch (PyTorch's C++ API, Debian's libtorch-dev) peer of
// bench/bench_models.c: the in-process native peer a C/C++ user would otherwise pick.
// The same models and step as bench/peers/torch_models.py (see there), timed the same
// way; prints one JSON line with median_ms. Built by CMake only where libtorch is
// found (find_package(Torch)); bench_models runs it when it exists.
//
// Usage: libtorch_models --model mobilenet|cifar10|resnet|ptb_lm|graph_net|dnc --threads N --batch B --size S --steps K
#include <torch/torch.h>
#include <cmath>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace nn = torch::nn;

static nn::BatchNorm2d bn(int64_t c) {
    nn::BatchNorm2d b(nn::BatchNorm2dOptions(c).eps(0.001).momentum(0.0003));
    b->weight.set_requires_grad(false);  // slim: scale=False
    return b;
}

static nn::Sequential mobilenet_v1(int64_t classes) {
    static const int64_t defs[13][2] = {{1, 64},  {2, 128}, {1, 128}, {2, 256}, {1, 256}, {2, 512}, {1, 512},
                                        {1, 512}, {1, 512}, {1, 512}, {1, 512}, {2, 1024}, {1, 1024}};
    nn::Sequential m;
    m->push_back(nn::Conv2d(nn::Conv2dOptions(3, 32, 3).stride(2).padding(1).bias(false)));
    m->push_back(bn(32));
    m->push_back(nn::ReLU6());
    int64_t ch = 32;
    for (auto &d : defs) {
        m->push_back(nn::Conv2d(nn::Conv2dOptions(ch, ch, 3).stride(d[0]).padding(1).groups(ch).bias(false)));
        m->push_back(bn(ch));
        m->push_back(nn::ReLU6());
        m->push_back(nn::Conv2d(nn::Conv2dOptions(ch, d[1], 1).bias(false)));
        m->push_back(bn(d[1]));
        m->push_back(nn::ReLU6());
        ch = d[1];
    }
    m->push_back(nn::AdaptiveAvgPool2d(1));
    m->push_back(nn::Conv2d(nn::Conv2dOptions(ch, classes, 1)));
    m->push_back(nn::Flatten());
    return m;
}

// The CIFAR-10 tutorial (see torch_models.py): conv/pool/LRN x2, dense 384, 192, 10.
struct Cifar10Impl : nn::Module {
    nn::Conv2d conv1{nn::Conv2dOptions(3, 64, 5).padding(2)}, conv2{nn::Conv2dOptions(64, 64, 5).padding(2)};
    nn::MaxPool2d pool{nn::MaxPool2dOptions(3).stride(2).padding(1)};
    nn::LocalResponseNorm lrn{nn::LocalResponseNormOptions(9).alpha(0.001).beta(0.75).k(1.0)};
    nn::Linear local3{6 * 6 * 64, 384}, local4{384, 192}, softmax_linear{192, 10};
    Cifar10Impl() {
        register_module("conv1", conv1), register_module("conv2", conv2), register_module("local3", local3);
        register_module("local4", local4), register_module("softmax_linear", softmax_linear);
    }
    torch::Tensor forward(torch::Tensor x) {
        x = lrn(pool(torch::relu(conv1(x))));
        x = pool(lrn(torch::relu(conv2(x))));
        x = torch::relu(local3(x.flatten(1)));
        return softmax_linear(torch::relu(local4(x)));
    }
    torch::Tensor decay() { return 0.004 * 0.5 * (local3->weight.pow(2).sum() + local4->weight.pow(2).sum()); }
};
TORCH_MODULE(Cifar10);

// One pre-activation unit of the CIFAR ResNet (see torch_models.py).
struct UnitImpl : nn::Module {
    int64_t cin, cout, stride;
    bool before;
    nn::BatchNorm2d bn1, bn2;
    nn::Conv2d conv1, conv2;
    UnitImpl(int64_t ci, int64_t co, int64_t s, bool b)
        : cin(ci), cout(co), stride(s), before(b), bn1(nn::BatchNorm2dOptions(ci).eps(0.001)),
          bn2(nn::BatchNorm2dOptions(co).eps(0.001)), conv1(nn::Conv2dOptions(ci, co, 3).stride(s).padding(1).bias(false)),
          conv2(nn::Conv2dOptions(co, co, 3).padding(1).bias(false)) {
        register_module("bn1", bn1), register_module("bn2", bn2), register_module("conv1", conv1);
        register_module("conv2", conv2);
    }
    torch::Tensor forward(torch::Tensor x) {
        auto act = [](torch::Tensor t) { return torch::leaky_relu(t, 0.1); };
        torch::Tensor orig;
        if (before) {
            x = act(bn1(x));
            orig = x;
        } else {
            orig = x;
            x = act(bn1(x));
        }
        x = conv2(act(bn2(conv1(x))));
        if (cin != cout) {
            orig = torch::avg_pool2d(orig, stride, stride);
            int64_t p = (cout - cin) / 2;
            orig = torch::constant_pad_nd(orig, {0, 0, 0, 0, p, p});
        }
        return x + orig;
    }
};
TORCH_MODULE(Unit);

struct ResNetImpl : nn::Module {
    nn::Conv2d init_conv{nn::Conv2dOptions(3, 16, 3).padding(1).bias(false)};
    nn::Sequential units;
    nn::BatchNorm2d final_bn{nn::BatchNorm2dOptions(64).eps(0.001)};
    nn::Linear fc{64, 10};
    ResNetImpl(int n = 5) {
        const int64_t f[4] = {16, 16, 32, 64}, st[3] = {1, 2, 2};
        for (int s = 0; s < 3; s++) {
            units->push_back(Unit(f[s], f[s + 1], st[s], s == 0));
            for (int i = 1; i < n; i++) units->push_back(Unit(f[s + 1], f[s + 1], 1, false));
        }
        register_module("init_conv", init_conv), register_module("units", units);
        register_module("final_bn", final_bn), register_module("fc", fc);
    }
    torch::Tensor forward(torch::Tensor x) {
        x = units->forward(init_conv(x));
        return fc(torch::leaky_relu(final_bn(x), 0.1).mean({2, 3}));
    }
    torch::Tensor decay() {
        torch::Tensor s = torch::zeros({});
        for (auto &p : named_parameters())
            if ((p.value().dim() == 2 || p.value().dim() == 4) && p.key().find("bn") == std::string::npos)
                s = s + p.value().pow(2).sum();
        return 0.0002 * 0.5 * s;
    }
};
TORCH_MODULE(ResNet);

// The PTB word LSTM language model (see torch_models.py): embedding 10000 x 256, dropout
// 0.5, LSTM 512 x 2 layers (dropout 0.5 between), dropout 0.5, Linear(512, 10000).
struct PtbLMImpl : nn::Module {
    nn::Embedding embedding{10000, 256};
    nn::LSTM lstm{nn::LSTMOptions(256, 512).num_layers(2).dropout(0.5).batch_first(true)};
    nn::Dropout drop{0.5};
    nn::Linear softmax{512, 10000};
    PtbLMImpl() {
        register_module("embedding", embedding), register_module("lstm", lstm), register_module("drop", drop);
        register_module("softmax", softmax);
        torch::NoGradGuard ng;
        for (auto &p : parameters()) p.uniform_(-0.05, 0.05);
    }
    torch::Tensor forward(torch::Tensor x) {
        auto z = torch::zeros({2, x.size(0), 512});
        auto out = std::get<0>(lstm->forward(drop(embedding(x)), std::make_tuple(z, z)));
        return softmax(drop(out)).view({-1, 10000});
    }
};
TORCH_MODULE(PtbLM);

// One ptb_lm run: sequence_loss averaged over the batch and summed over the steps,
// clip_grad_norm_ 5, SGD 1.0.
static int run_ptb(int threads, int batch, int steps_t, int steps) {
    PtbLM net;
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(1.0));
    auto x = torch::randint(0, 10000, {batch, steps_t}, torch::kLong);
    auto y = torch::randint(0, 10000, {batch * steps_t}, torch::kLong);
    std::vector<double> t;
    float loss_v = 0;
    for (int i = 0; i <= steps; i++) {
        auto t0 = std::chrono::steady_clock::now();
        opt.zero_grad();
        auto loss = torch::nn::functional::cross_entropy(
                        net->forward(x), y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)) /
                    batch;
        loss.backward();
        torch::nn::utils::clip_grad_norm_(net->parameters(), 5.0);
        opt.step();
        loss_v = loss.item<float>();
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (i > 0) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    printf("{\"model\": \"ptb_lm\", \"threads\": %d, \"batch\": %d, \"median_ms\": %.3f, \"loss\": %.4f}\n", threads,
           batch, t[t.size() / 2], loss_v);
    return 0;
}

// graph_nets' make_mlp_model: Linear, ReLU, Linear, ReLU, LayerNorm (eps 1e-12 as TF's
// contrib layer_norm).
static nn::Sequential mlp_norm(int64_t cin, int64_t latent) {
    return nn::Sequential(nn::Linear(cin, latent), nn::ReLU(), nn::Linear(latent, latent), nn::ReLU(),
                          nn::LayerNorm(nn::LayerNormOptions({latent}).eps(1e-12)));
}

// The graph-network block (see torch_models.py): 2048 nodes, 12288 edges, latent `size`.
struct GraphNetImpl : nn::Module {
    nn::Sequential edge_model, node_model;
    nn::Linear decoder;
    GraphNetImpl(int64_t latent)
        : edge_model(mlp_norm(3 * latent, latent)), node_model(mlp_norm(2 * latent, latent)), decoder(latent, 2) {
        register_module("edge_model", edge_model), register_module("node_model", node_model);
        register_module("decoder", decoder);
    }
    torch::Tensor forward(torch::Tensor nodes, torch::Tensor edges, torch::Tensor senders, torch::Tensor receivers) {
        auto collected = torch::cat({edges, nodes.index_select(0, receivers), nodes.index_select(0, senders)}, -1);
        auto new_edges = edge_model->forward(collected);
        auto agg = torch::zeros({nodes.size(0), new_edges.size(1)}).index_add_(0, receivers, new_edges);
        return decoder(node_model->forward(torch::cat({agg, nodes}, -1)));
    }
};
TORCH_MODULE(GraphNet);

static int graph_net_main(int threads, int size, int steps) {
    const int64_t nn_ = 2048, ne = 12288;
    GraphNet net(size);
    torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
    auto nodes = torch::rand({nn_, size}), edges = torch::rand({ne, size}), targets = torch::rand({nn_, 2});
    auto senders = torch::randint(0, nn_, {ne}, torch::kLong), receivers = torch::randint(0, nn_, {ne}, torch::kLong);
    std::vector<double> t;
    float loss_v = 0;
    for (int i = 0; i <= steps; i++) {
        auto t0 = std::chrono::steady_clock::now();
        opt.zero_grad();
        auto loss = torch::mse_loss(net->forward(nodes, edges, senders, receivers), targets);
        loss.backward();
        opt.step();
        loss_v = loss.item<float>();
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (i > 0) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    printf("{\"model\": \"graph_net\", \"threads\": %d, \"batch\": 1, \"median_ms\": %.3f, \"loss\": %.4f}\n", threads,
           t[t.size() / 2], loss_v);
    return 0;
}

// The DNC (see torch_models.py's DNC): google-deepmind/dnc's dnc/*.py op for op.
static const double kEps = 1e-6;

static torch::Tensor trunc_normal(nn::Module &m, const std::string &name, std::vector<int64_t> shape, double std) {
    auto t = torch::empty(shape);
    torch::nn::init::normal_(t, 0, std);
    {
        torch::NoGradGuard ng;  // redraw beyond two stddevs, as the truncated normal does
        for (int k = 0; k < 8; k++) {
            auto bad = t.abs() > 2 * std;
            t.masked_scatter_(bad, torch::randn(shape) * std);
        }
        t.clamp_(-2 * std, 2 * std);
    }
    return m.register_parameter(name, t);
}

struct Lin {  // snt.Linear: w [in, out] truncated normal 1/sqrt(in), b zeros
    torch::Tensor w, b;
    Lin() = default;
    Lin(nn::Module &m, const std::string &name, int64_t in, int64_t out)
        : w(trunc_normal(m, name + "_w", {in, out}, 1.0 / std::sqrt((double)in))),
          b(m.register_parameter(name + "_b", torch::zeros({out}))) {}
    torch::Tensor operator()(const torch::Tensor &x) const { return torch::matmul(x, w) + b; }
};

static torch::Tensor reduce_prod(const torch::Tensor &x, int64_t axis) {  // util.reduce_prod
    return torch::flip(torch::cumprod(torch::flip(x, {axis}), axis), {axis}).select(axis, 0);
}
static torch::Tensor vector_norms(const torch::Tensor &m) { return torch::sqrt((m * m).sum(2, true) + kEps); }
static torch::Tensor cosine_weights(const torch::Tensor &memory, const torch::Tensor &keys, const torch::Tensor &strengths) {
    auto dot = torch::matmul(keys, memory.transpose(1, 2));
    auto norm = torch::matmul(vector_norms(keys), vector_norms(memory).transpose(1, 2));
    auto sharp = dot / (norm + kEps) * torch::nn::functional::softplus(strengths).unsqueeze(-1);
    return torch::softmax(sharp, -1);
}

struct DncState {
    torch::Tensor access_output, memory, read_weights, write_weights, link, precedence, usage, hidden, cell;
};

struct DncImpl : nn::Module {
    int64_t N, W, R, H, hidden;
    double clip;
    torch::Tensor w_gates, b_gates, eye;
    Lin write_vectors, erase_vectors, free_gate, allocation_gate, write_gate, read_mode, write_keys, write_strengths,
        read_keys, read_strengths, output_linear;
    DncImpl(int64_t in_size, int64_t out_size, int64_t hid = 64, int64_t n = 16, int64_t w = 16, int64_t r = 4,
            int64_t h = 1, double c = 20.0)
        : N(n), W(w), R(r), H(h), hidden(hid), clip(c) {
        int64_t eq = in_size + R * W + hidden;
        w_gates = trunc_normal(*this, "w_gates", {eq, 4 * hidden}, 1.0 / std::sqrt((double)eq));
        b_gates = trunc_normal(*this, "b_gates", {4 * hidden}, 1.0 / std::sqrt((double)eq));
        write_vectors = Lin(*this, "write_vectors", hidden, H * W);
        erase_vectors = Lin(*this, "erase_vectors", hidden, H * W);
        free_gate = Lin(*this, "free_gate", hidden, R);
        allocation_gate = Lin(*this, "allocation_gate", hidden, H);
        write_gate = Lin(*this, "write_gate", hidden, H);
        read_mode = Lin(*this, "read_mode", hidden, R * (1 + 2 * H));
        write_keys = Lin(*this, "write_keys", hidden, H * W);
        write_strengths = Lin(*this, "write_strengths", hidden, H);
        read_keys = Lin(*this, "read_keys", hidden, R * W);
        read_strengths = Lin(*this, "read_strengths", hidden, R);
        output_linear = Lin(*this, "output_linear", hidden + R * W, out_size);
        eye = torch::eye(N);
    }
    torch::Tensor allocation(const torch::Tensor &u) {
        auto usage = kEps + (1 - kEps) * u;
        auto nonusage = 1 - usage;
        auto tk = torch::topk(nonusage, N, 1);
        auto sorted_nonusage = std::get<0>(tk), indices = std::get<1>(tk);
        auto prod = torch::cumprod(1 - sorted_nonusage, 1);  // exclusive: shifted right by one
        auto prod_sorted_usage = torch::cat({torch::ones_like(prod.narrow(1, 0, 1)), prod.narrow(1, 0, N - 1)}, 1);
        auto sorted_allocation = sorted_nonusage * prod_sorted_usage;
        auto inverse = torch::empty_like(indices).scatter_(1, indices, torch::arange(N).expand_as(indices));
        return torch::gather(sorted_allocation, 1, inverse);
    }
    torch::Tensor step(const torch::Tensor &x, const DncState &s, DncState &n) {
        int64_t B = x.size(0);
        auto clipf = [this](const torch::Tensor &t) { return torch::clamp(t, -clip, clip); };
        auto ctrl_in = torch::cat({x, s.access_output.reshape({B, -1})}, 1);
        auto gates = torch::matmul(torch::cat({ctrl_in, s.hidden}, 1), w_gates) + b_gates;
        auto g = torch::split(gates, hidden, 1);
        auto cell = torch::sigmoid(g[2] + 1.0) * s.cell + torch::sigmoid(g[0]) * torch::tanh(g[1]);
        auto hid = torch::tanh(cell) * torch::sigmoid(g[3]);
        auto out = clipf(hid);
        n.hidden = clipf(hid);
        n.cell = clipf(cell);
        auto wv = write_vectors(out).view({B, H, W});
        auto ev = torch::sigmoid(erase_vectors(out)).view({B, H, W});
        auto fg = torch::sigmoid(free_gate(out));
        auto ag = torch::sigmoid(allocation_gate(out));
        auto wg = torch::sigmoid(write_gate(out));
        auto rm = torch::softmax(read_mode(out).view({-1, 1 + 2 * H}), -1).view({B, R, 1 + 2 * H});
        auto wk = write_keys(out).view({B, H, W});
        auto ws = write_strengths(out);
        auto rk = read_keys(out).view({B, R, W});
        auto rs = read_strengths(out);
        // Freeness
        auto usage = s.usage + (1 - s.usage) * (1 - reduce_prod(1 - s.write_weights.detach(), 1));
        usage = usage * reduce_prod(1 - fg.unsqueeze(-1) * s.read_weights, 1);
        // _write_weights
        auto content_w = cosine_weights(s.memory, wk, ws);
        auto gates_w = (ag * wg).unsqueeze(-1);
        auto u = usage;
        std::vector<torch::Tensor> alloc;
        for (int64_t k = 0; k < H; k++) {
            alloc.push_back(allocation(u));
            u = u + (1 - u) * gates_w.select(1, k) * alloc.back();
        }
        auto al = torch::stack(alloc, 1);
        auto agx = ag.unsqueeze(-1);
        auto ww = wg.unsqueeze(-1) * (agx * al + (1 - agx) * content_w);
        // _erase_and_write
        auto reset_gate = reduce_prod(1 - ww.unsqueeze(3) * ev.unsqueeze(2), 1);
        auto memory = s.memory * reset_gate + torch::matmul(ww.transpose(1, 2), wv);
        // TemporalLinkage
        auto wi = ww.unsqueeze(3), wj = ww.unsqueeze(2);
        auto link = ((1 - wi - wj) * s.link + wi * s.precedence.unsqueeze(2)) * (1 - eye);
        auto precedence = (1 - ww.sum(2, true)) * s.precedence + ww;
        // _read_weights
        auto content_r = cosine_weights(memory, rk, rs);
        std::vector<torch::Tensor> copies(H, s.read_weights);
        auto expanded = torch::stack(copies, 1);
        auto fwd = torch::matmul(expanded, link.transpose(2, 3)).permute({0, 2, 1, 3});
        auto bwd = torch::matmul(expanded, link).permute({0, 2, 1, 3});
        auto rw = rm.select(2, 2 * H).unsqueeze(2) * content_r + (rm.narrow(2, H, H).unsqueeze(3) * fwd).sum(2) +
                  (rm.narrow(2, 0, H).unsqueeze(3) * bwd).sum(2);
        auto read_words = torch::matmul(rw, memory);
        n.access_output = read_words, n.memory = memory, n.read_weights = rw, n.write_weights = ww;
        n.link = link, n.precedence = precedence, n.usage = usage;
        return clipf(output_linear(torch::cat({out, read_words.reshape({B, -1})}, 1)));
    }
    torch::Tensor forward(const torch::Tensor &xs) {  // dynamic_rnn, time major
        int64_t B = xs.size(1);
        DncState s{torch::zeros({B, R, W}), torch::zeros({B, N, W}), torch::zeros({B, R, N}), torch::zeros({B, H, N}),
                   torch::zeros({B, H, N, N}), torch::zeros({B, H, N}), torch::zeros({B, N}),
                   torch::zeros({B, hidden}), torch::zeros({B, hidden})};
        std::vector<torch::Tensor> outs;
        for (int64_t t = 0; t < xs.size(0); t++) {
            DncState n;
            outs.push_back(step(xs[t], s, n));
            s = n;
        }
        return torch::stack(outs, 0);
    }
};
TORCH_MODULE(Dnc);

// The repeat-copy batch bench/models/dnc.c feeds (a pattern of L vectors repeated R times).
static void repeat_copy_batch(int64_t T, int64_t B, torch::Tensor &obs, torch::Tensor &targ, torch::Tensor &mask) {
    const int64_t bits = 4;
    int64_t L = 2, R = 2;
    while (L > 1 && L * (R + 1) + 3 > T) L--;
    while (R > 1 && L * (R + 1) + 3 > T) R--;
    obs = torch::zeros({T, B, bits + 2}), targ = torch::zeros({T, B, bits + 1}), mask = torch::zeros({T, B});
    auto pat = torch::randint(0, 2, {L, B, bits}).to(torch::kFloat);
    using torch::indexing::Slice;
    obs.index_put_({0, Slice(), bits}, 1);
    obs.index_put_({Slice(1, L + 1), Slice(), Slice(0, bits)}, pat);
    obs.index_put_({L + 1, Slice(), bits + 1}, (double)R / 10.0);
    for (int64_t r = 0; r < R; r++) targ.index_put_({Slice(L + 2 + r * L, L + 2 + (r + 1) * L), Slice(), Slice(0, bits)}, pat);
    targ.index_put_({L + 2 + R * L, Slice(), bits}, 1);
    mask.index_put_({Slice(L + 2, L + 3 + R * L)}, 1);
}

static int run_dnc(int threads, int batch, int size, int steps) {
    torch::Tensor obs, targ, mask;
    repeat_copy_batch(size, batch, obs, targ, mask);
    Dnc model(obs.size(2), targ.size(2));
    auto params = model->parameters();
    torch::optim::RMSprop opt(params, torch::optim::RMSpropOptions(1e-4).alpha(0.9).eps(1e-10));
    std::vector<double> t;
    float loss_v = 0;
    for (int i = 0; i <= steps; i++) {
        auto t0 = std::chrono::steady_clock::now();
        opt.zero_grad();
        auto logits = model->forward(obs);
        auto xent = torch::nn::functional::binary_cross_entropy_with_logits(
            logits, targ, torch::nn::functional::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone));
        auto loss = (xent.sum(2) * mask).sum(0).sum() / (double)batch;  // masked_sigmoid_cross_entropy
        loss.backward();
        torch::nn::utils::clip_grad_norm_(params, 50.0);
        opt.step();
        loss_v = loss.item<float>();
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (i > 0) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    printf("{\"model\": \"dnc\", \"threads\": %d, \"batch\": %d, \"median_ms\": %.3f, \"loss\": %.4f}\n", threads, batch,
           t[t.size() / 2], loss_v);
    return 0;
}

int main(int argc, char **argv) {
    std::string model = "mobilenet";
    int threads = 1, batch = 32, size = 128, steps = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--size")) size = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
    }
    if (model == "dnc") {
        torch::set_num_threads(threads);
        torch::manual_seed(1);
        return run_dnc(threads, batch, size, steps);
    }
    if (model == "graph_net") {
        torch::set_num_threads(threads);
        torch::manual_seed(1);
        return graph_net_main(threads, size, steps);
    }
    if (model == "ptb_lm") {
        torch::set_num_threads(threads);
        torch::manual_seed(1);
        return run_ptb(threads, batch, size, steps);
    }
    if (model != "mobilenet" && model != "cifar10" && model != "resnet") {
        fprintf(stderr, "libtorch_models: unknown model %s\n", model.c_str());
        return 2;
    }
    torch::set_num_threads(threads);
    torch::manual_seed(1);
    const int64_t classes = model == "mobilenet" ? 1000 : 10;
    nn::Sequential mnet{nullptr};
    Cifar10 cnet{nullptr};
    ResNet rnet{nullptr};
    std::shared_ptr<nn::Module> net;
    if (model == "mobilenet") net = (mnet = mobilenet_v1(classes)).ptr();
    else if (model == "cifar10") net = (cnet = Cifar10()).ptr();
    else net = (rnet = ResNet()).ptr();
    std::vector<torch::Tensor> params;
    for (auto &p : net->parameters())
        if (p.requires_grad()) params.push_back(p);
    std::unique_ptr<torch::optim::Optimizer> opt;
    if (model == "mobilenet")
        opt.reset(new torch::optim::RMSprop(params, torch::optim::RMSpropOptions(0.01).alpha(0.9).eps(1.0).momentum(0.9)));
    else
        opt.reset(new torch::optim::SGD(params, torch::optim::SGDOptions(0.1).momentum(model == "resnet" ? 0.9 : 0.0)));
    std::vector<torch::Tensor> ema;
    if (model == "cifar10")
        for (auto &p : params) ema.push_back(p.detach().clone());
    // channels_last: the faster layout for these convolutions on the CPU (as the Python peer)
    auto x = torch::rand({batch, 3, size, size}).contiguous(torch::MemoryFormat::ChannelsLast);
    for (auto &p : net->parameters())
        if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
    auto y = torch::randint(0, classes, {batch}, torch::kLong);
    std::vector<double> t;
    float loss_v = 0;
    for (int i = 0; i <= steps; i++) {
        auto t0 = std::chrono::steady_clock::now();
        opt->zero_grad();
        torch::Tensor logits = model == "mobilenet" ? mnet->forward(x) : model == "cifar10" ? cnet->forward(x)
                                                                                               : rnet->forward(x);
        auto loss = torch::nn::functional::cross_entropy(logits, y);
        if (model == "cifar10") loss = loss + cnet->decay();
        if (model == "resnet") loss = loss + rnet->decay();
        loss.backward();
        opt->step();
        if (!ema.empty()) {  // tf.train.ExponentialMovingAverage(0.9999, global_step)
            double d = std::min(0.9999, (1.0 + i) / (10.0 + i));
            torch::NoGradGuard ng;
            for (size_t k = 0; k < ema.size(); k++) ema[k].mul_(d).add_(params[k], 1 - d);
        }
        loss_v = loss.item<float>();
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (i > 0) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    printf("{\"model\": \"%s\", \"threads\": %d, \"batch\": %d, \"median_ms\": %.3f, \"loss\": %.4f}\n", model.c_str(),
           threads, batch, t[t.size() / 2], loss_v);
    return 0;
}
