// Rows for comparisons and selection: Equal, NotEqual, Less, LessOrEqual, Greater,
// GreaterOrEqual, IsZero, Where, Clamp, Clip.

#include <limits>

#include "internal.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

namespace {

Tensor B(std::vector<int64_t> dims, const std::vector<double>& v) {
  return V(DType::Bool, std::move(dims), v);
}

}  // namespace

void AddCompareCases(CaseList& L) {
  // ---- Comparisons ------------------------------------------------------------------------------
  for (DType d : kNumeric) {
    const Tensor a = V(d, {3}, {1, 2, 3}), b = V(d, {3}, {2, 2, 1});
    L.Add("Equal", "values", d, Fn2(Equal), {a, b}, {B({3}, {0, 1, 0})});
    L.Add("NotEqual", "values", d, Fn2(NotEqual), {a, b}, {B({3}, {1, 0, 1})});
    L.Add("Less", "values", d, Fn2(Less), {a, b}, {B({3}, {1, 0, 0})});
    L.Add("LessOrEqual", "values", d, Fn2(LessOrEqual), {a, b}, {B({3}, {1, 1, 0})});
    L.Add("Greater", "values", d, Fn2(Greater), {a, b}, {B({3}, {0, 0, 1})});
    L.Add("GreaterOrEqual", "values", d, Fn2(GreaterOrEqual), {a, b}, {B({3}, {0, 1, 1})});
    // Broadcasting a scalar and a row.
    const Tensor m = V(d, {2, 2}, {1, 2, 3, 4});
    L.Add("Less", "broadcast_scalar", d, Fn2(Less), {m, S(d, 3)}, {B({2, 2}, {1, 1, 0, 0})});
    L.Add("Equal", "broadcast_row", d, Fn2(Equal), {m, V(d, {1, 2}, {3, 2})}, {B({2, 2}, {0, 1, 1, 0})});
    L.Add("GreaterOrEqual", "broadcast_column", d, Fn2(GreaterOrEqual), {m, V(d, {2, 1}, {2, 4})},
          {B({2, 2}, {0, 1, 0, 1})});
    L.Add("IsZero", "values", d, Fn1(IsZero), {V(d, {4}, {0, 1, 2, 0})}, {B({4}, {1, 0, 0, 1})});
  }
  for (DType d : kSignedNumeric) {
    const Tensor a = V(d, {3}, {-1, 0, -3}), b = V(d, {3}, {0, -1, -3});
    L.Add("Less", "signed", d, Fn2(Less), {a, b}, {B({3}, {1, 0, 0})});
    L.Add("Greater", "signed", d, Fn2(Greater), {a, b}, {B({3}, {0, 1, 0})});
    L.Add("LessOrEqual", "signed", d, Fn2(LessOrEqual), {a, b}, {B({3}, {1, 0, 1})});
    L.Add("NotEqual", "signed", d, Fn2(NotEqual), {a, b}, {B({3}, {1, 1, 0})});
  }
  for (DType d : kUnsignedInts) {
    // The largest values compare as unsigned.
    const Tensor a = W(d, {2}, {-1, 0}), b = W(d, {2}, {0, -1});
    L.Add("Greater", "unsigned_max", d, Fn2(Greater), {a, b}, {B({2}, {1, 0})});
    L.Add("Less", "unsigned_max", d, Fn2(Less), {a, b}, {B({2}, {0, 1})});
    L.Add("GreaterOrEqual", "unsigned_max", d, Fn2(GreaterOrEqual), {a, b}, {B({2}, {1, 0})});
  }
  for (DType d : {DType::Int64, DType::Uint64}) {
    // Beyond 2^53: not compared through double.
    const int64_t big = int64_t{1} << 53;
    const Tensor a = W(d, {2}, {big + 1, big}), b = W(d, {2}, {big, big});
    L.Add("Equal", "beyond_2_53", d, Fn2(Equal), {a, b}, {B({2}, {0, 1})});
    L.Add("Greater", "beyond_2_53", d, Fn2(Greater), {a, b}, {B({2}, {1, 0})});
  }
  for (DType d : kFloats) {
    const Tensor a = V(d, {5}, {kNaN, kNaN, 1, -0.0, kInf}), b = V(d, {5}, {kNaN, 1, kNaN, 0, kInf});
    L.Add("Equal", "nan_and_zero", d, Fn2(Equal), {a, b}, {B({5}, {0, 0, 0, 1, 1})});
    L.Add("NotEqual", "nan_and_zero", d, Fn2(NotEqual), {a, b}, {B({5}, {1, 1, 1, 0, 0})});
    L.Add("Less", "nan_and_zero", d, Fn2(Less), {a, b}, {B({5}, {0, 0, 0, 0, 0})});
    L.Add("LessOrEqual", "nan_and_zero", d, Fn2(LessOrEqual), {a, b}, {B({5}, {0, 0, 0, 1, 1})});
    L.Add("Greater", "nan_and_zero", d, Fn2(Greater), {a, b}, {B({5}, {0, 0, 0, 0, 0})});
    L.Add("GreaterOrEqual", "nan_and_zero", d, Fn2(GreaterOrEqual), {a, b}, {B({5}, {0, 0, 0, 1, 1})});
    L.Add("Less", "infinities", d, Fn2(Less), {V(d, {2}, {-kInf, 1}), V(d, {2}, {-1000, kInf})},
          {B({2}, {1, 1})});
    L.Add("IsZero", "special", d, Fn1(IsZero), {V(d, {4}, {-0.0, kNaN, 0.5, kInf})}, {B({4}, {1, 0, 0, 0})});
  }
  {
    const Tensor a = B({4}, {0, 0, 1, 1}), b = B({4}, {0, 1, 0, 1});
    L.Add("Equal", "bool", DType::Bool, Fn2(Equal), {a, b}, {B({4}, {1, 0, 0, 1})});
    L.Add("NotEqual", "bool", DType::Bool, Fn2(NotEqual), {a, b}, {B({4}, {0, 1, 1, 0})});
    L.Add("IsZero", "bool", DType::Bool, Fn1(IsZero), {B({3}, {0, 1, 0})}, {B({3}, {1, 0, 1})});
  }

  // ---- Where (every unpacked dtype) ---------------------------------------------------------------
  for (DType d : kUnpacked) {
    const std::vector<double> v = Seq(d, 8);
    const Tensor a = V(d, {4}, Pick(v, {0, 1, 2, 3})), b = V(d, {4}, Pick(v, {4, 5, 6, 7}));
    L.Add("Where", "elementwise", d, P([](const std::vector<Node>& p) { return Where(p[0], p[1], p[2]); }),
          {B({4}, {1, 0, 1, 0}), a, b}, {V(d, {4}, Pick(v, {0, 5, 2, 7}))});
    L.Add("Where", "scalar_condition", d,
          P([](const std::vector<Node>& p) { return Where(p[0], p[1], p[2]); }), {B({}, {0}), a, b}, {b});
    L.Add("Where", "scalar_branches", d,
          P([](const std::vector<Node>& p) { return Where(p[0], p[1], p[2]); }),
          {B({4}, {1, 0, 0, 1}), V(d, {}, Pick(v, {1})), V(d, {}, Pick(v, {6}))},
          {V(d, {4}, Pick(v, {1, 6, 6, 1}))});
    L.Add("Where", "one_scalar_branch", d,
          P([](const std::vector<Node>& p) { return Where(p[0], p[1], p[2]); }),
          {B({4}, {0, 1, 1, 0}), a, V(d, {}, Pick(v, {7}))}, {V(d, {4}, Pick(v, {7, 1, 2, 7}))});
    L.Add("Where", "broadcast_condition", d,
          P([](const std::vector<Node>& p) { return Where(p[0], p[1], p[2]); }),
          {B({2, 1}, {1, 0}), V(d, {2, 2}, Pick(v, {0, 1, 2, 3})), V(d, {2, 2}, Pick(v, {4, 5, 6, 7}))},
          {V(d, {2, 2}, Pick(v, {0, 1, 6, 7}))});
  }
  for (DType d : kFloats) {
    L.Add("Where", "nan_passes", d, P([](const std::vector<Node>& p) { return Where(p[0], p[1], p[2]); }),
          {B({2}, {1, 0}), V(d, {2}, {kNaN, kNaN}), V(d, {2}, {-kInf, -kInf})}, {V(d, {2}, {kNaN, -kInf})});
  }

  // ---- Clamp and Clip ---------------------------------------------------------------------------
  for (DType d : kNumeric) {
    const Tensor x = V(d, {5}, {1, 2, 3, 4, 5});
    L.Add("Clamp", "scalar_bounds", d, P([](const std::vector<Node>& p) { return Clamp(p[0], p[1], p[2]); }),
          {S(d, 2), x, S(d, 4)}, {V(d, {5}, {2, 2, 3, 4, 4})});
    L.Add("Clamp", "tensor_bounds", d, P([](const std::vector<Node>& p) { return Clamp(p[0], p[1], p[2]); }),
          {V(d, {5}, {0, 3, 0, 5, 1}), x, V(d, {5}, {5, 5, 2, 6, 3})}, {V(d, {5}, {1, 3, 2, 5, 3})});
    L.Add("Clip", "int_bounds", d, P([](const std::vector<Node>& p) { return Clip(p[0], 2, 3); }), {x},
          {V(d, {5}, {2, 2, 3, 3, 3})});
  }
  for (DType d : kSignedNumeric) {
    L.Add("Clip", "negative_bounds", d, P([](const std::vector<Node>& p) { return Clip(p[0], -2, 1); }),
          {V(d, {4}, {-5, -1, 0, 7})}, {V(d, {4}, {-2, -1, 0, 1})});
  }
  for (DType d : kFloats) {
    L.Add("Clip", "float_bounds", d, P([](const std::vector<Node>& p) { return Clip(p[0], -0.5, 0.5); }),
          {V(d, {4}, {-kInf, 0.25, kInf, kNaN})}, {V(d, {4}, {-0.5, 0.25, 0.5, kNaN})});
    L.Add("Clamp", "nan_propagates", d, P([](const std::vector<Node>& p) { return Clamp(p[0], p[1], p[2]); }),
          {S(d, 0), V(d, {2}, {kNaN, 3}), S(d, 2)}, {V(d, {2}, {kNaN, 2})});
  }
}

}  // namespace kiln::conformance::internal
