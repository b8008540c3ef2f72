// Graph frontend: constants (Const, exact scalars, Zeros/Ones as a broadcast scalar) and Iota.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "graph/ops_internal.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

using compute::OpType;

namespace {

/// The value as the user wrote it: "true", "-3", "0.5", "nan".
std::string ValueString(const ScalarValue& v) {
  switch (v.kind) {
    case ScalarValue::Kind::kBool:
      return v.i != 0 ? "true" : "false";
    case ScalarValue::Kind::kInt:
      return fmt::format("{}", v.i);
    case ScalarValue::Kind::kUint:
      return fmt::format("{}", v.u);
    case ScalarValue::Kind::kFloat:
      return fmt::format("{}", v.f);
  }
  return "?";
}

[[noreturn]] void NotExact(const ScalarValue& v, DType dtype, const std::string& why) {
  kiln::detail::Throw("Scalar: the value {} cannot be held by {}: {}", ValueString(v), dtype, why);
}

/// The value as a double (exact for bools and floats; integers beyond 2^53 round).
double AsDouble(const ScalarValue& v) {
  switch (v.kind) {
    case ScalarValue::Kind::kUint:
      return static_cast<double>(v.u);
    case ScalarValue::Kind::kFloat:
      return v.f;
    default:
      return static_cast<double>(v.i);
  }
}

/// Bool accepts true/false and the numbers 0 and 1.
bool ToBool(const ScalarValue& v) {
  const bool zero = v.kind == ScalarValue::Kind::kUint    ? v.u == 0
                    : v.kind == ScalarValue::Kind::kFloat ? v.f == 0
                                                          : v.i == 0;
  const bool one = v.kind == ScalarValue::Kind::kUint    ? v.u == 1
                   : v.kind == ScalarValue::Kind::kFloat ? v.f == 1
                                                         : v.i == 1;
  if (!zero && !one) NotExact(v, DType::Bool, "Bool accepts only true/false (0/1)");
  return one;
}

/// The value in integer type T, exactly (else kiln::Error saying why).
template <typename T>
T ToInteger(const ScalarValue& v, DType dtype) {
  using Limits = std::numeric_limits<T>;
  const auto range = [&] { return fmt::format("outside its range [{}, {}]", Limits::min(), Limits::max()); };
  switch (v.kind) {
    case ScalarValue::Kind::kBool:
      return static_cast<T>(v.i);
    case ScalarValue::Kind::kInt:
      if (v.i < 0 && !std::is_signed_v<T>) NotExact(v, dtype, "negative values do not fit an unsigned dtype");
      if constexpr (std::is_signed_v<T>) {
        if (v.i < static_cast<int64_t>(Limits::min()) || v.i > static_cast<int64_t>(Limits::max()))
          NotExact(v, dtype, range());
      } else {
        if (static_cast<uint64_t>(v.i) > static_cast<uint64_t>(Limits::max())) NotExact(v, dtype, range());
      }
      return static_cast<T>(v.i);
    case ScalarValue::Kind::kUint:
      if (v.u > static_cast<uint64_t>(Limits::max())) NotExact(v, dtype, range());
      return static_cast<T>(v.u);
    case ScalarValue::Kind::kFloat: {
      const double f = v.f;
      if (!std::isfinite(f)) NotExact(v, dtype, "an integer dtype has no NaN or infinity");
      if (f != std::trunc(f)) NotExact(v, dtype, "it has a fraction");
      if (f < 0 && !std::is_signed_v<T>) NotExact(v, dtype, "negative values do not fit an unsigned dtype");
      // [min, 2^digits) is exact in double for every integer type (min is 0 or -2^digits).
      const double upper = std::ldexp(1.0, Limits::digits);
      if (f < static_cast<double>(Limits::min()) || f >= upper) NotExact(v, dtype, range());
      return static_cast<T>(f);
    }
  }
  return T{};
}

/// The value in float type T, rounded to nearest; finite values beyond T's range are an error.
template <typename T>
T ToFloat(const ScalarValue& v, DType dtype) {
  const double d = AsDouble(v);
  if constexpr (std::is_same_v<T, double>) {
    return d;
  } else {
    const double max = static_cast<double>(std::numeric_limits<float>::max());
    if (std::isfinite(d) && std::fabs(d) > max) NotExact(v, dtype, "it is beyond the dtype's largest value");
    const float f = static_cast<float>(d);
    if constexpr (std::is_same_v<T, float>) {
      return f;
    } else {
      const T h(f);
      if (std::isfinite(d) && std::isinf(static_cast<float>(h)))
        NotExact(v, dtype, "it is beyond the dtype's largest value");
      return h;
    }
  }
}

/// A host tensor of shape `dtype` scalar holding `v` converted exactly (see ScalarOf).
Tensor ScalarTensor(DType dtype, const ScalarValue& v) {
  if (!IsValid(dtype)) kiln::detail::Throw("Scalar: invalid dtype");
  if (IsPacked(dtype))
    kiln::detail::Throw("Scalar: {} is a packed storage-only dtype; make the scalar in another dtype", dtype);
  if (IsComplex(dtype)) {
    // A real number: the real part, exactly as its part dtype holds it; the imaginary part is 0.
    const Tensor part = ScalarTensor(ComplexPartDType(dtype), v);
    if (dtype == DType::Complex64) return Tensor::FromScalar(std::complex<float>(part.Item<float>(), 0.0f));
    return Tensor::FromScalar(std::complex<double>(part.Item<double>(), 0.0));
  }
  if (v.kind == ScalarValue::Kind::kFloat && std::isnan(v.f) && !IsFloat(dtype))
    NotExact(v, dtype, "only float dtypes hold NaN");
  return DispatchDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>) {
      return Tensor::FromScalar<bool>(ToBool(v));
    } else if constexpr (std::is_integral_v<T>) {
      return Tensor::FromScalar<T>(ToInteger<T>(v, dtype));
    } else {
      return Tensor::FromScalar<T>(ToFloat<T>(v, dtype));
    }
  });
}

