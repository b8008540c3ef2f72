// The primitives' shape and dtype rules: the one home the graph frontend and backends share.

#include "kiln/compute/shape_inference.h"

#include <algorithm>
#include <string>

#include "compute/shape_rules.h"
#include "core/check.h"

namespace kiln::compute {

namespace {

[[noreturn]] void Fail(OpType op, const std::string& what) { detail::Throw("{}: {}", OpName(op), what); }

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
    Fail(op, fmt::format("operand dtype {} is not {}", d, DTypeClassWanted(dtypes)));
}

/// Normalises and checks a list of distinct axes of a rank-`rank` operand.
void CheckAxes(OpType op, const std::vector<int64_t>& axes, int rank, const char* what) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= rank) Fail(op, fmt::format("{} axis {} out of range for rank {}", what, a, rank));
    if (seen[static_cast<size_t>(a)]) Fail(op, fmt::format("{} axis {} repeated", what, a));
    seen[static_cast<size_t>(a)] = true;
  }
}

void CheckArity(OpType op, const std::vector<Shape>& operands) {
  const int arity = OpArity(op);
  if (arity >= 0 && static_cast<int>(operands.size()) != arity) {
    Fail(op, fmt::format("takes {} operand{}, got {}", arity, arity == 1 ? "" : "s", operands.size()));
  }
  for (const Shape& s : operands) {
    if (!s.Ok()) Fail(op, "an operand has an invalid shape");
  }
}

void CheckSameShape(OpType op, const Shape& a, const Shape& b) {
  if (a.dtype() != b.dtype())
    Fail(op, fmt::format("operands have different dtypes, {} and {}", a.dtype(), b.dtype()));
  if (a.Dimensions() != b.Dimensions())
    Fail(op, fmt::format("operands have different shapes, {} and {}", a, b));
}

Shape DotShape(const std::vector<Shape>& in, const OpAttributes& at) {
  const OpType op = OpType::DotGeneral;
  const Shape &a = in[0], &b = in[1];
  if (a.dtype() != b.dtype())
    Fail(op, fmt::format("operands have different dtypes, {} and {}", a.dtype(), b.dtype()));
  CheckElementDType(op, a.dtype());
  if (at.lhs_contracting.size() != at.rhs_contracting.size())
    Fail(op, "contracting axis lists differ in length");
  if (at.lhs_batch.size() != at.rhs_batch.size()) Fail(op, "batch axis lists differ in length");
  std::vector<int64_t> lhs_all = at.lhs_contracting, rhs_all = at.rhs_contracting;
  lhs_all.insert(lhs_all.end(), at.lhs_batch.begin(), at.lhs_batch.end());
  rhs_all.insert(rhs_all.end(), at.rhs_batch.begin(), at.rhs_batch.end());
  CheckAxes(op, lhs_all, a.Rank(), "lhs");
  CheckAxes(op, rhs_all, b.Rank(), "rhs");
  for (size_t i = 0; i < at.lhs_contracting.size(); ++i) {
    const int64_t da = a.Dimensions()[static_cast<size_t>(at.lhs_contracting[i])];
    const int64_t db = b.Dimensions()[static_cast<size_t>(at.rhs_contracting[i])];
    if (da != db)
      Fail(op,
           fmt::format("contracting dimensions differ: {} (lhs axis {}) and {} (rhs axis {}) for {} and {}",
                       da, at.lhs_contracting[i], db, at.rhs_contracting[i], a, b));
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < at.lhs_batch.size(); ++i) {
    const int64_t da = a.Dimensions()[static_cast<size_t>(at.lhs_batch[i])];
    const int64_t db = b.Dimensions()[static_cast<size_t>(at.rhs_batch[i])];
    if (da != db) Fail(op, fmt::format("batch dimensions differ: {} and {} for {} and {}", da, db, a, b));
    dims.push_back(da);
  }
  auto free_axes = [](const Shape& s, const std::vector<int64_t>& used, std::vector<int64_t>& out) {
    for (int ax = 0; ax < s.Rank(); ++ax) {
      if (std::find(used.begin(), used.end(), ax) == used.end())
        out.push_back(s.Dimensions()[static_cast<size_t>(ax)]);
    }
  };
  free_axes(a, lhs_all, dims);
  free_axes(b, rhs_all, dims);
  return Shape(a.dtype(), dims);
}

