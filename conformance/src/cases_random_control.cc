// Conformance rows of the random number generators (graph/random.h) and control flow
// (graph/control_flow.h). The expected values come
// from an independent Philox-4x32-10 in conformance/generate_fixtures.py (random.npz), fed the
// same state [42, 0, 0]. The generators are composites: their catalogue rules name the
// primitives that apply to values of the column's dtype (the random words themselves are
// Uint32/Uint64 whatever the column).

#include "internal.h"
#include "kiln/core/error.h"
#include "kiln/graph/control_flow.h"
#include "kiln/graph/random.h"

namespace kiln::conformance::internal {

namespace {

const char* FloatKey(DType d) {
  switch (d) {
    case DType::Float64:
      return "f64";
    case DType::Float32:
      return "f32";
    case DType::Float16:
      return "f16";
    default:
      return "bf16";
  }
}

/// Box-Muller in float32 (float64 for Float64), then one rounding for the half types.
Tolerance NormalTolerance(DType d) {
  if (d == DType::Float64) return {1e-12, 1e-12, 0};
  if (d == DType::Float32) return {1e-5, 1e-5, 0};
  return {1e-6, 0, 1};
}

void AddRandomCases(CaseList& L) {
  const Tensor seed = graph::RNGStateFromSeedTensor(42);
  const char* file = "random.npz";
  for (DType d : kFloats) {
    L.Add("RandomUniform", "seed42", d,
          P([d](const std::vector<Node>& p) { return graph::RandomUniform(p[0], Shape(d, {8})).second; }),
          {seed}, {FixtureAs(d, file, std::string("uniform.") + FloatKey(d), true)});
    const std::string nkey = std::string("normal.") + (d == DType::Float64 ? "f64" : "f32");
    L.Add("RandomNormal", "seed42", d,
          P([d](const std::vector<Node>& p) { return graph::RandomNormal(p[0], Shape(d, {8})).second; }),
          {seed}, {FixtureAs(d, file, nkey, false)}, NormalTolerance(d));
  }
  // Successive calls continue the stream; the state counts the blocks used.
  L.Add("RandomUniform", "second_call", DType::Float32, P([](const std::vector<Node>& p) {
          auto [s1, a] = graph::RandomUniform(p[0], Shape(DType::Float32, {10}));
          (void)a;
          auto [s2, b] = graph::RandomUniform(s1, Shape(DType::Float32, {6}));
          (void)s2;
          return std::vector<Node>{s1, b};
        }),
        {seed},
        {V(DType::Uint64, {3}, {42, 0, 3}), FixtureAs(DType::Float32, file, "uniform.second_call", true)});
  L.Add("RandomUniform", "after_split", DType::Float32, P([](const std::vector<Node>& p) {
          auto [a, b] = graph::RNGStateSplit(p[0]);
          return std::vector<Node>{graph::RandomUniform(a, Shape(DType::Float32, {8})).second,
                                   graph::RandomUniform(b, Shape(DType::Float32, {8})).second};
        }),
        {seed},
        {FixtureAs(DType::Float32, file, "split.a", true), FixtureAs(DType::Float32, file, "split.b", true)});
  for (DType d : kInts) {
    L.Add("RandomIntN", "seed42_n7", d,
          P([d](const std::vector<Node>& p) { return graph::RandomIntN(p[0], 7, Shape(d, {12})).second; }),
          {seed}, {FixtureAs(d, file, "intn.7", true)});
  }
  for (DType d : kUnpacked) {
    L.Add("RandomBernoulli", "seed42_p0.3", d, P([d](const std::vector<Node>& p) {
            return graph::RandomBernoulli(p[0], 0.3, Shape(d, {12})).second;
          }),
          {seed}, {FixtureAs(d, file, "bernoulli.0.3", true)});
  }
  for (DType d : kNumeric) {
    L.Add("RandomBinomial", "seed42_n6_p0.5", d, P([d](const std::vector<Node>& p) {
            return graph::RandomBinomial(p[0], 6, 0.5, Shape(d, {8})).second;
          }),
          {seed}, {FixtureAs(d, file, "binomial.6.0.5", true)});
  }
}

/// The control-flow rows: every unpacked dtype, with bodies and branches made of Reverse (which
/// takes any dtype) so that the loop count and the branch taken show in the result.
void AddControlCases(CaseList& L) {
  using graph::ForLoop;
  using graph::If;
  using graph::OptimizationBarrier;
  using graph::While;
  for (DType d : kUnpacked) {
    const std::vector<double> x = Seq(d, 2);
    const Tensor in = V(d, {2}, x), reversed = V(d, {2}, Pick(x, {1, 0}));
    // Three iterations (a data-dependent count) reverse the vector once overall.
    L.Add("While", "count_down_3", d, P([](const std::vector<Node>& p) {
            return While(
                [](const std::vector<Node>& s) { return Greater(s[0], ScalarLike(s[0], 0)); },
                [](const std::vector<Node>& s) {
                  return std::vector<Node>{Sub(s[0], ScalarLike(s[0], 1)), graph::Reverse(s[1], {0})};
                },
                {p[0], p[1]});
          }),
          {S(DType::Int32, 3), in}, {S(DType::Int32, 0), reversed});
    L.Add("While", "zero_iterations", d, P([](const std::vector<Node>& p) {
            return While(
                [](const std::vector<Node>& s) { return Greater(s[0], ScalarLike(s[0], 0)); },
                [](const std::vector<Node>& s) {
                  return std::vector<Node>{Sub(s[0], ScalarLike(s[0], 1)), graph::Reverse(s[1], {0})};
                },
                {p[0], p[1]});
          }),
          {S(DType::Int32, -2), in}, {S(DType::Int32, -2), in});
    for (int64_t n : {0, 1, 4}) {
      L.Add("ForLoop", "reverse_" + std::to_string(n) + "_times", d, P([n](const std::vector<Node>& p) {
              return ForLoop(n,
                             [](Node, const std::vector<Node>& s) {
                               return std::vector<Node>{graph::Reverse(s[0], {0})};
                             },
                             {p[0]});
            }),
            {in}, {n % 2 == 1 ? reversed : in});
    }
    for (int pred : {0, 1}) {
      L.Add("If", pred ? "true_branch" : "false_branch", d, P([](const std::vector<Node>& p) {
              return If(
                  p[0],
                  [](const std::vector<Node>& v) { return std::vector<Node>{graph::Reverse(v[0], {0})}; },
                  [](const std::vector<Node>& v) { return std::vector<Node>{v[0]}; }, {p[1]});
            }),
            {S(DType::Bool, pred), in}, {pred ? reversed : in});
    }
    L.Add("OptimizationBarrier", "identity", d, P([](const std::vector<Node>& p) {
            return OptimizationBarrier({p[0], p[1]});
          }),
          {in, reversed}, {in, reversed});
    // A name no backend has a kernel for: the decomposition runs.
    L.Add("Composite", "decomposition", d, P([](const std::vector<Node>& p) {
            return graph::Composite("test.reverse_pair", {7}, {p[0], p[1]}, [](const std::vector<Node>& v) {
              return std::vector<Node>{graph::Reverse(v[0], {0}), v[1]};
            });
          }),
          {in, reversed}, {reversed, reversed});
  }
  // 8-bit float operands too.
  for (DType f : kFloat8) {
    L.Add("Composite", "float8_operand", f, P([](const std::vector<Node>& x) {
            return graph::Composite("test.widen8", {}, {x[0]}, [](const std::vector<Node>& a) {
              return std::vector<Node>{graph::ConvertDType(a[0], DType::Float32)};
            });
          }),
          {V(f, {3}, {0.5, -2, 6})}, {V(DType::Float32, {3}, {0.5, -2, 6})});
  }
  // Packed operands reach the decomposition as they are (quantized weights do).
  for (DType p : kPacked) {
    const DType wide = IsUnsigned(p) ? DType::Uint8 : DType::Int8;
    const std::vector<double> v =
        IsUnsigned(p) ? std::vector<double>{0, 1, 3} : std::vector<double>{-1, 0, 1};
    L.Add("Composite", "packed_operand", p, P([wide](const std::vector<Node>& x) {
            return graph::Composite("test.unpack", {}, {x[0]}, [wide](const std::vector<Node>& a) {
              return std::vector<Node>{graph::ConvertDType(a[0], wide)};
            });
          }),
          {V(p, {3}, v)}, {V(wide, {3}, v)});
  }
}

}  // namespace

bool ControlPrimitiveAccepts(OpType op, DType dtype) {
  try {
    Graph g;
    Node x = g.Parameter(Shape(dtype, {2}));
    auto identity = [](const std::vector<Node>& v) { return v; };
    switch (op) {
      case OpType::While:
        graph::While(
            [](const std::vector<Node>& s) { return graph::Scalar(s[0].graph(), DType::Bool, false); },
            identity, {x});
        break;
      case OpType::If:
        graph::If(graph::Scalar(g, DType::Bool, true), identity, identity, {x});
        break;
      case OpType::OptimizationBarrier:
      case OpType::GetTupleElement:
        graph::OptimizationBarrier({x});
        break;
      case OpType::Composite:  // Any dtype, packed ones included (unpacked in the decomposition).
        graph::Composite("test.widen", {}, {x}, [](const std::vector<Node>& v) {
          return std::vector<Node>{graph::ConvertDType(v[0], DType::Int32)};
        });
        break;
#define KILN_LISTED_Control
#include "kiln/compute/op_cases.inc"
        return false;
    }
    return true;
  } catch (const kiln::Error&) {
    return false;
  }
}

void AddRandomControlCatalogue(std::vector<CatalogueEntry>& entries) {
  entries.push_back({"RandomUniform", {OpType::Mul, OpType::ConvertDType}, /*float_only=*/true});
  entries.push_back({"RandomNormal", {OpType::Log, OpType::Cos, OpType::Sqrt, OpType::ConvertDType}});
  entries.push_back({"RandomIntN", {OpType::Rem, OpType::ShiftRightLogical, OpType::ConvertDType}});
  entries.push_back({"RandomBernoulli", {OpType::ConvertDType}, false, /*unpacked_only=*/true});
  entries.push_back({"RandomBinomial", {OpType::ReduceSum, OpType::ConvertDType}, false, false, {}, true});
  entries.push_back({"While", {OpType::While, OpType::GetTupleElement}});
  entries.push_back({"ForLoop", {OpType::While, OpType::GetTupleElement}});
  entries.push_back({"If", {OpType::If, OpType::GetTupleElement}});
  entries.push_back({"OptimizationBarrier", {OpType::OptimizationBarrier, OpType::GetTupleElement}});
  // (Its GetTupleElement reads the results, which are never packed: the rule is Composite's.)
  entries.push_back({"Composite", {OpType::Composite}});
}

void AddRandomControlCases(CaseList& list) {
  AddRandomCases(list);
  AddControlCases(list);
}

}  // namespace kiln::conformance::internal
