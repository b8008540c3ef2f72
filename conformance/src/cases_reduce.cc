// Rows for reductions: over chosen axes or all, kept axes, masked forms, empty reductions (the
// identity), NaN propagation, ArgMax/ArgMin (Int32 by default, first index on ties), and the
// softmax family (its expected values computed in double here).

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "internal.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

namespace {

using ReduceFn = Node (*)(Node, const std::vector<int>&);

graph::GraphFn R(ReduceFn f, std::vector<int> axes) {
  return P([f, axes](const std::vector<Node>& p) { return f(p[0], axes); });
}

Tensor B(std::vector<int64_t> dims, const std::vector<double>& v) {
  return V(DType::Bool, std::move(dims), v);
}
Tensor I32(std::vector<int64_t> dims, const std::vector<double>& v) {
  return V(DType::Int32, std::move(dims), v);
}

/// Softmax of one row in double (entries with mask false are 0; all false: zeros).
std::vector<double> SoftmaxRow(const std::vector<double>& x, const std::vector<bool>& mask, bool log) {
  double max = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < x.size(); ++i)
    if (mask[i]) max = std::max(max, x[i]);
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (mask[i]) sum += std::exp(x[i] - max);
  std::vector<double> out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (log) {
      out.push_back(x[i] - max - std::log(sum));
    } else {
      out.push_back(mask[i] && sum > 0 ? std::exp(x[i] - max) / sum : 0.0);
    }
  }
  return out;
}

void AddSoftmaxRows(CaseList& L, DType d) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> a = {1, 2, 3}, b = {0, -inf, 0};
  const std::vector<bool> all = {true, true, true};
  auto rows = [&](const std::vector<std::vector<double>>& r, const std::vector<std::vector<bool>>& masks,
                  bool log) {
    std::vector<double> out;
    for (size_t i = 0; i < r.size(); ++i) {
      for (double v : SoftmaxRow(r[i], masks[i], log)) out.push_back(v);
    }
    return out;
  };
  const Tensor x = Rounded(d, {3, 3}, {1, 2, 3, 0, -inf, 0, 1000, 1000, 999});
  std::vector<double> big_rounded = ToDoubles(x);
  big_rounded.erase(big_rounded.begin(), big_rounded.begin() + 6);
  const auto tol = Composite(d);
  L.Add("Softmax", "rows_with_inf", d, P([](const std::vector<Node>& p) { return Softmax(p[0]); }), {x},
        {Rounded(d, {3, 3}, rows({a, b, big_rounded}, {all, all, all}, false))}, tol);
  L.Add("LogSoftmax", "rows_with_inf", d, P([](const std::vector<Node>& p) { return LogSoftmax(p[0]); }), {x},
        {Rounded(d, {3, 3}, rows({a, b, big_rounded}, {all, all, all}, true))}, tol);
  const Tensor y = V(d, {2, 2}, {1, 3, 2, 1});
  Smooth(L.Add(
      "Softmax", "axis0", d, P([](const std::vector<Node>& p) { return Softmax(p[0], {0}); }), {y},
      {Rounded(d, {2, 2},
               {SoftmaxRow({1, 2}, {true, true}, false)[0], SoftmaxRow({3, 1}, {true, true}, false)[0],
                SoftmaxRow({1, 2}, {true, true}, false)[1], SoftmaxRow({3, 1}, {true, true}, false)[1]})},
      tol));
  Smooth(L.Add("LogSoftmax", "all_axes", d, P([](const std::vector<Node>& p) {
                 return LogSoftmax(p[0], {0, 1});
               }),
               {y}, {Rounded(d, {2, 2}, SoftmaxRow({1, 3, 2, 1}, {true, true, true, true}, true))}, tol));
  const std::vector<bool> m0 = {true, false, true}, m1 = {false, false, false}, m2 = {true, true, false};
  const std::vector<double> c = {-inf, 0, 1};
  L.Add("MaskedSoftmax", "masked_and_all_masked", d,
        P([](const std::vector<Node>& p) { return MaskedSoftmax(p[0], p[1]); }),
        {Rounded(d, {3, 3}, {1, 2, 3, 4, 5, 6, -inf, 0, 1}),
         V(DType::Bool, {3, 3}, {1, 0, 1, 0, 0, 0, 1, 1, 0})},
        {Rounded(d, {3, 3}, rows({a, {4, 5, 6}, c}, {m0, m1, m2}, false))}, tol);
  L.Add("MaskedSoftmax", "broadcast_mask", d,
        P([](const std::vector<Node>& p) { return MaskedSoftmax(p[0], p[1]); }),
        {V(d, {2, 3}, {1, 2, 3, 3, 2, 1}), V(DType::Bool, {1, 3}, {1, 0, 1})},
        {Rounded(d, {2, 3}, rows({a, {3, 2, 1}}, {m0, m0}, false))}, tol);
}

}  // namespace

