#!/usr/bin/python3
"""Writes tests/ml/fixtures/optimizers.npz: torch.optim's trajectories for the optimizer tests.

For each configuration, a [3, 4] float64 parameter starts at w0 and takes 10 steps with the
given gradients (the same for every configuration); the file holds w after each step.
Run with Debian's python3-torch: /usr/bin/python3 tests/ml/make_optimizer_fixtures.py
"""
import os

import numpy as np
import torch

rng = np.random.default_rng(1234)
w0 = rng.uniform(-1, 1, size=(3, 4))
grads = rng.uniform(-2, 2, size=(10, 3, 4))

configs = {
    "sgd": lambda p: torch.optim.SGD([p], lr=0.1),
    "sgd_momentum": lambda p: torch.optim.SGD([p], lr=0.05, momentum=0.9),
    "sgd_nesterov": lambda p: torch.optim.SGD([p], lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda p: torch.optim.Adam([p], lr=0.01),
    "adam_l2": lambda p: torch.optim.Adam([p], lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    "adamw": lambda p: torch.optim.AdamW([p], lr=0.01, weight_decay=0.05),
    "rmsprop": lambda p: torch.optim.RMSprop([p], lr=0.01),
    "rmsprop_momentum": lambda p: torch.optim.RMSprop([p], lr=0.01, momentum=0.5),
    "adagrad": lambda p: torch.optim.Adagrad([p], lr=0.1),
    "adamax": lambda p: torch.optim.Adamax([p], lr=0.02),
    "adamax_l2": lambda p: torch.optim.Adamax([p], lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    "amsgrad": lambda p: torch.optim.Adam([p], lr=0.01, amsgrad=True),
    "amsgrad_w": lambda p: torch.optim.AdamW([p], lr=0.01, weight_decay=0.05, amsgrad=True),
}

out = {"w0": w0, "grads": grads}
for name, make in configs.items():
    p = torch.nn.Parameter(torch.tensor(w0, dtype=torch.float64))
    opt = make(p)
    traj = []
    for g in grads:
        opt.zero_grad()
        p.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        traj.append(p.detach().numpy().copy())
    out[name] = np.stack(traj)

# Clipping by global norm, as torch.nn.utils.clip_grad_norm_ with max_norm 1, then SGD lr 0.1.
p = torch.nn.Parameter(torch.tensor(w0, dtype=torch.float64))
opt = torch.optim.SGD([p], lr=0.1)
traj = []
for g in grads:
    opt.zero_grad()
    p.grad = torch.tensor(g, dtype=torch.float64)
    torch.nn.utils.clip_grad_norm_([p], 1.0)
    opt.step()
    traj.append(p.detach().numpy().copy())
out["sgd_clip_norm"] = np.stack(traj)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "optimizers.npz")
np.savez(path, **out)
print("wrote", path)
