#pragma once
/// @file
/// Stateless, reproducible random numbers (JAX / GoMLX style). A random state is a node of shape
/// (Uint64)[3] = [key, counter_hi, counter_lo]: every generator takes a state and returns the
/// values together with the next state, which the caller threads into the next call. The numbers
/// come from the counter-based Philox-4x32-10 generator (Salmon et al., Random123), built only
/// from integer primitives (Mul, Add, bitwise ops and shifts on Uint32/Uint64, ConvertDType,
/// Iota...), so every backend produces the same bits.
///
/// A call drawing N 32-bit words uses ceil(N / 4) Philox blocks, counters counter..counter+blocks-1
/// (128-bit, with carry), and returns the state with the counter advanced by that many blocks:
/// successive calls never reuse numbers.
///
///   Node state = RNGStateFromSeed(g, 42);
///   auto [state2, u] = RandomUniform(state, Shape(DType::Float32, {3, 4}));
///   auto [state3, z] = RandomNormal(state2, Shape(DType::Float32, {3, 4}));

#include <array>
#include <cstdint>
#include <utility>

#include "kiln/core/shape.h"
#include "kiln/core/tensor.h"
#include "kiln/graph/graph.h"

namespace kiln::graph {

/// The shape of a random state: (Uint64)[3].
Shape RNGStateShape();
/// A state node for `seed` (key = seed, counter 0).
Node RNGStateFromSeed(Graph& g, uint64_t seed);
/// The same state as a host tensor, to feed states as inputs.
Tensor RNGStateFromSeedTensor(uint64_t seed);
/// GoMLX's RNGStateFromSeed(seed): the state as a host tensor (RNGStateFromSeedTensor).
inline Tensor RNGStateFromSeed(uint64_t seed) { return RNGStateFromSeedTensor(seed); }
/// GoMLX's RNGStateFromSeedForGraph: a state node for `seed` in `g`.
inline Node RNGStateFromSeedForGraph(Graph& g, uint64_t seed) { return RNGStateFromSeed(g, seed); }
/// A state seeded from the operating system's random source (std::random_device), as a tensor.
Tensor RNGState();
/// A state node seeded from the operating system's random source: a different stream each time
/// the graph is built.
Node RNGStateForGraph(Graph& g);
/// Two independent states derived from `state` (whose own stream should not be used afterwards):
/// their keys are four Philox words drawn from `state`, their counters 0.
std::pair<Node, Node> RNGStateSplit(Node state);

/// The Philox-4x32-10 bijection: counter words c[0..3] and key words k[0..1], all Uint32 nodes of
/// one shape (scalars broadcast), to four Uint32 words (Random123's philox4x32_R(10, ...)).
std::array<Node, 4> Philox4x32(const std::array<Node, 4>& counter, const std::array<Node, 2>& key);

/// `count` random 32-bit words (Uint32)[count] and the next state.
std::pair<Node, Node> RandomBits32(Node state, int64_t count);

/// Floats uniform in [0, 1) of `shape`'s dtype (any float dtype): the top p bits of a random
/// word, times 2^-p, where p is the dtype's significand precision (24 for Float32, 53 for
/// Float64 from 64 random bits, 11 for Float16, 8 for BFloat16). The values are exact in the
/// dtype, so 1.0 never appears.
std::pair<Node, Node> RandomUniform(Node state, const Shape& shape);
/// Standard normal floats (Box-Muller, one pair of uniforms per value: sqrt(-2 log(1 - u1)) *
/// cos(2 pi u2), with 1 - u1 in (0, 1], so log(0) never happens). Half types are computed in
/// Float32 and rounded.
std::pair<Node, Node> RandomNormal(Node state, const Shape& shape);
/// Integers uniform in [0, n) of `shape`'s (integer) dtype: a 64-bit random value modulo n.
/// The modulo bias is below n / 2^64 (negligible for any n a dtype holds); n must be positive
/// and fit in the dtype.
std::pair<Node, Node> RandomIntN(Node state, int64_t n, const Shape& shape);
/// Values that are true (Bool) or 1 (numeric dtypes; else false or 0) with probability `prob`
/// (in [0, 1]): a random word w counts when w < ceil(prob * 2^32) (exact integer comparison; the
/// probability is rounded up to a multiple of 2^-32).
std::pair<Node, Node> RandomBernoulli(Node state, double prob, const Shape& shape);
/// Numbers of successes in `n` Bernoulli(prob) trials, in `shape`'s (numeric) dtype, which must
/// hold n exactly. Computed as a sum of n Bernoulli draws (word i * size + j is trial i of value
/// j): it costs n random words per value (n * size words, and a [n, size] intermediate), so it is
/// meant for small n.
std::pair<Node, Node> RandomBinomial(Node state, int64_t n, double prob, const Shape& shape);

}  // namespace kiln::graph
