#!/usr/bin/python3
"""Writes tests/ml/fixtures/nn.npz: PyTorch's values for the kiln::nn tests.

Every array is float64. Keys (prefix_x / _gamma / _beta / ... inputs, prefix_out the result):
  layer_norm:  F.layer_norm over the last axis of [4, 6], eps 1e-5
  layer_norm2: F.layer_norm over the last two axes of [2, 3, 4], eps 1e-5
  rms_norm:    x / sqrt(mean(x^2, last axis) + 1e-6) * gamma (torch 1.13 has no RMSNorm)
  batch_norm:  F.batch_norm(training=False) of [5, 3, 4], features on axis 1, eps 1e-3
  softmax:     F.softmax of [3, 5] along the last axis (softmax_out) and axis 0 (softmax_out0)
  dense_gelu:  F.gelu(x @ w + b), x [4, 5], w [5, 3], b [3]
Run with Debian's python3-torch: /usr/bin/python3 tests/ml/make_nn_fixtures.py
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(20240611)


def t(a):
    return torch.tensor(a, dtype=torch.float64)


out = {}

x = rng.normal(size=(4, 6)) * 2 + 0.5
g = rng.uniform(0.5, 1.5, size=6)
b = rng.normal(size=6)
out.update(layer_norm_x=x, layer_norm_gamma=g, layer_norm_beta=b,
           layer_norm_out=F.layer_norm(t(x), (6,), t(g), t(b), eps=1e-5).numpy())

x = rng.normal(size=(2, 3, 4))
g = rng.uniform(0.5, 1.5, size=(3, 4))
b = rng.normal(size=(3, 4))
out.update(layer_norm2_x=x, layer_norm2_gamma=g, layer_norm2_beta=b,
           layer_norm2_out=F.layer_norm(t(x), (3, 4), t(g), t(b), eps=1e-5).numpy())

x = rng.normal(size=(4, 6)) * 3
g = rng.uniform(0.5, 1.5, size=6)
out.update(rms_norm_x=x, rms_norm_gamma=g,
           rms_norm_out=x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * g)

x = rng.normal(size=(5, 3, 4)) * 2
mean = rng.normal(size=3)
var = rng.uniform(0.5, 2.0, size=3)
g = rng.uniform(0.5, 1.5, size=3)
b = rng.normal(size=3)
out.update(batch_norm_x=x, batch_norm_mean=mean, batch_norm_var=var, batch_norm_gamma=g, batch_norm_beta=b,
           batch_norm_out=F.batch_norm(t(x), t(mean), t(var), t(g), t(b), training=False, eps=1e-3).numpy())

x = rng.normal(size=(3, 5)) * 4
out.update(softmax_x=x, softmax_out=F.softmax(t(x), dim=-1).numpy(), softmax_out0=F.softmax(t(x), dim=0).numpy())

x = rng.normal(size=(4, 5))
w = rng.normal(size=(5, 3))
b = rng.normal(size=3)
out.update(dense_gelu_x=x, dense_gelu_w=w, dense_gelu_b=b, dense_gelu_out=F.gelu(t(x) @ t(w) + t(b)).numpy())

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "nn.npz")
np.savez(path, **out)
print("wrote", path)
