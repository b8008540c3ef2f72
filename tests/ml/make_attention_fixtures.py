#!/usr/bin/python3
"""Writes tests/ml/fixtures/attention.npz: torch.nn.MultiheadAttention outputs and rotary
embeddings for the attention tests.

Multi-head attention (embed 8, 2 heads, batch_first): the inputs, torch's in_proj / out_proj
weights and biases, and its outputs for cross-attention (4 queries, 5 keys) without a mask,
with a causal mask (attn_mask = upper triangle above the diagonal, True = not allowed) and with
a key-padding mask (True = padding).

Rotary embeddings: x [2, 6, 2, 8] at the given positions, by the rotate-half formula written in
NumPy: inv_freq[i] = base^(-2i/d), angle = position * inv_freq, cos and sin repeated on both
halves, out = x * cos + concat(-x2, x1) * sin.
Run with Debian's python3-torch: /usr/bin/python3 tests/ml/make_attention_fixtures.py
"""
import os

import numpy as np
import torch

torch.manual_seed(7)
rng = np.random.default_rng(2024)
embed, heads, batch, q_len, kv_len = 8, 2, 2, 4, 5

mha = torch.nn.MultiheadAttention(embed, heads, batch_first=True).double()
with torch.no_grad():
    # Non-zero biases so that the bias mapping is tested too.
    mha.in_proj_bias.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, size=3 * embed)))
    mha.out_proj.bias.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, size=embed)))
mha.eval()

query = rng.normal(size=(batch, q_len, embed))
key = rng.normal(size=(batch, kv_len, embed))
value = rng.normal(size=(batch, kv_len, embed))
tq, tk, tv = (torch.from_numpy(a) for a in (query, key, value))
causal = torch.triu(torch.ones(q_len, kv_len, dtype=torch.bool), diagonal=1)
padding = torch.zeros(batch, kv_len, dtype=torch.bool)
padding[0, 3:] = True
padding[1, 1] = True

with torch.no_grad():
    plain = mha(tq, tk, tv, need_weights=False)[0]
    masked = mha(tq, tk, tv, attn_mask=causal, need_weights=False)[0]
    padded = mha(tq, tk, tv, key_padding_mask=padding, need_weights=False)[0]

out = {
    "query": query,
    "key": key,
    "value": value,
    "in_proj_weight": mha.in_proj_weight.detach().numpy(),
    "in_proj_bias": mha.in_proj_bias.detach().numpy(),
    "out_proj_weight": mha.out_proj.weight.detach().numpy(),
    "out_proj_bias": mha.out_proj.bias.detach().numpy(),
    "output": plain.numpy(),
    "output_causal": masked.numpy(),
    "key_padding": padding.numpy(),
    "output_key_padding": padded.numpy(),
}

# Rotary embeddings.
base = 10000.0
x = rng.normal(size=(2, 6, 2, 8))
positions = np.array([0, 3, 7, 1, 12, 100], dtype=np.int64)
d = x.shape[-1]
inv_freq = base ** (-np.arange(0, d // 2) * 2.0 / d)
angle = positions[:, None] * inv_freq[None, :]  # [seq, d/2]
cos = np.concatenate([np.cos(angle)] * 2, axis=-1)[None, :, None, :]
sin = np.concatenate([np.sin(angle)] * 2, axis=-1)[None, :, None, :]
x1, x2 = x[..., : d // 2], x[..., d // 2:]
rotated = np.concatenate([-x2, x1], axis=-1)
out["rope_x"] = x
out["rope_positions"] = positions
out["rope_output"] = x * cos + rotated * sin

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "attention.npz")
np.savez(path, **out)
print("wrote", path, sorted(out))
