#!/usr/bin/env python3
"""kiln's benchmarks side by side with PyTorch: the one command.

  python3 bench/run.py [--build DIR] [--reps N] [--filter REGEX] [--out FILE]

For each case it runs kiln (DIR/bench/kiln_bench, one case per process, JSON output) and PyTorch
(bench/torch_bench.py, OMP_WAIT_POLICY=PASSIVE, 2 threads, OpenBLAS's best kernels for this CPU
as bench/torch_peer.py chooses them: the environment's OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are
dropped for the PyTorch process alone; with --peer-keep-memory also glibc keeping freed memory,
so that no PyTorch process page-faults its activations in at every step) interleaved A B A B for
N repetitions,
plus the case's yardstick where it has one (oneDNN called directly, the hand-fused loop, the FMA
peak). A run is repeated (up to --max-retries times) when other processes used more than 5% of
the CPU during it (from /proc/stat and the run's own CPU time). It prints the medians as a table
(ratio: kiln/pytorch for throughputs; pytorch/kiln for times and sizes, so > 1 means kiln is
better) and writes it as markdown to --out (default DIR/bench_results.md).

Build first: cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_BENCH=ON
             ninja -C build/bench kiln_bench
PyTorch: Debian's python3-torch on OpenBLAS (bash scripts/install-deps.sh --bench); without it
the PyTorch column is empty.
"""

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch_peer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THREADS = 2
CONTENTION_LIMIT = 0.05

# Training FLOPs per example (forward + weight gradients + input gradients but the first layer's),
# as bench/model_bench.cc counts them.
MLP_FWD = 2.0 * (784 * 512 + 512 * 512 + 512 * 10)
CNN_FWD = 2.0 * (28 * 28 * 32 * 25 + 14 * 14 * 64 * 25 * 32 + 3136 * 512 + 512 * 10)
TRAIN_FLOPS = {"train/mlp": 3 * MLP_FWD - 2.0 * 784 * 512, "train/cnn": 3 * CNN_FWD - 2.0 * 28 * 28 * 32 * 25}


def rows():
    """The table: case, unit, how kiln's value is read, higher_is_better, yardstick case, torch?"""
    out = []
    gflops = ("counter", "FLOP/s", 1e-9)
    for group in ("matmul", "matmul_dw", "matmul_dx"):
        shapes = ["256x784x512", "256x512x512", "256x512x10"]
        if group == "matmul":
            shapes += ["sq256", "sq512", "sq1024", "sq2048"]
        for s in shapes:
            out.append(dict(case=f"{group}/{s}", unit="GFLOP/s", kiln=gflops, higher=True,
                            limit=f"{group}_onednn/{s}", limit_name="oneDNN"))
    for p in ("fwd", "bwd_data", "bwd_weights"):
        for layer in ("28x28x1_5x5x32", "14x14x32_5x5x64"):
            out.append(dict(case=f"conv_{p}/{layer}", unit="GFLOP/s", kiln=gflops, higher=True,
                            limit=f"conv_{p}_onednn/{layer}", limit_name="oneDNN"))
    # Each chain against its own hand-fused loop (bench/fused_loop.cc).
    for c, limit in (("fixed_chain", "limit/handfused_chain"), ("random_chain1", "limit/handfused_random_chain1"),
                     ("random_chain2", "limit/handfused_random_chain2")):
        out.append(dict(case=f"elementwise/{c}", unit="GB/s", kiln=("counter", "bytes/s", 1e-9), higher=True,
                        limit=limit, limit_name="hand-fused loop"))
    out.append(dict(case="tiny/ten_ops", unit="us/call", kiln=("time", "us"), higher=False))
    for m in ("mlp", "cnn"):
        out.append(dict(case=f"train/{m}", unit="examples/s", kiln=("counter", "examples/s", 1), higher=True,
                        limit="limit/fma_peak", limit_name="fp32 peak"))
    # The same steps through train::Trainer: the yardstick is the graph-only row (target >= 95%).
    for m in ("mlp", "cnn"):
        out.append(dict(case=f"train_trainer/{m}", unit="examples/s", kiln=("counter", "examples/s", 1),
                        higher=True, torch=False, limit=f"train/{m}", limit_name="graph-only row"))
    # bfloat16: the product on the CPU's bfloat16 instructions and mixed-precision training, each
    # against its float32 row (issue targets: 1.5x and 1.3x).
    out.append(dict(case="matmul_half/bf16_sq2048", unit="GFLOP/s", kiln=gflops, higher=True, torch=False,
                    limit="matmul/sq2048", limit_name="Float32 product"))
    for m in ("mlp", "cnn"):
        out.append(dict(case=f"train_trainer/{m}_bf16", unit="examples/s", kiln=("counter", "examples/s", 1),
                        higher=True, torch=False, limit=f"train_trainer/{m}", limit_name="float32 Trainer row"))
    for m in ("mlp", "cnn"):
        for b in (256, 1):
            out.append(dict(case=f"infer/{m}_b{b}", unit="examples/s", kiln=("counter", "examples/s", 1),
                            higher=True))
    for m in ("mlp", "cnn"):
        out.append(dict(case=f"compile/{m}_train", unit="ms", kiln=("time", "ms"), higher=False, torch=False))
    for m in ("mlp", "cnn"):
        out.append(dict(case=f"memory/{m}_train", unit="MB peak RSS growth", kiln=("counter", "peak_rss_MB", 1),
                        higher=False, extra=("peak_buffers_MB", "MB kiln buffers peak")))
    return out


