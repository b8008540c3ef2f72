#!/usr/bin/python3
"""Writes the conformance suite's reference values (conformance/fixtures/*.npz).

Run with Debian's Python, which has NumPy:  /usr/bin/python3 conformance/generate_fixtures.py
The output is deterministic (fixed inputs, a seeded generator, fixed zip timestamps), so running
it again leaves the committed files unchanged.

Every array is float64. Inputs are exactly representable in every float dtype kiln has
(bfloat16 has 8 significant bits, float16 has 11 and a range up to 65504), and, for the
contraction cases, in every integer dtype too (small non-negative integers). The C++ side
(conformance/src/fixtures.cc) converts the inputs to the dtype under test and rounds the
float64 reference results to it.
"""

import io
import math
import os
import sys
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")

INF = math.inf
NAN = math.nan


def write_npz(path, arrays):
    """np.savez, but with fixed member timestamps and order (byte-identical reruns)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(arrays[name], order="C"), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            z.writestr(info, member.getvalue())
    data = buf.getvalue()
    old = None
    if os.path.exists(path):
        with open(path, "rb") as f:
            old = f.read()
    if old != data:
        with open(path, "wb") as f:
            f.write(data)
        print(f"wrote {os.path.relpath(path, HERE)} ({len(arrays)} arrays)")
    else:
        print(f"unchanged {os.path.relpath(path, HERE)}")


def f64(values):
    return np.array(values, dtype=np.float64)


def check_exact_in_halves(name, x):
    """Inputs must be exact in float16 and bfloat16 (8 significant bits, float16's range)."""
    for v in np.asarray(x).ravel():
        if not math.isfinite(v) or v == 0:
            continue
        if np.float64(np.float16(v)) != v:
            sys.exit(f"{name}: input {v} is not exact in float16")
        m, _ = math.frexp(abs(v))
        if (m * 256) != int(m * 256):
            sys.exit(f"{name}: input {v} is not exact in bfloat16")


# ---- Elementwise unary functions ----------------------------------------------------------------

def sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def erf(x):
    return np.array([math.erf(v) if not math.isnan(v) else NAN for v in x], dtype=np.float64)


UNARY = {
    "Sqrt": (np.sqrt, [0, 0.0625, 0.25, 0.5, 1, 2, 3, 4, 7.5, 9, 10, 100, -1, -0.0, INF, NAN]),
    "Rsqrt": (lambda x: 1.0 / np.sqrt(x), [0.0625, 0.25, 0.5, 1, 2, 3, 4, 10, 100, 0, INF, -1, NAN]),
    "Exp": (np.exp, [-8, -2.5, -1, -0.125, 0, 0.0625, 0.5, 1, 2, 5.5, 10, 11, -INF, INF, NAN]),
    "Expm1": (np.expm1, [-8, -1, -0.5, -2**-7, -2**-10, 0, 2**-10, 2**-7, 0.5, 1, 3, 10, -INF, INF, NAN]),
    "Log": (np.log, [0.0625, 0.5, 1, 2, 2.5, 3, 10, 100, 1000, 0, -1, INF, NAN]),
    "Log1p": (np.log1p, [-0.5, -2**-10, 0, 2**-10, 2**-7, 0.5, 1, 3, 10, -1, -2, INF, NAN]),
    "Sin": (np.sin, [-10, -3, -1.5, -0.5, 0, 0.25, 1, 2, 3.125, 6.25, 100, INF, NAN]),
    "Cos": (np.cos, [-10, -3, -1.5, -0.5, 0, 0.25, 1, 2, 3.125, 6.25, 100, INF, NAN]),
    "Tanh": (np.tanh, [-10, -2, -0.5, -2**-10, 0, 0.25, 1, 3, 20, INF, -INF, NAN]),
    "Sigmoid": (sigmoid, [-20, -5, -1, -0.25, 0, 0.5, 2, 8, 30, -INF, INF, NAN]),
    "Erf": (erf, [-3, -1, -0.5, -0.125, 0, 0.0625, 0.5, 1, 2, 4, -INF, INF, NAN]),
}


def unary_fixtures():
    arrays = {}
    for name, (fn, xs) in UNARY.items():
        x = f64(xs)
        check_exact_in_halves(name, x)
        with np.errstate(all="ignore"):
            y = fn(x)
        arrays[f"{name}.x"] = x
        arrays[f"{name}.y"] = f64(y)
    return arrays


# ---- Elementwise binary functions ---------------------------------------------------------------

BINARY = {
    # atan2(y, x), signed zeros and infinities included.
    "Atan2": (np.arctan2,
              [0, 1, -1, 1, -1, 2, 0.5, 0, -0.0, 3, INF, 1, -2, 0.25],
              [1, 1, 1, -1, -1, 0, -4, -1, -1, 0.25, 1, INF, -0.5, 8]),
    "Pow": (np.power,
            [2, 2, 0.5, 3, 10, 1.5, 0, 0, 4, -2, -2, 1, NAN, 2, 9, 0.25],
            [3, -1, 2, 0.5, -2, 2.5, 0, 2, 0.5, 3, 0.5, NAN, 0, INF, 0.5, -0.5]),
    # C's fmod: the result has the dividend's sign.
    "Rem": (np.fmod,
            [7.5, -7.5, 7.5, -7.5, 5, 0.75, 1, INF, 1, NAN, 6.25, -0.0],
            [2, 2, -2, -2, 0.5, 0.5, 0, 1, INF, 1, 1.5, 3]),
}


def binary_fixtures():
    arrays = {}
    for name, (fn, a, b) in BINARY.items():
        a, b = f64(a), f64(b)
        check_exact_in_halves(name, a)
        check_exact_in_halves(name, b)
        with np.errstate(all="ignore"):
            y = fn(a, b)
        arrays[f"{name}.a"] = a
        arrays[f"{name}.b"] = b
        arrays[f"{name}.y"] = f64(y)
    return arrays


# ---- Reductions ---------------------------------------------------------------------------------

def logsumexp(x, axis=None):
    m = np.max(x, axis=axis, keepdims=True)
    r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return np.squeeze(r, axis=axis) if axis is not None else r.reshape(())


def reduce_fixtures():
    x = f64([[0, 1, 2, 3], [-1, -2, 0.5, 0.25], [64, 64, 64, 64]])
    check_exact_in_halves("ReduceLogSumExp", x)
    return {
        "ReduceLogSumExp.x": x,
        "ReduceLogSumExp.axis1": f64(logsumexp(x, axis=1)),
        "ReduceLogSumExp.axis0": f64(logsumexp(x, axis=0)),
        "ReduceLogSumExp.all": f64(logsumexp(x)),
    }


# ---- Contractions -------------------------------------------------------------------------------
# Small non-negative integers: exact in every numeric dtype, and every result stays below 128
# (Int8) and 256 (bfloat16's exact integers).

CONTRACTIONS = [
    # name, equation (NumPy einsum, which gives the reference), a's shape, b's shape.
    ("product_vv", "i,i->", (4,), (4,)),
    ("product_mv", "ij,j->i", (2, 3), (3,)),
    ("product_mm", "ij,jk->ik", (2, 3), (3, 2)),
    ("product_batched", "bij,bjk->bik", (2, 2, 3), (2, 3, 2)),
    ("general_batch0", "bij,bjk->bik", (2, 3, 4), (2, 4, 3)),
    ("general_two_contracting", "ijk,kjl->il", (2, 3, 4), (4, 3, 2)),
    ("general_batch_middle", "ibk,kb->bi", (3, 2, 4), (4, 2)),
    ("general_outer", "i,j->ij", (2,), (3,)),
    ("dotproduct_vv", "i,i->", (5,), (5,)),
    ("dotproduct_batched", "bi,bi->b", (2, 3), (2, 3)),
    ("matmul_mm", "ij,jk->ik", (2, 3), (3, 4)),
    ("matmul_vm", "j,jk->k", (3,), (3, 2)),
    ("matmul_mv", "ij,j->i", (2, 3), (3,)),
    ("matmul_batched", "bij,bjk->bik", (2, 2, 3), (2, 3, 2)),
    ("matmul_broadcast", None, (2, 1, 2, 3), (3, 3, 2)),
    ("matmul_rank_broadcast", None, (2, 3), (4, 3, 2)),
    ("einsum_bij_bjk_bik", "bij,bjk->bik", (2, 2, 3), (2, 3, 2)),
    ("einsum_ij_jk_ki", "ij,jk->ki", (2, 3), (3, 4)),
    ("einsum_bij_bkj_bik", "bij,bkj->bik", (2, 2, 3), (2, 4, 3)),
    ("einsum_ji_jk_ik", "ji,jk->ik", (3, 2), (3, 4)),
    ("einsum_ij_ij_i", "ij,ij->i", (3, 4), (3, 4)),
    ("einsum_ij_ij_", "ij,ij->", (2, 3), (2, 3)),
    ("einsum_i_j_ij", "i,j->ij", (3,), (2,)),
    ("einsum_bij_jk_bik", "bij,jk->bik", (2, 2, 3), (3, 2)),
    ("einsum_bji_bkj_kbi", "bji,bkj->kbi", (2, 3, 2), (2, 2, 3)),
    ("einsum_ij_jk_i", "ij,jk->i", (2, 3), (3, 4)),
]


def contraction_fixtures():
    rng = np.random.default_rng(20240607)
    arrays = {}
    for name, eq, sa, sb in CONTRACTIONS:
        a = rng.integers(0, 4, size=sa).astype(np.float64)
        b = rng.integers(0, 4, size=sb).astype(np.float64)
        y = np.matmul(a, b) if eq is None else np.einsum(eq, a, b)
        y = f64(y)
        if y.size and (y.max() > 127 or y.min() < 0):
            sys.exit(f"{name}: result out of the exact range")
        arrays[f"{name}.a"] = a
        arrays[f"{name}.b"] = b
        arrays[f"{name}.y"] = y
    return arrays


def main():
    os.makedirs(OUT, exist_ok=True)
    write_npz(os.path.join(OUT, "unary.npz"), unary_fixtures())
    write_npz(os.path.join(OUT, "binary.npz"), binary_fixtures())
    write_npz(os.path.join(OUT, "reduce.npz"), reduce_fixtures())
    write_npz(os.path.join(OUT, "contraction.npz"), contraction_fixtures())


if __name__ == "__main__":
    main()
