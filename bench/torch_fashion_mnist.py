#!/usr/bin/env python3
"""PyTorch side of kiln's main job (examples/fashion_mnist.cc): the same two recipes on the same
Fashion-MNIST files, for comparing final test accuracy and time.

  mlp: 784-512-512-10, relu, Adam 1e-3, batch 256, 5 epochs
  cnn: conv5x5x32 (same padding) -> relu -> maxpool 2, conv5x5x64 -> relu -> maxpool 2,
       dense 512 -> relu -> dropout 0.3, dense 10; Adam 1e-3, batch 128, 5 epochs

As in kiln: weights are He-uniform (limit sqrt(6 / fan_in), fan_in the product of every axis but
the output one), biases zero; images scaled to [0, 1]; sparse categorical cross-entropy on the
logits, averaged over the batch; the training set is reshuffled every epoch from one seeded
generator and the epochs are joined into one stream of full batches, so the run is
(examples // batch) * epochs steps; the test set is evaluated once at the end in batches of 1000.
The shuffled order itself differs from kiln's (a different generator), and so do the random
numbers of the initialisation and dropout. 2 threads, as kiln's cpu backend on this machine.

  python3 bench/torch_fashion_mnist.py [--model cnn|mlp] [--epochs 5] [--seed 42] [--steps N]
                                       [--data /usr/share/datasets/fashion-mnist]
"""

import argparse
import gzip
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer  # noqa: E402

PEER = torch_peer.configure()  # before torch loads OpenBLAS

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("torch_fashion_mnist.py: PyTorch is not installed; on Debian: apt-get install python3-torch",
          file=sys.stderr)
    sys.exit(2)

THREADS = 2
DATA_DIR = "/usr/share/datasets/fashion-mnist"  # data::kFashionMnistDir


def read_idx(path):
    """An IDX file of unsigned bytes (magic 0x0803 or 0x0801), gzip-compressed, as a numpy array."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    if magic >> 8 != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {magic:#x})")
    ndims = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndims).reshape(dims)


def load(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)  # [n, 1, 28, 28]
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense1 = nn.Linear(784, 512)
        self.dense2 = nn.Linear(512, 512)
        self.logits = nn.Linear(512, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = F.relu(self.dense1(x))
        x = F.relu(self.dense2(x))
        return self.logits(x)


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.dense = nn.Linear(7 * 7 * 64, 512)
        self.logits = nn.Linear(512, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        x = F.relu(self.dense(x))
        x = F.dropout(x, 0.3, self.training)
        return self.logits(x)


def kiln_init(module):
    """kiln's model::DefaultInitializer: He-uniform weights, zero biases.

    kiln's dense weight is [in, out] and its conv kernel [kh, kw, in, out], so fan_in is in
    (dense) and kh*kw*in (conv); torch's [out, in] and [out, in, kh, kw] have the same fan_in.
    """
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            fan_in = m.weight[0].numel()
            limit = math.sqrt(6.0 / fan_in)
            with torch.no_grad():
                m.weight.uniform_(-limit, limit)
                m.bias.zero_()


def batches(num_examples, batch, seed):
    """Endless full batches of indices: a new permutation per epoch, epochs joined."""
    rng = np.random.Generator(np.random.PCG64(seed))
    order, pos = rng.permutation(num_examples), 0
    while True:
        rows = []
        while len(rows) < batch:
            if pos >= num_examples:
                order, pos = rng.permutation(num_examples), 0
            take = min(batch - len(rows), num_examples - pos)
            rows.extend(order[pos:pos + take])
            pos += take
        yield torch.from_numpy(np.asarray(rows, dtype=np.int64))


def evaluate(net, x, y):
    net.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, x.shape[0], 1000):
            logits = net(x[i:i + 1000])
            loss_sum += F.cross_entropy(logits, y[i:i + 1000], reduction="sum").item()
            correct += (logits.argmax(1) == y[i:i + 1000]).sum().item()
    net.train()
    return loss_sum / x.shape[0], correct / x.shape[0]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--steps", type=int, default=0, help="overrides --epochs when > 0")
    p.add_argument("--data", default=DATA_DIR)
    args = p.parse_args()

    torch.set_num_threads(THREADS)
    torch.manual_seed(args.seed)
    start = time.time()
    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")
    batch = 128 if args.model == "cnn" else 256
    net = Cnn() if args.model == "cnn" else Mlp()
    kiln_init(net)
    if args.model == "cnn":
        # NHWC, PyTorch's fastest CPU layout for these convolutions (oneDNN).
        net = net.to(memory_format=torch.channels_last)
        train_x = train_x.contiguous(memory_format=torch.channels_last)
        test_x = test_x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    steps_per_epoch = train_x.shape[0] // batch
    total = args.steps if args.steps > 0 else steps_per_epoch * args.epochs
    print(f"torch {torch.__version__}: training the {args.model} for {total} steps of {batch}, "
          f"{THREADS} threads, seed {args.seed}", flush=True)

    net.train()
    stream = batches(train_x.shape[0], batch, args.seed)
    for step in range(total):
        rows = next(stream)
        loss = F.cross_entropy(net(train_x[rows]), train_y[rows])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (step + 1) % steps_per_epoch == 0 or step + 1 == total:
            print(f"step {step + 1}/{total}: loss {loss.item():.4f}, elapsed {time.time() - start:.1f} s",
                  flush=True)

    test_loss, test_acc = evaluate(net, test_x, test_y)
    print(f"test loss: {test_loss:.6f}, test accuracy: {test_acc:.4f}")
    print(f"time: {time.time() - start:.2f} s")


if __name__ == "__main__":
    main()
