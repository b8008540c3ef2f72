// Random numbers as composites of integer primitives: Philox-4x32-10 on Uint32 words (32x32->64
// multiplications in Uint64), a 128-bit block counter carried in the state, and the
// distributions built on the words.

#include "kiln/graph/random.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "core/check.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

namespace {

constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // Philox-4x32 multipliers.
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // Weyl key increments.

Node U32(Graph& g, uint32_t v) { return Scalar(g, DType::Uint32, v); }
Node U64(Graph& g, uint64_t v) { return Scalar(g, DType::Uint64, v); }

/// The high and low 32 bits of a * m.
std::pair<Node, Node> MulHiLo(Node a, uint32_t m) {
  Graph& g = a.graph();
  Node p = Mul(ConvertDType(a, DType::Uint64), U64(g, m));
  return {ConvertDType(BitwiseShiftRightLogical(p, U64(g, 32)), DType::Uint32),
          ConvertDType(p, DType::Uint32)};
}

void CheckState(const char* fn, Node state) {
  if (!state.Ok()) kiln::detail::Throw("{}: the random state is an invalid node", fn);
  if (state.shape() != RNGStateShape()) {
    kiln::detail::Throw("{}: the random state must have shape {}, got {}", fn, RNGStateShape(),
                        state.shape());
  }
}

Node Elem(Node state, int i) { return Reshape(Slice(state, {AxisElem(i)}), {}); }

Node Lo32(Node x) { return ConvertDType(x, DType::Uint32); }
Node Hi32(Node x) { return ConvertDType(BitwiseShiftRightLogical(x, U64(x.graph(), 32)), DType::Uint32); }

/// lo | hi << 32 of two Uint32 nodes.
Node Join64(Node lo, Node hi) {
  return BitwiseOr(ConvertDType(lo, DType::Uint64),
                   BitwiseShiftLeft(ConvertDType(hi, DType::Uint64), U64(lo.graph(), 32)));
}

Node MakeState(Node key, Node hi, Node lo) {
  return Concatenate({Reshape(key, {1}), Reshape(hi, {1}), Reshape(lo, {1})}, 0);
}

/// `count` 64-bit words: word j joins 32-bit words 2j (low) and 2j + 1 (high).
std::pair<Node, Node> RandomBits64(Node state, int64_t count) {
  auto [next, words] = RandomBits32(state, 2 * count);
  Node pairs = Reshape(words, {count, 2});
  return {next, Join64(Reshape(Slice(pairs, {AxisRange(), AxisElem(0)}), {count}),
                       Reshape(Slice(pairs, {AxisRange(), AxisElem(1)}), {count}))};
}

/// ceil(prob * 2^32): a word w < threshold has probability threshold / 2^32.
uint64_t BernoulliThreshold(const char* fn, double prob) {
  if (!(prob >= 0.0 && prob <= 1.0)) kiln::detail::Throw("{}: probability {} is not in [0, 1]", fn, prob);
  return static_cast<uint64_t>(std::ceil(std::ldexp(prob, 32)));
}

void CheckCount(const char* fn, const Shape& shape) {
  if (!shape.Ok() || shape.IsDynamic()) kiln::detail::Throw("{}: invalid or dynamic shape {}", fn, shape);
}

}  // namespace

Shape RNGStateShape() { return Shape(DType::Uint64, {3}); }

Tensor RNGStateFromSeedTensor(uint64_t seed) { return Tensor::FromValue(std::vector<uint64_t>{seed, 0, 0}); }

Node RNGStateFromSeed(Graph& g, uint64_t seed) { return Const(g, RNGStateFromSeedTensor(seed)); }

Tensor RNGState() {
  std::random_device device;
  const uint64_t seed = (static_cast<uint64_t>(device()) << 32) ^ static_cast<uint64_t>(device());
  return RNGStateFromSeedTensor(seed);
}

Node RNGStateForGraph(Graph& g) { return Const(g, RNGState()); }

