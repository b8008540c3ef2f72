#!/usr/bin/env python3
"""Data-parallel scaling of kiln's training steps (the Fashion-MNIST MLP and CNN, Adam) on one
global batch, in four layouts run interleaved:

  one       1 process, 1 device of 1 thread        KILN_BACKEND=cpu:threads=1
  devices   1 process, 2 devices of 1 thread each  KILN_BACKEND=cpu:threads=2,devices=2
  mpirun    2 processes of 1 thread each           KILN_BACKEND=cpu:threads=1 mpirun -np 2
  apart     2 processes of 1 thread each, each training on its own half of the batch with no
            exchange at all (their timed steps begin together, after both warmed up; their
            examples over the span to the later one's end): the bound that the two data-parallel
            layouts would reach with collectives and waits that cost nothing

  python3 bench/data_parallel.py [--build DIR] [--reps N] [--steps N]

Prints, per model and layout, the median examples per second, the ratio to `one`, and the
median time per step spent in collectives (waiting for the other replica included). Build
first: cmake --preset release (or bench) and build kiln_data_parallel_bench.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_apart(exe, model, steps, env):
    """Two independent processes on half the global batch each. Both compile and warm up, then
    begin their timed steps at one time on the clock; the rate is the examples both trained over
    the span from that start to the later one's end."""
    batch = {"mlp": 256, "cnn": 128}[model]
    for margin in (4.0, 15.0):
        start_at = time.time() + margin
        cmd = [exe, f"--model={model}", f"--steps={steps}", f"--batch={batch // 2}", f"--start-at={start_at:.6f}"]
        procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        outs = [p.communicate() for p in procs]
        for p, (out, err) in zip(procs, outs):
            if p.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} failed:\n{out[-2000:]}\n{err[-3000:]}")
        results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
        if max(r["late_s"] for r in results) < 0.005:
            break
    else:
        raise SystemExit(f"{' '.join(cmd)}: a process began its timed steps late: {results}")
    span = max(r["end_s"] for r in results) - min(r["start_s"] for r in results)
    return {"examples_per_s": sum(r["examples"] for r in results) / span, "collective_ms_per_step": 0.0,
            "collective_bytes_per_step": 0}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--steps", type=int, default=0, help="timed steps per run (default: 300 for the MLP, 40 for the CNN)")
    p.add_argument("--models", default="mlp,cnn")
    p.add_argument("--verbose", action="store_true", help="also print every run's examples/s (stderr)")
    args = p.parse_args()
    exe = os.path.join(args.build, "bench", "kiln_data_parallel_bench")
    if not os.path.exists(exe):
        raise SystemExit(f"{exe} not found: build kiln_data_parallel_bench in {args.build}")
    base = dict(os.environ)
    base.pop("OMP_NUM_THREADS", None)
    # mpirun as root, on 2 cores, in containers that forbid cross-memory attach.
    base.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1")
    layouts = {
        "one": ("cpu:threads=1", []),
        "devices": ("cpu:threads=2,devices=2", []),
        "mpirun": ("cpu:threads=1", ["mpirun", "-np", "2"]),
        "apart": ("cpu:threads=1", None),
    }
    rows = []
    raw = []
    for model in args.models.split(","):
        results = {k: [] for k in layouts}
        steps = args.steps or {"mlp": 300, "cnn": 40}[model]
        for _ in range(args.reps):
            for name, (backend, launcher) in layouts.items():
                env = dict(base, KILN_BACKEND=backend)
                if launcher is None:
                    results[name].append(run_apart(exe, model, steps, env))
                else:
                    results[name].append(run(launcher + [exe, f"--model={model}", f"--steps={steps}"], env))
        one = statistics.median(r["examples_per_s"] for r in results["one"])
        for name in layouts:
            raw.append((model, name, results[name]))
            eps = statistics.median(r["examples_per_s"] for r in results[name])
            coll = statistics.median(r["collective_ms_per_step"] for r in results[name])
            rows.append((model, name, eps, eps / one, coll, results[name][0]["collective_bytes_per_step"]))
    if args.verbose:
        for model, name, runs in raw:
            print(f"{model} {name}: " + " ".join(f"{r['examples_per_s']:,.0f}" for r in runs), file=sys.stderr)
    print(f"| model | layout | examples/s | vs one | collectives ms/step | bytes/step |")
    print("|---|---|---:|---:|---:|---:|")
    for model, name, eps, ratio, coll, nbytes in rows:
        print(f"| {model} | {name} | {eps:,.0f} | {ratio:.2f} | {coll:.2f} | {nbytes:,} |")


if __name__ == "__main__":
    main()
