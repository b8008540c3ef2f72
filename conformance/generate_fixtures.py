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
import itertools
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
    "Tan": (np.tan, [-10, -3, -1.5, -0.5, 0, 0.25, 1, 1.5, 2, 3.125, 100, INF, NAN]),
    "Asin": (np.arcsin, [-1, -0.75, -0.5, -2**-10, 0, 0.125, 0.5, 0.875, 1, 1.5, -2, INF, NAN]),
    "Acos": (np.arccos, [-1, -0.75, -0.5, -2**-10, 0, 0.125, 0.5, 0.875, 1, 1.5, -2, INF, NAN]),
    "Atan": (np.arctan, [-100, -3, -1, -0.5, -2**-10, 0, 0.25, 1, 2, 10, 1000, -INF, INF, NAN]),
    "Sinh": (np.sinh, [-10, -3, -1, -0.5, -2**-10, 0, 0.25, 1, 2, 5.5, 11, -INF, INF, NAN]),
    "Cosh": (np.cosh, [-10, -3, -1, -0.5, -2**-10, 0, 0.25, 1, 2, 5.5, 11, -INF, INF, NAN]),
    "Asinh": (np.arcsinh, [-100, -3, -1, -0.5, -2**-10, 0, 0.25, 1, 2, 10, 1000, -INF, INF, NAN]),
    "Acosh": (np.arccosh, [1, 1.125, 1.5, 2, 3, 10, 100, 1000, 0.5, 0, -1, INF, NAN]),
    "Atanh": (np.arctanh, [-1, -0.875, -0.5, -2**-10, 0, 0.125, 0.5, 0.75, 0.9375, 1, 1.5, -2, NAN]),
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


# ---- Convolutions (graph/conv.h) ----------------------------------------------------------------
# A plain loop reference of XLA's convolution in [batch, spatial..., features] layout with a
# [spatial..., in_features / groups, out_features] kernel. Small non-negative integers: every
# result is exact in every numeric dtype (at most 127).

