// Rows for contractions: Dot(a, b).Product(), Dot(a, b).General(...), DotProduct, MatMul (batch
// broadcasting, vector promotion) and Einsum, on every numeric dtype. Inputs and results are
// NumPy's (contraction.npz): small non-negative integers, exact in every dtype.

#include <cmath>
#include <functional>
#include <string>

#include "internal.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

namespace {

struct Contraction {
  const char* name;  // The fixture's name.
  const char* op;    // The catalogue function.
  std::function<Node(Node, Node)> fn;
};

std::function<Node(Node, Node)> EinsumOf(const char* equation) {
  return [equation](Node a, Node b) { return graph::Einsum(equation, a, b); };
}

Node Product(Node a, Node b) { return Dot(a, b).Product(); }

}  // namespace

void AddDotCases(CaseList& L) {
  const Contraction table[] = {
      {"product_vv", "Dot.Product", Product},
      {"product_mv", "Dot.Product", Product},
      {"product_mm", "Dot.Product", Product},
      {"product_batched", "Dot.Product", Product},
      {"general_batch0", "Dot.General", [](Node a, Node b) { return Dot(a, b).General({2}, {0}, {1}, {0}); }},
      {"general_two_contracting", "Dot.General",
       [](Node a, Node b) {
         return Dot(a, b).General({1, 2}, {}, {1, 0}, {});
       }},
      {"general_batch_middle", "Dot.General",
       [](Node a, Node b) { return Dot(a, b).General({2}, {1}, {0}, {1}); }},
      {"general_outer", "Dot.General", [](Node a, Node b) { return Dot(a, b).General({}, {}, {}, {}); }},
      {"dotproduct_vv", "DotProduct", DotProduct},
      {"dotproduct_batched", "DotProduct", DotProduct},
      {"matmul_mm", "MatMul", MatMul},
      {"matmul_vm", "MatMul", MatMul},
      {"matmul_mv", "MatMul", MatMul},
      {"matmul_batched", "MatMul", MatMul},
      {"matmul_broadcast", "MatMul", MatMul},
      {"matmul_rank_broadcast", "MatMul", MatMul},
      {"einsum_bij_bjk_bik", "Einsum", EinsumOf("bij,bjk->bik")},
      {"einsum_ij_jk_ki", "Einsum", EinsumOf("ij,jk->ki")},
      {"einsum_bij_bkj_bik", "Einsum", EinsumOf("bij,bkj->bik")},
      {"einsum_ji_jk_ik", "Einsum", EinsumOf("ji,jk->ik")},
      {"einsum_ij_ij_i", "Einsum", EinsumOf("ij,ij->i")},
      {"einsum_ij_ij_", "Einsum", EinsumOf("ij,ij->")},
      {"einsum_i_j_ij", "Einsum", EinsumOf("i,j->ij")},
      {"einsum_bij_jk_bik", "Einsum", EinsumOf("bij,jk->bik")},
      {"einsum_bji_bkj_kbi", "Einsum", EinsumOf("bji,bkj->kbi")},
      {"einsum_ij_jk_i", "Einsum", EinsumOf("ij,jk->i")},
  };
  for (const Contraction& c : table) {
    const std::string k = c.name;
    for (DType d : kNumeric) {
      auto fn = c.fn;
      Smooth(L.Add(
          c.op, k, d, P([fn](const std::vector<Node>& p) { return fn(p[0], p[1]); }),
          {FixtureAs(d, "contraction.npz", k + ".a", true), FixtureAs(d, "contraction.npz", k + ".b", true)},
          {FixtureAs(d, "contraction.npz", k + ".y", true)}));
    }
  }

  // Signed values (hand-computed) and float specials.
  for (DType d : kSignedNumeric) {
    Smooth(L.Add("Dot.Product", "signed", d,
                 P([](const std::vector<Node>& p) { return Dot(p[0], p[1]).Product(); }),
                 {V(d, {2, 2}, {1, -2, -3, 4}), V(d, {2}, {-1, 2})}, {V(d, {2}, {-5, 11})}));
    Smooth(L.Add("MatMul", "signed", d, Fn2(MatMul), {V(d, {1, 2}, {-1, -2}), V(d, {2, 1}, {3, -4})},
                 {V(d, {1, 1}, {5})}));
  }
  for (DType d : kFloats) {
    L.Add("DotProduct", "nan_and_inf", d, Fn2(DotProduct),
          {V(d, {2, 2}, {NAN, 1, HUGE_VAL, 1}), V(d, {2, 2}, {1, 1, 2, 1})}, {V(d, {2}, {NAN, HUGE_VAL})});
    Smooth(L.Add("Dot.Product", "fractions", d,
                 P([](const std::vector<Node>& p) { return Dot(p[0], p[1]).Product(); }),
                 {V(d, {3}, {0.5, 0.25, -1.5}), V(d, {3}, {2, 4, 0.5})}, {S(d, 1.25)}));
  }
  // Half precision: a contraction is one op, accumulated in float32 and rounded once.
  const double u16 = std::ldexp(1.0, -10), ub16 = std::ldexp(1.0, -7);
  L.Add("DotProduct", "accumulates_in_float32", DType::Float16, Fn2(DotProduct),
        {V(DType::Float16, {3}, {1, u16 / 2, u16 / 2}), V(DType::Float16, {3}, {1, 1, 1})},
        {S(DType::Float16, 1 + u16)});
  L.Add("DotProduct", "accumulates_in_float32", DType::BFloat16, Fn2(DotProduct),
        {V(DType::BFloat16, {3}, {1, ub16 / 2, ub16 / 2}), V(DType::BFloat16, {3}, {1, 1, 1})},
        {S(DType::BFloat16, 1 + ub16)});
  // Wrapping integer accumulation.
  for (DType d : kInts) {
    const int bits = DTypeBits(d);
    const int64_t half = static_cast<int64_t>(uint64_t{1} << (bits - 1));
    L.Add("DotProduct", "wraps", d, Fn2(DotProduct), {W(d, {2}, {half, half}), W(d, {2}, {1, 1})},
          {W(d, {}, {0})});
  }
}

}  // namespace kiln::conformance::internal
