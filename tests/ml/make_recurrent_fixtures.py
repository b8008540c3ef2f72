#!/usr/bin/python3
"""Writes tests/ml/fixtures/recurrent.npz: PyTorch's nn.LSTM and nn.GRU outputs and gradients.

For each case, a one-layer torch.nn.LSTM or nn.GRU (batch_first, float64, seeded weights) runs on
x [batch 3, seq 5, features 4], bidirectional or not, with all sequences full or with lengths
(pack_padded_sequence: steps past a sequence's length give zero outputs, and the final state is
the state at its last step). Stored per case: the weights under torch's names, x, the lengths,
the outputs [batch, seq, dirs * hidden], h_n and (LSTM) c_n [dirs, batch, hidden], and the
gradients of sum(outputs * r) + sum(h_n * rh) (a fixed random r, rh) with respect to x and to
each weight. Run with Debian's python3-torch: /usr/bin/python3 tests/ml/make_recurrent_fixtures.py
"""
import os

import numpy as np
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

torch.manual_seed(7)
rng = np.random.default_rng(7)
batch, seq, features, hidden = 3, 5, 4, 6
out = {}

for kind in ("lstm", "gru"):
    for bidirectional in (False, True):
        for masked in (False, True):
            name = f"{kind}_{'bi' if bidirectional else 'uni'}_{'masked' if masked else 'full'}"
            cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
            net = cls(features, hidden, batch_first=True, bidirectional=bidirectional).double()
            dirs = 2 if bidirectional else 1
            x = torch.tensor(rng.normal(size=(batch, seq, features)), requires_grad=True)
            lengths = np.array([5, 2, 4]) if masked else np.array([seq] * batch)
            if masked:
                packed = pack_padded_sequence(x, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
                y, state = net(packed)
                y, _ = pad_packed_sequence(y, batch_first=True, total_length=seq)
            else:
                y, state = net(x)
            h_n = state[0] if kind == "lstm" else state
            r = torch.tensor(rng.normal(size=y.shape))
            rh = torch.tensor(rng.normal(size=h_n.shape))
            (torch.sum(y * r) + torch.sum(h_n * rh)).backward()
            out[f"{name}/x"] = x.detach().numpy()
            out[f"{name}/lengths"] = lengths.astype(np.int32)
            out[f"{name}/outputs"] = y.detach().numpy()
            out[f"{name}/h_n"] = h_n.detach().numpy()
            if kind == "lstm":
                out[f"{name}/c_n"] = state[1].detach().numpy()
            out[f"{name}/r"] = r.numpy()
            out[f"{name}/rh"] = rh.numpy()
            out[f"{name}/grad_x"] = x.grad.numpy()
            for pname, p in net.named_parameters():
                out[f"{name}/{pname}"] = p.detach().numpy()
                out[f"{name}/grad_{pname}"] = p.grad.numpy()

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "recurrent.npz")
np.savez_compressed(path, **out)
print(f"wrote {path}: {len(out)} arrays")
