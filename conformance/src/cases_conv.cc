// Rows for convolutions, window reductions, pooling, SelectAndScatter and Interpolate on every
// applicable dtype. Values are small non-negative integers (exact in every numeric dtype, sums
// within Int8), computed by hand; float-only functions (MeanPool, Interpolate) use values whose
// results are exact in the half types.

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "internal.h"
#include "kiln/compute/shape_inference.h"
#include "kiln/core/error.h"
#include "kiln/graph/conv.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT
using compute::PadAxis;
using compute::ReduceKind;

void AddConvCatalogue(std::vector<CatalogueEntry>& entries) {
  entries.push_back({"ConvGeneral", {OpType::ConvGeneral}});
  entries.push_back({"Convolve", {OpType::ConvGeneral}});
  entries.push_back({"ReduceWindow", {OpType::ReduceWindow}});
  entries.push_back({"MaxPool", {OpType::ReduceWindow}});
  entries.push_back({"MinPool", {OpType::ReduceWindow}});
  entries.push_back({"SumPool", {OpType::ReduceWindow}});
  entries.push_back({"MeanPool", {OpType::ReduceWindow, OpType::Div}, true});
  entries.push_back({"SelectAndScatter", {OpType::SelectAndScatter}});
  entries.push_back({"Interpolate", {OpType::DotGeneral, OpType::Transpose}, true});
}

bool ConvPrimitiveAccepts(OpType op, DType dtype) {
  compute::OpAttributes at;
  std::vector<Shape> in;
  switch (op) {
    case OpType::ConvGeneral:
      // Input [batch, spatial, feature], kernel [spatial, in, out].
      at.conv.input_batch = at.conv.output_batch = 0;
      at.conv.input_spatial = at.conv.output_spatial = {1};
      at.conv.input_feature = at.conv.output_feature = 2;
      at.conv.kernel_spatial = {0};
      at.conv.kernel_input_feature = 1;
      at.conv.kernel_output_feature = 2;
      in = {Shape(dtype, {1, 2, 1}), Shape(dtype, {1, 1, 1})};
      break;
    case OpType::ReduceWindow:
      at.window = {1};
      in = {Shape(dtype, {2})};
      break;
    case OpType::SelectAndScatter:
      at.window = {1};
      at.reduce_kind = ReduceKind::Max;
      in = {Shape(dtype, {2}), Shape(dtype, {2})};
      break;
#define KILN_LISTED_Convolution
#define KILN_LISTED_Window
#include "kiln/compute/op_cases.inc"
      return false;
  }
  return ShapeRuleAccepts(op, in, at);
}