def cpu_busy_seconds():
    """Busy CPU seconds of the whole machine so far (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run_measured(cmd, env, timeout):
    """Runs cmd; returns (stdout, share of the machine other processes used meanwhile)."""
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy0, t0 = cpu_busy_seconds(), time.monotonic()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, check=False)
    elapsed, busy1 = time.monotonic() - t0, cpu_busy_seconds()
    usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    others = max(0.0, (busy1 - busy0) - own) / (elapsed * (os.cpu_count() or 1))
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc.stdout, others


class Runner:
    """Runs single cases of kiln_bench and torch_bench.py, repeating contended runs."""

    def __init__(self, args):
        self.args = args
        self.binary = os.path.join(args.build, "bench", "kiln_bench")
        self.env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS=str(THREADS))
        self.contended = {}  # case -> runs kept although contended
        self.loads = {}  # case -> other processes' share per kept run
        self.python = None  # the interpreter that runs torch_bench.py
        # PyTorch's process alone gets OpenBLAS's best kernels (bench/torch_peer.py).
        self.torch_env, self.peer = torch_peer.torch_env(self.env)
        if args.peer_keep_memory:
            self.torch_env["GLIBC_TUNABLES"] = KEEP_MEMORY
        self.peer_line = None  # the peer as the PyTorch process reports it (describe_peer)

    def describe_peer(self):
        """The table header's line on the peer, from torch_bench.py --describe run as the cases are."""
        probe = subprocess.run([self.python, os.path.join(HERE, "torch_bench.py"), "--describe"],
                               env=self.torch_env, capture_output=True, text=True, check=False)
        if probe.returncode == 0 and probe.stdout.strip():
            d = json.loads(probe.stdout.strip().splitlines()[-1])
            if d["openblas"] is None:
                self.peer_line = f"Peer: PyTorch {d['torch']} NOT on OpenBLAS: {d['peer']}"
            else:
                self.peer_line = (f"Peer: PyTorch {d['torch']} ({d['threads']} threads, eager), matrix kernels "
                                  f"from OpenBLAS core {d['core']} as loaded in the PyTorch process. {d['peer']}")
        line = self.peer_line or torch_peer.describe(self.peer)
        if self.args.peer_keep_memory:
            line += f" glibc keeps freed memory in the PyTorch process (GLIBC_TUNABLES={KEEP_MEMORY})."
        return line

    def measured(self, case, cmd, env=None):
        """Runs cmd, again while contended (at most --max-retries times); returns its stdout."""
        for attempt in range(self.args.max_retries + 1):
            out, others = run_measured(cmd, env or self.env, self.args.timeout)
            if others <= CONTENTION_LIMIT or attempt == self.args.max_retries:
                break
        self.loads.setdefault(case, []).append(others)
        if others > CONTENTION_LIMIT:
            self.contended[case] = self.contended.get(case, 0) + 1
        return out

    def kiln(self, case):
        """The benchmark JSON entry of one kiln_bench case."""
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            cmd = [self.binary, f"--benchmark_filter=^{case}(/|$)", f"--benchmark_out={out.name}",
                   "--benchmark_out_format=json", f"--benchmark_min_time={self.args.min_time}"]
            self.measured(case, cmd)
            with open(out.name) as f:
                data = json.load(f)
        runs = [b for b in data["benchmarks"] if b.get("run_type") == "iteration"]
        if not runs:
            raise RuntimeError(f"kiln_bench has no case {case}")
        return runs[0]

    def torch(self, case):
        """torch_bench.py's value for one case."""
        cmd = [self.python, os.path.join(HERE, "torch_bench.py"), f"--filter=^{case}$",
               f"--min-time={self.args.min_time}"]
        lines = [json.loads(l) for l in self.measured("torch:" + case, cmd, self.torch_env).splitlines() if l.startswith("{")]
        if not lines:
            raise RuntimeError(f"torch_bench.py has no case {case}")
        return lines[0]["value"]


