// libtorch_models.cpp - the libtorch (PyTorch's C++ API, Debian's libtorch-dev) peer of
// bench/bench_models.c: the in-process native peer a C/C++ user would otherwise pick.
// The same models and step as bench/peers/torch_models.py (see there), timed the same
// way; prints one JSON line with median_ms. Built by CMake only where libtorch is
// found (find_package(Torch)); bench_models runs it when it exists.
//
// Usage: libtorch_models --model mobilenet --threads N --batch B --size S --steps K
#include <torch/torch.h>

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
    if (model != "mobilenet") {
        fprintf(stderr, "libtorch_models: unknown model %s\n", model.c_str());
        return 2;
    }
    torch::set_num_threads(threads);
    torch::manual_seed(1);
    const int64_t classes = 1000;
    auto net = mobilenet_v1(classes);
    net->to(torch::kCPU);
    std::vector<torch::Tensor> params;
    for (auto &p : net->parameters())
        if (p.requires_grad()) params.push_back(p);
    torch::optim::RMSprop opt(params, torch::optim::RMSpropOptions(0.01).alpha(0.9).eps(1.0).momentum(0.9));
    // channels_last: the faster layout for these convolutions on the CPU (as the Python peer)
    auto x = torch::rand({batch, 3, size, size}).contiguous(torch::MemoryFormat::ChannelsLast);
    for (auto &p : net->parameters())
        if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
    auto y = torch::randint(0, classes, {batch}, torch::kLong);
    std::vector<double> t;
    float loss_v = 0;
    for (int i = 0; i <= steps; i++) {
        auto t0 = std::chrono::steady_clock::now();
        opt.zero_grad();
        auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
        loss.backward();
        opt.step();
        loss_v = loss.item<float>();
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (i > 0) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    printf("{\"model\": \"%s\", \"threads\": %d, \"batch\": %d, \"median_ms\": %.3f, \"loss\": %.4f}\n", model.c_str(),
           threads, batch, t[t.size() / 2], loss_v);
    return 0;
}