namespace {

compute::ConvDims Dims(int64_t batch, int64_t feature, std::vector<int64_t> spatial, int64_t kin,
                       int64_t kout, std::vector<int64_t> kspatial) {
  compute::ConvDims d;
  d.input_batch = d.output_batch = batch;
  d.input_feature = d.output_feature = feature;
  d.input_spatial = d.output_spatial = std::move(spatial);
  d.kernel_input_feature = kin;
  d.kernel_output_feature = kout;
  d.kernel_spatial = std::move(kspatial);
  return d;
}

std::vector<double> Iota1(int n) {
  std::vector<double> v;
  for (int i = 1; i <= n; ++i) v.push_back(i);
  return v;
}

void AddConvolutionRows(CaseList& L, DType d) {
  const auto conv = [&](const char* what, std::function<Node(Node, Node)> fn, Tensor x, Tensor k, Tensor y) {
    L.Add("Convolve", what, d, P([fn](const std::vector<Node>& p) { return fn(p[0], p[1]); }), {x, k}, {y});
  };
  const Tensor x4 = V(d, {1, 4, 1}, {1, 2, 3, 4}), k2 = V(d, {2, 1, 1}, {1, 2});
  conv(
      "1d", [](Node x, Node k) { return Convolve(x, k).Done(); }, x4, k2, V(d, {1, 3, 1}, {5, 8, 11}));
  conv(
      "1d_strides_same", [](Node x, Node k) { return Convolve(x, k).Strides(2).PadSame().Done(); }, x4, k2,
      V(d, {1, 2, 1}, {5, 11}));
  conv(
      "1d_same", [](Node x, Node k) { return Convolve(x, k).PadSame().Done(); }, x4, k2,
      V(d, {1, 4, 1}, {5, 8, 11, 4}));
  conv(
      "1d_explicit_padding",
      [](Node x, Node k) {
        return Convolve(x, k).Padding({{1, 0, 0}}).Done();
      },
      x4, k2, V(d, {1, 4, 1}, {2, 5, 8, 11}));
  conv(
      "1d_kernel_dilation", [](Node x, Node k) { return Convolve(x, k).Dilations(2).Done(); }, x4, k2,
      V(d, {1, 2, 1}, {7, 10}));
  conv(
      "1d_input_dilation", [](Node x, Node k) { return Convolve(x, k).InputDilations(2).Done(); }, x4, k2,
      V(d, {1, 6, 1}, {1, 4, 2, 6, 3, 8}));
  const std::vector<double> nine = Iota1(9);
  conv(
      "2d", [](Node x, Node k) { return Convolve(x, k).Done(); }, V(d, {1, 3, 3, 1}, nine),
      V(d, {2, 2, 1, 1}, {1, 0, 0, 1}), V(d, {1, 2, 2, 1}, {6, 8, 12, 14}));
  conv(
      "2d_channels_first", [](Node x, Node k) { return Convolve(x, k).ChannelsFirst().Done(); },
      V(d, {1, 1, 3, 3}, nine), V(d, {1, 1, 2, 2}, {1, 0, 0, 1}), V(d, {1, 1, 2, 2}, {6, 8, 12, 14}));
  conv(
      "2d_strides_same", [](Node x, Node k) { return Convolve(x, k).Strides(2).PadSame().Done(); },
      V(d, {1, 3, 3, 1}, nine), V(d, {2, 2, 1, 1}, {1, 1, 1, 1}), V(d, {1, 2, 2, 1}, {12, 9, 15, 9}));
  conv(
      "3d", [](Node x, Node k) { return Convolve(x, k).Done(); }, V(d, {1, 2, 2, 2, 1}, Iota1(8)),
      V(d, {2, 2, 2, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1}), V(d, {1, 1, 1, 1, 1}, {36}));
  conv(
      "3d_channels", [](Node x, Node k) { return Convolve(x, k).Done(); },
      V(d, {1, 1, 1, 2, 2}, {1, 2, 3, 4}), V(d, {1, 1, 1, 2, 2}, {1, 2, 3, 1}),
      V(d, {1, 1, 1, 2, 2}, {7, 4, 15, 10}));
  conv(
      "depthwise", [](Node x, Node k) { return Convolve(x, k).ChannelGroupCount(2).Done(); },
      V(d, {1, 1, 2, 2}, {1, 2, 3, 4}), V(d, {1, 1, 1, 2}, {2, 3}), V(d, {1, 1, 2, 2}, {2, 6, 6, 12}));
  conv(
      "channel_groups", [](Node x, Node k) { return Convolve(x, k).ChannelGroupCount(2).Done(); },
      V(d, {1, 1, 4}, {1, 2, 3, 4}), V(d, {1, 2, 2}, {1, 2, 3, 4}), V(d, {1, 1, 2}, {7, 22}));
  conv(
      "batch_groups", [](Node x, Node k) { return Convolve(x, k).BatchGroupCount(2).Done(); },
      V(d, {2, 1, 1}, {5, 7}), V(d, {1, 1, 2}, {1, 10}), V(d, {1, 1, 2}, {5, 70}));

  const auto general = [&](const char* what, compute::ConvDims dims, std::vector<int64_t> strides,
                           std::vector<PadAxis> padding, std::vector<int64_t> lhs, std::vector<int64_t> rhs,
                           int64_t groups, int64_t batch_groups, Tensor x, Tensor k, Tensor y) {
    L.Add("ConvGeneral", what, d, P([=](const std::vector<Node>& p) {
            return ConvGeneral(p[0], p[1], dims, strides, padding, lhs, rhs, groups, batch_groups);
          }),
          {x, k}, {y});
  };
  const compute::ConvDims nwc = Dims(0, 2, {1}, 1, 2, {0});
  general("nwc", nwc, {}, {}, {}, {}, 1, 1, x4, k2, V(d, {1, 3, 1}, {5, 8, 11}));
  general("ncw_oiw", Dims(0, 1, {2}, 1, 0, {2}), {}, {}, {}, {}, 1, 1, V(d, {1, 1, 3}, {1, 2, 3}),
          V(d, {1, 1, 2}, {1, 2}), V(d, {1, 1, 2}, {5, 8}));
  general("dilations_padding_strides", nwc, {2}, {{1, 1, 0}}, {2}, {1}, 1, 1, V(d, {1, 3, 1}, {1, 2, 3}), k2,
          V(d, {1, 3, 1}, {2, 4, 6}));
  general("batch_groups", nwc, {}, {}, {}, {}, 1, 2, V(d, {2, 1, 1}, {5, 7}), V(d, {1, 1, 2}, {1, 10}),
          V(d, {1, 1, 2}, {5, 70}));
  general("feature_groups", nwc, {}, {}, {}, {}, 2, 1, V(d, {1, 1, 4}, {1, 2, 3, 4}),
          V(d, {1, 2, 2}, {1, 2, 3, 4}), V(d, {1, 1, 2}, {7, 22}));
  // NumPy's loop reference (conv.npz): channels-last layouts with the attributes below.
  struct Fixture {
    const char* name;
    std::vector<int64_t> strides;
    std::vector<PadAxis> padding;
    std::vector<int64_t> lhs, rhs;
    int64_t groups, batch_groups;
  };
  const Fixture fixtures[] = {
      {"conv1d_stride_pad", {2}, {{1, 2, 0}}, {1}, {1}, 1, 1},
      {"conv1d_lhs_dilation", {1}, {{2, 2, 0}}, {2}, {1}, 1, 1},
      {"conv2d_dilated", {1, 1}, {{0, 0, 0}, {1, 0, 0}}, {1, 1}, {2, 2}, 1, 1},
      {"conv2d_groups", {1, 2}, {{0, 1, 0}, {0, 1, 0}}, {1, 1}, {1, 1}, 2, 1},
      {"conv2d_batch_groups", {1, 1}, {}, {}, {}, 1, 2},
      {"conv3d", {1, 1, 2}, {{0, 0, 0}, {0, 0, 0}, {0, 1, 0}}, {}, {}, 1, 1},
  };
  for (const Fixture& f : fixtures) {
    const std::string key = f.name;
    const Tensor x = FixtureAs(d, "conv.npz", key + ".x", true);
    const int64_t rank = x.shape().Rank();
    std::vector<int64_t> spatial, kspatial;
    for (int64_t a = 1; a + 1 < rank; ++a) {
      spatial.push_back(a);
      kspatial.push_back(a - 1);
    }
    general(f.name, Dims(0, rank - 1, spatial, rank - 2, rank - 1, kspatial), f.strides, f.padding, f.lhs,
            f.rhs, f.groups, f.batch_groups, x, FixtureAs(d, "conv.npz", key + ".k", true),
            FixtureAs(d, "conv.npz", key + ".y", true));
  }
}

void AddWindowRows(CaseList& L, DType d) {
  const auto rw = [&](const char* what, ReduceKind kind, std::vector<int64_t> window,
                      std::vector<int64_t> strides, std::vector<PadAxis> padding, std::vector<int64_t> dil,
                      std::vector<int64_t> base, Tensor x, Tensor y) {
    L.Add("ReduceWindow", what, d, P([=](const std::vector<Node>& p) {
            return ReduceWindow(p[0], kind, window, strides, padding, dil, base);
          }),
          {x}, {y});
  };
  rw("sum_strided", ReduceKind::Sum, {2}, {2}, {}, {}, {}, V(d, {5}, Iota1(5)), V(d, {2}, {3, 7}));
  rw("max_padded", ReduceKind::Max, {2}, {}, {{1, 1, 0}}, {}, {}, V(d, {3}, {1, 3, 2}),
     V(d, {4}, {1, 3, 3, 2}));
  rw("min_window_dilation", ReduceKind::Min, {2}, {}, {}, {2}, {}, V(d, {5}, {3, 1, 4, 1, 5}),
     V(d, {3}, {3, 1, 4}));
  rw("product_base_dilation", ReduceKind::Product, {2}, {}, {}, {}, {2}, V(d, {3}, {1, 2, 3}),
     V(d, {4}, {1, 2, 2, 3}));
  rw("sum_2d", ReduceKind::Sum, {2, 2}, {}, {}, {}, {}, V(d, {2, 3}, Iota1(6)), V(d, {1, 2}, {12, 16}));
  const Tensor lowest = IsFloat(d) ? V(d, {2}, {-HUGE_VAL, 5}) : W(d, {2}, {MinI(d), 5});
  rw("max_identity", ReduceKind::Max, {2}, {}, {{2, 0, 0}}, {}, {}, V(d, {1}, {5}), lowest);
  const Tensor highest = IsFloat(d)
                             ? V(d, {2}, {HUGE_VAL, 5})
                             : (d == DType::Uint64 ? Raw(d, {2}, {MaxU(d), 5}) : W(d, {2}, {MaxI(d), 5}));
  rw("min_identity", ReduceKind::Min, {2}, {}, {{2, 0, 0}}, {}, {}, V(d, {1}, {5}), highest);

  const auto pool = [&](const char* op, const char* what, std::function<Node(Node)> fn, Tensor x, Tensor y) {
    L.Add(op, what, d, P([fn](const std::vector<Node>& p) { return fn(p[0]); }), {x}, {y});
  };
  const Tensor x16 = V(d, {1, 4, 4, 1}, Iota1(16)), x8 = V(d, {1, 2, 2, 2, 1}, Iota1(8));
  pool(
      "MaxPool", "2d", [](Node x) { return MaxPool(x).Window(2).Done(); }, x16,
      V(d, {1, 2, 2, 1}, {6, 8, 14, 16}));
  pool(
      "MaxPool", "3d", [](Node x) { return MaxPool(x).Window(2).Done(); }, x8, V(d, {1, 1, 1, 1, 1}, {8}));
  pool(
      "MaxPool", "1d_same_channels_first",
      [](Node x) { return MaxPool(x).Window(2).Strides(2).PadSame().ChannelsFirst().Done(); },
      V(d, {1, 1, 5}, Iota1(5)), V(d, {1, 1, 3}, {2, 4, 5}));
  pool(
      "MinPool", "2d", [](Node x) { return MinPool(x).Window(2).Done(); }, x16,
      V(d, {1, 2, 2, 1}, {1, 3, 9, 11}));
  pool(
      "MinPool", "1d_overlapping", [](Node x) { return MinPool(x).Window(2).Strides(1).Done(); },
      V(d, {1, 4, 1}, {4, 2, 3, 1}), V(d, {1, 3, 1}, {2, 2, 1}));
  pool(
      "MinPool", "1d_same_stride2", [](Node x) { return MinPool(x).Window(2).Strides(2).PadSame().Done(); },
      V(d, {1, 3, 1}, {4, 2, 3}), V(d, {1, 2, 1}, {2, 3}));
  pool(  // PadSame without strides: stride 1, the size kept (GoMLX's default).
      "MinPool", "1d_same_keeps_size", [](Node x) { return MinPool(x).Window(2).PadSame().Done(); },
      V(d, {1, 3, 1}, {4, 2, 3}), V(d, {1, 3, 1}, {2, 2, 3}));
  pool(
      "SumPool", "2d", [](Node x) { return SumPool(x).Window(2).Done(); }, x16,
      V(d, {1, 2, 2, 1}, {14, 22, 46, 54}));
  pool(
      "SumPool", "3d", [](Node x) { return SumPool(x).Window(2).Done(); }, x8, V(d, {1, 1, 1, 1, 1}, {36}));
  pool(
      "SumPool", "1d_same", [](Node x) { return SumPool(x).Window(2).Strides(1).PadSame().Done(); },
      V(d, {1, 3, 1}, {1, 2, 3}), V(d, {1, 3, 1}, {3, 5, 3}));
  if (IsFloat(d)) {
    pool(
        "MeanPool", "2d",
        [](Node x) {
          return MeanPool(x).Window({4, 2}).Done();
        },
        x16, V(d, {1, 1, 2, 1}, {7.5, 9.5}));
    pool(
        "MeanPool", "1d_same_excludes_padding",
        [](Node x) { return MeanPool(x).Window(2).Strides(1).PadSame().Done(); }, V(d, {1, 3, 1}, {1, 2, 3}),
        V(d, {1, 3, 1}, {1.5, 2.5, 3}));
    pool(
        "MeanPool", "3d_channels_first", [](Node x) { return MeanPool(x).Window(2).ChannelsFirst().Done(); },
        V(d, {1, 1, 2, 2, 2}, Iota1(8)), V(d, {1, 1, 1, 1, 1}, {4.5}));
  }

  const auto sas = [&](const char* what, bool max, std::vector<int64_t> window, std::vector<int64_t> strides,
                       std::vector<PadAxis> padding, Tensor x, Tensor s, Tensor y) {
    L.Add("SelectAndScatter", what, d, P([=](const std::vector<Node>& p) {
            return max ? SelectAndScatterMax(p[0], p[1], window, strides, padding)
                       : SelectAndScatterMin(p[0], p[1], window, strides, padding);
          }),
          {x, s}, {y});
  };
  sas("max_strided", true, {2}, {2}, {}, V(d, {4}, {1, 3, 2, 5}), V(d, {2}, {10, 20}),
      V(d, {4}, {0, 10, 0, 20}));
  sas("max_overlapping", true, {2}, {1}, {}, V(d, {3}, {1, 3, 2}), V(d, {2}, {1, 2}), V(d, {3}, {0, 3, 0}));
  sas("max_padded", true, {2}, {2}, {{1, 0, 0}}, V(d, {3}, {1, 2, 3}), V(d, {2}, {5, 6}),
      V(d, {3}, {5, 0, 6}));
  sas("max_first_of_ties", true, {3}, {}, {}, V(d, {3}, {4, 4, 1}), V(d, {1}, {7}), V(d, {3}, {7, 0, 0}));
  sas("min_2d", false, {2, 2}, {}, {}, V(d, {2, 2}, {4, 1, 2, 3}), V(d, {1, 1}, {9}),
      V(d, {2, 2}, {0, 9, 0, 0}));
  if (IsFloat(d)) {
    sas("max_nan_selected", true, {3}, {}, {}, V(d, {3}, {1, NAN, 5}), V(d, {1}, {7}), V(d, {3}, {0, 7, 0}));
  }
}

void AddInterpolateRows(CaseList& L, DType d) {
  const auto interp = [&](const char* what, std::function<Node(Node)> fn, Tensor x, Tensor y) {
    L.Add("Interpolate", what, d, P([fn](const std::vector<Node>& p) { return fn(p[0]); }), {x}, {y},
          Composite(d));
  };
  const Tensor x2 = V(d, {1, 2, 1}, {0, 8});
  interp(
      "bilinear_half_pixel", [](Node x) { return Interpolate(x, {4}).Done(); }, x2,
      V(d, {1, 4, 1}, {0, 2, 6, 8}));
  interp(
      "bilinear_asymmetric", [](Node x) { return Interpolate(x, {4}).HalfPixelCenters(false).Done(); }, x2,
      V(d, {1, 4, 1}, {0, 4, 8, 8}));
  interp(
      "bilinear_align_corners", [](Node x) { return Interpolate(x, {3}).AlignCorners(true).Done(); }, x2,
      V(d, {1, 3, 1}, {0, 4, 8}));
  interp(
      "bilinear_downsample", [](Node x) { return Interpolate(x, {2}).Done(); }, V(d, {1, 4, 1}, {0, 2, 4, 6}),
      V(d, {1, 2, 1}, {1, 5}));
  interp(
      "bilinear_2d_align_corners",
      [](Node x) {
        return Interpolate(x, {3, 3}).AlignCorners(true).Done();
      },
      V(d, {1, 2, 2, 1}, {0, 4, 8, 12}), V(d, {1, 3, 3, 1}, {0, 2, 4, 4, 6, 8, 8, 10, 12}));
  interp(
      "nearest_half_pixel", [](Node x) { return Interpolate(x, {4}).Nearest().Done(); }, x2,
      V(d, {1, 4, 1}, {0, 0, 8, 8}));
  interp(
      "nearest_asymmetric",
      [](Node x) { return Interpolate(x, {3}).Nearest().HalfPixelCenters(false).Done(); },
      V(d, {1, 2, 1}, {0, 8}), V(d, {1, 3, 1}, {0, 0, 8}));
  interp(
      "nearest_align_corners", [](Node x) { return Interpolate(x, {3}).Nearest().AlignCorners(true).Done(); },
      x2, V(d, {1, 3, 1}, {0, 8, 8}));
  interp(
      "nearest_2d_channels_first",
      [](Node x) {
        return Interpolate(x, {2, 4}).Nearest().ChannelsFirst().Done();
      },
      V(d, {1, 1, 1, 2}, {1, 2}), V(d, {1, 1, 2, 4}, {1, 1, 2, 2, 1, 1, 2, 2}));
}

}  // namespace

void AddConvCases(CaseList& L) {
  for (DType d : kNumeric) {
    AddConvolutionRows(L, d);
    AddWindowRows(L, d);
    if (IsFloat(d)) AddInterpolateRows(L, d);
  }
}

}  // namespace kiln::conformance::internal