# --peer-keep-memory: glibc's malloc serves large blocks from its heap and keeps what is freed, so
# eager PyTorch's per-step activations are not handed back and faulted in again (its CNN rows move
# 1.4-1.9x between processes otherwise, docs/performance.md "The peers").
KEEP_MEMORY = "glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824"

TIME_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def kiln_value(entry, how):
    """A kiln value from its benchmark entry: a counter times a scale, or the time per iteration."""
    if how[0] == "counter":
        return entry[how[1]] * how[2]
    seconds = entry["real_time"] * TIME_SCALE[entry["time_unit"]]
    return seconds / TIME_SCALE[how[1]]


def med(values):
    """Median, None for no values."""
    return statistics.median(values) if values else None


def fmt(v):
    """A value for the table: 3 significant digits, thousands separated."""
    if v is None:
        return "-"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def strace_mmaps(runner):
    """mmap+munmap calls per steady-state MLP training step (strace -c, 60 minus 10 steps)."""
    if shutil.which("strace") is None:
        return None
    counts = []
    for steps in (10, 60):
        with tempfile.NamedTemporaryFile(suffix=".txt") as f:
            subprocess.run(["strace", "-f", "-c", "-e", "trace=mmap,munmap", "-o", f.name, runner.binary,
                            f"--benchmark_filter=^steady/mlp_train_{steps}(/|$)"], env=runner.env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                           timeout=runner.args.timeout)
            total = 0
            for line in open(f.name):
                tokens = line.split()
                if tokens and tokens[-1] in ("mmap", "munmap") and len(tokens) >= 5:
                    total += int(tokens[3])
            counts.append(total)
    return (counts[1] - counts[0]) / 50.0


def torch_python(requested):
    """A Python interpreter that imports torch: --python, else this one, else /usr/bin/python3."""
    candidates = [requested] if requested else [sys.executable, "/usr/bin/python3"]
    for python in candidates:
        if python and os.access(python, os.X_OK):
            probe = subprocess.run([python, "-c", "import torch"], capture_output=True, check=False)
            if probe.returncode == 0:
                return python
    return None


