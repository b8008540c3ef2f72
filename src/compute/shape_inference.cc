// The primitives' shape and dtype rules: the one home the graph frontend and backends share.

#include "kiln/compute/shape_inference.h"

#include <algorithm>
#include <string>

#include "compute/shape_dims.h"
#include "compute/shape_rules.h"
#include "core/check.h"
#include "core/checked.h"

namespace kiln::compute {

void FailShape(OpType op, const std::string& what) { detail::Throw("{}: {}", OpName(op), what); }

namespace {

/// What the error for a dtype outside `dtypes` says the op wants.
const char* DTypeClassWanted(DTypeClass dtypes) {
  switch (dtypes) {
    case DTypeClass::Float:
      return "a float dtype";
    case DTypeClass::Bool:
      return "Bool";
    case DTypeClass::Int:
      return "an integer dtype";
    case DTypeClass::Numeric:
      return "a numeric dtype (integer or float, not Bool or packed)";
    case DTypeClass::Complex:
      return "a complex dtype";
    case DTypeClass::FloatComplex:
      return "a float or complex dtype";
    case DTypeClass::NumericComplex:
      return "a numeric or complex dtype (integer, float or complex, not Bool or packed)";
    case DTypeClass::Unpacked:
      return "an unpacked dtype";
    case DTypeClass::Any:
      return "a valid dtype";
  }
  return "a valid dtype";
}

/// Checks the dtype an elementwise, reduction or contraction op accepts: its DTypes column.
void CheckElementDType(OpType op, DType d) {
  const DTypeClass dtypes = OpDTypeClass(op);
  if (!InDTypeClass(d, dtypes))
    FailShape(op, fmt::format("operand dtype {} is not {}", d, DTypeClassWanted(dtypes)));
}

/// Normalises and checks a list of distinct axes of a rank-`rank` operand.
void CheckAxes(OpType op, const std::vector<int64_t>& axes, int rank, const char* what) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= rank) FailShape(op, fmt::format("{} axis {} out of range for rank {}", what, a, rank));
    if (seen[static_cast<size_t>(a)]) FailShape(op, fmt::format("{} axis {} repeated", what, a));
    seen[static_cast<size_t>(a)] = true;
  }
}

void CheckArity(OpType op, const std::vector<Shape>& operands) {
  const int arity = OpArity(op);
  if (arity >= 0 && static_cast<int>(operands.size()) != arity) {
    FailShape(op, fmt::format("takes {} operand{}, got {}", arity, arity == 1 ? "" : "s", operands.size()));
  }
  for (const Shape& s : operands) {
    if (!s.Ok()) FailShape(op, "an operand has an invalid shape");
  }
}

/// The common shape of operands that must have equal dimensions (a dynamic axis meets a static
/// one, checked when the program runs); `what` names them in errors.
std::vector<Axis> UnifyDims(OpType op, const Shape& a, const Shape& b, const char* what) {
  bool ok = a.Rank() == b.Rank();
  std::vector<Axis> axes;
  for (int i = 0; ok && i < a.Rank(); ++i) {
    Axis axis;
    ok = UnifyAxes(AxisOf(a, i), AxisOf(b, i), axis);
    axes.push_back(axis);
  }
  if (!ok) FailShape(op, fmt::format(fmt::runtime(what), a, b));
  return axes;
}

Shape SameShape(OpType op, const Shape& a, const Shape& b) {
  if (a.dtype() != b.dtype())
    FailShape(op, fmt::format("operands have different dtypes, {} and {}", a.dtype(), b.dtype()));
  return ShapeOf(a.dtype(), UnifyDims(op, a, b, "operands have different shapes, {} and {}"));
}

/// Whether a static axis of size `want` can hold `got`: equal, or `got` dynamic.
bool Fits(const Axis& got, int64_t want) { return got.Dynamic() || got.size == want; }

