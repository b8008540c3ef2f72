#!/usr/bin/python3
"""Writes tests/ml/fixtures/losses.npz: PyTorch's values and gradients for the loss tests.

For each loss, the inputs, torch's value (reduction "mean") and the gradient of that value with
respect to the predictions; the triplet losses are written out anchor by anchor with torch ops. The weighted and masked variants follow kiln's documented formula,
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
    "huber_d2": lambda p, y, r="mean": F.huber_loss(p, y, reduction=r, delta=2.0),
    "huber_d05": lambda p, y, r="mean": F.huber_loss(p, y, reduction=r, delta=0.5),
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

# Triplet losses over a batch of embeddings [batch, 4] with class ids [batch] (GoMLX's TripletLoss:
# batch mining), written anchor by anchor. Anchor 3's class has no other example, so it forms no
# triplet. Per anchor a: S_a, the sum of its triplets' losses, and C_a, how many it has; the loss
# is sum(w_a * S_a) / sum(w_a * C_a) (w_a = 1 without weights or mask).
trip_labels = np.array([0, 1, 0, 2, 1, 0], dtype=np.int64)
trip_emb = rng.normal(size=(batch, 4))
out["trip_labels"], out["trip_emb"] = trip_labels, trip_emb


def distance(x, a, b, metric):
    if metric == "l2":
        return torch.sqrt(((x[a] - x[b]) ** 2).sum())
    if metric == "squared_l2":
        return ((x[a] - x[b]) ** 2).sum()
    cos = (x[a] * x[b]).sum() / (torch.sqrt((x[a] ** 2).sum()) * torch.sqrt((x[b] ** 2).sum()))
    return torch.clamp(1 - cos, min=0)


def hinge(v, margin):
    return torch.clamp(v + margin, min=0) if margin > 0 else F.softplus(v)


def triplet_sums(x, mining, margin, metric):
    sums, counts = [], []
    for a in range(batch):
        pos = [p for p in range(batch) if p != a and trip_labels[p] == trip_labels[a]]
        neg = [n for n in range(batch) if trip_labels[n] != trip_labels[a]]
        if not pos or not neg:
            sums.append(torch.zeros((), dtype=torch.float64))
            counts.append(0)
            continue
        dp = [distance(x, a, p, metric) for p in pos]
        dn = [distance(x, a, n, metric) for n in neg]
        if mining == "all":
            sums.append(sum(hinge(u - v, margin) for u in dp for v in dn))
            counts.append(len(dp) * len(dn))
            continue
        hardest_pos = max(dp, key=lambda t: t.item())
        if mining == "hard":
            chosen = min(dn, key=lambda t: t.item())
        else:  # semi-hard: the closest negative beyond the hardest positive, else the farthest one
            beyond = [v for v in dn if v.item() > hardest_pos.item()]
            chosen = min(beyond, key=lambda t: t.item()) if beyond else max(dn, key=lambda t: t.item())
        sums.append(hinge(hardest_pos - chosen, margin))
        counts.append(1)
    return sums, np.array(counts, dtype=np.float64)


triplets = {
    "triplet_semihard": ("semi_hard", 1.0, "l2"),
    "triplet_hard": ("hard", 1.0, "l2"),
    "triplet_all_sq": ("all", 0.5, "squared_l2"),
    "triplet_hard_cos_soft": ("hard", 0.0, "cosine"),
}
for name, (mining, margin, metric) in triplets.items():
    x = torch.tensor(trip_emb, dtype=torch.float64, requires_grad=True)
    sums, counts = triplet_sums(x, mining, margin, metric)
    value = sum(sums) / counts.sum()
    value.backward()
    out[name] = np.array(value.item())
    out[name + "_grad"] = x.grad.numpy().copy()
    s_values = np.array([float(v) for v in sums])
    for suffix, w in (("_weighted", weights), ("_masked", mask.astype(np.float64)), ("_weighted_masked", weights * mask)):
        out[name + suffix] = np.array((w * s_values).sum() / (w * counts).sum())

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "losses.npz")
np.savez(path, **out)
print("wrote", path, len(out), "arrays")
