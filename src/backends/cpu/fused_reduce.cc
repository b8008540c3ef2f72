// The kernel of a fused reduction: ReduceSum, ReduceMax or ReduceMin of a fused elementwise
// group, computing the group's values piece by piece (FusedEvaluator) and folding them into the
// result without materialising the operand (a multi-output group stores its extra results, values
// of the same shape as the operand, from each piece as it goes). The operand is viewed as [O, R, I] (kept
// axes before the reduced block, the reduced block, kept axes after it). Float32 only; sums accumulate in
// double like the reference. The order of accumulation is fixed by the shapes, never by the thread count, so
// results do not depend on it.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/cost_model.h"
#include "backends/cpu/fused_eval.h"
#include "backends/cpu/fused_simd.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/team_split.h"
#include "core/check.h"

namespace kiln::compute::cpu {

namespace {

constexpr int64_t kTile = FusedEvaluator::kTile;
/// Reduced elements per unit of work when a row reduction is split (fixed, so that the partial
/// sums and their order do not depend on the thread count).
constexpr int64_t kBlock = int64_t{1} << 15;
/// Reduced elements per unit when kept columns are reduced (per column chunk; larger: each unit
/// keeps a chunk's partial results, and folds a tile of them when its rows are short).
constexpr int64_t kColumnBlock = int64_t{1} << 16;
/// Rows of at least this many kept columns are summed whole rows at a time (AddRowsIntoSimd, the
/// sums in registers); shorter ones a few rows' worth of columns at a time.
constexpr int64_t kMinVectorRow = 16;

enum class Fold : uint8_t { kSum, kMax, kMin };

/// The kernel's buffers: the group's inputs, and the extra results it writes.
struct Io {
  std::span<const uint8_t* const> in;
  std::span<uint8_t* const> extra;
};

/// The [O, R, I] view of a reduction; `ok` is false when the reduced axes (of size > 1) are not
/// one block.
struct ReduceView {
  bool ok = false;
  int64_t outer = 1, reduced = 1, inner = 1;
};

ReduceView ViewOf(const std::vector<int64_t>& dims, const std::vector<int64_t>& axes) {
  ReduceView v;
  int first = -1, last = -1;
  for (int64_t a : axes) {
    if (dims[static_cast<size_t>(a)] == 1) continue;
    first = first < 0 ? static_cast<int>(a) : std::min(first, static_cast<int>(a));
    last = std::max(last, static_cast<int>(a));
  }
  for (int k = 0; k < static_cast<int>(dims.size()); ++k) {
    const int64_t d = dims[static_cast<size_t>(k)];
    const bool reduced = std::find(axes.begin(), axes.end(), k) != axes.end();
    if (first >= 0 && k > first && k < last && !reduced && d != 1) return v;  // Kept axis inside.
    if (first < 0 || k < first) {
      v.outer *= d;
    } else if (k <= last) {
      v.reduced *= d;
    } else {
      v.inner *= d;
    }
  }
  v.ok = true;
  return v;
}

struct FusedReduce {
  std::shared_ptr<const FusedEvaluator> eval;
  Fold fold = Fold::kSum;
  ReduceView view;
  bool simd = true;
  int threads = 1;

  float Init() const {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    return fold == Fold::kMax ? -kInf : fold == Fold::kMin ? kInf : 0.0f;
  }

  /// Folds the partial result p into a: a sum in double, or the max or min of the two as floats
  /// (NaN propagating, as ref).
  double Combine(double a, double p) const {
    if (fold == Fold::kSum) return a + p;
    const auto x = static_cast<float>(a), y = static_cast<float>(p);
    return fold == Fold::kMax ? common::MaxOf(x, y) : common::MinOf(x, y);
  }

  /// The result of `count` partial results part[0], part[stride], ... folded in order.
  float FoldParts(const double* part, int64_t count, int64_t stride) const {
    double acc = Init();
    for (int64_t b = 0; b < count; ++b) acc = Combine(acc, part[b * stride]);
    return static_cast<float>(acc);
  }

