#!/usr/bin/env python3
"""PyTorch's side of the language-model benchmark (bench/lm_vs_torch.py runs it beside
kiln_lm_bench on the same weights): a Llama implementation written as HuggingFace's
modeling_llama.py computes it (RMSNorm, rotary embeddings, grouped-query attention through
softmax(q·kᵀ/√d)·v, SwiGLU), float32, eager, 2 threads, reading the model
directory kiln_lm_bench init wrote (config.json, model.safetensors).

  python3 bench/torch_lm_bench.py generate DIR [--reps N]   greedy decoding with a KV cache
                                                            (keys and values concatenated per
                                                            step, as HuggingFace's DynamicCache)
  python3 bench/torch_lm_bench.py train DIR [--batch B] [--seq S]   AdamW steps

Prints one JSON line with the same keys as kiln_lm_bench.
"""

import argparse
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer  # noqa: E402

torch_peer.configure()  # before torch loads OpenBLAS

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(2)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        a, b = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[a:b], dtype=np.float32).reshape(info["shape"]).copy())
    return out


class Llama(torch.nn.Module):
    def __init__(self, cfg, weights):
        super().__init__()
        self.cfg = cfg
        self.p = torch.nn.ParameterDict({k.replace(".", "|"): torch.nn.Parameter(v) for k, v in weights.items()})
        d = cfg["head_dim"]
        self.inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float32) / d))

    def w(self, name):
        return self.p[name.replace(".", "|")]

    def rms(self, x, name):
        v = x.pow(2).mean(-1, keepdim=True)
        return self.w(name) * (x * torch.rsqrt(v + self.cfg["rms_norm_eps"]))

    def forward(self, ids, start=0, cache=None):
        cfg = self.cfg
        b, s = ids.shape
        heads, kvh, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        pos = torch.arange(start, start + s, dtype=torch.float32)
        freqs = pos[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()

        def rope(x):
            h = x.shape[-1] // 2
            return x * cos + torch.cat((-x[..., h:], x[..., :h]), dim=-1) * sin

        h = F.embedding(ids, self.w("model.embed_tokens.weight"))
        for i in range(cfg["num_hidden_layers"]):
            p = f"model.layers.{i}"
            x = self.rms(h, p + ".input_layernorm.weight")
            q = F.linear(x, self.w(p + ".self_attn.q_proj.weight")).view(b, s, heads, d).transpose(1, 2)
            k = F.linear(x, self.w(p + ".self_attn.k_proj.weight")).view(b, s, kvh, d).transpose(1, 2)
            v = F.linear(x, self.w(p + ".self_attn.v_proj.weight")).view(b, s, kvh, d).transpose(1, 2)
            q, k = rope(q), rope(k)
            if cache is not None:
                if i < len(cache):
                    k = torch.cat((cache[i][0], k), dim=2)
                    v = torch.cat((cache[i][1], v), dim=2)
                    cache[i] = (k, v)
                else:
                    cache.append((k, v))
            k = k.repeat_interleave(heads // kvh, dim=1)
            v = v.repeat_interleave(heads // kvh, dim=1)
            scores = q @ k.transpose(-1, -2) / (d ** 0.5)
            if s > 1:  # the prefill: causal over the prompt
                scores = scores.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1), float("-inf"))
            o = torch.softmax(scores, dim=-1) @ v
            h = h + F.linear(o.transpose(1, 2).reshape(b, s, heads * d), self.w(p + ".self_attn.o_proj.weight"))
            x = self.rms(h, p + ".post_attention_layernorm.weight")
            g = F.linear(x, self.w(p + ".mlp.gate_proj.weight"))
            u = F.linear(x, self.w(p + ".mlp.up_proj.weight"))
            h = h + F.linear(F.silu(g) * u, self.w(p + ".mlp.down_proj.weight"))
        h = self.rms(h, "model.norm.weight")
        head = self.w("lm_head.weight") if "lm_head|weight" in self.p else self.w("model.embed_tokens.weight")
        return F.linear(h, head)


def time_generation(model, prompt_len, count, vocab):
    g = torch.Generator().manual_seed(7 + prompt_len)
    ids = torch.randint(0, vocab, (1, prompt_len), generator=g)
    cache, times = [], []
    start = time.perf_counter()
    with torch.no_grad():
        logits = model(ids, 0, cache)
        pos = prompt_len
        for _ in range(count):
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            times.append(time.perf_counter())
            logits = model(nxt, pos, cache)
            pos += 1
    per = [(b - a) * 1000 for a, b in zip(times, times[1:])]
    return per, (times[0] - start) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["generate", "train"])
    ap.add_argument("dir")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    a = ap.parse_args()
    with open(os.path.join(a.dir, "config.json")) as f:
        cfg = json.load(f)
    model = Llama(cfg, read_safetensors(os.path.join(a.dir, "model.safetensors")))
    vocab = cfg["vocab_size"]
    if a.mode == "generate":
        time_generation(model, 16, 4, vocab)
        time_generation(model, 512, 4, vocab)
        at16, at512, prefill = [], [], []
        for _ in range(a.reps):
            p, _ = time_generation(model, 16, 33, vocab)
            at16 += p
            p, t = time_generation(model, 512, 33, vocab)
            at512 += p
            prefill.append(t)
        med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
        print(json.dumps({"mode": "generate", "ms_per_token_at_16": round(med(at16), 3),
                          "ms_per_token_at_512": round(med(at512), 3), "prefill_512_ms": round(med(prefill), 1),
                          "prefill_tokens_per_s": round(512 / (med(prefill) / 1000))}))
    else:
        g = torch.Generator().manual_seed(3)
        ids = torch.randint(0, vocab, (a.batch, a.seq + 1), generator=g)
        x, y = ids[:, :-1], ids[:, 1:]
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
            loss.backward()
            opt.step()
            return loss.item()

        step()
        ms = []
        for _ in range(max(a.reps, 3)):
            t0 = time.perf_counter()
            step()
            ms.append((time.perf_counter() - t0) * 1000)
        m = sorted(ms)[len(ms) // 2]
        print(json.dumps({"mode": "train", "ms_per_step": round(m, 1), "tokens_per_s": round(a.batch * a.seq / (m / 1000)),
                          "batch": a.batch, "seq": a.seq}))


if __name__ == "__main__":
    main()