std::array<Node, 4> Philox4x32(const std::array<Node, 4>& counter, const std::array<Node, 2>& key) {
  for (const Node& n : counter) {
    if (!n.Ok() || n.dtype() != DType::Uint32)
      kiln::detail::Throw("Philox4x32: counter words must be Uint32 nodes");
  }
  for (const Node& n : key) {
    if (!n.Ok() || n.dtype() != DType::Uint32)
      kiln::detail::Throw("Philox4x32: key words must be Uint32 nodes");
  }
  Graph& g = counter[0].graph();
  std::array<Node, 4> c = counter;
  Node k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 = Add(k0, U32(g, kW0));
      k1 = Add(k1, U32(g, kW1));
    }
    auto [hi0, lo0] = MulHiLo(c[0], kM0);
    auto [hi1, lo1] = MulHiLo(c[2], kM1);
    c = {BitwiseXor(BitwiseXor(hi1, c[1]), k0), lo1, BitwiseXor(BitwiseXor(hi0, c[3]), k1), lo0};
  }
  return c;
}

std::pair<Node, Node> RandomBits32(Node state, int64_t count) {
  CheckState("RandomBits32", state);
  if (count < 0) kiln::detail::Throw("RandomBits32: negative count {}", count);
  Graph& g = state.graph();
  if (count == 0) return {state, Zeros(g, Shape(DType::Uint32, {0}))};
  const int64_t blocks = (count + 3) / 4;
  Node key = Elem(state, 0), chi = Elem(state, 1), clo = Elem(state, 2);
  Node i = Iota(g, Shape(DType::Uint64, {blocks}), 0);
  Node lo = Add(clo, i);
  Node hi = Add(chi, ConvertDType(Less(lo, clo), DType::Uint64));
  std::array<Node, 4> words = Philox4x32({Lo32(lo), Hi32(lo), Lo32(hi), Hi32(hi)}, {Lo32(key), Hi32(key)});
  // Word w of block b is value 4b + w.
  Node flat = Reshape(Stack({words[0], words[1], words[2], words[3]}, 1), {blocks * 4});
  if (blocks * 4 != count) flat = Slice(flat, {AxisRange(0, count)});
  Node next_lo = Add(clo, U64(g, static_cast<uint64_t>(blocks)));
  Node next_hi = Add(chi, ConvertDType(Less(next_lo, clo), DType::Uint64));
  return {MakeState(key, next_hi, next_lo), flat};
}

std::pair<Node, Node> RNGStateSplit(Node state) {
  CheckState("RNGStateSplit", state);
  Graph& g = state.graph();
  // The advanced state is dropped: `state` is consumed by the split.
  const Node words = RandomBits32(state, 4).second;
  auto w = [&](int k) { return Reshape(Slice(words, {AxisElem(k)}), {}); };
  Node zero = U64(g, 0);
  return {MakeState(Join64(w(0), w(1)), zero, zero), MakeState(Join64(w(2), w(3)), zero, zero)};
}

std::pair<Node, Node> RandomUniform(Node state, const Shape& shape) {
  CheckState("RandomUniform", state);
  CheckCount("RandomUniform", shape);
  const DType d = shape.dtype();
  if (!IsFloat(d)) kiln::detail::Throw("RandomUniform: dtype {} is not a float dtype", d);
  Graph& g = state.graph();
  const int64_t n = shape.Size();
  if (d == DType::Float64) {
    auto [next, bits] = RandomBits64(state, n);
    Node top = ConvertDType(BitwiseShiftRightLogical(bits, U64(g, 11)), DType::Float64);
    return {next, Reshape(Mul(top, Scalar(g, DType::Float64, std::ldexp(1.0, -53))), shape.Dimensions())};
  }
  const int p = d == DType::Float32 ? 24 : d == DType::Float16 ? 11 : 8;
  auto [next, bits] = RandomBits32(state, n);
  Node top =
      ConvertDType(BitwiseShiftRightLogical(bits, U32(g, static_cast<uint32_t>(32 - p))), DType::Float32);
  Node u = Mul(top, Scalar(g, DType::Float32, std::ldexp(1.0, -p)));
  if (d != DType::Float32) u = ConvertDType(u, d);  // Exact: u has p significant bits.
  return {next, Reshape(u, shape.Dimensions())};
}