Shape DotShape(const std::vector<Shape>& in, const OpAttributes& at) {
  const OpType op = OpType::DotGeneral;
  const Shape &a = in[0], &b = in[1];
  if (a.dtype() != b.dtype())
    FailShape(op, fmt::format("operands have different dtypes, {} and {}", a.dtype(), b.dtype()));
  CheckElementDType(op, a.dtype());
  if (at.lhs_contracting.size() != at.rhs_contracting.size())
    FailShape(op, "contracting axis lists differ in length");
  if (at.lhs_batch.size() != at.rhs_batch.size()) FailShape(op, "batch axis lists differ in length");
  std::vector<int64_t> lhs_all = at.lhs_contracting, rhs_all = at.rhs_contracting;
  lhs_all.insert(lhs_all.end(), at.lhs_batch.begin(), at.lhs_batch.end());
  rhs_all.insert(rhs_all.end(), at.rhs_batch.begin(), at.rhs_batch.end());
  CheckAxes(op, lhs_all, a.Rank(), "lhs");
  CheckAxes(op, rhs_all, b.Rank(), "rhs");
  for (size_t i = 0; i < at.lhs_contracting.size(); ++i) {
    const Axis da = AxisOf(a, at.lhs_contracting[i]);
    const Axis db = AxisOf(b, at.rhs_contracting[i]);
    Axis unused;
    if (!UnifyAxes(da, db, unused))
      FailShape(op, fmt::format(
                        "contracting dimensions differ: {} (lhs axis {}) and {} (rhs axis {}) for {} and {}",
                        da.ToString(), at.lhs_contracting[i], db.ToString(), at.rhs_contracting[i], a, b));
  }
  std::vector<Axis> dims;
  for (size_t i = 0; i < at.lhs_batch.size(); ++i) {
    const Axis da = AxisOf(a, at.lhs_batch[i]);
    const Axis db = AxisOf(b, at.rhs_batch[i]);
    Axis axis;
    if (!UnifyAxes(da, db, axis))
      FailShape(op, fmt::format("batch dimensions differ: {} and {} for {} and {}", da.ToString(),
                                db.ToString(), a, b));
    dims.push_back(axis);
  }
  auto free_axes = [](const Shape& s, const std::vector<int64_t>& used, std::vector<Axis>& out) {
    for (int ax = 0; ax < s.Rank(); ++ax) {
      if (std::find(used.begin(), used.end(), ax) == used.end()) out.push_back(AxisOf(s, ax));
    }
  };
  free_axes(a, lhs_all, dims);
  free_axes(b, rhs_all, dims);
  return ShapeOf(a.dtype(), dims);
}

