// data::Normalization: per-feature mean and standard deviation of a dataset's input, accumulated
// on the host in double precision over every batch.

#include "kiln/data/normalization.h"

#include <cmath>
#include <string>

#include "core/check.h"

namespace kiln::data {

namespace {

/// The elements of `t` (float or integer) as doubles.
std::vector<double> AsDoubles(const Tensor& t, const std::string& what) {
  if (t.dtype() == DType::Bool || !(IsFloat(t.dtype()) || IsInt(t.dtype())))
    kiln::detail::Throw("{}: input {} must be float or integer", what, t.shape());
  return t.ToDoubles();
}

/// `values` as a tensor of `shape` (a float dtype).
Tensor FromDoubles(const Shape& shape, const std::vector<double>& values) {
  return DispatchDType(shape.dtype(), [&](auto zero) -> Tensor {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, float16> ||
                  std::is_same_v<T, bfloat16>) {
      std::vector<T> v;
      v.reserve(values.size());
      for (double x : values) {
        if constexpr (std::is_same_v<T, double>) {
          v.push_back(x);
        } else {
          v.push_back(static_cast<T>(static_cast<float>(x)));
        }
      }
      return Tensor::FromFlat(shape, v);
    } else {
      kiln::detail::Throw("data::Normalization: no float dtype {}", DTypeName(shape.dtype()));
    }
  });
}

}  // namespace

std::pair<Tensor, Tensor> Normalization(const DatasetPtr& dataset, int input_index,
                                        const std::vector<int>& independent_axes) {
  if (!dataset) kiln::detail::Throw("data::Normalization: no dataset");
  const std::string what = "data::Normalization(" + dataset->Name() + ")";
  if (dataset->IsInfinite()) kiln::detail::Throw("{}: the dataset is infinite", what);
  dataset->Reset();
  std::any spec;
  std::vector<Tensor> inputs, labels;
  std::vector<double> sum, sum_sq;
  std::vector<int64_t> kept_dims;  // The statistics' dimensions (1 on reduced axes).
  std::vector<bool> kept;
  double count = 0;  // Elements per statistic.
  DType dtype = DType::Float64;
  while (dataset->Yield(spec, inputs, labels)) {
    if (input_index < 0 || static_cast<size_t>(input_index) >= inputs.size())
      kiln::detail::Throw("{}: input index {} out of range ({} inputs)", what, input_index, inputs.size());
    const Tensor& x = inputs[static_cast<size_t>(input_index)];
    const std::vector<int64_t>& dims = x.shape().Dimensions();
    const int rank = static_cast<int>(dims.size());
    if (kept.empty()) {
      kept.assign(dims.size(), false);
      for (int a : independent_axes) {
        const int n = a < 0 ? a + rank : a;
        if (n < 0 || n >= rank)
          kiln::detail::Throw("{}: axis {} out of range for input {}", what, a, x.shape());
        kept[static_cast<size_t>(n)] = true;
      }
      for (int a = 0; a < rank; ++a)
        kept_dims.push_back(kept[static_cast<size_t>(a)] ? dims[static_cast<size_t>(a)] : 1);
      int64_t n = 1;
      for (int64_t d : kept_dims) n *= d;
      sum.assign(static_cast<size_t>(n), 0.0);
      sum_sq.assign(static_cast<size_t>(n), 0.0);
      dtype = IsFloat(x.dtype()) ? x.dtype() : DType::Float64;
    }
    if (rank != static_cast<int>(kept.size()))
      kiln::detail::Throw("{}: input {} changes rank between batches", what, x.shape());
    for (int a = 0; a < rank; ++a) {
      if (kept[static_cast<size_t>(a)] && dims[static_cast<size_t>(a)] != kept_dims[static_cast<size_t>(a)])
        kiln::detail::Throw("{}: input {} changes the size of independent axis {}", what, x.shape(), a);
    }
    const std::vector<double> v = AsDoubles(x, what);
    if (v.empty()) continue;
    // Walk the elements in row-major order, tracking the statistic each one belongs to.
    std::vector<int64_t> index(dims.size(), 0);
    for (double value : v) {
      int64_t s = 0;
      for (int a = 0; a < rank; ++a) {
        const size_t ua = static_cast<size_t>(a);
        s = s * kept_dims[ua] + (kept[ua] ? index[ua] : 0);
      }
      sum[static_cast<size_t>(s)] += value;
      sum_sq[static_cast<size_t>(s)] += value * value;
      for (int a = rank - 1; a >= 0; --a) {
        if (++index[static_cast<size_t>(a)] < dims[static_cast<size_t>(a)]) break;
        index[static_cast<size_t>(a)] = 0;
      }
    }
    count += static_cast<double>(v.size()) / static_cast<double>(sum.size());
  }
  dataset->Reset();
  if (count == 0) kiln::detail::Throw("{}: the dataset yielded no elements", what);
  std::vector<double> mean(sum.size()), stddev(sum.size());
  for (size_t i = 0; i < sum.size(); ++i) {
    mean[i] = sum[i] / count;
    stddev[i] = std::sqrt(std::max(0.0, sum_sq[i] / count - mean[i] * mean[i]));
  }
  const Shape shape(dtype, kept_dims);
  return {FromDoubles(shape, mean), FromDoubles(shape, stddev)};
}

Tensor ReplaceZerosByOnes(const Tensor& t) {
  if (!IsFloat(t.dtype())) kiln::detail::Throw("data::ReplaceZerosByOnes: {} is not float", t.shape());
  std::vector<double> v = AsDoubles(t, "data::ReplaceZerosByOnes");
  for (double& x : v)
    if (x == 0) x = 1;
  return FromDoubles(t.shape(), v);
}

}  // namespace kiln::data