std::pair<Node, Node> RandomNormal(Node state, const Shape& shape) {
  CheckState("RandomNormal", state);
  CheckCount("RandomNormal", shape);
  const DType d = shape.dtype();
  if (!IsFloat(d)) kiln::detail::Throw("RandomNormal: dtype {} is not a float dtype", d);
  const DType cd = d == DType::Float64 ? DType::Float64 : DType::Float32;
  const int64_t n = shape.Size();
  auto [next, u] = RandomUniform(state, Shape(cd, {2, n}));
  Node u1 = Reshape(Slice(u, {AxisElem(0)}), {n});
  Node u2 = Reshape(Slice(u, {AxisElem(1)}), {n});
  Node r = Sqrt(MulScalar(Log(1.0 - u1), -2.0));
  Node z = Mul(r, Cos(MulScalar(u2, 2.0 * std::numbers::pi)));
  if (d != cd) z = ConvertDType(z, d);
  return {next, Reshape(z, shape.Dimensions())};
}

std::pair<Node, Node> RandomIntN(Node state, int64_t n, const Shape& shape) {
  CheckState("RandomIntN", state);
  CheckCount("RandomIntN", shape);
  const DType d = shape.dtype();
  if (!IsInt(d) || IsPacked(d))
    kiln::detail::Throw("RandomIntN: dtype {} is not an unpacked integer dtype", d);
  const int value_bits = DTypeBits(d) - (IsSigned(d) ? 1 : 0);
  if (n <= 0 || (value_bits < 63 && n > (int64_t{1} << value_bits))) {
    kiln::detail::Throw("RandomIntN: n = {} must be positive and at most 2^{} for {}", n, value_bits, d);
  }
  Graph& g = state.graph();
  auto [next, bits] = RandomBits64(state, shape.Size());
  Node v = Rem(bits, U64(g, static_cast<uint64_t>(n)));
  return {next, Reshape(ConvertDType(v, d), shape.Dimensions())};
}

std::pair<Node, Node> RandomBernoulli(Node state, double prob, const Shape& shape) {
  CheckState("RandomBernoulli", state);
  CheckCount("RandomBernoulli", shape);
  const DType d = shape.dtype();
  if (IsPacked(d)) kiln::detail::Throw("RandomBernoulli: dtype {} is packed", d);
  const uint64_t t = BernoulliThreshold("RandomBernoulli", prob);
  Graph& g = state.graph();
  auto [next, bits] = RandomBits32(state, shape.Size());
  Node b = Less(ConvertDType(bits, DType::Uint64), U64(g, t));
  if (d != DType::Bool) b = ConvertDType(b, d);
  return {next, Reshape(b, shape.Dimensions())};
}

std::pair<Node, Node> RandomBinomial(Node state, int64_t n, double prob, const Shape& shape) {
  CheckState("RandomBinomial", state);
  CheckCount("RandomBinomial", shape);
  const DType d = shape.dtype();
  if (!(IsFloat(d) || IsInt(d)) || IsPacked(d))
    kiln::detail::Throw("RandomBinomial: dtype {} is not a numeric dtype", d);
  // Largest count the dtype holds exactly.
  const int64_t limit = IsInt(d) ? (int64_t{1} << std::min(DTypeBits(d) - (IsSigned(d) ? 1 : 0), 31)) - 1
                        : d == DType::BFloat16 ? 256
                        : d == DType::Float16  ? 2048
                                               : int64_t{1} << 24;
  if (n < 0 || n > limit)
    kiln::detail::Throw("RandomBinomial: n = {} must be in [0, {}] for {}", n, limit, d);
  const uint64_t t = BernoulliThreshold("RandomBinomial", prob);
  Graph& g = state.graph();
  const int64_t size = shape.Size();
  if (n == 0 || size == 0) return {state, Zeros(g, shape)};
  auto [next, bits] = RandomBits32(state, n * size);
  Node hits = Less(ConvertDType(Reshape(bits, {n, size}), DType::Uint64), U64(g, t));
  return {next, Reshape(ReduceSum(ConvertDType(hits, d), {0}), shape.Dimensions())};
}

}  // namespace kiln::graph
