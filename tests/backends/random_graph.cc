// The random graph generator of the differential test: op sequences over a pool of values,
// each op built through the graph frontend (an op the frontend rejects is skipped). Families:
// unary, binary (broadcasting), comparisons and Where, reductions (often of an elementwise
// chain), movement, DotGeneral, ConvertDType, composites (dense, softmax, layer norm, an Adam
// update) and control flow (While, If, OptimizationBarrier); 8% of graphs have dimensions up
// to 40. The domains of partial functions are guarded (Log of |x|+0.5, Exp of a clipped x...);
// floats are compared only with independent values; and no discontinuous op (Floor,
// comparisons, conversion to integers) takes half-precision values: each of these would turn a
// legitimate one-ulp difference between backends into a different result.

#include "backends/random_graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "core/check.h"
#include "kiln/core/error.h"
#include "kiln/core/half.h"
#include "kiln/graph/control_flow.h"
#include "kiln/graph/graph.h"
#include "kiln/graph/ops.h"

namespace kiln::test {

namespace {

using graph::Graph;
using graph::Node;

class Generator {
 public:
  Generator(uint64_t seed, const RandomGraphOptions& options) : rng_(seed), options_(options) {}

  /// Draws the parameters, the op sequence and the outputs.
  RandomGraph Run();

