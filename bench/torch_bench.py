#!/usr/bin/env python3
"""PyTorch side of kiln's benchmarks: the same cases as kiln_bench (same names, shapes, networks,
initialisation, data and hyperparameters), eager, 2 threads. Prints one JSON line per case:
{"case": ..., "value": ..., "unit": ...}.

Usually run by bench/run.py (which sets OMP_WAIT_POLICY=PASSIVE and interleaves it with kiln).
Needs PyTorch (Debian: apt-get install python3-torch).

  python3 bench/torch_bench.py [--filter REGEX] [--min-time SECONDS] [--list]
"""

import argparse
import json
import os
import math
import re
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer  # noqa: E402

PEER = torch_peer.configure()  # before torch loads OpenBLAS

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_bench.py: PyTorch is not installed; on Debian: apt-get install python3-torch",
          file=sys.stderr)
    sys.exit(2)

THREADS = 2
CONV_CHANNELS_LAST = True  # PyTorch at its best here (oneDNN's NHWC kernels); see run.py --help

# ---- Deterministic data: the same hash as bench/bench_util.cc -------------------------------


def hash_at(seed, index):
    """lowbias32 of (index + seed * 0x9E3779B9) mod 2^32 on an int64 tensor of indices."""
    mask = 0xFFFFFFFF
    x = (index + ((seed * 0x9E3779B9) & mask)) & mask
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & mask
    x = x ^ (x >> 15)
    x = (x * 0x5BD1E995) & mask
    x = x ^ (x >> 16)
    return x


def hash_int(seed, index):
    """hash_at for one Python integer."""
    return int(hash_at(seed, torch.tensor([index], dtype=torch.int64))[0])


def uniform(seed, shape, lo, hi):
    """Float32 values lo + (hi - lo) * u, u = (hash >> 8) / 2^24, as kiln's UniformValues."""
    count = math.prod(shape)
    u = (hash_at(seed, torch.arange(count, dtype=torch.int64)) >> 8).to(torch.float32) * (1.0 / 16777216.0)
    lo32 = torch.tensor(lo, dtype=torch.float32)
    span = torch.tensor(hi, dtype=torch.float32) - lo32
    return (u * span + lo32).reshape(shape)


def labels(seed, count, classes):
    """Int64 class labels hash % classes (kiln uses Int32)."""
    return hash_at(seed, torch.arange(count, dtype=torch.int64)) % classes


# ---- Timing ------------------------------------------------------------------------------------


def seconds_per_call(fn, min_time):
    """Mean seconds per call of fn over a block of at least min_time (after two warm-up calls)."""
    fn()
    fn()
    iters = 1
    while True:
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return elapsed / iters
        iters = max(iters * 2, int(iters * min_time * 1.4 / max(elapsed, 1e-9)))


# ---- Matmul and convolution --------------------------------------------------------------------

MATMUL_SHAPES = {"256x784x512": (256, 784, 512), "256x512x512": (256, 512, 512), "256x512x10": (256, 512, 10)}
for _s in (256, 512, 1024, 2048):
    MATMUL_SHAPES[f"sq{_s}"] = (_s, _s, _s)


def matmul_case(group, m, k, n, min_time):
    """GFLOP/s of torch.mm in the given form (forward, x^T·g, g·W^T)."""
    if group == "matmul":
        a, b = uniform(11, (m, k), -1, 1), uniform(12, (k, n), -1, 1)
        fn = lambda: torch.mm(a, b)
    elif group == "matmul_dw":
        x, g = uniform(11, (m, k), -1, 1), uniform(12, (m, n), -1, 1)
        fn = lambda: torch.mm(x.t(), g)
    else:
        g, w = uniform(11, (m, n), -1, 1), uniform(12, (k, n), -1, 1)
        fn = lambda: torch.mm(g, w.t())
    return 2.0 * m * k * n / seconds_per_call(fn, min_time) / 1e9, "GFLOP/s"


CONV_LAYERS = {"28x28x1_5x5x32": (28, 1, 32), "14x14x32_5x5x64": (14, 32, 64)}


def to_nchw(t_nhwc):
    """An NHWC tensor as PyTorch's NCHW view (channels-last memory when CONV_CHANNELS_LAST)."""
    t = t_nhwc.permute(0, 3, 1, 2)
    return t.contiguous(memory_format=torch.channels_last) if CONV_CHANNELS_LAST else t.contiguous()