Shape MovementShape(OpType op, const std::vector<Shape>& in, const OpAttributes& at) {
  const Shape& x = in[0];
  const int rank = x.Rank();
  const auto& d = x.Dimensions();
  switch (op) {
    case OpType::Reshape:
      if (at.shape.dtype() != x.dtype())
        Fail(op, fmt::format("target {} has another dtype than {}", at.shape, x));
      if (at.shape.Size() != x.Size())
        Fail(op, fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", x, x.Size(), at.shape,
                             at.shape.Size()));
      return at.shape;
    case OpType::Transpose: {
      if (static_cast<int>(at.permutation.size()) != rank)
        Fail(op, fmt::format("permutation of {} axes for {}", at.permutation.size(), x));
      CheckAxes(op, at.permutation, rank, "permutation");
      std::vector<int64_t> dims;
      for (int64_t p : at.permutation) dims.push_back(d[static_cast<size_t>(p)]);
      return Shape(x.dtype(), dims);
    }
    case OpType::BroadcastInDim: {
      const Shape& out = at.shape;
      if (out.dtype() != x.dtype()) Fail(op, fmt::format("target {} has another dtype than {}", out, x));
      if (static_cast<int>(at.axes.size()) != rank)
        Fail(op, fmt::format("{} axes given for operand {}", at.axes.size(), x));
      for (size_t i = 0; i < at.axes.size(); ++i) {
        const int64_t a = at.axes[i];
        if (a < 0 || a >= out.Rank() || (i > 0 && a <= at.axes[i - 1])) {
          Fail(op,
               fmt::format("axes [{}] must be increasing output axes of {}", fmt::join(at.axes, ", "), out));
        }
        if (d[i] != 1 && d[i] != out.Dimensions()[static_cast<size_t>(a)]) {
          Fail(op, fmt::format("cannot broadcast {} to {}: operand axis {} has size {}", x, out, i, d[i]));
        }
      }
      return out;
    }
    case OpType::Concatenate: {
      if (in.empty()) Fail(op, "needs at least one operand");
      if (at.axis < 0 || at.axis >= rank) Fail(op, fmt::format("axis {} out of range for {}", at.axis, x));
      std::vector<int64_t> dims = d;
      for (size_t k = 1; k < in.size(); ++k) {
        const Shape& y = in[k];
        if (y.dtype() != x.dtype() || y.Rank() != rank)
          Fail(op, fmt::format("operands {} and {} differ in dtype or rank", x, y));
        for (int a = 0; a < rank; ++a) {
          if (a != at.axis && y.Dimensions()[static_cast<size_t>(a)] != d[static_cast<size_t>(a)]) {
            Fail(op, fmt::format("operands {} and {} differ on axis {} (only the concatenation axis {} may)",
                                 x, y, a, at.axis));
          }
        }
        dims[static_cast<size_t>(at.axis)] += y.Dimensions()[static_cast<size_t>(at.axis)];
      }
      return Shape(x.dtype(), dims);
    }
    case OpType::Slice: {
      if (static_cast<int>(at.starts.size()) != rank || static_cast<int>(at.limits.size()) != rank ||
          static_cast<int>(at.strides.size()) != rank) {
        Fail(op, fmt::format("starts, limits and strides must have {} entries for {}", rank, x));
      }
      std::vector<int64_t> dims;
      for (int a = 0; a < rank; ++a) {
        const auto i = static_cast<size_t>(a);
        if (at.starts[i] < 0 || at.starts[i] > at.limits[i] || at.limits[i] > d[i] || at.strides[i] < 1) {
          Fail(op, fmt::format("axis {} of {}: range [{}, {}) with stride {} is invalid", a, x, at.starts[i],
                               at.limits[i], at.strides[i]));
        }
        dims.push_back((at.limits[i] - at.starts[i] + at.strides[i] - 1) / at.strides[i]);
      }
      return Shape(x.dtype(), dims);
    }
    case OpType::Pad: {
      const Shape& fill = in[1];
      if (fill.dtype() != x.dtype() || !fill.IsScalar())
        Fail(op, fmt::format("the fill value must be a scalar {}, got {}", x.dtype(), fill));
      if (static_cast<int>(at.padding.size()) != rank)
        Fail(op, fmt::format("{} padding entries for {}", at.padding.size(), x));
      std::vector<int64_t> dims;
      for (int a = 0; a < rank; ++a) {
        const PadAxis& p = at.padding[static_cast<size_t>(a)];
        const int64_t n = d[static_cast<size_t>(a)];
        if (p.interior < 0) Fail(op, fmt::format("negative interior padding on axis {}", a));
        const int64_t size = p.low + p.high + n + std::max<int64_t>(n - 1, 0) * p.interior;
        if (size < 0) Fail(op, fmt::format("axis {} of {} would have negative size {}", a, x, size));
        dims.push_back(size);
      }
      return Shape(x.dtype(), dims);
    }
    case OpType::Reverse:
      CheckAxes(op, at.axes, rank, "reversed");
      return x;
#define KILN_LISTED_Movement
#include "kiln/compute/op_cases.inc"
      break;
  }
  Fail(op, "not a movement op");
}

}  // namespace

