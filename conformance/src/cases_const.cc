// Rows for constants: Const, Scalar, Zeros, Ones, ZerosLike, OnesLike, Iota.

#include <limits>

#include "internal.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT: the frontend functions read best unqualified here.

void AddConstantCases(CaseList& L) {
  for (DType d : kAll) {
    // Const: a matrix and a scalar of every dtype, returned as they are.
    const Tensor m = V(d, {2, 3}, Seq(d, 6));
    L.Add("Const", "matrix", d, GP([m](Graph& g, const std::vector<Node>&) { return Const(g, m); }), {}, {m});
    const Tensor s = V(d, {}, Seq(d, 1));
    L.Add("Const", "scalar", d, GP([s](Graph& g, const std::vector<Node>&) { return Const(g, s); }), {}, {s});
    // A constant used in an op: Concatenate-free and valid for every dtype (Reshape accepts packed).
    L.Add("Const", "reshaped", d, GP([m](Graph& g, const std::vector<Node>&) {
            return Reshape(Const(g, m), {3, 2});
          }),
          {}, {V(d, {3, 2}, Seq(d, 6))});

    // Zeros and Ones of a shape (packed dtypes through a conversion), ZerosLike and OnesLike.
    const Shape shape(d, {2, 2});
    L.Add("Zeros", "2x2", d, GP([shape](Graph& g, const std::vector<Node>&) { return Zeros(g, shape); }), {},
          {V(d, {2, 2}, {0, 0, 0, 0})});
    L.Add("Ones", "2x2", d, GP([shape](Graph& g, const std::vector<Node>&) { return Ones(g, shape); }), {},
          {V(d, {2, 2}, {1, 1, 1, 1})});
    L.Add("Zeros", "scalar", d, GP([d](Graph& g, const std::vector<Node>&) { return Zeros(g, Shape(d)); }),
          {}, {S(d, 0)});
    L.Add("ZerosLike", "vector", d, Fn1(ZerosLike), {V(d, {3}, Seq(d, 3))}, {V(d, {3}, {0, 0, 0})});
    L.Add("OnesLike", "vector", d, Fn1(OnesLike), {V(d, {3}, Seq(d, 3))}, {V(d, {3}, {1, 1, 1})});
    L.Add("OnesLike", "matrix", d, Fn1(OnesLike), {V(d, {2, 3}, Seq(d, 6))},
          {V(d, {2, 3}, {1, 1, 1, 1, 1, 1})});
  }

  for (DType d : kUnpacked) {
    // Scalar: exact values of each dtype.
    L.Add("Scalar", "one", d, GP([d](Graph& g, const std::vector<Node>&) { return Scalar(g, d, 1); }), {},
          {S(d, 1)});
    L.Add("Scalar", "zero_from_bool", d,
          GP([d](Graph& g, const std::vector<Node>&) { return Scalar(g, d, false); }), {}, {S(d, 0)});
    if (d == DType::Bool) {
      L.Add("Scalar", "true", d, GP([d](Graph& g, const std::vector<Node>&) { return Scalar(g, d, true); }),
            {}, {S(d, 1)});
      continue;
    }
    L.Add("Scalar", "seven", d, GP([d](Graph& g, const std::vector<Node>&) { return Scalar(g, d, 7); }), {},
          {S(d, 7)});
    // Added to a parameter: the scalar broadcasts.
    L.Add("Scalar", "broadcast_in_add", d,
          GP([d](Graph& g, const std::vector<Node>& p) { return Add(p[0], Scalar(g, d, 2)); }),
          {V(d, {3}, {1, 2, 3})}, {V(d, {3}, {3, 4, 5})});
  }
  for (DType d : kSignedNumeric) {
    L.Add("Scalar", "negative", d, GP([d](Graph& g, const std::vector<Node>&) { return Scalar(g, d, -3); }),
          {}, {S(d, -3)});
  }
  for (DType d : kFloats) {
    L.Add("Scalar", "fraction", d,
          GP([d](Graph& g, const std::vector<Node>&) { return Scalar(g, d, 0.375); }), {}, {S(d, 0.375)});
    L.Add("Scalar", "infinity", d, GP([d](Graph& g, const std::vector<Node>&) {
            return Scalar(g, d, -std::numeric_limits<double>::infinity());
          }),
          {}, {S(d, -std::numeric_limits<double>::infinity())});
  }
  for (DType d : kUnsignedInts) {
    L.Add("Scalar", "maximum", d,
          GP([d](Graph& g, const std::vector<Node>&) { return Scalar(g, d, MaxU(d)); }), {},
          {W(d, {}, {-1})});
  }
  for (DType d : kSignedInts) {
    L.Add("Scalar", "minimum", d,
          GP([d](Graph& g, const std::vector<Node>&) { return Scalar(g, d, MinI(d)); }), {},
          {W(d, {}, {MinI(d)})});
  }

  // Iota: counts along one axis, repeated over the others.
  for (DType d : kNumeric) {
    L.Add("Iota", "axis1", d, GP([d](Graph& g, const std::vector<Node>&) {
            return Iota(g, Shape(d, {2, 3}), 1);
          }),
          {}, {V(d, {2, 3}, {0, 1, 2, 0, 1, 2})});
    L.Add("Iota", "axis0", d, GP([d](Graph& g, const std::vector<Node>&) {
            return Iota(g, Shape(d, {2, 3}), 0);
          }),
          {}, {V(d, {2, 3}, {0, 0, 0, 1, 1, 1})});
    L.Add("Iota", "negative_axis", d, GP([d](Graph& g, const std::vector<Node>&) {
            return Iota(g, Shape(d, {2, 1, 4}), -1);
          }),
          {}, {V(d, {2, 1, 4}, {0, 1, 2, 3, 0, 1, 2, 3})});
    L.Add("Iota", "vector", d,
          GP([d](Graph& g, const std::vector<Node>&) { return Iota(g, Shape(d, {5}), 0); }), {},
          {V(d, {5}, {0, 1, 2, 3, 4})});
  }
}

}  // namespace kiln::conformance::internal
