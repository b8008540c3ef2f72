// ONNX's operators whose output shapes depend on input values (NonZero, Unique, Compress,
// NonMaxSuppression): computed on the host when those values are known at import, so the
// graph they make has static shapes.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// Input i's value, which must be known at import because it sets an output's shape.
const Tensor& Known(const Context& c, int i, const char* what) {
  const Tensor* t = &KnownInput(c, i, what);
  if (IsComplex(t->dtype()))
    c.Fail(fmt::format("its {} is {}, complex values are not supported", what, t->shape()));
  return *t;
}

/// The values of t, exact for every integer dtype (long double holds 64-bit integers).
std::vector<long double> Values(const Tensor& t) {
  std::vector<long double> v;
  if (t.dtype() == DType::Int64) {
    for (int64_t x : t.ToVector<int64_t>()) v.push_back(static_cast<long double>(x));
  } else if (t.dtype() == DType::Uint64) {
    for (uint64_t x : t.ToVector<uint64_t>()) v.push_back(static_cast<long double>(x));
  } else {
    for (double x : t.ToDoubles()) v.push_back(x);
  }
  return v;
}

/// NonZero: the coordinates [rank, count] of x's non-zero elements, in row-major order.
V NonZero(const Context& c) {
  const Tensor& x = Known(c, 0, "input");
  const std::vector<int64_t>& dims = x.shape().Dimensions();
  const std::vector<long double> v = Values(x);
  std::vector<int64_t> flat;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != 0) flat.push_back(static_cast<int64_t>(i));
  const size_t rank = dims.size(), n = flat.size();
  std::vector<int64_t> coords(rank * n);
  for (size_t k = 0; k < n; ++k) {
    int64_t rest = flat[k];
    for (size_t a = rank; a-- > 0;) {
      coords[a * n + k] = rest % dims[a];
      rest /= dims[a];
    }
  }
  return {Int64Const(c.graph(), coords, {static_cast<int64_t>(rank), static_cast<int64_t>(n)})};
}

/// x and the axis its slices are taken along: the `axis` attribute, or x flattened without one.
Node AlongAxis(const Context& c, Node x, int& axis) {
  if (!c.HasAttr("axis")) {
    if (x.shape().IsDynamic()) c.Fail(fmt::format("the input {} must have a static shape", x.shape()));
    axis = 0;
    return Reshape(x, {x.shape().Size()});
  }
  if (x.rank() == 0) c.Fail("an axis was given, but the input is a scalar");
  axis = Axis(c, c.Int("axis", 0), x.rank());
  return x;
}

/// Compress: x's slices along `axis` (x flattened without one) where `condition` holds; a
/// condition shorter than the axis drops the slices past its end.
V Compress(const Context& c) {
  Node x = c.In(0);
  const Tensor& cond = Known(c, 1, "condition");
  if (cond.shape().Rank() != 1) c.Fail(fmt::format("condition must be 1-D, got {}", cond.shape()));
  int axis = 0;
  x = AlongAxis(c, x, axis);
  const int64_t dim = x.shape().Dimensions()[static_cast<size_t>(axis)];
  if (dim == Shape::kDynamic) c.Fail("the compressed axis must have a static size");
  const std::vector<long double> v = Values(cond);
  if (static_cast<int64_t>(v.size()) > dim)
    c.Fail(fmt::format("condition has {} entries, more than the axis' {}", v.size(), dim));
  std::vector<int64_t> idx;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != 0) idx.push_back(static_cast<int64_t>(i));
  const int64_t n = static_cast<int64_t>(idx.size());
  return {GatherAlongAxis(x, Int64Const(c.graph(), idx, {n}), axis)};
}

/// Unique: the distinct elements (or slices along `axis`) of x, sorted or in order of first
/// appearance; with the index of each one's first appearance, each input element's index in the
/// result, and the counts.
V Unique(const Context& c) {
  const Tensor& t = Known(c, 0, "input");
  Node x = c.In(0);
  const bool sorted = c.Int("sorted", 1) != 0;
  int axis = 0;
  x = AlongAxis(c, x, axis);
  const std::vector<int64_t>& dims = x.shape().Dimensions();
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < axis; ++a) outer *= dims[static_cast<size_t>(a)];
  for (int a = axis + 1; a < x.rank(); ++a) inner *= dims[static_cast<size_t>(a)];
  const int64_t d = dims[static_cast<size_t>(axis)];
  const std::vector<long double> v = Values(t);
  // Slice i's elements, in row-major order over the other axes.
  std::vector<std::vector<long double>> keys(static_cast<size_t>(d));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < d; ++i)
      for (int64_t k = 0; k < inner; ++k)
        keys[static_cast<size_t>(i)].push_back(v[static_cast<size_t>((o * d + i) * inner + k)]);
  // A total order on slices: lexicographic, NaN after every number and equal to NaN.
  auto less = [](const std::vector<long double>& a, const std::vector<long double>& b) {
    return std::lexicographical_compare(
        a.begin(), a.end(), b.begin(), b.end(),
        [](long double p, long double q) { return std::isnan(p) ? false : std::isnan(q) || p < q; });
  };
  std::map<std::vector<long double>, int64_t, decltype(less)> seen(less);  // Slice -> distinct index.
  std::vector<int64_t> first;  // Index of each distinct slice's first appearance.
  std::vector<int64_t> inverse(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) {
    auto [it, added] = seen.emplace(keys[static_cast<size_t>(i)], static_cast<int64_t>(first.size()));
    inverse[static_cast<size_t>(i)] = it->second;
    if (added) first.push_back(i);
  }
  std::vector<int64_t> order(first.size());  // Result position -> distinct slice.
  std::iota(order.begin(), order.end(), 0);
  if (sorted)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return less(keys[static_cast<size_t>(first[static_cast<size_t>(a)])],
                  keys[static_cast<size_t>(first[static_cast<size_t>(b)])]);
    });
  std::vector<int64_t> position(order.size()), indices(order.size()), counts(order.size(), 0);
  for (size_t p = 0; p < order.size(); ++p) {
    position[static_cast<size_t>(order[p])] = static_cast<int64_t>(p);
    indices[p] = first[static_cast<size_t>(order[p])];
  }
  for (int64_t& inv : inverse) {
    inv = position[static_cast<size_t>(inv)];
    ++counts[static_cast<size_t>(inv)];
  }
  const int64_t n = static_cast<int64_t>(order.size());
  Graph& g = c.graph();
  return {GatherAlongAxis(x, Int64Const(g, indices, {n}), axis), Int64Const(g, indices, {n}),
          Int64Const(g, inverse, {d}), Int64Const(g, counts, {n})};
}