 private:
  // ---- Random draws ----
  /// An integer in [lo, hi].
  int64_t Int(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  /// True with probability p.
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  /// A real in [lo, hi).
  double Real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  /// A dtype: Float32 mostly, Float64, Int32, Bool, sometimes Float16 or BFloat16.
  DType PickDType();
  /// Dimensions of rank 0-4 (small dims, 0 and 1 included), at most 512 elements.
  std::vector<int64_t> PickDims();
  /// Values of `shape` in a safe range (floats in [-2, 2], integers in [-20, 20]).
  Tensor RandomTensor(const Shape& shape);

  // ---- Values ----
  /// A new input (or, past the parameter budget, a constant) of `shape`.
  Node NewInput(const Shape& shape);
  /// A value of the pool, recent ones more often.
  Node Pick();
  /// A scalar of x's dtype.
  Node ScalarFor(Node x);
  /// x's dimensions, some of them replaced by 1 (a shape that broadcasts to x's).
  std::vector<int64_t> OnesSome(Node x);
  /// A value of x's dtype whose shape broadcasts with x's: a scalar, a pool value or a new input.
  Node Partner(Node x);
  /// A scalar of x's dtype in ±[0.1, 1]: a value x is compared with or offset by.
  Node IndependentOffset(Node x) {
    return graph::ScalarLike(x, (Chance(0.5) ? 1 : -1) * std::round(Real(0.1, 1) * 64) / 64);
  }
  /// A scalar in (-0.5, 0.5) that is no round number: added before Floor, Ceil and Round so that
  /// values a backend computes within an ulp of an integer do not sit on a step.
  Node Unround(Node x) { return graph::ScalarLike(x, Real(-0.5, 0.5)); }
  /// |x| + 0.5: positive, for Log, Rsqrt, Div...
  static Node Positive(Node x) { return graph::AddScalar(graph::Abs(x), 0.5); }
  /// One of `fns` (name, function) on x, chosen at random; its name joins the steps.
  Node Smooth(Node x, std::initializer_list<std::pair<const char*, Node (*)(Node)>> fns) {
    const auto& [name, fn] = fns.begin()[Int(0, static_cast<int64_t>(fns.size()) - 1)];
    steps_.push_back(name);
    return fn(x);
  }

  // ---- Ops by family ----
  Node Unary(Node x);
  Node Binary(Node x);
  Node CompareWhere(Node x);
  Node Reduce(Node x);
  Node Movement(Node x);
  Node Contract(Node x);
  Node Convert(Node x);
  Node Composite(Node x);
  Node Control(Node x);

  std::mt19937_64 rng_;
  RandomGraphOptions options_;
  Graph g_{"random"};
  std::vector<Node> pool_;
  std::vector<Tensor> inputs_;
  std::vector<std::string> steps_;
  bool specials_ = false;  // Inputs of this graph include 0, ±inf and NaN at times.
  bool finite_ = false;    // While set, the specials drawn are finite (1 for ±inf and NaN).
  bool large_ = false;     // Dimensions up to 40 (tiles, SIMD tails and threading engage).
};

/// True for dtypes whose values the differential test compares with a float tolerance of a few
/// ulps that a discontinuous op could amplify: the half types.
bool Coarse(DType d) { return IsHalf(d); }

DType Generator::PickDType() {
  const int64_t r = Int(0, 99);
  if (r < 58) return DType::Float32;
  if (r < 68) return DType::Float64;
  if (r < 80) return DType::Int32;
  if (r < 88) return DType::Bool;
  if (r < 94) return DType::Float16;
  return DType::BFloat16;
}

std::vector<int64_t> Generator::PickDims() {
  const int64_t r = Int(0, 99);
  const int rank = r < 10 ? 0 : r < 35 ? 1 : r < 65 ? 2 : r < 85 ? 3 : 4;
  std::vector<int64_t> dims;
  int64_t total = 1;
  for (int i = 0; i < rank; ++i) {
    int64_t d = Chance(0.04) ? 0 : Chance(0.2) ? 1 : Int(2, large_ ? 40 : 6);
    if (total * std::max<int64_t>(d, 1) > (large_ ? 20000 : 512)) d = 1;
    total *= std::max<int64_t>(d, 1);
    dims.push_back(d);
  }
  return dims;
}

Tensor Generator::RandomTensor(const Shape& shape) {
  const DType d = shape.dtype();
  const int64_t n = shape.Size();
  std::vector<uint8_t> bytes(static_cast<size_t>(shape.ByteSize()));
  for (int64_t i = 0; i < n; ++i) {
    const auto at = static_cast<size_t>(i);
    if (d == DType::Bool) {
      bytes[at] = Chance(0.5) ? 1 : 0;
      continue;
    }
    if (d == DType::Int32) {
      const auto v = static_cast<int32_t>(Int(-20, 20));
      std::memcpy(&bytes[at * 4], &v, 4);
      continue;
    }
    double v = Real(-2, 2);
    if (specials_ && Chance(0.03)) {
      constexpr double kSpecials[] = {0.0,
                                      -0.0,
                                      1.0,
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::quiet_NaN()};
      v = kSpecials[Int(0, 5)];
      if (finite_ && !std::isfinite(v)) v = 1.0;  // The same draws: later values are unchanged.
    }
    if (d == DType::Float32) {
      const auto f = static_cast<float>(v);
      std::memcpy(&bytes[at * 4], &f, 4);
    } else if (d == DType::Float64) {
      std::memcpy(&bytes[at * 8], &v, 8);
    } else if (d == DType::Float16) {
      const uint16_t b = float16(static_cast<float>(v)).bits;
      std::memcpy(&bytes[at * 2], &b, 2);
    } else if (d == DType::BFloat16) {
      const uint16_t b = bfloat16(static_cast<float>(v)).bits;
      std::memcpy(&bytes[at * 2], &b, 2);
    } else {
      kiln::detail::Throw("random graph: no random values for {}", shape.ToString());
    }
  }
  return Tensor::FromBytes(shape, bytes);
}

Node Generator::NewInput(const Shape& shape) {
  if (g_.NumParameters() >= options_.max_parameters || Chance(0.15)) {
    return graph::Const(g_, RandomTensor(shape));
  }
  inputs_.push_back(RandomTensor(shape));
  return g_.Parameter(shape);
}

Node Generator::Pick() {
  const auto n = static_cast<int64_t>(pool_.size());
  if (Chance(0.6)) return pool_[static_cast<size_t>(Int(std::max<int64_t>(0, n - 3), n - 1))];
  return pool_[static_cast<size_t>(Int(0, n - 1))];
}

Node Generator::ScalarFor(Node x) {
  if (x.dtype() == DType::Bool) return graph::Scalar(x.graph(), DType::Bool, Chance(0.5));
  if (x.dtype() == DType::Int32) return graph::ScalarLike(x, Int(-5, 5));
  return graph::ScalarLike(x, std::round(Real(-2, 2) * 8) / 8);
}

std::vector<int64_t> Generator::OnesSome(Node x) {
  std::vector<int64_t> dims = x.shape().Dimensions();
  for (int64_t& d : dims)
    if (Chance(0.3)) d = 1;
  return dims;
}

Node Generator::Partner(Node x) {
  if (Chance(0.25)) return ScalarFor(x);
  if (Chance(0.5)) {
    std::vector<Node> fits;
    for (const Node& p : pool_) {
      if (p.dtype() != x.dtype() || p.rank() != x.rank() || p == x) continue;
      bool ok = true;
      for (int a = 0; a < x.rank(); ++a) {
        const int64_t da = x.shape().Dim(a), db = p.shape().Dim(a);
        ok = ok && (da == db || da == 1 || db == 1);
      }
      if (ok) fits.push_back(p);
    }
    if (!fits.empty()) return fits[static_cast<size_t>(Int(0, static_cast<int64_t>(fits.size()) - 1))];
  }
  return NewInput(Shape(x.dtype(), OnesSome(x)));
}

Node Generator::Unary(Node x) {
  const DType d = x.dtype();
  if (d == DType::Bool) {
    steps_.push_back("LogicalNot");
    return graph::LogicalNot(x);
  }
  if (d == DType::Int32) {
    switch (Int(0, 6)) {
      case 0:
        steps_.push_back("Neg");
        return graph::Neg(x);
      case 1:
        steps_.push_back("Abs");
        return graph::Abs(x);
      case 2:
        steps_.push_back("Sign");
        return graph::Sign(x);
      case 3:
        steps_.push_back("Square");
        return graph::Square(x);
      case 4:
        steps_.push_back("BitwiseNot");
        return graph::BitwiseNot(x);
      case 5:
        steps_.push_back("BitCount");
        return graph::BitCount(x);
      default:
        steps_.push_back("Clz");
        return graph::Clz(x);
    }
  }
  const int64_t top = Coarse(d) ? 15 : 21;
  switch (Int(0, top)) {
    case 0:
      steps_.push_back("Neg");
      return graph::Neg(x);
    case 1:
      steps_.push_back("Abs");
      return graph::Abs(x);
    case 2:
      steps_.push_back("Square");
      return graph::Square(x);
    case 3:
      steps_.push_back("Sin");
      return graph::Sin(graph::Clip(x, -10, 10));
    case 4:
      steps_.push_back("Cos");
      return graph::Cos(graph::Clip(x, -10, 10));
    case 5:
      return Smooth(x, {{"Tanh", graph::Tanh},
                        {"Atan", graph::Atan},
                        {"Asinh", graph::Asinh},
                        {"Sinh", [](Node v) { return graph::Sinh(graph::Clip(v, -4, 4)); }},
                        {"Cosh", [](Node v) { return graph::Cosh(graph::Clip(v, -4, 4)); }},
                        {"Tan", [](Node v) { return graph::Tan(graph::Clip(v, -1.25, 1.25)); }}});
    case 6:
      steps_.push_back("Sigmoid");
      return graph::Sigmoid(x);
    case 7:
      // Functions of a bounded domain, on arguments inside it.
      return Smooth(x, {{"Erf", graph::Erf},
                        {"Asin", [](Node v) { return graph::Asin(graph::Clip(v, -0.875, 0.875)); }},
                        {"Acos", [](Node v) { return graph::Acos(graph::Clip(v, -0.875, 0.875)); }},
                        {"Acosh", [](Node v) { return graph::Acosh(graph::Abs(v) + 1.125); }},
                        {"Atanh", [](Node v) { return graph::Atanh(graph::Clip(v, -0.875, 0.875)); }}});
    case 8:
      steps_.push_back("Exp");
      return graph::Exp(graph::Clip(x, -8, 8));
    case 9:
      steps_.push_back("Expm1");
      return graph::Expm1(graph::Clip(x, -8, 8));
    case 10:
      steps_.push_back("Log");
      return graph::Log(Positive(x));
    case 11:
      steps_.push_back("Log1p");
      return graph::Log1p(graph::Abs(x));
    case 12:
      steps_.push_back("Sqrt");
      return graph::Sqrt(graph::Abs(x));
    case 13:
      steps_.push_back("Rsqrt");
      return graph::Rsqrt(Positive(x));
    case 14:
      steps_.push_back("Reciprocal");
      return graph::Reciprocal(Positive(x));
    case 15:
      steps_.push_back("Identity");
      return graph::Identity(x);
    case 16:
      // Around an independent offset: x may be a cancellation (Tanh(y) - y) whose sign is noise.
      steps_.push_back("Sign");
      return graph::Sign(x - IndependentOffset(x));
    case 17:
      steps_.push_back("Floor");
      return graph::Floor(x + Unround(x));
    case 18:
      steps_.push_back("Ceil");
      return graph::Ceil(x + Unround(x));
    case 19:
      steps_.push_back("Round");
      return graph::Round(x + Unround(x));
    case 20:
      steps_.push_back("IsFinite");
      return graph::IsFinite(x);
    default:
      steps_.push_back("IsNaN");
      return graph::IsNaN(x);
  }
}

Node Generator::Binary(Node x) {
  const DType d = x.dtype();
  Node y = Partner(x);
  const bool swap = Chance(0.3);
  Node a = swap ? y : x, b = swap ? x : y;
  if (d == DType::Bool) {
    switch (Int(0, 2)) {
      case 0:
        steps_.push_back("LogicalAnd");
        return graph::LogicalAnd(a, b);
      case 1:
        steps_.push_back("LogicalOr");
        return graph::LogicalOr(a, b);
      default:
        steps_.push_back("LogicalXor");
        return graph::LogicalXor(a, b);
    }
  }
  if (d == DType::Int32) {
    switch (Int(0, 12)) {
      case 0:
        steps_.push_back("Add");
        return graph::Add(a, b);
      case 1:
        steps_.push_back("Sub");
        return graph::Sub(a, b);
      case 2:
        steps_.push_back("Mul");
        return graph::Mul(a, b);
      case 3:
        steps_.push_back("Div");
        return graph::Div(a, b);
      case 4:
        steps_.push_back("Rem");
        return graph::Rem(a, b);
      case 5:
        steps_.push_back("Max");
        return graph::Max(a, b);
      case 6:
        steps_.push_back("Min");
        return graph::Min(a, b);
      case 7:
        steps_.push_back("BitwiseAnd");
        return graph::BitwiseAnd(a, b);
      case 8:
        steps_.push_back("BitwiseOr");
        return graph::BitwiseOr(a, b);
      case 9:
        steps_.push_back("BitwiseXor");
        return graph::BitwiseXor(a, b);
      case 10:
        steps_.push_back("BitwiseShiftLeft");
        return graph::BitwiseShiftLeft(a, b);
      case 11:
        steps_.push_back("BitwiseShiftRightArithmetic");
        return graph::BitwiseShiftRightArithmetic(a, b);
      default:
        steps_.push_back("BitwiseShiftRightLogical");
        return graph::BitwiseShiftRightLogical(a, b);
    }
  }
  switch (Int(0, 7)) {
    case 0:
      steps_.push_back("Add");
      return graph::Add(a, b);
    case 1:
      steps_.push_back("Sub");
      return graph::Sub(a, b);
    case 2:
      steps_.push_back("Mul");
      return graph::Mul(a, b);
    case 3:
      steps_.push_back("Div");
      return graph::Div(a, Positive(b));
    case 4:
      steps_.push_back("Max");
      return graph::Max(a, b);
    case 5:
      steps_.push_back("Min");
      return graph::Min(a, b);
    case 6:
      steps_.push_back("Pow");
      return graph::Pow(Positive(a), graph::Clip(b, -2, 2));
    default:
      // Continuous away from y = ±0 with x < 0, where a cancellation's noise would flip ±π: x > 0,
      // or y independent of the graph's values.
      steps_.push_back("Atan2");
      if (Chance(0.5)) return graph::Atan2(a, Positive(b));
      return graph::Atan2(NewInput(Shape(d, OnesSome(x))), x);
  }
}

Node Generator::CompareWhere(Node x) {
  if (x.dtype() == DType::Bool) {
    // A Bool value selects between values of another dtype (scalars or pool values).
    steps_.push_back("Where(Bool)");
    Node f = Pick();
    if (f.dtype() == DType::Bool) return graph::Where(x, f, graph::LogicalNot(f));
    return graph::Where(x, Chance(0.5) ? ScalarFor(f) : Partner(f), f);
  }
  if (Coarse(x.dtype())) return Binary(x);
  // Floats are compared with independent values (an input, or a scalar that is no round number
  // such as 1, where Tanh saturates): a value computed from x (Tanh(x) against x near 0) ties
  // with it up to an ulp, and a comparison would turn a one-ulp difference between the backends
  // into a different result.
  Node y = IsFloat(x.dtype())
               ? (Chance(0.5) ? graph::ScalarLike(x, Real(-2, 2)) : NewInput(Shape(x.dtype(), OnesSome(x))))
               : Partner(x);
  Node cond;
  switch (Int(0, 5)) {
    case 0:
      steps_.push_back("Less");
      cond = graph::Less(x, y);
      break;
    case 1:
      steps_.push_back("LessOrEqual");
      cond = graph::LessOrEqual(x, y);
      break;
    case 2:
      steps_.push_back("Greater");
      cond = graph::Greater(x, y);
      break;
    case 3:
      steps_.push_back("GreaterOrEqual");
      cond = graph::GreaterOrEqual(x, y);
      break;
    case 4:
      steps_.push_back("Equal");
      cond = graph::Equal(x, y);
      break;
    default:
      steps_.push_back("NotEqual");
      cond = graph::NotEqual(x, y);
      break;
  }
  if (Chance(0.3)) return cond;
  steps_.push_back("Where");
  return graph::Where(cond, Chance(0.5) ? x : y, Partner(x));
}

Node Generator::Reduce(Node x) {
  // Often over a short elementwise chain: the cpu backend computes such a chain inside the
  // reduction kernel (with its broadcasts), a path the plain reductions do not take.
  if (IsFloat(x.dtype()) && Chance(0.35)) {
    steps_.push_back("ReduceOfChain");
    for (int64_t k = Int(1, 3); k > 0; --k) x = Chance(0.5) ? Unary(x) : Binary(x);
  }
  std::vector<int> axes;
  for (int a = 0; a < x.rank(); ++a)
    if (Chance(0.5)) axes.push_back(a);
  if (axes.empty() && x.rank() > 0 && Chance(0.7)) axes.push_back(static_cast<int>(Int(0, x.rank() - 1)));
  const DType d = x.dtype();
  using ReduceFn = std::function<Node(Node, const std::vector<int>&)>;
  struct Choice {
    const char* name;
    ReduceFn fn;
  };
  static const std::vector<Choice> kBool = {{"ReduceLogicalAnd", graph::ReduceLogicalAnd},
                                            {"ReduceLogicalOr", graph::ReduceLogicalOr},
                                            {"ReduceLogicalXor", graph::ReduceLogicalXor}};
  static const std::vector<Choice> kInt32 = {{"ReduceSum", graph::ReduceSum},
                                             {"ReduceMax", graph::ReduceMax},
                                             {"ReduceMin", graph::ReduceMin},
                                             {"ReduceProduct", graph::ReduceProduct},
                                             {"ReduceBitwiseOr", graph::ReduceBitwiseOr},
                                             {"ReduceBitwiseXor", graph::ReduceBitwiseXor}};
  // Sums twice as often; products of Tanh, so they neither overflow nor vanish.
  static const std::vector<Choice> kOther = {{"ReduceSum", graph::ReduceSum},
                                             {"ReduceSum", graph::ReduceSum},
                                             {"ReduceMean", graph::ReduceMean},
                                             {"ReduceMax", graph::ReduceMax},
                                             {"ReduceMin", graph::ReduceMin},
                                             {"ReduceLogSumExp", graph::ReduceLogSumExp},
                                             {"ReduceProduct", [](Node v, const std::vector<int>& ax) {
                                                return graph::ReduceProduct(graph::Tanh(v), ax);
                                              }}};
  const std::vector<Choice>* table = &kOther;
  if (d == DType::Bool) {
    table = &kBool;
  } else if (!Coarse(d) && x.rank() > 0 && Chance(0.12)) {
    const int axis = static_cast<int>(Int(0, x.rank() - 1));
    steps_.push_back("ArgMax/ArgMin");
    // Plus an independent input: ties (Tanh saturated to 1 in one backend, 1 - ulp in the
    // other) would pick different indices.
    if (IsFloat(x.dtype())) x = x + NewInput(x.shape());
    return Chance(0.5) ? graph::ArgMax(x, axis) : graph::ArgMin(x, axis);
  } else if (d == DType::Int32) {
    table = &kInt32;
  }
  const Choice& choice = (*table)[static_cast<size_t>(Int(0, static_cast<int64_t>(table->size()) - 1))];
  steps_.push_back(choice.name);
  const ReduceFn& reduce = choice.fn;
  if (Chance(0.3)) return graph::ReduceAndKeep(x, reduce, axes);
  return reduce(x, axes);
}

Node Generator::Movement(Node x) {
  const std::vector<int64_t> dims = x.shape().Dimensions();
  const int rank = x.rank();
  switch (Int(0, 8)) {
    case 0: {
      steps_.push_back("Reshape");
      const int64_t n = x.shape().Size();
      if (n == 0 || Chance(0.3)) return graph::Reshape(x, {n});
      // A random factorisation of n over 1-4 axes.
      std::vector<int64_t> out(static_cast<size_t>(Int(1, 4)), 1);
      int64_t rest = n;
      for (int64_t f = 2; rest > 1; ++f) {
        while (rest % f == 0) {
          out[static_cast<size_t>(Int(0, static_cast<int64_t>(out.size()) - 1))] *= f;
          rest /= f;
        }
      }
      return graph::Reshape(x, out);
    }
    case 1: {
      steps_.push_back("Transpose");
      std::vector<int> perm(static_cast<size_t>(rank));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng_);
      return graph::TransposeAllAxes(x, perm);
    }
    case 2: {
      steps_.push_back("Slice");
      std::vector<graph::AxisRangeSpec> ranges;
      for (int a = 0; a < rank; ++a) {
        const int64_t d = dims[static_cast<size_t>(a)];
        const int64_t start = d > 0 ? Int(0, d - 1) : 0;
        const int64_t end = d > 0 ? Int(start + 1, d) : 0;
        ranges.push_back(graph::AxisRange(start, end).Stride(Int(1, 3)));
      }
      return graph::Slice(x, ranges);
    }
    case 3: {
      steps_.push_back("Concatenate");
      if (rank == 0) return graph::Concatenate({graph::Reshape(x, {1}), graph::Reshape(Partner(x), {1})}, 0);
      const int axis = static_cast<int>(Int(0, rank - 1));
      std::vector<int64_t> other = dims;
      other[static_cast<size_t>(axis)] = Int(0, 3);
      Node y = Chance(0.3) ? x : NewInput(Shape(x.dtype(), other));
      return graph::Concatenate(Chance(0.5) ? std::vector<Node>{x, y} : std::vector<Node>{y, x, y}, axis);
    }
    case 4: {
      steps_.push_back("Reverse");
      std::vector<int> axes;
      for (int a = 0; a < rank; ++a)
        if (Chance(0.5)) axes.push_back(a);
      return graph::Reverse(x, axes);
    }
    case 5: {
      steps_.push_back("Pad");
      std::vector<compute::PadAxis> pads;
      for (int a = 0; a < rank; ++a) pads.push_back({Int(-1, 2), Int(-1, 2), Int(0, 1)});
      return graph::Pad(x, ScalarFor(x), pads);
    }
    case 6: {
      steps_.push_back("Broadcast");
      std::vector<int64_t> to = dims;
      for (int64_t& d : to)
        if (d == 1 && Chance(0.6)) d = Int(2, 4);
      if (Chance(0.3)) return graph::BroadcastPrefix(x, {Int(1, 3)});
      return graph::BroadcastToDims(x, to);
    }
    case 7: {
      steps_.push_back("ExpandAxes/Squeeze");
      if (Chance(0.5)) return graph::ExpandAxes(x, {static_cast<int>(Int(0, rank))});
      return graph::Squeeze(x);
    }
    default: {
      steps_.push_back("Transpose2");
      if (rank < 2) return graph::Reshape(x, dims);
      return graph::Transpose(x, static_cast<int>(Int(0, rank - 1)), static_cast<int>(Int(0, rank - 1)));
    }
  }
}

Node Generator::Contract(Node x) {
  steps_.push_back("DotGeneral");
  if (x.dtype() == DType::Bool) x = graph::ConvertDType(x, DType::Float32);
  if (x.rank() == 0) x = graph::Reshape(x, {1});
  const int rank = x.rank();
  const int axis = static_cast<int>(Int(0, rank - 1));
  const int64_t k = x.shape().Dim(axis);
  const int64_t m = Int(1, 5);
  if (rank >= 2 && axis != 0 && Chance(0.4)) {
    // Batched over axis 0: [b, ..., k, ...]·[b, k, m].
    Node y = NewInput(Shape(x.dtype(), {x.shape().Dim(0), k, m}));
    return graph::Dot(x, y).General({axis}, {0}, {1}, {0});
  }
  Node y = NewInput(Shape(x.dtype(), {k, m}));
  if (Chance(0.3)) return graph::Dot(y, x).General({0}, {}, {axis}, {});
  return graph::Dot(x, y).General({axis}, {}, {0}, {});
}

Node Generator::Convert(Node x) {
  steps_.push_back("ConvertDType");
  constexpr DType kTargets[] = {DType::Float32, DType::Float64, DType::Int32,
                                DType::Bool,    DType::Float16, DType::BFloat16};
  DType to = kTargets[Int(0, 5)];
  // Float to integer or Bool is discontinuous: not from half values.
  if (Coarse(x.dtype()) && (to == DType::Int32 || to == DType::Bool)) to = DType::Float32;
  if (to == x.dtype()) to = x.dtype() == DType::Float32 ? DType::Float64 : DType::Float32;
  // Float to Bool is x != 0, and x may be a cancellation: around an independent offset.
  if (to == DType::Bool && IsFloat(x.dtype())) x = x - IndependentOffset(x);
  // Float to Int32 truncates: values within an ulp of an integer (-1 computed as -0.99999994)
  // are shifted off the steps first.
  if (to == DType::Int32 && IsFloat(x.dtype())) x = x + Unround(x);
  return graph::ConvertDType(x, to);
}

Node Generator::Composite(Node x) {
  if (!IsFloat(x.dtype())) return Binary(x);
  if (x.rank() == 0) x = graph::Reshape(x, {1});
  const int last = x.rank() - 1;
  std::vector<int64_t> ones(static_cast<size_t>(x.rank()), 1);
  switch (Int(0, 3)) {
    case 0: {
      // Dense: x·W + b, then an activation (matmul epilogues).
      steps_.push_back("Dense");
      const int64_t m = Int(1, large_ ? 40 : 6);
      Node w = NewInput(Shape(x.dtype(), {x.shape().Dim(last), m}));
      ones.back() = m;
      Node y = graph::Dot(x, w).General({last}, {}, {0}, {}) + NewInput(Shape(x.dtype(), ones));
      switch (Int(0, 3)) {
        case 0:
          return graph::Max(y, graph::ScalarLike(y, 0));
        case 1:
          return graph::Tanh(y);
        case 2:
          return graph::Sigmoid(y);
        default:
          return y;
      }
    }
    case 1: {
      steps_.push_back("Softmax");
      Node e = graph::Exp(x - graph::ReduceAndKeep(x, graph::ReduceMax, {last}));
      return e / graph::ReduceAndKeep(e, graph::ReduceSum, {last});
    }
    case 2: {
      steps_.push_back("LayerNorm");
      Node c = x - graph::ReduceAndKeep(x, graph::ReduceMean, {last});
      Node var = graph::ReduceAndKeep(graph::Square(c), graph::ReduceMean, {last});
      ones.back() = x.shape().Dim(last);
      // A finite scale and offset: c of a constant row is exactly 0 in one summation order and a
      // rounding error in another, and ±inf times it NaN in one and ±inf in the other.
      finite_ = true;
      Node scale = NewInput(Shape(x.dtype(), ones)), offset = NewInput(Shape(x.dtype(), ones));
      finite_ = false;
      return c * graph::Rsqrt(graph::AddScalar(var, 0.1)) * scale + offset;
    }
    default: {
      // An Adam-like update of x from moments m and v.
      steps_.push_back("AdamUpdate");
      Node m = NewInput(x.shape());
      Node v = graph::Abs(NewInput(x.shape()));
      Node m2 = m * 0.9 + x * 0.1;
      Node v2 = v * 0.999 + graph::Square(x) * 0.001;
      return x - 0.01 * m2 / graph::AddScalar(graph::Sqrt(v2), 1e-3);
    }
  }
}

Node Generator::Control(Node x) {
  const DType d = x.dtype();
  /// The loop body and branch: a continuous step of x's dtype.
  auto step = [d](Node v) {
    if (d == DType::Bool) return graph::LogicalNot(v);
    if (d == DType::Int32) return graph::AddScalar(v, 3);
    return graph::Tanh(v) * 0.5 + v * 0.5;
  };
  switch (Int(0, 2)) {
    case 0:
      steps_.push_back("OptimizationBarrier");
      return graph::OptimizationBarrier({x, Partner(x)})[0];
    case 1:
      steps_.push_back("ForLoop");
      return graph::ForLoop(
          Int(0, 3), [step](Node, const std::vector<Node>& s) { return std::vector<Node>{step(s[0])}; },
          {x})[0];
    default: {
      steps_.push_back("If");
      Node pred = Coarse(d) ? NewInput(Shape(DType::Bool, {}))
                            : graph::Greater(graph::ReduceAllSum(graph::ConvertDType(x, DType::Float32)),
                                             graph::Scalar(g_, DType::Float32, 0));
      return graph::If(
          pred, [step](const std::vector<Node>& v) { return std::vector<Node>{step(v[0])}; },
          [](const std::vector<Node>& v) { return std::vector<Node>{v[0]}; }, {x})[0];
    }
  }
}

RandomGraph Generator::Run() {
  specials_ = Chance(0.1);
  large_ = Chance(0.08);
  if (large_) options_.max_elements *= 20;
  const int num_params = static_cast<int>(Int(1, 3));
  const DType first = PickDType();
  for (int i = 0; i < num_params; ++i) {
    const DType d = i == 0 || Chance(0.5) ? first : PickDType();
    pool_.push_back(NewInput(Shape(d, PickDims())));
  }
  const auto num_ops = Int(options_.min_ops, options_.max_ops);
  for (int64_t i = 0; i < num_ops; ++i) {
    Node x = Pick();
    const size_t mark = steps_.size();
    try {
      Node r;
      const int64_t family = Int(0, 99);
      if (family < 20)
        r = Unary(x);
      else if (family < 45)
        r = Binary(x);
      else if (family < 55)
        r = CompareWhere(x);
      else if (family < 67)
        r = Reduce(x);
      else if (family < 85)
        r = Movement(x);
      else if (family < 90)
        r = Contract(x);
      else if (family < 94)
        r = Convert(x);
      else if (family < 97)
        r = Composite(x);
      else
        r = Control(x);
      if (r.shape().Size() > options_.max_elements) {
        steps_.push_back("(too large, dropped)");
        continue;
      }
      pool_.push_back(r);
    } catch (const kiln::Error&) {
      steps_.resize(mark);
      steps_.push_back("(rejected by the frontend)");
    }
  }
  // The last value and the other values nothing reads (so that every drawn op is live, at
  // most 8 outputs), sometimes a parameter or the same value twice.
  std::vector<bool> read(static_cast<size_t>(g_.NumNodes()), false);
  for (int id = 0; id < g_.NumNodes(); ++id)
    for (int o : g_.instruction(id).operands) read[static_cast<size_t>(o)] = true;
  std::vector<Node> outputs = {pool_.back()};
  for (size_t i = pool_.size() - 1; i-- > 0 && outputs.size() < 8;) {
    if (!read[static_cast<size_t>(pool_[i].id())] &&
        std::find(outputs.begin(), outputs.end(), pool_[i]) == outputs.end())
      outputs.push_back(pool_[i]);
  }
  const int64_t extra = Int(0, 1);
  for (int64_t i = 0; i < extra; ++i) outputs.push_back(Pick());
  if (Chance(0.1)) outputs.push_back(pool_.front());
  RandomGraph out;
  out.program = g_.Build(outputs, std::vector<bool>(static_cast<size_t>(g_.NumParameters()), true));
  out.inputs = std::move(inputs_);
  out.steps = std::move(steps_);
  if (out.program->Parameters().size() != out.inputs.size()) {
    kiln::detail::Throw("random graph: {} parameters but {} inputs", out.program->Parameters().size(),
                        out.inputs.size());
  }
  return out;
}

}  // namespace

RandomGraph MakeRandomGraph(uint64_t seed, const RandomGraphOptions& options) {
  return Generator(seed, options).Run();
}

}  // namespace kiln::test
