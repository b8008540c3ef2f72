// Rows for edge cases across families: rank-3 and rank-4 data movement checked against index
// arithmetic written out here, empty operands, unsigned values with the top bit set, wrapping
// integer powers and products, float overflow, underflow and subnormals, several outputs.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "internal.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

namespace {

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Calls fn(index) for every multi-index of `dims`, in row-major order.
template <typename Fn>
void ForEach(const std::vector<int64_t>& dims, Fn fn) {
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t n = Count(dims); n > 0; --n) {
    fn(idx);
    for (size_t a = dims.size(); a-- > 0;) {
      if (++idx[a] < dims[a]) break;
      idx[a] = 0;
    }
  }
}

// Output position -> input flat index for a transpose (output axis i is input axis perm[i]).
std::vector<int> TransposeIndices(const std::vector<int64_t>& dims, const std::vector<int>& perm,
                                  std::vector<int64_t>& out_dims) {
  const std::vector<int64_t> st = Strides(dims);
  out_dims.clear();
  for (int p : perm) out_dims.push_back(dims[static_cast<size_t>(p)]);
  std::vector<int> r;
  ForEach(out_dims, [&](const std::vector<int64_t>& o) {
    int64_t flat = 0;
    for (size_t i = 0; i < perm.size(); ++i) flat += o[i] * st[static_cast<size_t>(perm[i])];
    r.push_back(static_cast<int>(flat));
  });
  return r;
}

// Per axis: input index of each output position of a pad (-1: the fill value).
std::vector<int64_t> PadAxisMap(int64_t n, const compute::PadAxis& p) {
  const int64_t size = p.low + p.high + n + std::max<int64_t>(n - 1, 0) * p.interior;
  std::vector<int64_t> m;
  for (int64_t o = 0; o < size; ++o) {
    const int64_t q = o - p.low;
    if (q < 0 || q % (p.interior + 1) != 0 || q / (p.interior + 1) >= n) {
      m.push_back(-1);
    } else {
      m.push_back(q / (p.interior + 1));
    }
  }
  return m;
}

// a^b modulo 2^64 (two's complement wrapping).
int64_t WrappingPow(uint64_t a, int b) {
  uint64_t r = 1;
  for (int i = 0; i < b; ++i) r *= a;
  return static_cast<int64_t>(r);
}

}  // namespace

