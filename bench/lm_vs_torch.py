#!/usr/bin/env python3
"""kiln against PyTorch on a Llama-shaped language model (~112M parameters: vocab 32000, hidden
768, 10 layers, 12 heads, 4 key/value heads, intermediate 2048), the same weights on both sides:

  python3 bench/lm_vs_torch.py [--build DIR] [--reps N] [--model DIR]

- generation: greedy decoding at batch 1 with a key/value cache; ms per token after prompts of
  16 and 512 tokens (kiln's per-token cost should be flat in the position), and the prefill of
  512 tokens;
- training: AdamW steps on [4, 128] tokens.

kiln_lm_bench init writes the model (HuggingFace layout) once to --model (default
DIR/lm-bench-model); kiln (DIR/bench/kiln_lm_bench) and PyTorch (bench/torch_lm_bench.py) read
it and run interleaved A B A B for N repetitions; the table has the medians. Each runs with 2
threads: PyTorch as the project's benchmarks run it (OMP_WAIT_POLICY=PASSIVE, OpenBLAS's own
kernel choice: bench/torch_peer.py), kiln with OpenMP's default wait policy.

Build first: cmake --preset bench (or -DKILN_BUILD_BENCH=ON) and build kiln_lm_bench.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import torch_peer  # noqa: E402


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--model")
    ap.add_argument("--skip-train", action="store_true")
    a = ap.parse_args()
    binary = os.path.join(a.build, "bench", "kiln_lm_bench")
    model = a.model or os.path.join(a.build, "lm-bench-model")
    base = dict(os.environ, OMP_NUM_THREADS="2")
    kiln_env = {k: v for k, v in base.items() if k != "OMP_WAIT_POLICY"}
    torch_env, _ = torch_peer.torch_env(dict(base, OMP_WAIT_POLICY="PASSIVE"))
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        print(run([binary, "init", model], kiln_env))
    modes = ["generate"] + ([] if a.skip_train else ["train"])
    results = {m: {"kiln": [], "torch": []} for m in modes}
    for rep in range(a.reps):
        for m in modes:
            results[m]["kiln"].append(run([binary, m, model], kiln_env))
            results[m]["torch"].append(run([python, os.path.join(HERE, "torch_lm_bench.py"), m, model], torch_env))
            print(f"rep {rep + 1} {m}: kiln {results[m]['kiln'][-1]} torch {results[m]['torch'][-1]}", flush=True)

    def med(m, side, key):
        return statistics.median(r[key] for r in results[m][side])

    rows = [("generate", "ms_per_token_at_16", "ms/token after 16", False),
            ("generate", "ms_per_token_at_512", "ms/token after 512", False),
            ("generate", "prefill_tokens_per_s", "prefill 512, tokens/s", True)]
    if not a.skip_train:
        rows.append(("train", "tokens_per_s", "training [4, 128], tokens/s", True))
    print(f"\n| case | kiln | PyTorch | ratio (>1: kiln better) |\n|---|---:|---:|---:|")
    for m, key, name, higher in rows:
        k, t = med(m, "kiln", key), med(m, "torch", key)
        print(f"| {name} | {k:.2f} | {t:.2f} | {(k / t if higher else t / k):.2f} |")
    k16, k512 = med("generate", "kiln", "ms_per_token_at_16"), med("generate", "kiln", "ms_per_token_at_512")
    print(f"\nkiln per-token cost at 512 / at 16: {k512 / k16:.2f}")


if __name__ == "__main__":
    main()
