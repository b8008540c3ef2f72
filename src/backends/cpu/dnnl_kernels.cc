// oneDNN kernels for the cpu backend: which nodes oneDNN runs (Float32 DotGeneral and
// ConvGeneral, with their epilogues; large transposes of 4-byte elements); the mappings live in
// dnnl_matmul.cc, dnnl_conv.cc and dnnl_reorder.cc.

#include "backends/cpu/dnnl_kernels.h"

#include <cmath>
#include <cstring>

#include "backends/common/scalar_math.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/team_split.h"

namespace kiln::compute::cpu {

namespace {

/// Max(x, +0): x > 0 is false for NaN, x != x keeps it; -0 becomes +0. Both tests without
/// short-circuit, so that a loop of it vectorises into a compare and a blend (as a branch it
/// mispredicts on every other element of a pre-activation).
inline float ReluOf(float x) { return ((x > 0.0f) | (x != x)) ? x : 0.0f; }

inline float Activate(Activation a, float x) {
  switch (a) {
    case Activation::kRelu:
      return common::MaxOf(x, 0.0f);  // Max(x, +0), as the graph wrote it.
    case Activation::kLogistic:
      return common::Logistic(x);
    case Activation::kHardSwish:  // x * Min(Max(x + 3, 0), 6) / 6, as the graph wrote it.
      return x * common::MinOf(common::MaxOf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    case Activation::kNone:
      break;
  }
  return x;
}

/// Activation `A` of x, inlined; ReLU as ReluOf, which vectorises.
template <Activation A>
inline float Act(float x) {
  if constexpr (A == Activation::kRelu) {
    return ReluOf(x);
  } else {
    return Activate(A, x);
  }
}

/// The epilogue's loop for one activation `A`, known at compile time so that it inlines and
/// vectorises (a switch per element cost a batch of one's Dense layer 2 us for 512 features).
template <Activation A>
void EpilogueLoop(int64_t outer, int64_t features, int64_t inner, const float* bias, float* out) {
  if (bias == nullptr) {
    for (int64_t i = 0, n = outer * features * inner; i < n; ++i) out[i] = Act<A>(out[i]);
    return;
  }
  if (inner == 1) {  // The bias along the last axis: one pass per row.
    for (int64_t o = 0; o < outer; ++o) {
      float* row = out + o * features;
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
#pragma omp simd
      for (int64_t f = 0; f < features; ++f) row[f] = Act<A>(row[f] + bias[f]);
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
    }
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t f = 0; f < features; ++f) {
      const float b = bias[f];
      float* row = out + (o * features + f) * inner;
      for (int64_t i = 0; i < inner; ++i) row[i] = Act<A>(row[i] + b);
    }
  }
}

/// A contraction with an epilogue oneDNN could not take: the contraction alone (oneDNN's or the
/// reference kernel), then the epilogue in a loop.
KernelChoice SplitEpilogue(int threads, int team, const Node& node, const std::vector<Shape>& operands) {
  Instruction inst = node.inst;
  inst.operands.resize(2);
  const std::vector<Shape> pair(operands.begin(), operands.begin() + 2);
  KernelChoice base = MakeDnnlContraction(threads, team, inst, pair, nullptr);
  if (!base.kernel) {
    Kernel k = ref::MakeKernel(inst, pair);
    const int64_t bytes = inst.shape.ByteSize();
    base = {[k = std::move(k), bytes](ref::Operands in, uint8_t* out) {
              if (bytes > 0) std::memset(out, 0, static_cast<size_t>(bytes));
              k(in, out);
            },
            "ref"};
  }
  const Epilogue e = *node.epilogue;
  const std::vector<int64_t> dims = inst.shape.Dimensions();
  return {[k = std::move(base.kernel), e, dims](ref::Operands in, uint8_t* out) {
            k(in, out);
            ApplyEpilogue(e, dims, e.bias ? reinterpret_cast<const float*>(in[2]) : nullptr,
                          reinterpret_cast<float*>(out));
          },
          base.name + "+loop[" + e.ToString() + "]", base.own_threads, base.team_work};
}

}  // namespace

void ApplyEpilogue(const Epilogue& e, std::span<const int64_t> dims, const float* bias, float* out) {
  int64_t outer = 1, features = 1, inner = 1;
  for (size_t a = 0; a < dims.size(); ++a) {
    const int64_t ax = static_cast<int64_t>(a);
    if (!e.bias || ax < e.axis) {
      outer *= dims[a];
    } else if (ax == e.axis) {
      features = dims[a];
    } else {
      inner *= dims[a];
    }
  }
  if (!e.bias) bias = nullptr;
  switch (e.activation) {
    case Activation::kRelu:
      return EpilogueLoop<Activation::kRelu>(outer, features, inner, bias, out);
    case Activation::kLogistic:
      return EpilogueLoop<Activation::kLogistic>(outer, features, inner, bias, out);
    case Activation::kHardSwish:
      return EpilogueLoop<Activation::kHardSwish>(outer, features, inner, bias, out);
    case Activation::kNone:
      break;
  }
  EpilogueLoop<Activation::kNone>(outer, features, inner, bias, out);
}

dnnl::post_ops ActivationPostOps(const Epilogue& epilogue) {
  dnnl::post_ops ops;
  switch (epilogue.activation) {
    case Activation::kLogistic:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_logistic, 0.0f, 0.0f);
      break;
    case Activation::kHardSwish:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.0f, 0.0f);
      break;
    default:
      break;
  }
  return ops;
}