def main():
    """Runs every selected row, prints and writes the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "bench"), help="build dir (default build/bench)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions per side (default 5)")
    parser.add_argument("--filter", default="", help="regex on case names (re.search)")
    parser.add_argument("--out", default=None, help="markdown output (default BUILD/bench_results.md)")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per timed block (default 0.5)")
    parser.add_argument("--max-retries", type=int, default=3, help="reruns of a contended run (default 3)")
    parser.add_argument("--python", default=None, help="Python with torch (default: this one, else /usr/bin/python3)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per process (default 900)")
    parser.add_argument("--peer-keep-memory", action="store_true",
                        help="PyTorch with glibc keeping freed memory (GLIBC_TUNABLES raising the mmap and trim "
                             "thresholds): no page faults per step in any of its processes; not the default peer")
    args = parser.parse_args()
    runner = Runner(args)
    if not os.access(runner.binary, os.X_OK):
        sys.exit(f"run.py: {runner.binary} not found; build it: cmake -S . -B {args.build} -G Ninja "
                 "-DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_BENCH=ON && ninja -C {args.build} kiln_bench")
    runner.python = torch_python(args.python)
    have_torch = runner.python is not None
    if have_torch:
        print(runner.describe_peer(), file=sys.stderr)
    if not have_torch:
        print("run.py: PyTorch is not installed (apt-get install python3-torch): PyTorch column empty",
              file=sys.stderr)
    selected = [r for r in rows() if re.search(args.filter, r["case"])]
    limits_needed = sorted({r["limit"] for r in selected if r.get("limit")})
    limit_values = {}
    results = []
    for row in selected:
        case = row["case"]
        kiln_vals, torch_vals, limit_vals, extra_vals = [], [], [], []
        for _ in range(args.reps):
            entry = runner.kiln(case)
            kiln_vals.append(kiln_value(entry, row["kiln"]))
            if row.get("extra"):
                extra_vals.append(entry[row["extra"][0]])
            if have_torch and row.get("torch", True):
                torch_vals.append(runner.torch(case))
            limit = row.get("limit")
            if limit and limit not in limit_values:
                how = ("counter", "FLOP/s", 1e-9) if limit.startswith(("matmul", "conv", "limit/fma")) else row["kiln"]
                limit_vals.append(kiln_value(runner.kiln(limit), how))
        if row.get("limit"):
            limit_values.setdefault(row["limit"], med(limit_vals))
        k, t = med(kiln_vals), med(torch_vals)
        lim = limit_values.get(row.get("limit"))
        ratio = None
        if k and t:
            ratio = k / t if row["higher"] else t / k
        vs_limit, note = None, ""
        if lim:
            if case in TRAIN_FLOPS:
                vs_limit = k * TRAIN_FLOPS[case] / 1e9 / lim
                if t:
                    note = f"pytorch {100 * t * TRAIN_FLOPS[case] / 1e9 / lim:.0f}% of peak"
            else:
                vs_limit = k / lim
        flag = "*" if runner.contended.get(case) else ""
        results.append((case + flag, k, t, row["unit"], ratio, lim, row.get("limit_name", ""), vs_limit, note))
        print(f"{case + flag:36s} kiln {fmt(k):>10s}  pytorch {fmt(t):>10s}  {row['unit']:18s} ratio {fmt(ratio):>6s}"
              f"  {row.get('limit_name', '')} {fmt(lim)} ({fmt(vs_limit)}) {note}", flush=True)
        if row.get("extra"):
            results.append((case + " (kiln buffers)", med(extra_vals), None, row["extra"][1], None, None, "", None,
                            "backend MemoryStats peak"))
    if re.search(args.filter, "memory/mlp_train") or re.search(args.filter, "steady/mlp_train"):
        mmap_per_step = strace_mmaps(runner)
        results.append(("steady/mlp_train mmap+munmap per step", mmap_per_step, None, "calls/step", None, None,
                        "", None, "strace -c, 60 minus 10 steps"))
        print(f"steady/mlp_train mmap+munmap per step: {fmt(mmap_per_step)}")
    write_markdown(args, results, runner)


def write_markdown(args, results, runner):
    """The table as markdown, with the conditions of the run."""
    out = args.out or os.path.join(args.build, "bench_results.md")
    load = [v for vals in runner.loads.values() for v in vals]
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: `python3 bench/run.py --reps {args.reps}"
        f"{' --filter ' + args.filter if args.filter else ''}`, {THREADS} threads each, medians. "
        "Ratio > 1: kiln better (kiln/pytorch for throughputs, pytorch/kiln for times and sizes). "
        "Yardsticks: oneDNN called directly (matmul, conv), the hand-fused loop (elementwise), the fp32 FMA peak "
        "of 2 cores (training steps: fraction of peak reached).",
        "",
        "| case | kiln | pytorch | unit | ratio | yardstick | value | kiln / yardstick | note |",
        "|---|---:|---:|---|---:|---|---:|---:|---|",
    ]
    for case, k, t, unit, ratio, lim, lim_name, vs, note in results:
        vs_text = f"{100 * vs:.0f}%" if vs is not None else "-"
        ratio_text = f"{ratio:.2f}" if ratio is not None else "-"
        lines.append(f"| {case} | {fmt(k)} | {fmt(t)} | {unit} | {ratio_text} | {lim_name or '-'} | {fmt(lim)} | "
                     f"{vs_text} | {note} |")
    lines.append("")
    if runner.contended:
        lines.append(f"`*`: at least one kept run had other processes above {100 * CONTENTION_LIMIT:.0f}% of the CPU "
                     f"after {args.max_retries} retries (median other load over all runs: "
                     f"{100 * statistics.median(load):.0f}%).")
    lines.append(runner.peer_line or torch_peer.describe(runner.peer))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
