// The fused elementwise kernel: the evaluator (fused_eval.cc) over the pieces of the whole
// result, which large results split across the backend's OpenMP threads (above
// kFusedParallelWork), each piece stored in the result's dtype (and a multi-output group's extra
// results in theirs).

#include <algorithm>
#include <vector>

#include "backends/cpu/cost_model.h"
#include "backends/cpu/fused_eval.h"
#include "backends/cpu/fused_simd.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/pool_kernels.h"
#include "backends/cpu/team_split.h"
#include "core/check.h"
#include "kiln/core/half.h"

namespace kiln::compute::cpu {

namespace {

/// The elementwise kernel: the evaluator over the whole result, split across the team.
struct FusedRunner {
  std::shared_ptr<const FusedEvaluator> eval;
  int threads = 1;
  int64_t work = 0;  ///< Elements times FusedCost.

  /// Pieces [first, last) of the result (pieces are kTile-sized runs inside rows); a
  /// multi-output group's extra results go to `extra` after each piece is computed.
  void Run(std::span<const uint8_t* const> in, uint8_t* out, std::span<uint8_t* const> extra, int64_t first,
           int64_t last) const {
    const FusedEvaluator& e = *eval;
    const FusedSpec& s = e.spec();
    const FusedEvaluator::ScratchLease lease = e.NewScratch();
    FusedEvaluator::Scratch& scratch = *lease;
    const int64_t inner = e.inner(), per_row = (inner + FusedEvaluator::kTile - 1) / FusedEvaluator::kTile;
    const bool f32 = s.out_dtype == DType::Float32;
    for (int64_t p = first; p < last; ++p) {
      const int64_t row = p / per_row, col = (p % per_row) * FusedEvaluator::kTile;
      const int64_t start = row * inner + col, len = std::min(FusedEvaluator::kTile, inner - col);
      float* direct = f32 ? reinterpret_cast<float*>(out) + start : nullptr;
      const float* r = e.Eval(in, start, len, scratch, direct);
      // Every load of the piece is done: results may overwrite inputs read in place.
      for (size_t k = 0; k < extra.size(); ++k)
        StorePieceSimd(s.extra[k].dtype, scratch.extras[k], extra[k], start, len);
      if (r != direct) StorePieceSimd(s.out_dtype, r, out, start, len);
    }
  }

  void operator()(std::span<const uint8_t* const> operands, uint8_t* out) const {
    const FusedEvaluator& e = *eval;
    if (e.size() == 0) return;
    // The operands: the kernel's inputs, then the buffers of its extra results (written).
    const size_t num_in = e.num_inputs();
    std::vector<const uint8_t*> in(operands.begin(), operands.begin() + static_cast<std::ptrdiff_t>(num_in));
    std::vector<uint8_t*> extra;
    for (size_t k = num_in; k < operands.size(); ++k) extra.push_back(const_cast<uint8_t*>(operands[k]));
    // A broadcast input read in place of a result would be overwritten before it is read.
    std::vector<const uint8_t*> written(extra.begin(), extra.end());
    written.push_back(out);
    const std::vector<std::vector<uint8_t>> copies = e.CopyInputsWrittenOver(in, written);
    const int64_t rows = e.size() / e.inner();
    const int64_t pieces = rows * ((e.inner() + FusedEvaluator::kTile - 1) / FusedEvaluator::kTile);
    SplitAcrossTeam(pieces, threads, work >= kFusedParallelWork,
                    [&](int64_t first, int64_t last) { Run(in, out, extra, first, last); });
  }
};

}  // namespace

std::shared_ptr<const FusedEvaluator> MakeNodeEvaluator(const Node& node, bool simd, bool jit) {
  ComputedInput computed;
  if (const std::shared_ptr<const WindowedInput>& w = node.windowed) {
    // The SelectAndScatter's operand is the input's own operand, its source the one after the
    // program's inputs.
    const ScatterRangeFn range = MakeScatterRange(w->scatter, w->operands, simd);
    const size_t input = static_cast<size_t>(w->input), source = node.fused->inputs.size();
    computed.input = w->input;
    computed.reads_after = 1;
    computed.fill = [range, input, source](std::span<const uint8_t* const> in, int64_t start, int64_t len,
                                           float* dst) {
      range(reinterpret_cast<const float*>(in[input]), reinterpret_cast<const float*>(in[source]), start, len,
            dst);
    };
  }
  return std::make_shared<const FusedEvaluator>(node.fused, simd, jit, std::move(computed));
}

// Checks the spec against the node and packs what the kernel needs.
KernelChoice MakeFusedKernel(CpuBackend& backend, int threads, const Node& node,
                             const std::vector<Shape>& operands) {
  // The program's inputs, then a windowed input's source.
  const size_t inputs = node.fused->inputs.size() + (node.windowed ? 1 : 0);
  if (operands.size() != inputs) {
    detail::Throw("backend \"cpu\": fused node {} has {} operands, its kernel reads {} inputs",
                  OpName(node.inst.op), operands.size(), inputs);
  }
  if (node.fused->out_dims.size() > static_cast<size_t>(kMaxFusedRank))
    detail::Throw("backend \"cpu\": fused node of rank {} (at most {})", node.fused->out_dims.size(),
                  kMaxFusedRank);
  if (node.fused->num_regs > kMaxFusedRegisters)
    detail::Throw("backend \"cpu\": fused node with {} registers (at most {})", node.fused->num_regs,
                  kMaxFusedRegisters);
  if (node.kind == NodeKind::kFusedReduce) return MakeFusedReduceKernel(backend, threads, node, operands);
  FusedRunner r;
  r.eval = MakeNodeEvaluator(node, backend.options().simd, CompileVectorPrograms(backend.options()));
  r.threads = std::max(1, threads);
  r.work = r.eval->size() * FusedCost(*node.fused);
  std::string name = fmt::format("fused[{}]{}", node.fused->ops.size(), r.eval->FormSuffix());
  return {Kernel(std::move(r)), std::move(name)};
}

}  // namespace kiln::compute::cpu