  /// Calls f(start, len, values) for the operand elements [start, start + count), in pieces
  /// that stay inside the evaluator's rows, after storing the piece's extra results.
  template <class F>
  void ForPieces(const Io& io, int64_t start, int64_t count, FusedEvaluator::Scratch& regs, F f) const {
    const int64_t row = eval->inner();
    const FusedSpec& s = eval->spec();
    while (count > 0) {
      const int64_t len = std::min({kTile, count, row - start % row});
      // An extra Float32 result that is the result itself is computed where it is stored.
      float* direct = io.extra.size() == 1 && s.extra[0].reg == s.result && s.extra[0].dtype == DType::Float32
                          ? reinterpret_cast<float*>(io.extra[0]) + start
                          : nullptr;
      const float* v = eval->Eval(io.in, start, len, regs, direct);
      for (size_t k = 0; k < io.extra.size(); ++k)
        StorePieceSimd(s.extra[k].dtype, regs.extras[k], io.extra[k], start, len);
      f(start, len, v);
      start += len;
      count -= len;
    }
  }

  /// Rows of R contiguous elements (I == 1): unit u is block u % blocks of row u / blocks.
  void RowUnits(const Io& io, int64_t first, int64_t last, int64_t blocks, double* part,
                FusedEvaluator::Scratch& regs) const {
    const int64_t r = view.reduced;
    for (int64_t u = first; u < last; ++u) {
      const int64_t o = u / blocks, b = u % blocks;
      const int64_t begin = b * kBlock, count = std::min(kBlock, r - begin);
      double sum = 0;
      float ext = Init();
      ForPieces(io, o * r + begin, count, regs, [&](int64_t, int64_t len, const float* v) {
        const auto n = static_cast<size_t>(len);
        if (fold == Fold::kSum) {
          if (simd) {
            sum += SumSimd(v, n);
          } else {
            for (size_t j = 0; j < n; ++j) sum += static_cast<double>(v[j]);
          }
        } else {
          ext = ExtremeSimd(fold == Fold::kMax, v, n, ext);
        }
      });
      part[u] = fold == Fold::kSum ? sum : static_cast<double>(ext);
    }
  }

  /// Kept inner axes (I > 1), reduced rows [k0, k1) of outer index o, columns [c, c + cols):
  /// adds each row's piece into acc (doubles for sums, floats for max/min), in order. Rows of up
  /// to a tile (c == 0, cols == I) are read flat, a tile's worth of rows per piece, into an
  /// accumulator of `wide` columns: I itself (whole rows of sums added at once, AddRowsIntoSimd),
  /// or for short rows a multiple of I, column j then summing at j, j + I, ... (ColumnUnits folds
  /// them).
  void ColumnRows(const Io& io, int64_t o, int64_t k0, int64_t k1, int64_t c, int64_t cols, int64_t wide,
                  double* acc, float* ext, FusedEvaluator::Scratch& regs) const {
    const int64_t r = view.reduced, i_len = view.inner;
    auto add = [&](int64_t at, const float* v, int64_t len) {
      const auto n = static_cast<size_t>(len);
      if (fold != Fold::kSum) {
        ExtremeIntoSimd(fold == Fold::kMax, ext + at, v, n);
      } else if (simd) {
        AddIntoSimd(acc + at, v, n);
      } else {
        for (size_t j = 0; j < n; ++j) acc[static_cast<size_t>(at) + j] += static_cast<double>(v[j]);
      }
    };
    if (wide > 0) {
      const int64_t base = (o * r + k0) * i_len;
      const bool rows_at_once = wide == i_len && fold == Fold::kSum && simd;
      ForPieces(io, base, (k1 - k0) * i_len, regs, [&](int64_t start, int64_t len, const float* v) {
        int64_t at = (start - base) % wide;
        while (len > 0) {
          const int64_t whole = at == 0 && rows_at_once ? len / i_len : 0;
          if (whole > 0) {
            AddRowsIntoSimd(acc, v, static_cast<size_t>(whole), static_cast<size_t>(i_len));
            v += whole * i_len;
            len -= whole * i_len;
            continue;
          }
          const int64_t seg = std::min(len, wide - at);
          add(at, v, seg);
          v += seg;
          len -= seg;
          at = 0;
        }
      });
      return;
    }
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t base = (o * r + k) * i_len + c;
      ForPieces(io, base, cols, regs,
                [&](int64_t start, int64_t len, const float* v) { add(start - base, v, len); });
    }
  }