namespace {

/// ReluOf over [x, x + n). A plain function of its own: inside an OpenMP worksharing loop the
/// compiler left it scalar and branching (a fifth of an imported classifier's time at batch 1).
void ReluRange(float* x, int64_t n) {
  // (clang at -O1, as the sanitizer builds compile, may not vectorise it: not an error there.)
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] = ReluOf(x[i]);
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
}

}  // namespace

void ReluInPlace(float* x, int64_t n, int threads) {
  // Above 256 KiB the result has left the core's L2 anyway: split the pass over the team.
  const bool parallel = n * static_cast<int64_t>(sizeof(float)) > (int64_t{256} << 10);
  SplitAcrossTeam(n, threads, parallel,
                  [&](int64_t first, int64_t last) { ReluRange(x + first, last - first); });
}

KernelChoice TryDnnlKernel(int threads, int team, const Node& node, const std::vector<Shape>& operands) {
  if (node.kind != NodeKind::kPrimitive || node.inst.IsTuple()) return {};
  if (node.inst.op == OpType::Transpose) return MakeDnnlTranspose(threads, node.inst, operands.at(0));
  const Epilogue* e = node.epilogue.get();
  // Float32 contractions, and the BFloat16 ones the widening pass left (widen.cc).
  KernelChoice k = MakeDnnlContraction(threads, team, node.inst, operands, e, node.constant_kernel);
  if (k.kernel || e == nullptr) return k;
  // oneDNN declined the epilogue: the contraction, then the epilogue in a Float32 loop. A
  // BFloat16 result has a bias only where its oneDNN kernel takes it (epilogue.cc).
  if (node.inst.shape.dtype() != DType::Float32)
    detail::Throw(
        "backend \"cpu\": no oneDNN kernel for a {} {} with epilogue {} (the epilogue pass folds one "
        "only where the kernel exists)",
        DTypeName(node.inst.shape.dtype()), OpName(node.inst.op), e->ToString());
  return SplitEpilogue(threads, team, node, operands);
}

KernelChoice MakeDnnlContraction(int threads, int team, const Instruction& inst,
                                 const std::vector<Shape>& operands, const Epilogue* epilogue,
                                 bool constant_kernel) {
  if (inst.op == OpType::DotGeneral) return MakeDnnlMatmul(threads, team, inst, operands, epilogue);
  if (inst.op != OpType::ConvGeneral) return {};
  if (KernelChoice shift = MakeShiftConv(threads, inst, operands, epilogue); shift.kernel) return shift;
  return MakeDnnlConv(threads, inst, operands, epilogue, constant_kernel);
}

bool DnnlRunsBFloat16(const Instruction& inst, const std::vector<Node>& nodes, const Epilogue* epilogue) {
  if (inst.shape.dtype() != DType::BFloat16 || !dnnl_util::NativeBFloat16()) return false;
  std::vector<Shape> operands;
  for (int o : inst.operands) operands.push_back(nodes[static_cast<size_t>(o)].inst.shape);
  return MakeDnnlContraction(1, 1, inst, operands, epilogue).kernel != nullptr;
}

}  // namespace kiln::compute::cpu