void AddReduceCases(CaseList& L) {
  for (DType d : kNumeric) {
    const Tensor x = V(d, {2, 3}, {1, 2, 3, 4, 5, 6});
    // Sum.
    Smooth(L.Add("ReduceSum", "axis0", d, R(ReduceSum, {0}), {x}, {V(d, {3}, {5, 7, 9})}));
    Smooth(L.Add("ReduceSum", "axis1", d, R(ReduceSum, {1}), {x}, {V(d, {2}, {6, 15})}));
    L.Add("ReduceSum", "negative_axis", d, R(ReduceSum, {-1}), {x}, {V(d, {2}, {6, 15})});
    Smooth(L.Add("ReduceSum", "all", d, R(ReduceSum, {}), {x}, {S(d, 21)}));
    std::vector<double> v12;
    for (int i = 1; i <= 12; ++i) v12.push_back(i);
    Smooth(L.Add("ReduceSum", "axes_0_2", d, R(ReduceSum, {0, 2}), {V(d, {2, 3, 2}, v12)},
                 {V(d, {3}, {18, 26, 34})}));
    L.Add("ReduceSum", "empty_axis", d, R(ReduceSum, {1}), {V(d, {2, 0}, {})}, {V(d, {2}, {0, 0})});
    L.Add("ReduceSum", "empty_all", d, R(ReduceSum, {}), {V(d, {0}, {})}, {S(d, 0)});
    L.Add("ReduceAllSum", "matrix", d, Fn1(ReduceAllSum), {x}, {S(d, 21)});
    // Max and Min.
    const Tensor y = V(d, {2, 3}, {1, 5, 3, 4, 2, 6});
    L.Add("ReduceMax", "axis1", d, R(ReduceMax, {1}), {y}, {V(d, {2}, {5, 6})});
    L.Add("ReduceMax", "axis0", d, R(ReduceMax, {0}), {y}, {V(d, {3}, {4, 5, 6})});
    L.Add("ReduceMax", "all", d, R(ReduceMax, {}), {y}, {S(d, 6)});
    L.Add("ReduceMin", "axis1", d, R(ReduceMin, {1}), {y}, {V(d, {2}, {1, 2})});
    L.Add("ReduceMin", "axis0", d, R(ReduceMin, {0}), {y}, {V(d, {3}, {1, 2, 3})});
    L.Add("ReduceMin", "all", d, R(ReduceMin, {}), {y}, {S(d, 1)});
    L.Add("ReduceAllMax", "matrix", d, Fn1(ReduceAllMax), {y}, {S(d, 6)});
    L.Add("ReduceAllMin", "matrix", d, Fn1(ReduceAllMin), {y}, {S(d, 1)});
    // Empty reductions give the identity: the lowest value for Max, the highest for Min.
    if (IsFloat(d)) {
      L.Add("ReduceMax", "empty_is_lowest", d, R(ReduceMax, {1}), {V(d, {2, 0}, {})},
            {V(d, {2}, {-kInf, -kInf})});
      L.Add("ReduceMin", "empty_is_highest", d, R(ReduceMin, {1}), {V(d, {2, 0}, {})},
            {V(d, {2}, {kInf, kInf})});
    } else {
      L.Add("ReduceMax", "empty_is_lowest", d, R(ReduceMax, {1}), {V(d, {2, 0}, {})},
            {W(d, {2}, {MinI(d), MinI(d)})});
      const int64_t hi = IsUnsigned(d) ? -1 : MaxI(d);  // Uint64's maximum is -1 wrapped.
      L.Add("ReduceMin", "empty_is_highest", d, R(ReduceMin, {1}), {V(d, {2, 0}, {})}, {W(d, {2}, {hi, hi})});
    }
    // Product.
    const Tensor z = V(d, {2, 3}, {1, 2, 3, 1, 2, 1});
    L.Add("ReduceProduct", "axis1", d, R(ReduceProduct, {1}), {z}, {V(d, {2}, {6, 2})});
    L.Add("ReduceProduct", "axis0", d, R(ReduceProduct, {0}), {z}, {V(d, {3}, {1, 4, 3})});
    L.Add("ReduceProduct", "all", d, R(ReduceProduct, {}), {z}, {S(d, 12)});
    L.Add("ReduceProduct", "empty_is_one", d, R(ReduceProduct, {1}), {V(d, {2, 0}, {})}, {V(d, {2}, {1, 1})});
    L.Add("ReduceProduct", "multiply_alias", d, R(ReduceMultiply, {1}), {z}, {V(d, {2}, {6, 2})});
    L.Add("ReduceAllProduct", "matrix", d, Fn1(ReduceAllProduct), {z}, {S(d, 12)});
    // ReduceAndKeep.
    Smooth(L.Add("ReduceAndKeep", "sum_axis1", d, P([](const std::vector<Node>& p) {
                   return ReduceAndKeep(
                       p[0], [](Node n, const std::vector<int>& a) { return ReduceSum(n, a); }, {1});
                 }),
                 {x}, {V(d, {2, 1}, {6, 15})}));
    L.Add("ReduceAndKeep", "max_all", d, P([](const std::vector<Node>& p) {
            return ReduceAndKeep(p[0], [](Node n, const std::vector<int>& a) { return ReduceMax(n, a); });
          }),
          {y}, {V(d, {1, 1}, {6})});
    L.Add("ReduceAndKeep", "min_axis0", d, P([](const std::vector<Node>& p) {
            return ReduceAndKeep(p[0], [](Node n, const std::vector<int>& a) { return ReduceMin(n, a); },
                                 {0});
          }),
          {y}, {V(d, {1, 3}, {1, 2, 3})});
    // Masked forms.
    const Tensor mask = B({2, 3}, {1, 0, 1, 0, 0, 1});
    Smooth(L.Add("MaskedReduceSum", "axis1", d,
                 P([](const std::vector<Node>& p) { return MaskedReduceSum(p[0], p[1], {1}); }), {x, mask},
                 {V(d, {2}, {4, 6})}));
    L.Add("MaskedReduceSum", "all", d,
          P([](const std::vector<Node>& p) { return MaskedReduceSum(p[0], p[1]); }), {x, mask}, {S(d, 10)});
    L.Add("MaskedReduceSum", "broadcast_mask", d,
          P([](const std::vector<Node>& p) { return MaskedReduceSum(p[0], p[1], {1}); }),
          {x, B({1, 3}, {1, 0, 1})}, {V(d, {2}, {4, 10})});
    L.Add("MaskedReduceMax", "axis1", d,
          P([](const std::vector<Node>& p) { return MaskedReduceMax(p[0], p[1], {1}); }),
          {y, B({2, 3}, {1, 0, 1, 1, 1, 0})}, {V(d, {2}, {3, 4})});
    L.Add("MaskedReduceMin", "axis1", d,
          P([](const std::vector<Node>& p) { return MaskedReduceMin(p[0], p[1], {1}); }),
          {y, B({2, 3}, {0, 1, 1, 0, 1, 1})}, {V(d, {2}, {3, 2})});
    if (IsFloat(d)) {
      L.Add("MaskedReduceMax", "all_masked_is_lowest", d,
            P([](const std::vector<Node>& p) { return MaskedReduceMax(p[0], p[1], {1}); }),
            {y, B({2, 3}, {0, 1, 0, 0, 0, 0})}, {V(d, {2}, {5, -kInf})});
      L.Add("MaskedReduceMin", "all_masked_is_highest", d,
            P([](const std::vector<Node>& p) { return MaskedReduceMin(p[0], p[1], {1}); }),
            {y, B({2, 3}, {0, 0, 0, 0, 1, 0})}, {V(d, {2}, {kInf, 2})});
    } else {
      L.Add("MaskedReduceMax", "all_masked_is_lowest", d,
            P([](const std::vector<Node>& p) { return MaskedReduceMax(p[0], p[1], {1}); }),
            {y, B({2, 3}, {0, 1, 0, 0, 0, 0})}, {W(d, {2}, {5, MinI(d)})});
    }
    // ArgMax / ArgMin: Int32 by default, the first index on ties.
    const Tensor t = V(d, {2, 3}, {1, 3, 3, 2, 2, 1});
    L.Add("ArgMax", "axis1_ties", d, P([](const std::vector<Node>& p) { return ArgMax(p[0], 1); }), {t},
          {I32({2}, {1, 0})});
    L.Add("ArgMin", "axis1_ties", d, P([](const std::vector<Node>& p) { return ArgMin(p[0], 1); }), {t},
          {I32({2}, {0, 2})});
    L.Add("ArgMax", "axis0", d, P([](const std::vector<Node>& p) { return ArgMax(p[0], 0); }), {t},
          {I32({3}, {1, 0, 0})});
    L.Add("ArgMin", "axis0", d, P([](const std::vector<Node>& p) { return ArgMin(p[0], 0); }), {t},
          {I32({3}, {0, 1, 1})});
    L.Add("ArgMax", "int64_result", d,
          P([](const std::vector<Node>& p) { return ArgMax(p[0], -1, DType::Int64); }), {t},
          {V(DType::Int64, {2}, {1, 0})});
    L.Add("ArgMin", "uint8_result", d,
          P([](const std::vector<Node>& p) { return ArgMin(p[0], -1, DType::Uint8); }), {t},
          {V(DType::Uint8, {2}, {0, 2})});
  }

  for (DType d : kSignedNumeric) {
    const Tensor x = V(d, {2, 2}, {-1, -5, -3, -2});
    L.Add("ReduceMax", "negative", d, R(ReduceMax, {1}), {x}, {V(d, {2}, {-1, -2})});
    L.Add("ReduceMin", "negative", d, R(ReduceMin, {0}), {x}, {V(d, {2}, {-3, -5})});
    L.Add("ReduceSum", "negative", d, R(ReduceSum, {}), {x}, {S(d, -11)});
    L.Add("ReduceProduct", "negative", d, R(ReduceProduct, {1}), {x}, {V(d, {2}, {5, 6})});
    L.Add("ArgMax", "negative", d, P([](const std::vector<Node>& p) { return ArgMax(p[0], 0); }),
          {V(d, {3}, {-3, -1, -2})}, {I32({}, {1})});
    L.Add("ArgMin", "negative", d, P([](const std::vector<Node>& p) { return ArgMin(p[0], 0); }),
          {V(d, {3}, {-3, -1, -5})}, {I32({}, {2})});
  }
  for (DType d : kUnsignedInts) {
    L.Add("ArgMax", "unsigned_max", d, P([](const std::vector<Node>& p) { return ArgMax(p[0], 0); }),
          {W(d, {3}, {1, -1, 0})}, {I32({}, {1})});
    L.Add("ReduceMax", "unsigned_max", d, R(ReduceMax, {}), {W(d, {3}, {1, -1, 0})}, {W(d, {}, {-1})});
    L.Add("ReduceSum", "wraps", d, R(ReduceSum, {}), {W(d, {3}, {-1, 1, 2})}, {W(d, {}, {2})});
  }

  // ---- Floats: NaN propagation, means, variance, log-sum-exp -------------------------------------
  for (DType d : kFloats) {
    const Tensor n = V(d, {3, 3}, {kNaN, 1, 2, 1, 2, kNaN, 1, 2, 3});
    L.Add("ReduceMax", "nan_propagates", d, R(ReduceMax, {1}), {n}, {V(d, {3}, {kNaN, kNaN, 3})});
    L.Add("ReduceMin", "nan_propagates", d, R(ReduceMin, {1}), {n}, {V(d, {3}, {kNaN, kNaN, 1})});
    L.Add("ReduceSum", "nan_propagates", d, R(ReduceSum, {1}), {n}, {V(d, {3}, {kNaN, kNaN, 6})});
    L.Add("ReduceMax", "infinities", d, R(ReduceMax, {}), {V(d, {3}, {-kInf, 1, kInf})}, {S(d, kInf)});
    L.Add("ReduceSum", "inf_minus_inf", d, R(ReduceSum, {}), {V(d, {2}, {-kInf, kInf})}, {S(d, kNaN)});
    L.Add("ArgMax", "nan_is_max", d, P([](const std::vector<Node>& p) { return ArgMax(p[0], 0); }),
          {V(d, {4}, {1, kNaN, 3, kNaN})}, {I32({}, {1})});
    L.Add("ArgMin", "nan_is_min", d, P([](const std::vector<Node>& p) { return ArgMin(p[0], 0); }),
          {V(d, {4}, {1, 3, kNaN, -1})}, {I32({}, {2})});
    L.Add("ArgMax", "infinities", d, P([](const std::vector<Node>& p) { return ArgMax(p[0], 0); }),
          {V(d, {3}, {-kInf, kInf, kInf})}, {I32({}, {1})});

    const Tensor m = V(d, {2, 3}, {1, 2, 3, 3, 4, 5});
    Smooth(L.Add("ReduceMean", "axis0", d, R(ReduceMean, {0}), {m}, {V(d, {3}, {2, 3, 4})}));
    Smooth(L.Add("ReduceMean", "axis1", d, R(ReduceMean, {1}), {m}, {V(d, {2}, {2, 4})}));
    Smooth(L.Add("ReduceMean", "all", d, R(ReduceMean, {}), {m}, {S(d, 3)}));
    L.Add("ReduceMean", "fraction", d, R(ReduceMean, {0}), {V(d, {2, 2}, {1, 2, 2, 5})},
          {V(d, {2}, {1.5, 3.5})});
    L.Add("ReduceAllMean", "matrix", d, Fn1(ReduceAllMean), {m}, {S(d, 3)});
    const Tensor s = V(d, {2, 2}, {1, 3, 3, 5});
    Smooth(L.Add("ReduceVariance", "axis1", d, R(ReduceVariance, {1}), {s}, {V(d, {2}, {1, 1})}));
    Smooth(L.Add("ReduceVariance", "axis0", d, R(ReduceVariance, {0}), {s}, {V(d, {2}, {1, 1})}));
    Smooth(L.Add("ReduceVariance", "all", d, R(ReduceVariance, {}), {s}, {S(d, 2)}));
    L.Add("ReduceVariance", "constant", d, R(ReduceVariance, {}), {V(d, {3}, {2.5, 2.5, 2.5})}, {S(d, 0)});
    L.Add("MaskedReduceMean", "axis1", d,
          P([](const std::vector<Node>& p) { return MaskedReduceMean(p[0], p[1], {1}); }),
          {V(d, {2, 3}, {1, 2, 3, 4, 5, 6}), B({2, 3}, {1, 0, 1, 0, 1, 1})}, {V(d, {2}, {2, 5.5})});
    L.Add("MaskedReduceMean", "all", d,
          P([](const std::vector<Node>& p) { return MaskedReduceMean(p[0], p[1]); }),
          {V(d, {2, 3}, {1, 2, 3, 4, 5, 6}), B({2, 3}, {1, 0, 1, 0, 0, 1})}, {Rounded(d, {}, {10.0 / 3})},
          OneOp(d));
    Smooth(L.Add("ReduceAndKeep", "mean_axis1", d, P([](const std::vector<Node>& p) {
                   return ReduceAndKeep(
                       p[0], [](Node x, const std::vector<int>& a) { return ReduceMean(x, a); }, {1});
                 }),
                 {m}, {V(d, {2, 1}, {2, 4})}));
    // NumPy's log-sum-exp (a row of 64s overflows exp in float16 unless shifted by the maximum).
    const Tensor lx = FixtureAs(d, "reduce.npz", "ReduceLogSumExp.x", true);
    Smooth(L.Add("ReduceLogSumExp", "axis1", d, R(ReduceLogSumExp, {1}), {lx},
                 {FixtureAs(d, "reduce.npz", "ReduceLogSumExp.axis1", false)}, Composite(d)));
    Smooth(L.Add("ReduceLogSumExp", "axis0", d, R(ReduceLogSumExp, {0}), {lx},
                 {FixtureAs(d, "reduce.npz", "ReduceLogSumExp.axis0", false)}, Composite(d)));
    Smooth(L.Add("ReduceLogSumExp", "all", d, R(ReduceLogSumExp, {}), {lx},
                 {FixtureAs(d, "reduce.npz", "ReduceLogSumExp.all", false)}, Composite(d)));
    L.Add("ReduceLogSumExp", "infinities", d, R(ReduceLogSumExp, {1}),
          {V(d, {2, 2}, {-kInf, -kInf, kInf, 1})}, {V(d, {2}, {-kInf, kInf})});
  }

  // ---- Logical reductions (Bool) and bitwise ones (integers) ------------------------------------
  {
    const Tensor b = B({2, 3}, {1, 1, 1, 1, 0, 1});
    const DType d = DType::Bool;
    L.Add("ReduceLogicalAnd", "axis1", d, R(ReduceLogicalAnd, {1}), {b}, {B({2}, {1, 0})});
    L.Add("ReduceLogicalAnd", "axis0", d, R(ReduceLogicalAnd, {0}), {b}, {B({3}, {1, 0, 1})});
    L.Add("ReduceLogicalAnd", "all", d, R(ReduceLogicalAnd, {}), {b}, {B({}, {0})});
    L.Add("ReduceLogicalAnd", "empty_is_true", d, R(ReduceLogicalAnd, {1}), {B({2, 0}, {})},
          {B({2}, {1, 1})});
    L.Add("ReduceLogicalOr", "axis1", d, R(ReduceLogicalOr, {1}), {B({2, 2}, {0, 0, 0, 1})},
          {B({2}, {0, 1})});
    L.Add("ReduceLogicalOr", "all", d, R(ReduceLogicalOr, {}), {b}, {B({}, {1})});
    L.Add("ReduceLogicalOr", "empty_is_false", d, R(ReduceLogicalOr, {1}), {B({2, 0}, {})}, {B({2}, {0, 0})});
    L.Add("ReduceLogicalXor", "axis1", d, R(ReduceLogicalXor, {1}), {b}, {B({2}, {1, 0})});
    L.Add("ReduceLogicalXor", "axis0", d, R(ReduceLogicalXor, {0}), {b}, {B({3}, {0, 1, 0})});
    L.Add("ReduceLogicalXor", "empty_is_false", d, R(ReduceLogicalXor, {1}), {B({2, 0}, {})},
          {B({2}, {0, 0})});
  }
  for (DType d : kInts) {
    const Tensor x = W(d, {2, 3}, {0b1100, 0b1010, 0b1110, -1, 0, 5});
    L.Add("ReduceBitwiseAnd", "axis1", d, R(ReduceBitwiseAnd, {1}), {x}, {W(d, {2}, {0b1000, 0})});
    L.Add("ReduceBitwiseOr", "axis1", d, R(ReduceBitwiseOr, {1}), {x}, {W(d, {2}, {0b1110, -1})});
    L.Add("ReduceBitwiseXor", "axis1", d, R(ReduceBitwiseXor, {1}), {x}, {W(d, {2}, {0b1000, ~int64_t{5}})});
    L.Add("ReduceBitwiseAnd", "axis0", d, R(ReduceBitwiseAnd, {0}), {x}, {W(d, {3}, {0b1100, 0, 0b0100})});
    L.Add("ReduceBitwiseOr", "all", d, R(ReduceBitwiseOr, {}), {W(d, {3}, {1, 2, 8})}, {W(d, {}, {11})});
    L.Add("ReduceBitwiseXor", "all", d, R(ReduceBitwiseXor, {}), {W(d, {3}, {3, 5, 6})}, {W(d, {}, {0})});
    L.Add("ReduceBitwiseAnd", "empty_all_bits", d, R(ReduceBitwiseAnd, {1}), {W(d, {2, 0}, {})},
          {W(d, {2}, {-1, -1})});
    L.Add("ReduceBitwiseOr", "empty_is_zero", d, R(ReduceBitwiseOr, {1}), {W(d, {2, 0}, {})},
          {W(d, {2}, {0, 0})});
    L.Add("ReduceBitwiseXor", "empty_is_zero", d, R(ReduceBitwiseXor, {1}), {W(d, {2, 0}, {})},
          {W(d, {2}, {0, 0})});
  }
  for (DType d : kFloats) AddSoftmaxRows(L, d);
}

}  // namespace kiln::conformance::internal