  /// Kept inner axes (I > 1): unit u is block b of the reduced rows (kColumnBlock elements'
  /// worth, fixed, so that the partial results do not depend on the thread count) of column chunk
  /// ch of outer index o (u = (o * chunks + ch) * blocks + b); its partial sums or extremes go to
  /// part[u * width ...], or, with one block, straight to the result `out`.
  void ColumnUnits(const Io& io, int64_t first, int64_t last, int64_t width, int64_t wide, int64_t block_rows,
                   int64_t blocks, double* part, float* out, FusedEvaluator::Scratch& regs) const {
    const int64_t r = view.reduced, i_len = view.inner, chunks = (i_len + width - 1) / width;
    const int64_t acc_len = std::max(width, wide);
    std::vector<double> acc(static_cast<size_t>(acc_len));
    std::vector<float> ext(static_cast<size_t>(acc_len));
    for (int64_t u = first; u < last; ++u) {
      const int64_t b = u % blocks, ch = (u / blocks) % chunks, o = u / (blocks * chunks);
      const int64_t c = ch * width, cols = std::min(width, i_len - c);
      const int64_t k0 = b * block_rows, k1 = std::min(r, k0 + block_rows);
      std::fill(acc.begin(), acc.end(), 0.0);
      std::fill(ext.begin(), ext.end(), Init());
      ColumnRows(io, o, k0, k1, c, cols, wide, acc.data(), ext.data(), regs);
      // Column j of a wide accumulator also sits at j + I, j + 2I, ...
      auto at = [&](int64_t q) {
        return fold == Fold::kSum ? acc[static_cast<size_t>(q)]
                                  : static_cast<double>(ext[static_cast<size_t>(q)]);
      };
      for (int64_t j = 0; j < cols; ++j) {
        double value = at(j);
        for (int64_t q = j + i_len; q < wide; q += i_len) value = Combine(value, at(q));
        if (blocks == 1) {
          out[o * i_len + c + j] = static_cast<float>(value);
        } else {
          part[u * width + j] = value;
        }
      }
    }
  }

  /// Runs body(first, last, regs) over [0, units) on the calling thread or split across the team,
  /// each thread with registers of its own.
  template <class B>
  void Split(int64_t units, bool parallel, B body) const {
    SplitAcrossTeam(units, threads, parallel, [&](int64_t first, int64_t last) {
      const FusedEvaluator::ScratchLease lease = eval->NewScratch();
      body(first, last, *lease);
    });
  }