def conv_case(pass_name, size, cin, cout, min_time):
    """GFLOP/s of one convolution pass (backward passes through aten::convolution_backward, as autograd)."""
    batch = 128
    x = to_nchw(uniform(21, (batch, size, size, cin), -1, 1))
    w = uniform(22, (5, 5, cin, cout), -0.1, 0.1).permute(3, 2, 0, 1)
    w = w.contiguous(memory_format=torch.channels_last) if CONV_CHANNELS_LAST else w.contiguous()
    g = to_nchw(uniform(23, (batch, size, size, cout), -1, 1))
    conv_args = ([1, 1], [2, 2], [1, 1], False, [0, 0], 1)
    if pass_name == "fwd":
        fn = lambda: F.conv2d(x, w, padding=2)
    elif pass_name == "bwd_data":
        fn = lambda: torch.ops.aten.convolution_backward(g, x, w, None, *conv_args, [True, False, False])
    else:
        fn = lambda: torch.ops.aten.convolution_backward(g, x, w, None, *conv_args, [False, True, False])
    flops = 2.0 * batch * size * size * cout * 25 * cin
    return flops / seconds_per_call(fn, min_time) / 1e9, "GFLOP/s"


# ---- Elementwise and the tiny graph ----------------------------------------------------------


def fixed_chain_case(min_time):
    """GB/s of exp(relu(x*2+1))*0.5 - x over 16M floats (one read, one write)."""
    x = uniform(31, (1 << 24,), -2, 2)
    fn = lambda: torch.exp(torch.relu(x * 2 + 1)) * 0.5 - x
    return 2.0 * 4 * x.numel() / seconds_per_call(fn, min_time) / 1e9, "GB/s"


def make_chain(which):
    """The random chain `which`: the generator of bench/elementwise_bench.cc."""
    seed = 500 + which
    steps = []
    for k in range(8):
        op = hash_int(seed, 2 * k) % 10
        u = (hash_int(seed, 2 * k + 1) >> 8) / 16777216.0
        steps.append((op, u))
    return steps, hash_int(seed, 100) % 8, hash_int(seed, 101) % 8, torch.float16 if which == 1 else torch.bfloat16


def apply_step(op, c, t, a):
    """One random-chain op (codes as in elementwise_bench.cc's ApplyStep)."""
    if op == 0:
        return t * (0.5 + c)
    if op == 1:
        return t + (c - 0.5)
    if op == 2:
        return torch.relu(t)
    if op == 3:
        return torch.tanh(t)
    if op == 4:
        return torch.sigmoid(t)
    if op == 5:
        return torch.exp(-torch.abs(t))
    if op == 6:
        return t * a
    if op == 7:
        return t - a
    if op == 8:
        return torch.abs(t)
    return torch.sqrt(torch.abs(t) + 1)


def random_chain_case(which, min_time):
    """GB/s of random chain `which` over [4096, 4096]."""
    steps, broadcast_at, convert_at, half = make_chain(which)
    a = uniform(20 + which, (4096, 4096), -1, 1)
    col, row = uniform(30 + which, (4096, 1), -1, 1), uniform(40 + which, (1, 4096), -1, 1)

    def fn():
        t = a
        for k, (op, c) in enumerate(steps):
            t = apply_step(op, c, t, a)
            if k == broadcast_at:
                t = t + (col + row)
            if k == convert_at:
                t = t.to(half).to(torch.float32)
        return t

    return 2.0 * 4 * a.numel() / seconds_per_call(fn, min_time) / 1e9, "GB/s"


def tiny_case(min_time):
    """Microseconds per call of the ten eager ops on 4-element tensors."""
    a, b = uniform(51, (4,), -1, 1), uniform(52, (4,), -1, 1)

    def fn():
        """The ten ops."""
        t = a + b
        t = t * a
        t = t - b
        t = torch.relu(t)
        t = torch.tanh(t)
        t = t + a
        t = torch.abs(t)
        t = torch.sqrt(t)
        t = t * b
        return torch.exp(t)

    return seconds_per_call(fn, min_time) * 1e6, "us/call"


# ---- Models --------------------------------------------------------------------------------------


def he_uniform(index, in_out_dims, fan_in):
    """kiln's InitParams: He-uniform from the hash with seed 1000 + index, in kiln's layout."""
    bound = float(torch.tensor(math.sqrt(6.0 / fan_in), dtype=torch.float32))
    return uniform(1000 + index, in_out_dims, -bound, bound)


class Mlp(torch.nn.Module):
    """784-512-512-10, ReLU."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = torch.nn.Linear(784, 512), torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)
        with torch.no_grad():
            for i, layer in enumerate((self.l1, self.l2, self.l3)):
                layer.weight.copy_(he_uniform(2 * i, (layer.in_features, layer.out_features), layer.in_features).t())
                layer.bias.zero_()

    def forward(self, x):
        """Logits."""
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


class Cnn(torch.nn.Module):
    """conv5x5x32-relu-maxpool2, conv5x5x64-relu-maxpool2, dense512-relu, dense10."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.Conv2d(32, 64, 5, padding=2)
        self.d1, self.d2 = torch.nn.Linear(3136, 512), torch.nn.Linear(512, 10)
        with torch.no_grad():
            for i, conv in enumerate((self.c1, self.c2)):
                cin, cout = conv.in_channels, conv.out_channels
                conv.weight.copy_(he_uniform(2 * i, (5, 5, cin, cout), 25 * cin).permute(3, 2, 0, 1))
                conv.bias.zero_()
            for i, layer in enumerate((self.d1, self.d2)):
                layer.weight.copy_(
                    he_uniform(4 + 2 * i, (layer.in_features, layer.out_features), layer.in_features).t())
                layer.bias.zero_()

    def forward(self, x):
        """Logits."""
        h = F.max_pool2d(F.relu(self.c1(x)), 2)
        h = F.max_pool2d(F.relu(self.c2(h)), 2)
        h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)  # kiln flattens channels-last
        return self.d2(F.relu(self.d1(h)))