/// Reshape's check of element counts: equal when both are static; with dynamic axes, an error
/// only where the counts differ whatever the sizes (same dynamic names, other static product).
void CheckReshapeCount(OpType op, const Shape& x, const Shape& to) {
  if (!x.IsDynamic() && !to.IsDynamic()) {
    if (to.Size() != x.Size())
      FailShape(
          op, fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", x, x.Size(), to, to.Size()));
    return;
  }
  const Monomial a = MonomialOf(x), b = MonomialOf(to);
  if (a.names == b.names && a.coefficient != b.coefficient)
    FailShape(op, fmt::format("cannot reshape {} to {}: their element counts differ for every size of the "
                              "dynamic axes",
                              x, to));
}

Shape SliceShape(OpType op, const Shape& x, const OpAttributes& at) {
  const int rank = x.Rank();
  if (static_cast<int>(at.starts.size()) != rank || static_cast<int>(at.limits.size()) != rank ||
      static_cast<int>(at.strides.size()) != rank) {
    FailShape(op, fmt::format("starts, limits and strides must have {} entries for {}", rank, x));
  }
  std::vector<Axis> dims;
  for (int a = 0; a < rank; ++a) {
    const auto i = static_cast<size_t>(a);
    const Axis axis = AxisOf(x, a);
    const int64_t start = at.starts[i], limit = at.limits[i], stride = at.strides[i];
    // A dynamic axis may be sliced to its end (limit kDynamic) or to a static limit, checked
    // when the program runs.
    const bool to_end = axis.Dynamic() && limit == Shape::kDynamic;
    const bool bad =
        start < 0 || stride < 1 || (!to_end && (start > limit || (!axis.Dynamic() && limit > axis.size)));
    if (bad) {
      FailShape(op,
                fmt::format("axis {} of {}: range [{}, {}) with stride {} is invalid", a, x, start,
                            limit == Shape::kDynamic ? std::string("end") : std::to_string(limit), stride));
    }
    if (!to_end) {
      // ceil((limit - start) / stride) without the overflow of limit - start + stride - 1 (a
      // dynamic axis sliced to a huge static limit with a huge stride; found by graph_fuzz).
      const int64_t span = limit - start;
      dims.push_back(Axis{span == 0 ? 0 : (span - 1) / stride + 1, ""});
    } else if (start == 0 && stride == 1) {
      dims.push_back(axis);
    } else {
      dims.push_back(DerivedAxis(fmt::format("{}[{}::{}]", Term(axis.name), start, stride)));
    }
  }
  return ShapeOf(x.dtype(), dims);
}

Shape PadShape(OpType op, const Shape& x, const Shape& fill, const OpAttributes& at) {
  const int rank = x.Rank();
  if (fill.dtype() != x.dtype() || !fill.IsScalar())
    FailShape(op, fmt::format("the fill value must be a scalar {}, got {}", x.dtype(), fill));
  if (static_cast<int>(at.padding.size()) != rank)
    FailShape(op, fmt::format("{} padding entries for {}", at.padding.size(), x));
  std::vector<Axis> dims;
  for (int a = 0; a < rank; ++a) {
    const PadAxis& p = at.padding[static_cast<size_t>(a)];
    const Axis axis = AxisOf(x, a);
    if (p.interior < 0) FailShape(op, fmt::format("negative interior padding on axis {}", a));
    if (axis.Dynamic()) {
      if (p.low == 0 && p.high == 0 && p.interior == 0) {
        dims.push_back(axis);
      } else if (p.interior == 0) {
        dims.push_back(DerivedAxis(fmt::format("{}{:+}", Term(axis.name), p.low + p.high)));
      } else {
        dims.push_back(DerivedAxis(fmt::format("pad({},{},{},{})", axis.name, p.low, p.high, p.interior)));
      }
      continue;
    }
    const int64_t n = axis.size;
    const std::string what = fmt::format("{}: axis {} of {}", OpName(op), a, x);
    const int64_t size =
        detail::CheckedAdd(detail::CheckedAdd(detail::CheckedAdd(p.low, p.high, what), n, what),
                           detail::CheckedMul(std::max<int64_t>(n - 1, 0), p.interior, what), what);
    if (size < 0) FailShape(op, fmt::format("axis {} of {} would have negative size {}", a, x, size));
    dims.push_back(Axis{size, ""});
  }
  return ShapeOf(x.dtype(), dims);
}

Shape MovementShape(OpType op, const std::vector<Shape>& in, const OpAttributes& at) {
  if (in.empty()) FailShape(op, "needs at least one operand");  // Concatenate is variadic.
  const Shape& x = in[0];
  const int rank = x.Rank();
  switch (op) {
    case OpType::Reshape:
      if (at.shape.dtype() != x.dtype())
        FailShape(op, fmt::format("target {} has another dtype than {}", at.shape, x));
      CheckReshapeCount(op, x, at.shape);
      return at.shape;
    case OpType::Transpose: {
      if (static_cast<int>(at.permutation.size()) != rank)
        FailShape(op, fmt::format("permutation of {} axes for {}", at.permutation.size(), x));
      CheckAxes(op, at.permutation, rank, "permutation");
      std::vector<Axis> dims;
      for (int64_t p : at.permutation) dims.push_back(AxisOf(x, p));
      return ShapeOf(x.dtype(), dims);
    }
    case OpType::BroadcastInDim: {
      const Shape& out = at.shape;
      if (out.dtype() != x.dtype()) FailShape(op, fmt::format("target {} has another dtype than {}", out, x));
      if (static_cast<int>(at.axes.size()) != rank)
        FailShape(op, fmt::format("{} axes given for operand {}", at.axes.size(), x));
      for (size_t i = 0; i < at.axes.size(); ++i) {
        const int64_t a = at.axes[i];
        if (a < 0 || a >= out.Rank() || (i > 0 && a <= at.axes[i - 1])) {
          FailShape(op, fmt::format("axes [{}] must be increasing output axes of {}",
                                    fmt::join(at.axes, ", "), out));
        }
        // A dynamic operand axis may be 1 or the target's size, checked when the program runs.
        const Axis from = AxisOf(x, static_cast<int64_t>(i)), to = AxisOf(out, a);
        if (!from.Dynamic() && from.size != 1 && !Fits(to, from.size)) {
          FailShape(op, fmt::format("cannot broadcast {} to {}: operand axis {} has size {}", x, out, i,
                                    from.size));
        }
      }
      return out;
    }
    case OpType::Concatenate: {
      if (in.empty()) FailShape(op, "needs at least one operand");
      if (at.axis < 0 || at.axis >= rank)
        FailShape(op, fmt::format("axis {} out of range for {}", at.axis, x));
      std::vector<Axis> dims = AxesOf(x);
      std::vector<std::string> parts = {AxisOf(x, at.axis).ToString()};
      int64_t total = dims[static_cast<size_t>(at.axis)].size;
      bool dynamic = dims[static_cast<size_t>(at.axis)].Dynamic();
      for (size_t k = 1; k < in.size(); ++k) {
        const Shape& y = in[k];
        if (y.dtype() != x.dtype() || y.Rank() != rank)
          FailShape(op, fmt::format("operands {} and {} differ in dtype or rank", x, y));
        for (int a = 0; a < rank; ++a) {
          if (a == at.axis) continue;
          if (!UnifyAxes(dims[static_cast<size_t>(a)], AxisOf(y, a), dims[static_cast<size_t>(a)])) {
            FailShape(op,
                      fmt::format("operands {} and {} differ on axis {} (only the concatenation axis {} may)",
                                  x, y, a, at.axis));
          }
        }
        const Axis part = AxisOf(y, at.axis);
        dynamic = dynamic || part.Dynamic();
        if (!part.Dynamic()) total = detail::CheckedAdd(total, part.size, OpName(op));
        parts.push_back(part.ToString());
      }
      if (!dynamic) {
        dims[static_cast<size_t>(at.axis)] = Axis{total, ""};
      } else {
        for (std::string& p : parts) p = Term(p);
        dims[static_cast<size_t>(at.axis)] = DerivedAxis(fmt::format("{}", fmt::join(parts, "+")));
      }
      return ShapeOf(x.dtype(), dims);
    }
    case OpType::Slice:
      return SliceShape(op, x, at);
    case OpType::Pad:
      return PadShape(op, x, in[1], at);
    case OpType::Reverse:
      CheckAxes(op, at.axes, rank, "reversed");
      return x;
#define KILN_LISTED_Movement
#include "kiln/compute/op_cases.inc"
      break;
  }
  FailShape(op, "not a movement op");
}

/// Complex, Real, Imag, Conj and Fft.
Shape ComplexShape(OpType op, const std::vector<Shape>& in, const OpAttributes& at) {
  const Shape& x = in[0];
  switch (op) {
    case OpType::Complex: {
      const Shape common = SameShape(op, in[0], in[1]);
      if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64)
        FailShape(op, fmt::format("the parts must be Float32 or Float64, got {}", x.dtype()));
      return common.WithDType(ComplexDTypeOf(x.dtype()));
    }
    case OpType::Real:
    case OpType::Imag:
      CheckElementDType(op, x.dtype());
      return x.WithDType(ComplexPartDType(x.dtype()));
    case OpType::Conj:
      CheckElementDType(op, x.dtype());
      return x;
    case OpType::Fft: {
      const int64_t n = at.fft_length;
      const bool real_in = at.fft_type == FftType::ForwardReal;
      if (real_in ? (x.dtype() != DType::Float32 && x.dtype() != DType::Float64) : !IsComplex(x.dtype()))
        FailShape(op, fmt::format("a {} transform takes {} operands, got {}",
                                  real_in                               ? "real"
                                  : at.fft_type == FftType::InverseReal ? "inverse real"
                                                                        : "complex",
                                  real_in ? "Float32 or Float64" : "complex", x));
      if (x.Rank() < 1)
        FailShape(op, fmt::format("the operand {} is a scalar; the transform runs over its last axis", x));
      if (n < 1) FailShape(op, fmt::format("fft_length {} is not positive", n));
      // The last axis the transform reads, and the one it writes.
      const int64_t half = n / 2 + 1;
      const int64_t want = at.fft_type == FftType::InverseReal ? half : n;
      const int64_t out = at.fft_type == FftType::ForwardReal ? half : n;
      std::vector<Axis> dims = AxesOf(x);
      if (!Fits(dims.back(), want))
        FailShape(op, fmt::format("the last axis of {} must have {} elements for fft_length {}", x, want, n));
      dims.back() = Axis{out, ""};
      const DType dtype = at.fft_type == FftType::ForwardReal   ? ComplexDTypeOf(x.dtype())
                          : at.fft_type == FftType::InverseReal ? ComplexPartDType(x.dtype())
                                                                : x.dtype();
      return ShapeOf(dtype, dims);
    }
#define KILN_LISTED_Complex
#include "kiln/compute/op_cases.inc"
    break;
  }
  FailShape(op, "not a complex-number op");
}