  void operator()(std::span<const uint8_t* const> operands, uint8_t* out_bytes) const {
    float* out = reinterpret_cast<float*>(out_bytes);
    // The group's inputs, then the buffers of its extra results, which may be inputs' buffers
    // (each piece is stored after its loads; inputs not read element for element are copied).
    const size_t num_in = eval->num_inputs();
    std::vector<const uint8_t*> in(operands.begin(), operands.begin() + static_cast<std::ptrdiff_t>(num_in));
    std::vector<const uint8_t*> written(operands.begin() + static_cast<std::ptrdiff_t>(num_in),
                                        operands.end());
    const std::vector<std::vector<uint8_t>> copies = eval->CopyInputsWrittenOver(in, written);
    std::vector<uint8_t*> extra;
    for (const uint8_t* w : written) extra.push_back(const_cast<uint8_t*>(w));
    const Io io{in, extra};
    const int64_t o_len = view.outer, r = view.reduced, i_len = view.inner;
    if (o_len * i_len == 0) return;
    if (r == 0) {
      std::fill(out, out + o_len * i_len, Init());
      return;
    }
    const bool parallel = eval->size() * FusedCost(eval->spec()) >= kFusedParallelWork;
    if (i_len == 1) {
      const int64_t blocks = (r + kBlock - 1) / kBlock, units = o_len * blocks;
      std::vector<double> part(static_cast<size_t>(units));
      Split(units, parallel, [&](int64_t a, int64_t b, FusedEvaluator::Scratch& regs) {
        RowUnits(io, a, b, blocks, part.data(), regs);
      });
      for (int64_t o = 0; o < o_len; ++o) out[o] = FoldParts(part.data() + o * blocks, blocks, 1);
    } else {
      // Columns in chunks of a tile; rows of up to a tile read flat into an accumulator of `wide`
      // columns (ColumnRows). The reduced rows go in blocks of about kColumnBlock elements: outer
      // indices, chunks and blocks are the units the team shares (a bias gradient, [N, C] summed
      // over N, is one outer index and one chunk).
      const int64_t width = std::min(i_len, kTile), chunks = (i_len + width - 1) / width;
      const int64_t wide = i_len > kTile            ? 0
                           : i_len >= kMinVectorRow ? i_len
                                                    : i_len * ((FusedEvaluator::kMinRow + i_len - 1) / i_len);
      const int64_t block_rows = std::max<int64_t>(1, kColumnBlock / width);
      const int64_t blocks = (r + block_rows - 1) / block_rows, units = o_len * chunks * blocks;
      std::vector<double> part(static_cast<size_t>(blocks > 1 ? units * width : 0));
      Split(units, parallel, [&](int64_t a, int64_t b, FusedEvaluator::Scratch& regs) {
        ColumnUnits(io, a, b, width, wide, block_rows, blocks, part.data(), out, regs);
      });
      for (int64_t o = 0; blocks > 1 && o < o_len; ++o) {
        for (int64_t ch = 0; ch < chunks; ++ch) {
          const int64_t c = ch * width, cols = std::min(width, i_len - c);
          const double* parts = part.data() + (o * chunks + ch) * blocks * width;
          for (int64_t j = 0; j < cols; ++j) out[o * i_len + c + j] = FoldParts(parts + j, blocks, width);
        }
      }
    }
  }
};

}  // namespace

bool FusesIntoReduce(OpType op, const Shape& operand, const std::vector<int64_t>& axes) {
  if (op != OpType::ReduceSum && op != OpType::ReduceMax && op != OpType::ReduceMin) return false;
  if (operand.dtype() != DType::Float32 || operand.IsDynamic()) return false;
  return ViewOf(operand.Dimensions(), axes).ok;
}

// The [O, R, I] view of the node's reduction and the evaluator of its operand group.
KernelChoice MakeFusedReduceKernel(CpuBackend& backend, int threads, const Node& node,
                                   const std::vector<Shape>& operands) {
  (void)operands;
  const FusedSpec& spec = *node.fused;
  FusedReduce k;
  k.view = ViewOf(spec.out_dims, node.inst.attrs.axes);
  if (!k.view.ok || spec.out_dtype != DType::Float32 || node.inst.shape.dtype() != DType::Float32)
    detail::Throw("backend \"cpu\": {} cannot be fused with its operand", OpName(node.inst.op));
  k.fold = node.inst.op == OpType::ReduceSum   ? Fold::kSum
           : node.inst.op == OpType::ReduceMax ? Fold::kMax
                                               : Fold::kMin;
  k.simd = backend.options().simd;
  k.threads = std::max(1, threads);
  k.eval = MakeNodeEvaluator(node, k.simd, CompileVectorPrograms(backend.options()));
  std::string name =
      fmt::format("fused[{}]+{}{}", spec.ops.size(), OpName(node.inst.op), k.eval->FormSuffix());
  return {Kernel(std::move(k)), std::move(name)};
}

}  // namespace kiln::compute::cpu