CONVS = [
    # name, x shape, kernel shape, strides, padding (low, high), lhs dilation, rhs dilation, groups, batch groups
    ("conv1d_stride_pad", (2, 7, 2), (3, 2, 2), (2,), ((1, 2),), (1,), (1,), 1, 1),
    ("conv1d_lhs_dilation", (1, 4, 1), (3, 1, 2), (1,), ((2, 2),), (2,), (1,), 1, 1),
    ("conv2d_dilated", (1, 5, 5, 2), (2, 2, 2, 1), (1, 1), ((0, 0), (1, 0)), (1, 1), (2, 2), 1, 1),
    ("conv2d_groups", (1, 3, 4, 4), (2, 2, 2, 4), (1, 2), ((0, 1), (0, 1)), (1, 1), (1, 1), 2, 1),
    ("conv2d_batch_groups", (4, 3, 3, 1), (2, 2, 1, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, 2),
    ("conv3d", (1, 3, 3, 3, 1), (2, 2, 2, 1, 2), (1, 1, 2), ((0, 0), (0, 0), (0, 1)), (1, 1, 1), (1, 1, 1), 1, 1),
]


def conv_reference(x, k, strides, padding, lhs_dil, rhs_dil, groups, batch_groups):
    n = x.ndim - 2
    batch, features = x.shape[0], x.shape[-1]
    # Input dilation then edge padding.
    dil_shape = [batch] + [(s - 1) * d + 1 for s, d in zip(x.shape[1:-1], lhs_dil)] + [features]
    xd = np.zeros(dil_shape)
    xd[(slice(None),) + tuple(slice(None, None, d) for d in lhs_dil) + (slice(None),)] = x
    xp = np.pad(xd, [(0, 0)] + [tuple(p) for p in padding] + [(0, 0)])
    ksp = k.shape[:n]
    kin, kout = k.shape[n], k.shape[n + 1]
    span = [(w - 1) * d + 1 for w, d in zip(ksp, rhs_dil)]
    out_sp = [(p - s) // st + 1 if p >= s else 0 for p, s, st in zip(xp.shape[1:-1], span, strides)]
    out_batch = batch // batch_groups
    y = np.zeros([out_batch] + out_sp + [kout])
    fg_out = kout // groups
    bg_out = kout // batch_groups
    for b in range(out_batch):
        for pos in itertools.product(*[range(o) for o in out_sp]):
            for f in range(kout):
                ib = (f // bg_out) * out_batch + b
                c0 = (f // fg_out) * kin
                acc = 0.0
                for tap in itertools.product(*[range(w) for w in ksp]):
                    idx = tuple(o * st + t * d for o, st, t, d in zip(pos, strides, tap, rhs_dil))
                    for c in range(kin):
                        acc += xp[(ib,) + idx + (c0 + c,)] * k[tap + (c, f)]
                y[(b,) + pos + (f,)] = acc
    return y


def conv_fixtures():
    rng = np.random.default_rng(20241129)
    arrays = {}
    for name, xs, ks, st, pad, ld, rd, g, bg in CONVS:
        x = rng.integers(0, 3, size=xs).astype(np.float64)
        k = rng.integers(0, 3, size=ks).astype(np.float64)
        y = f64(conv_reference(x, k, st, pad, ld, rd, g, bg))
        if y.size and (y.max() > 127 or y.min() < 0):
            sys.exit(f"{name}: result out of the exact range")
        arrays[f"{name}.x"] = x
        arrays[f"{name}.k"] = k
        arrays[f"{name}.y"] = y
    return arrays


# ---- Random numbers (graph/random.h) -------------------------------------------------------------
# An independent Philox-4x32-10 (Random123's philox4x32_R(10, ...)) in Python integers, the
# state layout [key, counter_hi, counter_lo] and the distributions as random.h documents them.

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


def philox4x32(c, k):
    c, k = list(c), list(k)
    for r in range(10):
        if r > 0:
            k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & M32, (p0 >> 32) ^ c[3] ^ k[1], p0 & M32]
    return c


def philox_words(state, count):
    """(next state, count 32-bit words) from state [key, hi, lo]."""
    key, hi, lo = state
    words = []
    blocks = (count + 3) // 4
    for b in range(blocks):
        lb = (lo + b) & M64
        hb = (hi + (1 if lb < lo else 0)) & M64
        words += philox4x32([lb & M32, lb >> 32, hb & M32, hb >> 32], [key & M32, key >> 32])
    nlo = (lo + blocks) & M64
    nhi = (hi + (1 if nlo < lo else 0)) & M64
    return [key, nhi, nlo], words[:count]


def philox_words64(state, count):
    state, w = philox_words(state, 2 * count)
    return state, [w[2 * j] | (w[2 * j + 1] << 32) for j in range(count)]


PRECISION = {"f64": 53, "f32": 24, "f16": 11, "bf16": 8}


def uniform(state, n, p):
    if p == 53:
        state, w = philox_words64(state, n)
        return state, [math.ldexp(x >> 11, -53) for x in w]
    state, w = philox_words(state, n)
    return state, [math.ldexp(x >> (32 - p), -p) for x in w]


def random_fixtures():
    arrays = {}
    seed = [42, 0, 0]
    # Known answers of Philox itself (Random123's kat_vectors).
    kat = philox4x32([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0])
    if kat != [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]:
        sys.exit("philox4x32: known-answer test failed")
    for name, p in PRECISION.items():
        arrays[f"uniform.{name}"] = f64(uniform(seed, 8, p)[1])
    # Two calls in a row: the second continues after the first's blocks (3 of them).
    st, _ = uniform(seed, 10, 24)
    arrays["uniform.second_call"] = f64(uniform(st, 6, 24)[1])
    arrays["uniform.state_after"] = f64(st)
    # Normal: Box-Muller on the uniforms of the computing precision (float32 for halves).
    for name, p in [("f64", 53), ("f32", 24)]:
        _, u = uniform(seed, 16, p)
        u1, u2 = u[:8], u[8:]
        arrays[f"normal.{name}"] = f64(
            [math.sqrt(-2.0 * math.log(1.0 - a)) * math.cos(2.0 * math.pi * b) for a, b in zip(u1, u2)])
    _, w = philox_words64(seed, 12)
    arrays["intn.7"] = f64([x % 7 for x in w])
    _, w = philox_words(seed, 12)
    t = math.ceil(math.ldexp(0.3, 32))
    arrays["bernoulli.0.3"] = f64([1.0 if x < t else 0.0 for x in w])
    n, size = 6, 8
    _, w = philox_words(seed, n * size)
    t = math.ceil(math.ldexp(0.5, 32))
    arrays["binomial.6.0.5"] = f64([sum(1 for i in range(n) if w[i * size + j] < t) for j in range(size)])
    # Split: the keys are four words of the state's stream, counters 0.
    _, w = philox_words(seed, 4)
    a, b = [w[0] | (w[1] << 32), 0, 0], [w[2] | (w[3] << 32), 0, 0]
    arrays["split.a"] = f64(uniform(a, 8, 24)[1])
    arrays["split.b"] = f64(uniform(b, 8, 24)[1])
    return arrays


def main():
    os.makedirs(OUT, exist_ok=True)
    write_npz(os.path.join(OUT, "unary.npz"), unary_fixtures())
    write_npz(os.path.join(OUT, "binary.npz"), binary_fixtures())
    write_npz(os.path.join(OUT, "reduce.npz"), reduce_fixtures())
    write_npz(os.path.join(OUT, "contraction.npz"), contraction_fixtures())
    write_npz(os.path.join(OUT, "conv.npz"), conv_fixtures())
    write_npz(os.path.join(OUT, "random.npz"), random_fixtures())


if __name__ == "__main__":
    main()