/// Whether boxes a and b ([4] each, corners or center/size) overlap by more than `threshold`.
bool Suppresses(const long double* a, const long double* b, bool center, long double threshold) {
  // [x min, x max, y min, y max] of a box.
  auto extent = [center](const long double* p) {
    if (center)
      return std::array<long double, 4>{p[0] - p[2] / 2, p[0] + p[2] / 2, p[1] - p[3] / 2, p[1] + p[3] / 2};
    return std::array<long double, 4>{std::min(p[1], p[3]), std::max(p[1], p[3]), std::min(p[0], p[2]),
                                      std::max(p[0], p[2])};
  };
  const auto ea = extent(a), eb = extent(b);
  const long double w = std::min(ea[1], eb[1]) - std::max(ea[0], eb[0]);
  const long double h = std::min(ea[3], eb[3]) - std::max(ea[2], eb[2]);
  if (w <= 0 || h <= 0) return false;
  const long double inter = w * h;
  const long double area_a = (ea[1] - ea[0]) * (ea[3] - ea[2]), area_b = (eb[1] - eb[0]) * (eb[3] - eb[2]);
  const long double uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

/// NonMaxSuppression: per batch and class, boxes by decreasing score (above the score threshold),
/// each kept unless it overlaps a kept one by more than the IoU threshold, at most
/// max_output_boxes_per_class; the result lists [batch, class, box] of the kept ones.
V NonMaxSuppression(const Context& c) {
  const Tensor& boxes = Known(c, 0, "boxes");
  const Tensor& scores = Known(c, 1, "scores");
  const std::vector<int64_t>& bd = boxes.shape().Dimensions();
  const std::vector<int64_t>& sd = scores.shape().Dimensions();
  if (bd.size() != 3 || bd[2] != 4 || sd.size() != 3 || sd[0] != bd[0] || sd[2] != bd[1])
    c.Fail(
        fmt::format("boxes must be [batches, boxes, 4] and scores [batches, classes, boxes], got {} and {}",
                    boxes.shape(), scores.shape()));
  auto scalar = [&](int i, const char* what, long double fallback) -> long double {
    if (!c.Has(i)) return fallback;
    const std::vector<long double> v = Values(Known(c, i, what));
    if (v.size() > 1) c.Fail(fmt::format("its {} must hold one value, got {}", what, v.size()));
    return v.empty() ? fallback : v[0];
  };
  const long double max_out = std::max<long double>(scalar(2, "max_output_boxes_per_class", 0), 0);
  const long double iou = scalar(3, "iou_threshold", 0);
  const bool filter = c.Has(4) && Known(c, 4, "score_threshold").shape().Size() > 0;
  const long double score_min = scalar(4, "score_threshold", 0);
  const int64_t center = c.Int("center_point_box", 0);
  if (center != 0 && center != 1) c.Fail(fmt::format("center_point_box {} is not 0 or 1", center));
  const std::vector<long double> b = Values(boxes), s = Values(scores);
  const int64_t batches = bd[0], classes = sd[1], n = bd[1];
  // Each candidate is compared with at most max_out kept boxes: bound the host work.
  CheckedProduct(c, CheckedProduct(c, batches * classes, n, "boxes to sort", int64_t{1} << 30),
                 static_cast<int64_t>(std::min<long double>(max_out, static_cast<long double>(n))),
                 "box comparisons", int64_t{1} << 30);
  std::vector<int64_t> out;
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t ci = 0; ci < classes; ++ci) {
      const long double* score = s.data() + (bi * classes + ci) * n;
      std::vector<int64_t> cand;
      for (int64_t k = 0; k < n; ++k)
        if (!filter || score[k] > score_min) cand.push_back(k);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) { return score[p] > score[q]; });
      std::vector<int64_t> kept;
      for (int64_t k : cand) {
        if (static_cast<long double>(kept.size()) >= max_out) break;
        const long double* box = b.data() + (bi * n + k) * 4;
        if (std::none_of(kept.begin(), kept.end(), [&](int64_t j) {
              return Suppresses(box, b.data() + (bi * n + j) * 4, center == 1, iou);
            })) {
          kept.push_back(k);
          out.insert(out.end(), {bi, ci, k});
        }
      }
    }
  }
  return {Int64Const(c.graph(), out, {static_cast<int64_t>(out.size() / 3), 3})};
}

}  // namespace

void AddDataDependentConverters(std::map<std::string, Converter>& m) {
  m["NonZero"] = NonZero;
  m["Compress"] = Compress;
  m["Unique"] = Unique;
  m["NonMaxSuppression"] = NonMaxSuppression;
}

}  // namespace kiln::onnx::internal
