// ONNX's random operators (RandomUniform, RandomNormal, their *Like forms, Bernoulli) and
// Dropout, drawn with kiln's counter-based generator: a node's `seed` attribute fixes its stream,
// else Model::WithRandomSeed's, else each build of the graph draws a fresh one. The numbers are not ONNX
// Runtime's or NumPy's.

#include <fmt/format.h>

#include "kiln/graph/random.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// The node's random state: its `seed` attribute's stream, else the model's (WithRandomSeed), else
/// a fresh one.
Node State(const Context& c) {
  if (!c.HasAttr("seed"))
    return c.random_seed() ? RNGStateFromSeed(c.graph(), *c.random_seed()) : RNGStateForGraph(c.graph());
  const float seed = c.Float("seed", 0);
  if (!(seed >= 0) || seed >= 1.8e19f) c.Fail(fmt::format("seed {} is not a non-negative integer", seed));
  return RNGStateFromSeed(c.graph(), static_cast<uint64_t>(seed));
}

/// The output shape: the `shape` attribute (dtype attribute, Float32 by default), or for the *Like
/// forms input 0's shape with the dtype attribute or input 0's dtype.
Shape OutShape(const Context& c, bool like) {
  if (like) {
    Node x = c.In(0);
    if (x.shape().IsDynamic()) c.Fail(fmt::format("input {} must have a static shape", x.shape()));
    const DType dtype =
        c.HasAttr("dtype") ? DTypeFromOnnx(static_cast<int>(c.Int("dtype", 1)), "dtype") : x.dtype();
    return x.shape().WithDType(dtype);
  }
  const std::vector<int64_t> dims = c.IntList("shape");
  if (!c.HasAttr("shape")) c.Fail("attribute \"shape\" is missing");
  for (int64_t d : dims)
    if (d < 0) c.Fail(fmt::format("shape {} has a negative size", fmt::join(dims, ", ")));
  return Shape(DTypeFromOnnx(static_cast<int>(c.Int("dtype", 1)), "dtype"), dims);
}

Shape FloatShape(const Context& c, const Shape& s) {
  if (!IsFloat(s.dtype())) c.Fail(fmt::format("the output must be a float type, got {}", s));
  return s;
}

template <bool kLike>
V Uniform(const Context& c) {
  const Shape s = FloatShape(c, OutShape(c, kLike));
  const double low = c.Float("low", 0), high = c.Float("high", 1);
  Node u = RandomUniform(State(c), s).second;
  return {u * (high - low) + low};
}

template <bool kLike>
V Normal(const Context& c) {
  const Shape s = FloatShape(c, OutShape(c, kLike));
  const double mean = c.Float("mean", 0), scale = c.Float("scale", 1);
  return {RandomNormal(State(c), s).second * scale + mean};
}

/// Bernoulli: 1 with probability p (input 0, elementwise), else 0.
V Bernoulli(const Context& c) {
  Node p = c.In(0);
  if (!IsFloat(p.dtype())) c.Fail(fmt::format("the probabilities must be floats, got {}", p.shape()));
  const DType dtype =
      c.HasAttr("dtype") ? DTypeFromOnnx(static_cast<int>(c.Int("dtype", 1)), "dtype") : p.dtype();
  Node u = RandomUniform(State(c), p.shape()).second;
  return {ConvertDType(Less(u, p), dtype)};
}

/// Dropout: in training mode each element is zeroed with probability `ratio` and the others
/// scaled by 1 / (1 - ratio); otherwise the identity. The mask says which elements were kept.
V Dropout(const Context& c) {
  Node x = c.In(0);
  // Before opset 12 the mode is not an input: models run Dropout as inference (as ONNX Runtime
  // does; opset 6's is_test attribute is ignored).
  const std::optional<Tensor>& mode = c.Constant(2);
  std::optional<double> known_mode;
  if (c.opset() >= 12 && c.Has(2) && mode) {
    const std::vector<double> m = mode->ToDoubles();
    if (m.size() != 1) c.Fail(fmt::format("training_mode {} must hold one value", mode->shape()));
    known_mode = m[0];
  }
  const bool inference = c.opset() < 12 || !c.Has(2) || (known_mode && *known_mode == 0);
  Node keep_all = OnesLike(ConvertDType(x, DType::Bool));
  if (inference) return {x, keep_all};
  Node ratio = c.Has(1) ? ConvertDType(c.In(1), x.dtype()) : ScalarLike(x, 0.5);
  if (ratio.rank() != 0) c.Fail(fmt::format("ratio must be a scalar, got {}", ratio.shape()));
  Node mask = GreaterOrEqual(RandomUniform(State(c), x.shape()).second, ratio);
  Node y = Where(mask, x * Reciprocal(OneMinus(ratio)), ZerosLike(x));
  if (c.Has(2) && !mode) {  // The mode known only when the model runs.
    Node training = c.In(2);
    return {Where(training, y, x), Where(training, mask, keep_all)};
  }
  return {y, mask};
}

}  // namespace

void AddRandomConverters(std::map<std::string, Converter>& m) {
  m["RandomUniform"] = Uniform<false>;
  m["RandomUniformLike"] = Uniform<true>;
  m["RandomNormal"] = Normal<false>;
  m["RandomNormalLike"] = Normal<true>;
  m["Bernoulli"] = Bernoulli;
  m["Dropout"] = Dropout;
}

}  // namespace kiln::onnx::internal