/// A scalar constant broadcast to `shape` (packed dtypes via a conversion). `shape` is a copy:
/// a node's shape reference would dangle once the graph grows.
Node Filled(const char* op, Graph& g, Shape shape, ScalarValue value) {
  if (!shape.Ok()) kiln::detail::Throw("{}: invalid shape", op);
  const DType dtype = shape.dtype();
  if (IsPacked(dtype)) {
    const DType wide = IsUnsigned(dtype) ? DType::Uint8 : DType::Int8;
    return ConvertDType(Filled(op, g, shape.WithDType(wide), value), dtype);
  }
  if (IsFloat8(dtype)) return ConvertDType(Filled(op, g, shape.WithDType(DType::Float32), value), dtype);
  compute::OpAttributes attrs;
  attrs.literal = ScalarTensor(dtype, value);
  Node scalar = ops_internal::EmitLeaf(op, g, OpType::Constant, std::move(attrs));
  return ops_internal::BroadcastTo(op, scalar, shape);
}

}  // namespace

Node Const(Graph& g, const Tensor& value) {
  if (!value.Ok()) kiln::detail::Throw("Const: the tensor is not Ok (empty, finalized or donated)");
  compute::OpAttributes attrs;
  attrs.literal = value.Clone();  // The graph keeps its own copy: later writes to `value` do not leak in.
  return ops_internal::EmitLeaf("Const", g, OpType::Constant, std::move(attrs));
}

Node ScalarOf(Graph& g, DType dtype, ScalarValue value) {
  compute::OpAttributes attrs;
  attrs.literal = ScalarTensor(dtype, value);
  return ops_internal::EmitLeaf("Scalar", g, OpType::Constant, std::move(attrs));
}

Node Zeros(Graph& g, const Shape& shape) { return Filled("Zeros", g, shape, ScalarValue::Of(0)); }
Node Ones(Graph& g, const Shape& shape) { return Filled("Ones", g, shape, ScalarValue::Of(1)); }
Node ZerosLike(Node x) {
  ops_internal::CheckNodes("ZerosLike", {x});
  return Filled("ZerosLike", x.graph(), x.shape(), ScalarValue::Of(0));
}
Node OnesLike(Node x) {
  ops_internal::CheckNodes("OnesLike", {x});
  return Filled("OnesLike", x.graph(), x.shape(), ScalarValue::Of(1));
}

Node Iota(Graph& g, const Shape& shape, int axis) {
  if (!shape.Ok()) kiln::detail::Throw("Iota: invalid shape");
  compute::OpAttributes attrs;
  attrs.axis = ops_internal::NormalizeAxis("Iota", axis, shape.Rank(), shape);
  attrs.shape = shape;
  return ops_internal::EmitLeaf("Iota", g, OpType::Iota, std::move(attrs));
}

namespace ops_internal {

Node Lowest(Graph& g, DType dtype) {
  if (IsFloat(dtype)) return ScalarOf(g, dtype, ScalarValue::Of(-std::numeric_limits<double>::infinity()));
  if (IsUnsigned(dtype)) return ScalarOf(g, dtype, ScalarValue::Of(0));
  return DispatchDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T>) {
      return ScalarOf(g, dtype, ScalarValue::Of(static_cast<int64_t>(std::numeric_limits<T>::min())));
    } else {
      return ScalarOf(g, dtype, ScalarValue::Of(0));  // Not reached: floats handled above.
    }
  });
}

Node Highest(Graph& g, DType dtype) {
  if (IsFloat(dtype)) return ScalarOf(g, dtype, ScalarValue::Of(std::numeric_limits<double>::infinity()));
  return DispatchDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T>) {
      return ScalarOf(g, dtype, ScalarValue::Of(std::numeric_limits<T>::max()));
    } else {
      return ScalarOf(g, dtype, ScalarValue::Of(1));  // Not reached: floats handled above.
    }
  });
}

}  // namespace ops_internal

}  // namespace kiln::graph
