#pragma once
// Random graphs from fuzz bytes, for graph_fuzz and graph_run_fuzz: the bytes choose parameters
// (dtype, rank 0-4, small dimensions), then ops from the whole catalogue (compute::AllOps()),
// their operands among the nodes made so far and every attribute slot (axes, shapes, starts and
// limits, padding, windows, dilations, dimension numbers, dtypes), now and then with a huge or
// negative value. Each op is added through Graph::AddOp: it either builds or throws a
// kiln::Error, which drops that op.

#include <cstdint>
#include <limits>
#include <vector>

#include "kiln/compute/program.h"
#include "kiln/core/error.h"
#include "kiln/graph/graph.h"

namespace kiln::fuzz {

/// Reads the fuzz input a value at a time; past its end every read is 0.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool Done() const { return pos_ >= size_; }
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  /// A value in [0, n).
  int64_t Below(int64_t n) { return n <= 0 ? 0 : Byte() % n; }
  /// A small integer in [-2, 6], or (one time in 16) an extreme one.
  int64_t Int() {
    const uint8_t b = Byte();
    if (b % 16 != 15) return static_cast<int64_t>(b % 9) - 2;
    static constexpr int64_t kExtremes[] = {std::numeric_limits<int64_t>::max(),
                                            std::numeric_limits<int64_t>::min(),
                                            int64_t{1} << 62,
                                            -(int64_t{1} << 40),
                                            int64_t{1} << 31,
                                            1000};
    return kExtremes[(b / 16) % 6];
  }
  std::vector<int64_t> Ints(int64_t max_len = 4) {
    std::vector<int64_t> v(static_cast<size_t>(Below(max_len + 1)));
    for (int64_t& x : v) x = Int();
    return v;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

inline DType DTypeFrom(Bytes& in) {
  static constexpr DType kDTypes[] = {DType::Float32, DType::Float64, DType::Int32,    DType::Int64,
                                      DType::Bool,    DType::Float16, DType::BFloat16, DType::Uint8,
                                      DType::Int8,    DType::Uint32,  DType::Int4,     DType::Uint64,
                                      DType::Int16,   DType::Uint16};
  const int64_t n = static_cast<int64_t>(sizeof(kDTypes) / sizeof(kDTypes[0]));
  return kDTypes[in.Below(n)];
}

/// A shape of rank 0-4 with dimensions 0-4 (or, rarely, an extreme one through Int()).
inline Shape ShapeFrom(Bytes& in, DType dtype) {
  std::vector<int64_t> dims(static_cast<size_t>(in.Below(5)));
  for (int64_t& d : dims) d = in.Byte() % 8 == 7 ? in.Int() : in.Below(5);
  return Shape(dtype, dims);
}

/// Builds the graph the bytes describe into `g`; returns the nodes made (parameters first).
inline std::vector<graph::Node> BuildFromBytes(graph::Graph& g, Bytes& in, int max_ops = 24) {
  std::vector<graph::Node> nodes;
  const int64_t params = 1 + in.Below(3);
  for (int64_t i = 0; i < params; ++i) {
    try {
      Shape s = ShapeFrom(in, DTypeFrom(in));
      nodes.push_back(g.Parameter(s));
    } catch (const kiln::Error&) {
    }
  }
  if (nodes.empty()) return nodes;
  const std::vector<compute::OpType>& ops = compute::AllOps();
  for (int k = 0; k < max_ops && !in.Done(); ++k) {
    const compute::OpType op = ops[static_cast<size_t>(in.Below(static_cast<int64_t>(ops.size())))];
    std::vector<graph::Node> operands(static_cast<size_t>(in.Below(4)));
    for (graph::Node& n : operands)
      n = nodes[static_cast<size_t>(in.Below(static_cast<int64_t>(nodes.size())))];
    compute::OpAttributes a;
    a.index = in.Int();
    try {  // A shape with a negative dimension is refused here already.
      a.shape = ShapeFrom(in, DTypeFrom(in));
    } catch (const kiln::Error&) {
    }
    a.axis = in.Int();
    a.dtype = DTypeFrom(in);
    a.axes = in.Ints();
    a.permutation = in.Ints();
    a.starts = in.Ints();
    a.limits = in.Ints();
    a.strides = in.Ints();
    a.padding.resize(static_cast<size_t>(in.Below(5)));
    for (compute::PadAxis& p : a.padding) p = {in.Int(), in.Int(), in.Int()};
    a.lhs_contracting = in.Ints(2);
    a.rhs_contracting = in.Ints(2);
    a.lhs_batch = in.Ints(2);
    a.rhs_batch = in.Ints(2);
    a.conv.input_batch = in.Int();
    a.conv.input_feature = in.Int();
    a.conv.input_spatial = in.Ints(2);
    a.conv.kernel_input_feature = in.Int();
    a.conv.kernel_output_feature = in.Int();
    a.conv.kernel_spatial = in.Ints(2);
    a.conv.output_batch = in.Int();
    a.conv.output_feature = in.Int();
    a.conv.output_spatial = in.Ints(2);
    a.window = in.Ints();
    a.input_dilations = in.Ints();
    a.kernel_dilations = in.Ints();
    a.feature_groups = in.Int();
    a.batch_groups = in.Int();
    a.reduce_kind = static_cast<compute::ReduceKind>(in.Below(5));
    a.gather.offset_dims = in.Ints();
    a.gather.collapsed_slice_dims = in.Ints();
    a.gather.start_index_map = in.Ints();
    a.gather.slice_sizes = in.Ints();
    a.gather.index_vector_dim = in.Int();
    a.scatter.update_window_dims = in.Ints();
    a.scatter.inserted_window_dims = in.Ints();
    a.scatter.scatter_dims_to_operand_dims = in.Ints();
    a.scatter.index_vector_dim = in.Int();
    a.sizes = in.Ints();
    a.reverse = in.Byte() % 2 == 1;
    a.trip_count = in.Int();
    try {
      nodes.push_back(g.AddOp(op, operands, a));
    } catch (const kiln::Error&) {
    }
  }
  return nodes;
}

}  // namespace kiln::fuzz
