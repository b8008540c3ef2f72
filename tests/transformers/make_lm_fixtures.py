#!/usr/bin/python3
"""Writes tests/transformers/fixtures/: small causal language models with random weights in
HuggingFace's layout (<name>/config.json, <name>/model.safetensors) and, in <name>/expected.npz,
token ids and the logits a PyTorch implementation of the same architecture computes for them
(float64 arithmetic on the float32 weights).

The PyTorch code below follows HuggingFace transformers' modeling_llama.py and modeling_gpt2.py
(eager attention): Llama has RMSNorm (mean of squares, rsqrt, times weight), rotary embeddings in
the rotate-half layout (inv_freq = theta^(-2i/d), with the "linear", "dynamic" and "llama3"
scalings), grouped-query attention (key/value heads repeated), causal softmax attention, a SwiGLU
MLP and an untied lm_head; GPT-2 has LayerNorm with biases, learned positions, Conv1D layers
(weights [in, out]), the tanh GELU and tied embeddings.

Models:
  llama          hidden 32, 2 layers, 4 heads, 2 KV heads, intermediate 48, vocab 61
  llama_scaled   llama3 rope scaling (factor 8, original context 16), attention biases (Qwen2)
  llama_dynamic  dynamic NTK scaling (factor 4) on a sequence past max_position_embeddings
  gpt2           hidden 24, 2 layers, 3 heads, intermediate 40, vocab 53

Run with Debian's python3-torch: /usr/bin/python3 tests/transformers/make_lm_fixtures.py
"""
import json
import math
import os
import struct

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def write_safetensors(path, tensors):
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype=np.float32)
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def rope_inv_freq(cfg, seq_len):
    d = cfg["head_dim"]
    base = cfg["rope_theta"]
    scaling = cfg.get("rope_scaling") or {}
    kind = scaling.get("rope_type", "default")
    if kind == "dynamic" and seq_len > cfg["max_position_embeddings"]:
        f, m = scaling["factor"], cfg["max_position_embeddings"]
        base = base * ((f * seq_len / m) - (f - 1)) ** (d / (d - 2))
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    if kind == "linear":
        inv = inv / scaling["factor"]
    elif kind == "llama3":
        factor, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / lo, old / hi
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        inv = torch.where(medium, smoothed, scaled)
    return inv


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def causal_attention(q, k, v):
    # q [b, heads, s, d]; k, v [b, heads, s, d]
    s = q.shape[2]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def llama_logits(cfg, w, ids):
    t = {k: torch.from_numpy(v).double() for k, v in w.items()}
    b, s = ids.shape
    heads, kvh, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]

    def rms(x, g):
        return g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    def lin(x, name, bias):
        y = x @ t[name + ".weight"].T
        return y + t[name + ".bias"] if bias else y

    inv = rope_inv_freq(cfg, s)
    pos = torch.arange(s, dtype=torch.float64)
    freqs = pos[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    h = t["model.embed_tokens.weight"][torch.from_numpy(ids).long()]
    ab, mb = cfg["attention_bias"], cfg["mlp_bias"]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}"
        x = rms(h, t[p + ".input_layernorm.weight"])
        q = lin(x, p + ".self_attn.q_proj", ab).view(b, s, heads, d).transpose(1, 2)
        k = lin(x, p + ".self_attn.k_proj", ab).view(b, s, kvh, d).transpose(1, 2)
        v = lin(x, p + ".self_attn.v_proj", ab).view(b, s, kvh, d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(heads // kvh, dim=1)
        v = v.repeat_interleave(heads // kvh, dim=1)
        o = causal_attention(q, k, v).transpose(1, 2).reshape(b, s, heads * d)
        h = h + lin(o, p + ".self_attn.o_proj", ab)
        x = rms(h, t[p + ".post_attention_layernorm.weight"])
        g = lin(x, p + ".mlp.gate_proj", mb)
        u = lin(x, p + ".mlp.up_proj", mb)
        h = h + lin(torch.nn.functional.silu(g) * u, p + ".mlp.down_proj", mb)
    h = rms(h, t["model.norm.weight"])
    return (h @ t["lm_head.weight"].T).numpy()


def gpt2_logits(cfg, w, ids):
    t = {k: torch.from_numpy(v).double() for k, v in w.items()}
    b, s = ids.shape
    heads, e = cfg["n_head"], cfg["n_embd"]
    d = e // heads
    eps = cfg["layer_norm_epsilon"]

    def ln(x, name):
        return torch.nn.functional.layer_norm(x, (e,), t[name + ".weight"], t[name + ".bias"], eps)

    def conv1d(x, name):
        return x @ t[name + ".weight"] + t[name + ".bias"]

    h = t["transformer.wte.weight"][torch.from_numpy(ids).long()] + t["transformer.wpe.weight"][:s]
    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}"
        qkv = conv1d(ln(h, p + ".ln_1"), p + ".attn.c_attn")
        q, k, v = (a.view(b, s, heads, d).transpose(1, 2) for a in qkv.split(e, dim=2))
        o = causal_attention(q, k, v).transpose(1, 2).reshape(b, s, e)
        h = h + conv1d(o, p + ".attn.c_proj")
        f = torch.nn.functional.gelu(conv1d(ln(h, p + ".ln_2"), p + ".mlp.c_fc"), approximate="tanh")
        h = h + conv1d(f, p + ".mlp.c_proj")
    h = ln(h, "transformer.ln_f")
    return (h @ t["transformer.wte.weight"].T).numpy()


def llama_weights(cfg, rng):
    hd, v, ff = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    q = cfg["num_attention_heads"] * cfg["head_dim"]
    kv = cfg["num_key_value_heads"] * cfg["head_dim"]
    w = {"model.embed_tokens.weight": rng.normal(0, 0.5, (v, hd))}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}"
        w[p + ".input_layernorm.weight"] = rng.uniform(0.5, 1.5, hd)
        for name, (o, n) in {"q_proj": (q, hd), "k_proj": (kv, hd), "v_proj": (kv, hd), "o_proj": (hd, q)}.items():
            w[f"{p}.self_attn.{name}.weight"] = rng.normal(0, 0.25, (o, n))
            if cfg["attention_bias"]:
                w[f"{p}.self_attn.{name}.bias"] = rng.normal(0, 0.1, o)
        w[p + ".post_attention_layernorm.weight"] = rng.uniform(0.5, 1.5, hd)
        for name, (o, n) in {"gate_proj": (ff, hd), "up_proj": (ff, hd), "down_proj": (hd, ff)}.items():
            w[f"{p}.mlp.{name}.weight"] = rng.normal(0, 0.25, (o, n))
    w["model.norm.weight"] = rng.uniform(0.5, 1.5, hd)
    w["lm_head.weight"] = rng.normal(0, 0.25, (v, hd))
    return {k: a.astype(np.float32) for k, a in w.items()}


def gpt2_weights(cfg, rng):
    e, v, ff, npos = cfg["n_embd"], cfg["vocab_size"], cfg["n_inner"], cfg["n_positions"]
    w = {"transformer.wte.weight": rng.normal(0, 0.5, (v, e)), "transformer.wpe.weight": rng.normal(0, 0.3, (npos, e))}

    def norm(name):
        w[name + ".weight"] = rng.uniform(0.5, 1.5, e)
        w[name + ".bias"] = rng.normal(0, 0.1, e)

    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}"
        norm(p + ".ln_1")
        for name, (n, o) in {"attn.c_attn": (e, 3 * e), "attn.c_proj": (e, e), "mlp.c_fc": (e, ff),
                             "mlp.c_proj": (ff, e)}.items():
            w[f"{p}.{name}.weight"] = rng.normal(0, 0.25, (n, o))
            w[f"{p}.{name}.bias"] = rng.normal(0, 0.1, o)
        norm(p + ".ln_2")
    norm("transformer.ln_f")
    return {k: a.astype(np.float32) for k, a in w.items()}