def model_and_batch(name, batch, x_seed):
    """The network and a batch of inputs in the layout it takes."""
    if name == "mlp":
        return Mlp(), uniform(x_seed, (batch, 784), 0, 1)
    model = Cnn()
    x = uniform(x_seed, (batch, 28, 28, 1), 0, 1)
    if CONV_CHANNELS_LAST:
        model = model.to(memory_format=torch.channels_last)
    return model, to_nchw(x)


def trainer(name):
    """A training step closure: Adam (lr 1e-3, default betas and eps), cross-entropy."""
    batch = 256 if name == "mlp" else 128
    model, x = model_and_batch(name, batch, 1 if name == "mlp" else 3)
    y = labels(2 if name == "mlp" else 4, batch, 10)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, batch


def train_case(name, min_time):
    """Examples per second of the training step."""
    step, batch = trainer(name)
    first_loss = float(step())  # equal to kiln's first_loss counter (same network, weights, data)
    print(json.dumps({"case": name + "_first_loss", "value": first_loss, "unit": "loss"}), file=sys.stderr)
    return batch / seconds_per_call(step, min_time), "examples/s"


def infer_case(name, batch, min_time):
    """Examples per second of inference at `batch` (no_grad)."""
    model, x = model_and_batch(name, batch, 5)

    def fn():
        with torch.no_grad():
            return model(x)

    return batch / seconds_per_call(fn, min_time), "examples/s"


def memory_case(name, _min_time):
    """Growth of the peak RSS over 10 training steps, from before the weights exist (MB)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    step, _ = trainer(name)
    for _ in range(10):
        step()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before) / 1e6, "MB"


# ---- Case table ----------------------------------------------------------------------------------


def all_cases():
    """Case name -> function(min_time) returning (value, unit)."""
    cases = {}
    for group in ("matmul", "matmul_dw", "matmul_dx"):
        for shape, (m, k, n) in MATMUL_SHAPES.items():
            if group != "matmul" and shape.startswith("sq"):
                continue
            cases[f"{group}/{shape}"] = lambda t, g=group, m=m, k=k, n=n: matmul_case(g, m, k, n, t)
    for pass_name in ("fwd", "bwd_data", "bwd_weights"):
        for layer, (size, cin, cout) in CONV_LAYERS.items():
            cases[f"conv_{pass_name}/{layer}"] = lambda t, p=pass_name, s=size, i=cin, o=cout: conv_case(p, s, i, o, t)
    cases["elementwise/fixed_chain"] = fixed_chain_case
    cases["elementwise/random_chain1"] = lambda t: random_chain_case(1, t)
    cases["elementwise/random_chain2"] = lambda t: random_chain_case(2, t)
    cases["tiny/ten_ops"] = tiny_case
    for name in ("mlp", "cnn"):
        cases[f"train/{name}"] = lambda t, n=name: train_case(n, t)
        for batch in (256, 1):
            cases[f"infer/{name}_b{batch}"] = lambda t, n=name, b=batch: infer_case(n, b, t)
        cases[f"memory/{name}_train"] = lambda t, n=name: memory_case(n, t)
    return cases


def main():
    """Runs the selected cases, one JSON line each."""
    global CONV_CHANNELS_LAST
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--filter", default="", help="regex: run the cases whose names it matches (re.search)")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per timed block (default 0.5)")
    parser.add_argument("--conv-layout", choices=("nhwc", "nchw"), default="nhwc",
                        help="memory format of the convolutions (default nhwc: channels-last)")
    parser.add_argument("--list", action="store_true", help="print the case names and exit")
    parser.add_argument("--describe", action="store_true",
                        help="print the peer (torch version, threads, the OpenBLAS and kernels it runs on) as JSON")
    args = parser.parse_args()
    CONV_CHANNELS_LAST = args.conv_layout == "nhwc"
    torch.set_num_threads(THREADS)
    cases = all_cases()
    selected = [name for name in cases if re.search(args.filter, name)]
    if args.list:
        print("\n".join(selected))
        return
    library, core = torch_peer.loaded_core()
    if library is None:
        print("torch_bench.py: PyTorch does not run on OpenBLAS here (install libopenblas0-pthread): the peer "
              "is not at its best", file=sys.stderr)
    if args.describe:
        print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "openblas": library,
                          "core": core, "peer": PEER}))
        return
    for name in selected:
        value, unit = cases[name](args.min_time)
        print(json.dumps({"case": name, "value": value, "unit": unit}), flush=True)


if __name__ == "__main__":
    main()
