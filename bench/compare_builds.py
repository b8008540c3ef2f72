#!/usr/bin/env python3
"""kiln against another build of kiln, case by case: does a change make any benchmark slower?

  python3 bench/compare_builds.py --base DIR [--build DIR] [--reps N] [--filter REGEX] [--out FILE]

Runs every kiln case of bench/run.py's table (one case per process, OMP_WAIT_POLICY=PASSIVE, 2
threads, contended runs repeated as run.py does) from the two builds' kiln_bench binaries,
interleaved base, new, base, new for N repetitions, and prints per case both medians, the ratio
(new over base for throughputs, base over new for times and sizes: > 1 means the new build is
better) and the noise: the larger relative spread (max - min over the median) of the two sides'
repetitions. A case is marked `slower` when its ratio is below 1 by more than that noise.
Both builds: cmake -S SRC -B DIR -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_BENCH=ON;
ninja -C DIR kiln_bench (SRC a checkout of the base commit, e.g. a `git worktree`).
"""

import argparse
import os
import re
import statistics
import sys
import time

import run


def spread(values):
    """(max - min) / median of the repetitions; 0 for fewer than two."""
    if len(values) < 2 or not statistics.median(values):
        return 0.0
    return (max(values) - min(values)) / abs(statistics.median(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the base build dir (its bench/kiln_bench)")
    parser.add_argument("--build", default=os.path.join(run.ROOT, "build", "bench"), help="the new build dir")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per side (default 3)")
    parser.add_argument("--filter", default="", help="regex on case names (re.search)")
    parser.add_argument("--out", default=None, help="markdown output (default BUILD/compare_builds.md)")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per timed block (default 0.5)")
    parser.add_argument("--max-retries", type=int, default=3, help="reruns of a contended run (default 3)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per process (default 900)")
    args = parser.parse_args()
    runners = {}
    for side, build in (("base", args.base), ("new", args.build)):
        side_args = argparse.Namespace(**vars(args))
        side_args.build = build
        runners[side] = run.Runner(side_args)
        if not os.access(runners[side].binary, os.X_OK):
            sys.exit(f"compare_builds.py: {runners[side].binary} not found (build kiln_bench there first)")
    rows = [r for r in run.rows() if re.search(args.filter, r["case"])]
    results = []
    for row in rows:
        case, how = row["case"], row["kiln"]
        values = {"base": [], "new": []}
        for _ in range(args.reps):
            for side in ("base", "new"):
                values[side].append(run.kiln_value(runners[side].kiln(case), how))
        b, n = run.med(values["base"]), run.med(values["new"])
        ratio = (n / b if row["higher"] else b / n) if b and n else None
        noise = max(spread(values["base"]), spread(values["new"]))
        slower = ratio is not None and ratio < 1 - noise
        contended = any(r.contended.get(case) for r in runners.values())
        results.append((case + ("*" if contended else ""), b, n, row["unit"], ratio, noise, slower))
        print(f"{case:36s} base {run.fmt(b):>10s}  new {run.fmt(n):>10s}  {row['unit']:18s} ratio "
              f"{run.fmt(ratio):>6s}  noise {100 * noise:4.1f}%{'  slower' if slower else ''}", flush=True)
    out = args.out or os.path.join(args.build, "compare_builds.md")
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: `python3 bench/compare_builds.py --reps "
        f"{args.reps}{' --filter ' + args.filter if args.filter else ''}`, {run.THREADS} threads, base and new "
        "interleaved, medians. Ratio > 1: the new build is better (new/base for throughputs, base/new for times "
        "and sizes). Noise: the larger (max - min) / median of the two sides' repetitions.",
        "",
        "| case | base | new | unit | ratio | noise | |",
        "|---|---:|---:|---|---:|---:|---|",
    ]
    for case, b, n, unit, ratio, noise, slower in results:
        lines.append(f"| {case} | {run.fmt(b)} | {run.fmt(n)} | {unit} | "
                     f"{'-' if ratio is None else f'{ratio:.2f}'} | {100 * noise:.1f}% | {'slower' if slower else ''} |")
    if any(r.contended for r in runners.values()):
        lines += ["", f"`*`: a kept run had other processes above {100 * run.CONTENTION_LIMIT:.0f}% of the CPU."]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"\nwrote {out}; {sum(1 for r in results if r[6])} case(s) slower beyond the noise")


if __name__ == "__main__":
    main()