Shape InferShape(OpType op, const std::vector<Shape>& in, const OpAttributes& at) {
  CheckArity(op, in);
  const OpCategory category = GetOpCategory(op);
  // Packed sub-byte dtypes are storage only: only the ops of DTypes Any take them.
  if (OpDTypeClass(op) != DTypeClass::Any) {
    for (const Shape& s : in) {
      if (IsPacked(s.dtype()))
        Fail(op, fmt::format("{} is a packed storage-only dtype; convert it first", s.dtype()));
    }
  }
  for (const Shape& s : in) {
    if (s.IsDynamic()) Fail(op, fmt::format("operand {} has dynamic axes, which no backend runs", s));
  }
  switch (category) {
    case OpCategory::Leaf:
      if (op == OpType::Parameter) {
        if (!at.shape.Ok()) Fail(op, "invalid shape");
        return at.shape;
      }
      if (op == OpType::Constant) {
        if (!at.literal.Ok()) Fail(op, "the literal tensor is not Ok");
        return at.literal.shape();
      }
      // Iota.
      if (!InDTypeClass(at.shape.dtype(), DTypeClass::Numeric))
        Fail(op, fmt::format("dtype of {} is not numeric", at.shape));
      if (at.axis < 0 || at.axis >= at.shape.Rank())
        Fail(op, fmt::format("axis {} out of range for {}", at.axis, at.shape));
      return at.shape;
    case OpCategory::Unary:
      CheckElementDType(op, in[0].dtype());
      return in[0];
    case OpCategory::UnaryPredicate:
      CheckElementDType(op, in[0].dtype());
      return in[0].WithDType(DType::Bool);
    case OpCategory::Binary:
      CheckSameShape(op, in[0], in[1]);
      CheckElementDType(op, in[0].dtype());
      return in[0];
    case OpCategory::Compare:
      CheckSameShape(op, in[0], in[1]);
      CheckElementDType(op, in[0].dtype());
      return in[0].WithDType(DType::Bool);
    case OpCategory::Select:
      if (in[0].dtype() != DType::Bool) Fail(op, fmt::format("condition must be Bool, got {}", in[0]));
      CheckSameShape(op, in[1], in[2]);
      if (in[0].Dimensions() != in[1].Dimensions())
        Fail(op, fmt::format("condition {} and values {} differ in shape", in[0], in[1]));
      return in[1];
    case OpCategory::Reduce: {
      CheckElementDType(op, in[0].dtype());
      CheckAxes(op, at.axes, in[0].Rank(), "reduced");
      std::vector<int64_t> dims;
      for (int a = 0; a < in[0].Rank(); ++a) {
        if (std::find(at.axes.begin(), at.axes.end(), a) == at.axes.end())
          dims.push_back(in[0].Dimensions()[static_cast<size_t>(a)]);
      }
      return Shape(in[0].dtype(), dims);
    }
    case OpCategory::ArgReduce: {
      CheckElementDType(op, in[0].dtype());
      if (!InDTypeClass(at.dtype, DTypeClass::Int))
        Fail(op, fmt::format("index dtype {} is not an integer dtype", at.dtype));
      if (at.axis < 0 || at.axis >= in[0].Rank())
        Fail(op, fmt::format("axis {} out of range for {}", at.axis, in[0]));
      std::vector<int64_t> dims = in[0].Dimensions();
      dims.erase(dims.begin() + at.axis);
      return Shape(at.dtype, dims);
    }
    case OpCategory::Movement:
      return MovementShape(op, in, at);
    case OpCategory::Convert: {
      const Shape& x = in[0];
      if (!IsValid(at.dtype)) Fail(op, "invalid target dtype");
      if (op == OpType::ConvertDType) return x.WithDType(at.dtype);
      // Bitcast. Bool is excluded: arbitrary bits are not valid bools.
      if (x.dtype() == DType::Bool || at.dtype == DType::Bool) Fail(op, "cannot bitcast from or to Bool");
      if (IsPacked(at.dtype)) Fail(op, fmt::format("cannot bitcast to the packed dtype {}", at.dtype));
      const int from = DTypeBits(x.dtype()), to = DTypeBits(at.dtype);
      std::vector<int64_t> dims = x.Dimensions();
      if (from == to) return Shape(at.dtype, dims);
      if (from > to) {
        dims.push_back(from / to);
        return Shape(at.dtype, dims);
      }
      if (dims.empty() || dims.back() != to / from) {
        Fail(op, fmt::format("bitcasting {} to {} needs a last axis of size {}", x, at.dtype, to / from));
      }
      dims.pop_back();
      return Shape(at.dtype, dims);
    }
    case OpCategory::Contraction:
      return DotShape(in, at);
    case OpCategory::Convolution:
      return ConvolutionShape(op, in, at);
    case OpCategory::Window:
      return WindowShape(op, in, at);
    case OpCategory::Indexing:
      return IndexingShape(op, in, at);
    case OpCategory::SortScan:
      return SortScanShape(op, in, at);
    case OpCategory::Control:
      return ControlShape(op, in, at);
  }
  Fail(op, "unknown op category");
}

}  // namespace kiln::compute