void AddEdgeCases(CaseList& L) {
  for (DType d : kUnpacked) {
    // Rank-4 transpose.
    {
      const std::vector<int64_t> dims = {2, 3, 1, 4};
      std::vector<int64_t> out;
      const std::vector<int> idx = TransposeIndices(dims, {3, 0, 2, 1}, out);
      const std::vector<double> v = Seq(d, 24);
      L.Add("TransposeAllAxes", "rank4", d, P([](const std::vector<Node>& p) {
              return TransposeAllAxes(p[0], {3, 0, 2, 1});
            }),
            {V(d, dims, v)}, {V(d, out, Pick(v, idx))});
    }
    // Rank-3 strided slice with negative indices.
    {
      const std::vector<int64_t> dims = {4, 5, 6};
      const std::vector<double> v = Seq(d, 120);
      const std::vector<int64_t> st = Strides(dims);
      std::vector<int> idx;
      for (int64_t i = 1; i < 4; i += 2)
        for (int64_t j = 1; j < 5; ++j)
          for (int64_t k = 0; k < 6; k += 5)
            idx.push_back(static_cast<int>(i * st[0] + j * st[1] + k * st[2]));
      L.Add("Slice", "rank3_strided", d, P([](const std::vector<Node>& p) {
              return Slice(p[0], {AxisRange(1, 4).Stride(2), AxisRange(-4, 5), AxisRange(0, 6).Stride(5)});
            }),
            {V(d, dims, v)}, {V(d, {2, 4, 2}, Pick(v, idx))});
    }
    // Rank-3 reverse of the outer axes.
    {
      const std::vector<int64_t> dims = {2, 3, 4};
      const std::vector<double> v = Seq(d, 24);
      std::vector<int> idx;
      ForEach(dims, [&](const std::vector<int64_t>& o) {
        idx.push_back(static_cast<int>((1 - o[0]) * 12 + o[1] * 4 + (3 - o[2])));
      });
      L.Add("Reverse", "rank3_outer_axes", d, P([](const std::vector<Node>& p) {
              return Reverse(p[0], {0, 2});
            }),
            {V(d, dims, v)}, {V(d, dims, Pick(v, idx))});
    }
    // Two-axis pad with interior padding and crops on both axes.
    {
      const std::vector<compute::PadAxis> pads = {{-1, 1, 2}, {2, -1, 1}};
      const std::vector<int64_t> m0 = PadAxisMap(2, pads[0]), m1 = PadAxisMap(3, pads[1]);
      const std::vector<double> v = Seq(d, 7);
      std::vector<int> idx;
      for (int64_t a : m0)
        for (int64_t b : m1) idx.push_back(a < 0 || b < 0 ? -1 : static_cast<int>(a * 3 + b));
      L.Add("Pad", "interior_and_crops_2d", d,
            P([pads](const std::vector<Node>& p) { return Pad(p[0], p[1], pads); }),
            {V(d, {2, 3}, Pick(v, {0, 1, 2, 3, 4, 5})), V(d, {}, {v[6]})},
            {V(d, {static_cast<int64_t>(m0.size()), static_cast<int64_t>(m1.size())}, Pick(v, idx, v[6]))});
    }
    // Empty operands.
    {
      const std::vector<double> v = Seq(d, 4);
      L.Add("Concatenate", "empty_operand", d, P([](const std::vector<Node>& p) {
              return Concatenate({p[0], p[1]}, 1);
            }),
            {V(d, {2, 0}, {}), V(d, {2, 2}, v)}, {V(d, {2, 2}, v)});
      L.Add("Pad", "empty_operand", d, P([](const std::vector<Node>& p) {
              return Pad(p[0], p[1], {{1, 1, 3}});
            }),
            {V(d, {0}, {}), V(d, {}, {v[0]})}, {V(d, {2}, {v[0], v[0]})});
      L.Add("Transpose", "empty", d, P([](const std::vector<Node>& p) { return Transpose(p[0], 0, 1); }),
            {V(d, {0, 3}, {})}, {V(d, {3, 0}, {})});
    }
  }

  for (DType d : kNumeric) {
    // Reductions and ArgMax along a middle axis (strided access); distinct values 1..12.
    std::vector<double> v;
    for (int i = 0; i < 12; ++i) v.push_back(static_cast<double>((i * 7) % 12 + 1));
    std::vector<double> mx, mn;
    std::vector<double> am;
    for (int i = 0; i < 2; ++i) {
      for (int k = 0; k < 2; ++k) {
        double best = -1, worst = 100;
        int arg = 0;
        for (int j = 0; j < 3; ++j) {
          const double x = v[static_cast<size_t>(i * 6 + j * 2 + k)];
          if (x > best) best = x, arg = j;
          worst = std::min(worst, x);
        }
        mx.push_back(best);
        mn.push_back(worst);
        am.push_back(arg);
      }
    }
    const Tensor x = V(d, {2, 3, 2}, v);
    L.Add("ReduceMax", "middle_axis", d, P([](const std::vector<Node>& p) { return ReduceMax(p[0], {1}); }),
          {x}, {V(d, {2, 2}, mx)});
    L.Add("ReduceMin", "middle_axis", d, P([](const std::vector<Node>& p) { return ReduceMin(p[0], {1}); }),
          {x}, {V(d, {2, 2}, mn)});
    L.Add("ArgMax", "middle_axis", d, P([](const std::vector<Node>& p) { return ArgMax(p[0], 1); }), {x},
          {V(DType::Int32, {2, 2}, am)});
    // Contractions over an empty axis give zeros.
    L.Add("MatMul", "empty_contraction", d, Fn2(MatMul), {V(d, {2, 0}, {}), V(d, {0, 3}, {})},
          {V(d, {2, 3}, {0, 0, 0, 0, 0, 0})});
    // Several outputs, one of them twice, one a parameter; a diamond of shared intermediates.
    L.Add("Add", "several_outputs", d, P([](const std::vector<Node>& p) {
            Node s = Add(p[0], p[1]);
            return std::vector<Node>{s, p[0], s, Mul(s, s) - s};
          }),
          {V(d, {2}, {1, 2}), V(d, {2}, {2, 1})},
          {V(d, {2}, {3, 3}), V(d, {2}, {1, 2}), V(d, {2}, {3, 3}), V(d, {2}, {6, 6})});
  }

  // ---- Integers: the top bit of unsigned values, extremes, wrapping powers and products -----------
  for (DType d : kUnsignedInts) {
    const uint64_t max = MaxU(d);
    L.Add("Div", "unsigned_top_bit", d, Fn2(Div), {W(d, {2}, {-2, -1}), W(d, {2}, {2, 10})},
          {W(d, {2}, {static_cast<int64_t>((max - 1) / 2), static_cast<int64_t>(max / 10)})});
    L.Add("Rem", "unsigned_top_bit", d, Fn2(Rem), {W(d, {2}, {-1, -2}), W(d, {2}, {10, -1})},
          {W(d, {2}, {static_cast<int64_t>(max % 10), -2})});
    L.Add("Max", "unsigned_top_bit", d, Fn2(Max), {W(d, {2}, {-1, 5}), W(d, {2}, {0, -2})},
          {W(d, {2}, {-1, -2})});
    L.Add("Min", "unsigned_top_bit", d, Fn2(Min), {W(d, {2}, {-1, 5}), W(d, {2}, {0, -2})},
          {W(d, {2}, {0, 5})});
    L.Add("ReduceMin", "unsigned_top_bit", d, P([](const std::vector<Node>& p) { return ReduceMin(p[0]); }),
          {W(d, {3}, {-1, -3, -2})}, {W(d, {}, {-3})});
    L.Add("ArgMin", "unsigned_top_bit", d, P([](const std::vector<Node>& p) { return ArgMin(p[0], 0); }),
          {W(d, {3}, {-1, 7, -2})}, {V(DType::Int32, {}, {1})});
  }
  for (DType d : kSignedInts) {
    const int64_t lo = MinI(d), hi = MaxI(d);
    L.Add("Max", "extremes", d, Fn2(Max), {W(d, {2}, {lo, hi}), W(d, {2}, {hi, lo})}, {W(d, {2}, {hi, hi})});
    L.Add("Min", "extremes", d, Fn2(Min), {W(d, {2}, {lo, hi}), W(d, {2}, {hi, lo})}, {W(d, {2}, {lo, lo})});
    L.Add("ReduceSum", "wraps", d, P([](const std::vector<Node>& p) { return ReduceSum(p[0]); }),
          {W(d, {2}, {hi, 1})}, {W(d, {}, {lo})});
    L.Add("Sign", "extremes", d, Fn1(Sign), {W(d, {2}, {lo, hi})}, {W(d, {2}, {-1, 1})});
  }
  for (DType d : kInts) {
    const int bits = DTypeBits(d);
    L.Add("Pow", "wraps", d, Fn2(Pow), {W(d, {3}, {3, 2, 7}), W(d, {3}, {41, bits + 2, 3})},
          {W(d, {3}, {WrappingPow(3, 41), 0, 343})});
    const int64_t half = int64_t{1} << (bits / 2);
    L.Add("ReduceProduct", "wraps", d, P([](const std::vector<Node>& p) { return ReduceProduct(p[0]); }),
          {W(d, {3}, {half, 3, half})}, {W(d, {}, {0})});
  }

  // ---- Floats: overflow, underflow, subnormals, extremes ---------------------------------------
  for (DType d : kFloats) {
    L.Add("Exp", "overflow_underflow", d, Fn1(Exp), {V(d, {2}, {1000, -1000})}, {V(d, {2}, {kInf, 0})});
    L.Add("Div", "by_negative_zero", d, Fn2(Div), {V(d, {2}, {1, -2}), V(d, {2}, {-0.0, -0.0})},
          {V(d, {2}, {-kInf, kInf})});
    L.Add("Pow", "zero_and_negative_exponents", d, Fn2(Pow),
          {V(d, {4}, {0, 2, -2, 4}), V(d, {4}, {-1, -2, -2, 0.5})}, {V(d, {4}, {kInf, 0.25, 0.25, 2})});
    // Subnormal results are kept (no flush to zero).
    const int min_exp = d == DType::Float16 ? -14 : d == DType::Float64 ? -1022 : -126;
    L.Add("Mul", "subnormal_result", d, Fn2(Mul),
          {V(d, {2}, {std::ldexp(1.0, min_exp), -std::ldexp(1.0, min_exp)}), V(d, {2}, {0.5, 0.25})},
          {V(d, {2}, {std::ldexp(1.0, min_exp - 1), -std::ldexp(1.0, min_exp - 2)})});
    // The largest finite value and the smallest subnormal, by their bits.
    const uint64_t max_bits = d == DType::Float16    ? 0x7BFF
                              : d == DType::BFloat16 ? 0x7F7F
                              : d == DType::Float32  ? 0x7F7FFFFF
                                                     : 0x7FEFFFFFFFFFFFFF;
    const Tensor ext = Raw(d, {3}, {max_bits, 1, max_bits + 1});
    L.Add("IsFinite", "extremes", d, Fn1(IsFinite), {ext}, {V(DType::Bool, {3}, {1, 1, 0})});
    L.Add("IsNaN", "extremes", d, Fn1(IsNaN), {ext}, {V(DType::Bool, {3}, {0, 0, 0})});
    L.Add("Sign", "subnormal", d, Fn1(Sign), {Raw(d, {1}, {1})}, {V(d, {1}, {1})});
    L.Add("Add", "overflow_to_inf", d, Fn2(Add), {Raw(d, {1}, {max_bits}), Raw(d, {1}, {max_bits})},
          {V(d, {1}, {kInf})});
  }
}

}  // namespace kiln::conformance::internal
