#!/usr/bin/python3
"""Writes tests/ml/fixtures/losses.npz: PyTorch's values and gradients for the loss tests.

For each loss, the inputs, torch's value (reduction "mean") and the gradient of that value with
respect to the predictions. The weighted and masked variants follow kiln's documented formula,
sum(weight * mask * loss_i) / sum(weight * mask), where loss_i is torch's per-example loss
(reduction "none", averaged over the example's elements).
Run with Debian's python3-torch: /usr/bin/python3 tests/ml/make_loss_fixtures.py
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(99)
batch = 6
out = {}


def record(name, fn, labels, pred):
    """Stores torch's value of fn(pred, labels) and its gradient with respect to pred."""
    p = torch.tensor(pred, dtype=torch.float64, requires_grad=True)
    value = fn(p, torch.as_tensor(labels))
    value.backward()
    out[name] = np.array(value.item())
    out[name + "_grad"] = p.grad.numpy().copy()


def per_example(fn, labels, pred):
    """torch's per-example losses: reduction 'none', then the mean over every axis but the first."""
    v = fn(torch.as_tensor(pred), torch.as_tensor(labels)).numpy()
    return v.reshape(v.shape[0], -1).mean(axis=1) if v.ndim > 1 else v


weights = rng.uniform(0.2, 2.0, size=batch)
mask = np.array([True, False, True, True, False, True])
out["weights"] = weights
out["mask"] = mask


def record_weighted(name, fn_none, labels, pred):
    loss = per_example(fn_none, labels, pred)
    out[name + "_weighted"] = np.array((weights * loss).sum() / weights.sum())
    out[name + "_masked"] = np.array((mask * loss).sum() / mask.sum())
    wm = weights * mask
    out[name + "_weighted_masked"] = np.array((wm * loss).sum() / wm.sum())


# Regression losses on [batch, 3], differences spread over both sides of Huber's delta.
reg_labels = rng.normal(size=(batch, 3))
reg_pred = reg_labels + rng.uniform(-2.5, 2.5, size=(batch, 3))
out["reg_labels"], out["reg_pred"] = reg_labels, reg_pred
regression = {
    "mse": lambda p, y, r="mean": F.mse_loss(p, y, reduction=r),
    "l1": lambda p, y, r="mean": F.l1_loss(p, y, reduction=r),
    "huber": lambda p, y, r="mean": F.huber_loss(p, y, reduction=r, delta=1.0),
}
for name, fn in regression.items():
    record(name, fn, reg_labels, reg_pred)
    record_weighted(name, lambda p, y, fn=fn: fn(p, y, "none"), reg_labels, reg_pred)

# Binary cross-entropy of probabilities (hard and soft labels).
bce_labels = rng.integers(0, 2, size=(batch, 4)).astype(np.float64)
bce_labels[0, :] = [0.3, 0.7, 0.5, 0.9]
bce_pred = rng.uniform(0.05, 0.95, size=(batch, 4))
out["bce_labels"], out["bce_pred"] = bce_labels, bce_pred
record("bce", lambda p, y: F.binary_cross_entropy(p, y), bce_labels, bce_pred)
record_weighted("bce", lambda p, y: F.binary_cross_entropy(p, y, reduction="none"), bce_labels, bce_pred)

# Binary cross-entropy of logits, including large |logits| where a naive formula overflows.
bcel_labels = rng.integers(0, 2, size=(batch, 4)).astype(np.float64)
bcel_labels[1, :] = [0.25, 0.5, 0.75, 1.0]
bcel_pred = rng.normal(scale=3.0, size=(batch, 4))
bcel_pred[2, :] = [50.0, -50.0, 120.0, -300.0]
bcel_pred[3, :] = [88.0, -90.0, 1000.0, -1000.0]
out["bcel_labels"], out["bcel_pred"] = bcel_labels, bcel_pred
record("bce_logits", lambda p, y: F.binary_cross_entropy_with_logits(p, y), bcel_labels, bcel_pred)
record_weighted("bce_logits", lambda p, y: F.binary_cross_entropy_with_logits(p, y, reduction="none"),
                bcel_labels, bcel_pred)

# Cross-entropy of logits [batch, 5] with integer class ids.
ce_logits = rng.normal(scale=2.0, size=(batch, 5))
ce_logits[4, :] = [40.0, -30.0, 10.0, 0.0, 35.0]
ce_ids = rng.integers(0, 5, size=batch).astype(np.int64)
out["ce_logits"], out["ce_ids"] = ce_logits, ce_ids
record("ce_sparse", lambda p, y: F.cross_entropy(p, y), ce_ids, ce_logits)
record_weighted("ce_sparse", lambda p, y: F.cross_entropy(p, y, reduction="none"), ce_ids, ce_logits)

# Cross-entropy of logits with soft labels (torch takes probabilities as the target).
soft = rng.uniform(size=(batch, 5))
soft /= soft.sum(axis=1, keepdims=True)
out["ce_soft_labels"] = soft
record("ce_soft", lambda p, y: F.cross_entropy(p, y), soft, ce_logits)
record_weighted("ce_soft", lambda p, y: F.cross_entropy(p, y, reduction="none"), soft, ce_logits)

# Cross-entropy of probabilities with soft labels: -sum(y * log p) per example, mean over the batch.
probs = torch.softmax(torch.as_tensor(rng.normal(size=(batch, 5))), dim=1).numpy()
out["cce_probs"] = probs
record("cce", lambda p, y: -(y * torch.log(p)).sum(dim=1).mean(), soft, probs)
record_weighted("cce", lambda p, y: -(y * torch.log(p)).sum(dim=1), soft, probs)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "losses.npz")
np.savez(path, **out)
print("wrote", path, len(out), "arrays")
