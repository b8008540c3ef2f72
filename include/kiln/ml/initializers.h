#pragma once
/// @file
/// Variable initializers (kiln::initializers): each returns a model::Initializer, which builds a
/// variable's first value in the store's initialisation graph, drawing random numbers from the
/// store's random-number state (so one seed reproduces a model) and advancing it.
///
///   model::Scope s = scope.WithInitializer(initializers::GlorotUniform());
///   Node h = layers::Dense(s.In("hidden"), x, true, 128);  // "weights" Glorot-uniform
///
/// Fan-in and fan-out (Keras's convention, which GoMLX shares for dense weights): a scalar has
/// fan-in = fan-out = 1; a vector [n] has n for both; a matrix [in, out] has in and out; a
/// kernel of rank >= 3 [spatial..., in, out] has fan-in = receptive field · in and fan-out =
/// receptive field · out, the receptive field being the product of the spatial axes. So fan-in
/// is always the product of every axis but the last, as in model::DefaultInitializer.
///
/// Random values are drawn in Float32 (Float64 for Float64 variables) and converted to the
/// variable's dtype; integer variables get the value rounded (Constant, Zeros, Ones) or are a
/// kiln::Error for the random initializers.

#include <cstdint>

#include "kiln/core/shape.h"
#include "kiln/model/store.h"

namespace kiln::initializers {

using model::Initializer;

/// Fan-in and fan-out of a weight of `shape` (see the header comment).
struct Fans {
  int64_t in = 1;   ///< Fan-in: inputs feeding each output unit.
  int64_t out = 1;  ///< Fan-out: output units each input feeds.
};
/// The fans of a weight of `shape`, by the convention in the header comment.
Fans ComputeFans(const Shape& shape);

/// All zeros.
Initializer Zeros();
/// All ones.
Initializer Ones();
/// Every element `value`.
Initializer Constant(double value);

/// Uniform in [min, max).
Initializer RandomUniform(double min = -0.05, double max = 0.05);
/// Normal with `mean` and `stddev`.
Initializer RandomNormal(double mean = 0.0, double stddev = 0.05);
/// Normal with `mean` and `stddev` restricted to [mean - 2·stddev, mean + 2·stddev] (sampled
/// through the inverse normal CDF, so no value is redrawn); its variance is 0.774·stddev².
Initializer TruncatedNormal(double stddev = 0.05, double mean = 0.0);

/// How VarianceScaling picks the fan n.
enum class FanMode { kFanIn, kFanOut, kFanAvg };
/// The distribution VarianceScaling draws from.
enum class Distribution { kUniform, kTruncatedNormal, kNormal };
/// Values of variance scale / n: uniform in ±sqrt(3·scale/n), a truncated normal (within 2
/// standard deviations, rescaled so the variance is still scale / n) or a plain normal.
Initializer VarianceScaling(double scale, FanMode mode, Distribution distribution);

/// Uniform in ±sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010).
Initializer GlorotUniform();
/// Truncated normal of variance 2 / (fan_in + fan_out).
Initializer GlorotNormal();
/// Uniform in ±sqrt(6 / fan_in) (He et al. 2015).
Initializer HeUniform();
/// Truncated normal of variance 2 / fan_in.
Initializer HeNormal();
inline Initializer XavierUniform() { return GlorotUniform(); }  ///< GlorotUniform's other name.
inline Initializer XavierNormal() { return GlorotNormal(); }    ///< GlorotNormal's other name.
inline Initializer KaimingUniform() { return HeUniform(); }     ///< HeUniform's other name.
inline Initializer KaimingNormal() { return HeNormal(); }       ///< HeNormal's other name.

/// A (semi-)orthogonal matrix times `gain` (Saxe et al. 2014): the variable is viewed as
/// [fan_in, fan_out] (all axes but the last, by the last); when fan_in >= fan_out its columns
/// are orthonormal (WᵀW = I), otherwise its rows (WWᵀ = I). Computed as the Q of a QR
/// decomposition of a standard normal matrix, with R's diagonal positive (so Haar-distributed):
/// block Gram-Schmidt, each projection done twice, in Float64, in a loop of the initialisation
/// graph (one iteration per 32 columns). The variable needs rank >= 2.
Initializer Orthogonal(double gain = 1.0);

}  // namespace kiln::initializers