/// The axes of `x` but those in `removed`.
std::vector<Axis> AxesWithout(const Shape& x, const std::vector<int64_t>& removed) {
  std::vector<Axis> dims;
  for (int a = 0; a < x.Rank(); ++a) {
    if (std::find(removed.begin(), removed.end(), a) == removed.end()) dims.push_back(AxisOf(x, a));
  }
  return dims;
}

/// The result of op (InferShape, unchecked: the wrapper checks its size).
Shape InferUnchecked(OpType op, const std::vector<Shape>& in, const OpAttributes& at) {
  CheckArity(op, in);
  const OpCategory category = GetOpCategory(op);
  // Packed sub-byte dtypes and 8-bit floats are storage only: only the ops of DTypes Any take them.
  if (OpDTypeClass(op) != DTypeClass::Any) {
    for (const Shape& s : in) {
      if (IsStorageOnly(s.dtype()))
        FailShape(op, fmt::format("{} is a storage-only dtype; convert it first (ConvertDType)", s.dtype()));
    }
  }
  switch (category) {
    case OpCategory::Leaf:
      if (op == OpType::Parameter) {
        if (!at.shape.Ok()) FailShape(op, "invalid shape");
        return at.shape;
      }
      if (op == OpType::Constant) {
        if (!at.literal.Ok()) FailShape(op, "the literal tensor is not Ok");
        return at.literal.shape();
      }
      // Iota.
      if (!InDTypeClass(at.shape.dtype(), DTypeClass::Numeric))
        FailShape(op, fmt::format("dtype of {} is not numeric", at.shape));
      if (at.axis < 0 || at.axis >= at.shape.Rank())
        FailShape(op, fmt::format("axis {} out of range for {}", at.axis, at.shape));
      return at.shape;
    case OpCategory::Unary:
      CheckElementDType(op, in[0].dtype());
      // A complex number's magnitude is real.
      if (op == OpType::Abs) return in[0].WithDType(ComplexPartDType(in[0].dtype()));
      return in[0];
    case OpCategory::UnaryPredicate:
      CheckElementDType(op, in[0].dtype());
      return in[0].WithDType(DType::Bool);
    case OpCategory::Binary: {
      const Shape common = SameShape(op, in[0], in[1]);
      CheckElementDType(op, in[0].dtype());
      return common;
    }
    case OpCategory::Compare: {
      const Shape common = SameShape(op, in[0], in[1]);
      CheckElementDType(op, in[0].dtype());
      return common.WithDType(DType::Bool);
    }
    case OpCategory::Select: {
      if (in[0].dtype() != DType::Bool) FailShape(op, fmt::format("condition must be Bool, got {}", in[0]));
      const Shape values = SameShape(op, in[1], in[2]);
      return ShapeOf(values.dtype(),
                     UnifyDims(op, in[0], values, "condition {} and values {} differ in shape"));
    }
    case OpCategory::Reduce:
      CheckElementDType(op, in[0].dtype());
      CheckAxes(op, at.axes, in[0].Rank(), "reduced");
      return ShapeOf(in[0].dtype(), AxesWithout(in[0], at.axes));
    case OpCategory::ArgReduce: {
      CheckElementDType(op, in[0].dtype());
      if (!InDTypeClass(at.dtype, DTypeClass::Int))
        FailShape(op, fmt::format("index dtype {} is not an integer dtype", at.dtype));
      if (at.axis < 0 || at.axis >= in[0].Rank())
        FailShape(op, fmt::format("axis {} out of range for {}", at.axis, in[0]));
      return ShapeOf(at.dtype, AxesWithout(in[0], {at.axis}));
    }
    case OpCategory::Movement:
      return MovementShape(op, in, at);
    case OpCategory::Convert: {
      const Shape& x = in[0];
      if (!IsValid(at.dtype)) FailShape(op, "invalid target dtype");
      if (op == OpType::ConvertDType) return x.WithDType(at.dtype);
      // Bitcast. Bool is excluded: arbitrary bits are not valid bools.
      if (x.dtype() == DType::Bool || at.dtype == DType::Bool)
        FailShape(op, "cannot bitcast from or to Bool");
      if (IsPacked(at.dtype)) FailShape(op, fmt::format("cannot bitcast to the packed dtype {}", at.dtype));
      const int from = DTypeBits(x.dtype()), to = DTypeBits(at.dtype);
      std::vector<Axis> dims = AxesOf(x);
      if (from == to) return ShapeOf(at.dtype, dims);
      if (from > to) {
        dims.push_back(Axis{from / to, ""});
        return ShapeOf(at.dtype, dims);
      }
      if (dims.empty() || dims.back().size != to / from) {
        FailShape(op,
                  fmt::format("bitcasting {} to {} needs a last axis of size {}", x, at.dtype, to / from));
      }
      dims.pop_back();
      return ShapeOf(at.dtype, dims);
    }
    case OpCategory::Contraction:
      return DotShape(in, at);
    // The rules of these families are written for static shapes; dynamic operands go through
    // trial sizes (shape_dims.h).
    case OpCategory::Convolution:
      // A kernel's spatial sizes decide the result's, which trial sizes cannot infer (the output
      // size clamps at zero): they must be static.
      if (in.size() == 2) {
        for (int64_t a : at.conv.kernel_spatial) {
          if (a >= 0 && a < in[1].Rank() && in[1].Dim(static_cast<int>(a)) == Shape::kDynamic)
            FailShape(op, fmt::format("the kernel {} has a dynamic spatial axis {}; they must be static",
                                      in[1], a));
        }
      }
      return InferWithTrialSizes(op, in,
                                 [&](const std::vector<Shape>& s) { return ConvolutionShape(op, s, at); });
    case OpCategory::Window:
      return InferWithTrialSizes(op, in, [&](const std::vector<Shape>& s) { return WindowShape(op, s, at); });
    case OpCategory::Indexing:
      return InferWithTrialSizes(op, in,
                                 [&](const std::vector<Shape>& s) { return IndexingShape(op, s, at); });
    case OpCategory::SortScan:
      return InferWithTrialSizes(op, in,
                                 [&](const std::vector<Shape>& s) { return SortScanShape(op, s, at); });
    case OpCategory::Complex:
      return ComplexShape(op, in, at);
    case OpCategory::Control:
      return ControlShape(op, in, at);
    case OpCategory::Collective:
      return CollectiveShape(op, in, at);
  }
  FailShape(op, "unknown op category");
}

/// A kiln::Error when a static result has more bytes than int64 counts (a size computed from
/// huge attributes). Zero dimensions count as one, so that every row-major stride of the
/// result fits in int64 too, empty or not.
void CheckResultSize(OpType op, const Shape& result) {
  if (result.IsDynamic()) return;
  int64_t bytes = DTypeByteSize(result.dtype(), 1);
  for (int64_t d : result.Dimensions()) {
    if (__builtin_mul_overflow(bytes, std::max<int64_t>(d, 1), &bytes))
      FailShape(op, fmt::format("the result {} has more bytes than int64 holds", result));
  }
}

}  // namespace

Shape InferShape(OpType op, const std::vector<Shape>& in, const OpAttributes& at) {
  Shape result = InferUnchecked(op, in, at);
  CheckResultSize(op, result);
  return result;
}

}  // namespace kiln::compute
