// ONNX's text operators: TfIdfVectorizer (n-gram counts over integer token ids).

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "kiln/graph/gather.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// TfIdfVectorizer(X [C] or [N, C] token ids) -> float [out] or [N, out], out = max(ngram_indexes)
/// + 1: how often each n-gram of the pool occurs in a row (or its IDF / TFIDF weighting). The pool
/// holds the 1-grams from ngram_counts[0], the 2-grams from ngram_counts[1]...; the k-th n-gram
/// over all sizes lands at output ngram_indexes[k]. Only sizes in [min_gram_length,
/// max_gram_length] count; n-grams of 2 or more also count with their items `skip` apart, skip 1
/// to max_skip_count + 1 (1-grams once). Built in the graph: for each size and skip, the shifted
/// windows of X compared with every pool n-gram, the matches summed and scattered to the output.
V TfIdfVectorizer(const Context& c) {
  Node x = c.In(0);
  if (c.HasAttr("pool_strings")) c.Fail("pool_strings is not supported: only integer tokens (pool_int64s)");
  if (x.dtype() != DType::Int32 && x.dtype() != DType::Int64)
    c.Fail(fmt::format("X must be Int32 or Int64, got {}", x.dtype()));
  if (x.rank() > 2) c.Fail(fmt::format("X {} must be [C] or [N, C]", x.shape()));
  StaticDims(c, x, "TfIdfVectorizer's input");
  const bool batched = x.rank() == 2;
  x = ConvertDType(Reshape(x, {batched ? x.shape().Dimensions()[0] : 1, x.rank() == 0 ? 1 : -1}),
                   DType::Int64);
  const int64_t rows = x.shape().Dimensions()[0], cols = x.shape().Dimensions()[1];

  const int64_t min_n = c.Int("min_gram_length", 1), max_n = c.Int("max_gram_length", 1);
  const int64_t max_skip = c.Int("max_skip_count", 0);
  if (min_n < 1 || max_n < min_n)
    c.Fail(
        fmt::format("min_gram_length {} and max_gram_length {} must satisfy 1 <= min <= max", min_n, max_n));
  if (max_skip < 0) c.Fail(fmt::format("max_skip_count {} is negative", max_skip));
  // A skip beyond the row's length matches nothing: capped there (no overflow in max_skip + 1).
  const int64_t skips = std::min(max_skip, cols) + 1;
  const std::string mode = c.String("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    c.Fail(fmt::format("mode '{}' is not TF, IDF or TFIDF", mode));
  const std::vector<int64_t> counts = c.IntList("ngram_counts"), indexes = c.IntList("ngram_indexes");
  const std::vector<int64_t> pool = c.IntList("pool_int64s");
  const std::vector<float> weights = c.HasAttr("weights") ? c.FloatList("weights") : std::vector<float>{};
  if (indexes.empty()) c.Fail("ngram_indexes is empty");
  for (int64_t i : indexes)
    if (i < 0 || i >= kMaxHostElements)
      c.Fail(fmt::format("ngram_indexes holds {}, outside [0, {})", i, kMaxHostElements));
  const int64_t out = *std::max_element(indexes.begin(), indexes.end()) + 1;
  CheckedProduct(c, rows, out, "the output [rows, max(ngram_indexes) + 1]");
  if (!weights.empty() && static_cast<int64_t>(weights.size()) != out)
    c.Fail(fmt::format("weights has {} entries, the output {}", weights.size(), out));
  const auto pool_size = static_cast<int64_t>(pool.size());

  // Each size's n-grams (a repeated one keeps its last id, as ONNX's reference does) with the
  // output position they count at.
  Graph& g = c.graph();
  std::vector<Node> found;        // [rows, n-grams of a size]
  std::vector<int64_t> position;  // Their output positions.
  int64_t id = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const auto n = static_cast<int64_t>(i + 1);
    const int64_t begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : pool_size;
    if (begin < 0 || end < begin || end > pool_size)
      c.Fail(fmt::format("ngram_counts {} is not a non-decreasing list of offsets into the pool of {}",
                         fmt::join(counts, ","), pool_size));
    std::map<std::vector<int64_t>, int64_t> grams;  // n-gram -> its id.
    for (int64_t k = begin; k + n <= end; k += n, ++id)
      grams[std::vector<int64_t>(pool.begin() + k, pool.begin() + k + n)] = id;
    if (id > static_cast<int64_t>(indexes.size()))
      c.Fail(fmt::format("ngram_indexes has {} entries, the pool more n-grams", indexes.size()));
    if (n < min_n || n > max_n || grams.empty()) continue;
    // The pool's n-grams as columns: item k of every n-gram, [G].
    std::vector<std::vector<int64_t>> items(static_cast<size_t>(n));
    for (const auto& [gram, gram_id] : grams) {
      for (size_t k = 0; k < gram.size(); ++k) items[k].push_back(gram[k]);
      position.push_back(indexes[static_cast<size_t>(gram_id)]);
    }
    const auto num = static_cast<int64_t>(grams.size());
    Node total = Zeros(g, Shape(DType::Float32, {rows, num}));
    // The skips whose windows fit in a row, each comparing n slices: the graph they unroll is capped.
    const int64_t fitting = n == 1 ? 1 : std::min(skips, (cols - 1) / (n - 1));
    CheckedProduct(c, std::max<int64_t>(fitting, 0), n, "the n-gram windows (skips x n) of TfIdfVectorizer");
    for (int64_t skip = 1; skip <= (n == 1 ? 1 : skips); ++skip) {
      const int64_t starts = cols - (n - 1) * skip;  // Windows that fit in a row.
      if (starts <= 0) break;
      Node match;  // [rows, starts, G]
      for (int64_t k = 0; k < n; ++k) {
        Node window = ExpandAxes(SliceAxis(x, 1, AxisRange(k * skip, k * skip + starts)), {-1});
        Node eq =
            Equal(window, Reshape(Const(g, Tensor::FromValue(items[static_cast<size_t>(k)])), {1, 1, num}));
        match = match.Ok() ? LogicalAnd(match, eq) : eq;
      }
      total = total + ReduceSum(ConvertDType(match, DType::Float32), {1});
    }
    found.push_back(total);
  }

  // The counts summed into their output positions: [rows, out].
  Node freq = Zeros(g, Shape(DType::Float32, {rows, out}));
  if (!found.empty()) {
    Node all = Concatenate(found, 1);
    Node at = Reshape(Const(g, Tensor::FromValue(position)), {static_cast<int64_t>(position.size()), 1});
    freq = Transpose(Scatter(at, Transpose(all, 0, 1), Shape(DType::Float32, {out, rows})), 0, 1);
  }
  Node y = freq;
  if (mode != "TF") {
    Node w = weights.empty() ? Ones(g, Shape(DType::Float32, {1, out}))
                             : Reshape(Const(g, Tensor::FromValue(weights)), {1, out});
    y = mode == "IDF" ? Where(Greater(freq, ScalarLike(freq, 0)), w + ZerosLike(freq), ZerosLike(freq))
                      : freq * w;
  }
  return {batched ? y : Reshape(y, {out})};
}

}  // namespace

void AddTextConverters(std::map<std::string, Converter>& m) { m["TfIdfVectorizer"] = TfIdfVectorizer; }

}  // namespace kiln::onnx::internal