def llama_config(**extra):
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 61, "hidden_size": 32,
           "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 8, "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "rope_scaling": None, "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
           "tie_word_embeddings": False, "torch_dtype": "float32"}
    cfg.update(extra)
    return cfg


def write(name, cfg, weights, logits_fn, ids):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_safetensors(os.path.join(d, "model.safetensors"), weights)
    logits = logits_fn(cfg, weights, ids)
    np.savez(os.path.join(d, "expected.npz"), ids=ids.astype(np.int32), logits=logits)


def main():
    rng = np.random.default_rng(2026)
    cfg = llama_config()
    write("llama", cfg, llama_weights(cfg, rng), llama_logits, rng.integers(0, 61, (2, 13)))

    cfg = llama_config(model_type="qwen2", architectures=["Qwen2ForCausalLM"], attention_bias=True,
                       max_position_embeddings=128,
                       rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 4.0, "original_max_position_embeddings": 16})
    write("llama_scaled", cfg, llama_weights(cfg, rng), llama_logits, rng.integers(0, 61, (2, 40)))

    cfg = llama_config(max_position_embeddings=16, rope_scaling={"rope_type": "dynamic", "factor": 4.0})
    write("llama_dynamic", cfg, llama_weights(cfg, rng), llama_logits, rng.integers(0, 61, (1, 40)))

    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 53, "n_embd": 24, "n_inner": 40,
           "n_layer": 2, "n_head": 3, "n_positions": 32, "n_ctx": 32, "layer_norm_epsilon": 1e-5,
           "activation_function": "gelu_new", "tie_word_embeddings": True, "bos_token_id": 50, "eos_token_id": 50}
    write("gpt2", cfg, gpt2_weights(cfg, rng), gpt2_logits, rng.integers(0, 53, (2, 11)))


if __name__ == "__main__":
    main()
