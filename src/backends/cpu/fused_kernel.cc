// The kernel of a fused elementwise node: runs the group's register-machine program over tiles
// of the output (kTile elements; registers are float32 arrays of one tile), loading inputs
// through their broadcast strides, with the SIMD ops (hwy_fused.cc) or their scalar form
// (`simd=scalar`). Large outputs split their tiles across the backend's OpenMP threads.

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/fusion.h"
#include "backends/cpu/kernels.h"
#include "core/check.h"
#include "kiln/core/half.h"

namespace kiln::compute::cpu {

namespace {

constexpr int64_t kTile = 1024;
/// Outputs above this many elements use several threads.
constexpr int64_t kParallelThreshold = 1 << 16;

/// Element i of an input of dtype `d`, as float32 (Bool bytes as 0/1).
inline float LoadAs(DType d, const uint8_t* p, int64_t i) {
  switch (d) {
    case DType::Float32: {
      float v;
      std::memcpy(&v, p + i * 4, 4);
      return v;
    }
    case DType::Float16:
    case DType::BFloat16: {
      uint16_t bits;
      std::memcpy(&bits, p + i * 2, 2);
      return d == DType::Float16 ? static_cast<float>(std::bit_cast<float16>(bits))
                                 : static_cast<float>(std::bit_cast<bfloat16>(bits));
    }
    default:
      return p[i] != 0 ? 1.0f : 0.0f;
  }
}

/// The compiled program and what a call needs to run it.
struct FusedRunner {
  std::shared_ptr<const FusedSpec> spec;
  int64_t n = 0;
  bool simd = true;
  int threads = 1;
  std::vector<int64_t> out_strides;  ///< Row-major strides of the output.

  /// One compute instruction, SIMD or scalar per the backend's options.
  void Op(FOp op, const float* a, const float* b, const float* c, float* out, size_t count) const {
    if (simd) {
      RunFusedOpSimd(op, a, b, c, out, count);
    } else {
      RunFusedOpScalar(op, a, b, c, out, count);
    }
  }

  /// Fills dst[0, len) with input `in` at output elements [start, start + len).
  void LoadInput(const FInput& in, const uint8_t* data, int64_t start, int64_t len, float* dst) const {
    if (in.identity || out_strides.empty()) {
      if (out_strides.empty()) start = 0;
      for (int64_t i = 0; i < len; ++i) dst[i] = LoadAs(in.dtype, data, start + i);
      return;
    }
    const size_t rank = out_strides.size();
    const std::vector<int64_t>& dims = spec->out_dims;
    int64_t index[16] = {}, rest = start, offset = 0;
    for (size_t k = 0; k < rank; ++k) {
      index[k] = rest / out_strides[k];
      rest %= out_strides[k];
      offset += index[k] * in.strides[k];
    }
    const int64_t inner = dims[rank - 1], inner_stride = in.strides[rank - 1];
    int64_t i = 0;
    while (i < len) {
      const int64_t count = std::min(len - i, inner - index[rank - 1]);
      if (inner_stride == 0) {
        std::fill(dst + i, dst + i + count, LoadAs(in.dtype, data, offset));
      } else {
        for (int64_t j = 0; j < count; ++j) dst[i + j] = LoadAs(in.dtype, data, offset + j * inner_stride);
      }
      i += count;
      offset += count * inner_stride;
      index[rank - 1] += count;
      // Carry into the outer axes.
      for (size_t k = rank - 1; k > 0 && index[k] == dims[k]; --k) {
        offset -= index[k] * in.strides[k];
        index[k] = 0;
        ++index[k - 1];
        offset += in.strides[k - 1];
      }
    }
  }

  /// Writes src[0, len) to the output's elements [start, start + len) in the output dtype.
  void Store(const float* src, uint8_t* out, int64_t start, int64_t len) const {
    switch (spec->out_dtype) {
      case DType::Float32:
        if (reinterpret_cast<const float*>(out) + start != src)
          std::memcpy(out + start * 4, src, static_cast<size_t>(len) * 4);
        break;
      case DType::Float16:
      case DType::BFloat16:
        for (int64_t i = 0; i < len; ++i) {
          const uint16_t bits = spec->out_dtype == DType::Float16 ? std::bit_cast<uint16_t>(float16(src[i]))
                                                                  : std::bit_cast<uint16_t>(bfloat16(src[i]));
          std::memcpy(out + (start + i) * 2, &bits, 2);
        }
        break;
      default:
        for (int64_t i = 0; i < len; ++i) out[start + i] = src[i] != 0 ? 1 : 0;
        break;
    }
  }

  /// Runs tiles [first, last) with the register file `regs` (num_regs * kTile floats).
  void RunTiles(std::span<const uint8_t* const> in, uint8_t* out, int64_t first, int64_t last,
                float* regs) const {
    const FusedSpec& s = *spec;
    std::vector<const float*> rp(static_cast<size_t>(s.num_regs));
    auto storage = [&](int r) { return regs + static_cast<int64_t>(r) * kTile; };
    for (const FInstr& ins : s.code) {
      if (ins.op != FOp::kImm) continue;
      std::fill(storage(ins.dst), storage(ins.dst) + kTile, ins.imm);
      rp[ins.dst] = storage(ins.dst);
    }
    const size_t last_ins = s.code.size() - 1;
    for (int64_t t = first; t < last; ++t) {
      const int64_t start = t * kTile, len = std::min(kTile, n - start);
      bool direct = false;
      for (size_t k = 0; k < s.code.size(); ++k) {
        const FInstr& ins = s.code[k];
        if (ins.op == FOp::kImm) continue;
        if (ins.op == FOp::kInput) {
          const FInput& fi = s.inputs[static_cast<size_t>(ins.input)];
          const uint8_t* data = in[static_cast<size_t>(ins.input)];
          if (fi.identity && fi.dtype == DType::Float32 && !out_strides.empty()) {
            rp[ins.dst] = reinterpret_cast<const float*>(data) + start;
          } else {
            LoadInput(fi, data, start, len, storage(ins.dst));
            rp[ins.dst] = storage(ins.dst);
          }
          continue;
        }
        float* w = storage(ins.dst);
        if (k == last_ins && ins.dst == s.result && s.out_dtype == DType::Float32) {
          w = reinterpret_cast<float*>(out) + start;
          direct = true;
        }
        Op(ins.op, rp[ins.a], rp[ins.b], rp[ins.c], w, static_cast<size_t>(len));
        rp[ins.dst] = w;
      }
      if (!direct) Store(rp[static_cast<size_t>(s.result)], out, start, len);
    }
  }

  /// The kernel: all tiles, on one thread or split across the team.
  void operator()(std::span<const uint8_t* const> operands, uint8_t* out) const {
    if (n == 0) return;
    // A broadcast input read in place of the result would be overwritten before it is read.
    std::vector<std::vector<uint8_t>> copies;
    std::vector<const uint8_t*> in(operands.begin(), operands.end());
    for (size_t i = 0; i < in.size(); ++i) {
      const FInput& fi = spec->inputs[i];
      if (in[i] == out && !fi.identity) {
        int64_t count = 1;
        for (size_t k = 0; k < fi.strides.size(); ++k)
          count = std::max(count, fi.strides[k] * spec->out_dims[k]);
        copies.emplace_back(in[i], in[i] + count * DTypeBits(fi.dtype) / 8);
        in[i] = copies.back().data();
      }
    }
    const int64_t tiles = (n + kTile - 1) / kTile;
    const size_t reg_floats = static_cast<size_t>(std::max(spec->num_regs, 1) * kTile);
    const int team = n > kParallelThreshold ? static_cast<int>(std::min<int64_t>(threads, tiles)) : 1;
    if (team <= 1) {
      std::vector<float> regs(reg_floats);
      RunTiles(in, out, 0, tiles, regs.data());
      return;
    }
#pragma omp parallel num_threads(team)
    {
      const int64_t id = omp_get_thread_num(), count = omp_get_num_threads();
      std::vector<float> regs(reg_floats);
      RunTiles(in, out, tiles * id / count, tiles * (id + 1) / count, regs.data());
    }
  }
};

/// y[i] = f(a[i]).
template <class F>
void Each1(const float* a, float* out, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) out[i] = f(a[i]);
}
/// y[i] = f(a[i], b[i]).
template <class F>
void Each2(const float* a, const float* b, float* out, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

inline float One(bool b) { return b ? 1.0f : 0.0f; }

}  // namespace

// The reference kernels' formulas, element by element.
void RunFusedOpScalar(FOp op, const float* a, const float* b, const float* c, float* out, size_t n) {
  switch (op) {
    case FOp::kNeg:
      return Each1(a, out, n, [](float x) { return -x; });
    case FOp::kAbs:
      return Each1(a, out, n, [](float x) { return std::fabs(x); });
    case FOp::kSign:
      return Each1(a, out, n, [](float x) { return std::isnan(x) || x == 0 ? x : std::copysign(1.0f, x); });
    case FOp::kSqrt:
      return Each1(a, out, n, [](float x) { return std::sqrt(x); });
    case FOp::kRsqrt:
      return Each1(a, out, n, [](float x) { return 1.0f / std::sqrt(x); });
    case FOp::kExp:
      return Each1(a, out, n, [](float x) { return std::exp(x); });
    case FOp::kExpm1:
      return Each1(a, out, n, [](float x) { return std::expm1(x); });
    case FOp::kLog:
      return Each1(a, out, n, [](float x) { return std::log(x); });
    case FOp::kLog1p:
      return Each1(a, out, n, [](float x) { return std::log1p(x); });
    case FOp::kSin:
      return Each1(a, out, n, [](float x) { return std::sin(x); });
    case FOp::kCos:
      return Each1(a, out, n, [](float x) { return std::cos(x); });
    case FOp::kTanh:
      return Each1(a, out, n, [](float x) { return std::tanh(x); });
    case FOp::kLogistic:
      return Each1(a, out, n, [](float x) {
        if (x >= 0) return 1.0f / (1.0f + std::exp(-x));
        const float e = std::exp(x);
        return e / (1.0f + e);
      });
    case FOp::kErf:
      return Each1(a, out, n, [](float x) { return std::erf(x); });
    case FOp::kFloor:
      return Each1(a, out, n, [](float x) { return std::floor(x); });
    case FOp::kCeil:
      return Each1(a, out, n, [](float x) { return std::ceil(x); });
    case FOp::kRound:
      return Each1(a, out, n, [](float x) { return std::nearbyint(x); });
    case FOp::kIsFinite:
      return Each1(a, out, n, [](float x) { return One(std::isfinite(x)); });
    case FOp::kIsNaN:
      return Each1(a, out, n, [](float x) { return One(std::isnan(x)); });
    case FOp::kLogicalNot:
      return Each1(a, out, n, [](float x) { return One(x == 0); });
    case FOp::kNotZero:
      return Each1(a, out, n, [](float x) { return One(x != 0); });
    case FOp::kRoundF16:
      return Each1(a, out, n, [](float x) { return static_cast<float>(float16(x)); });
    case FOp::kRoundBF16:
      return Each1(a, out, n, [](float x) { return static_cast<float>(bfloat16(x)); });
    case FOp::kAdd:
      return Each2(a, b, out, n, [](float x, float y) { return x + y; });
    case FOp::kSub:
      return Each2(a, b, out, n, [](float x, float y) { return x - y; });
    case FOp::kMul:
      return Each2(a, b, out, n, [](float x, float y) { return x * y; });
    case FOp::kDiv:
      return Each2(a, b, out, n, [](float x, float y) { return x / y; });
    case FOp::kPow:
      return Each2(a, b, out, n, [](float x, float y) { return std::pow(x, y); });
    case FOp::kMax:
      return Each2(a, b, out, n, [](float x, float y) { return ref::MaxOf(x, y); });
    case FOp::kMin:
      return Each2(a, b, out, n, [](float x, float y) { return ref::MinOf(x, y); });
    case FOp::kLogicalAnd:
      return Each2(a, b, out, n, [](float x, float y) { return One(x != 0 && y != 0); });
    case FOp::kLogicalOr:
      return Each2(a, b, out, n, [](float x, float y) { return One(x != 0 || y != 0); });
    case FOp::kLogicalXor:
      return Each2(a, b, out, n, [](float x, float y) { return One((x != 0) != (y != 0)); });
    case FOp::kEqual:
      return Each2(a, b, out, n, [](float x, float y) { return One(x == y); });
    case FOp::kNotEqual:
      return Each2(a, b, out, n, [](float x, float y) { return One(x != y); });
    case FOp::kLess:
      return Each2(a, b, out, n, [](float x, float y) { return One(x < y); });
    case FOp::kLessOrEqual:
      return Each2(a, b, out, n, [](float x, float y) { return One(x <= y); });
    case FOp::kGreater:
      return Each2(a, b, out, n, [](float x, float y) { return One(x > y); });
    case FOp::kGreaterOrEqual:
      return Each2(a, b, out, n, [](float x, float y) { return One(x >= y); });
    case FOp::kWhere:
      for (size_t i = 0; i < n; ++i) out[i] = a[i] != 0 ? b[i] : c[i];
      return;
    default:
      detail::Throw("fused kernel: {} is not a compute op", FOpName(op));
  }
}

// Checks the spec against the node and packs what the kernel needs.
KernelChoice MakeFusedKernel(CpuBackend& backend, const Node& node, const std::vector<Shape>& operands) {
  FusedRunner r;
  r.spec = node.fused;
  if (operands.size() != r.spec->inputs.size()) {
    detail::Throw("backend \"cpu\": fused node {} has {} operands, its program reads {} inputs",
                  OpName(node.inst.op), operands.size(), r.spec->inputs.size());
  }
  if (r.spec->out_dims.size() > 16)
    detail::Throw("backend \"cpu\": fused node of rank {} (at most 16)", r.spec->out_dims.size());
  r.n = node.inst.shape.Size();
  r.simd = backend.options().simd;
  r.threads = std::max(1, backend.options().threads);
  r.out_strides = ref::RowMajorStrides(r.spec->out_dims);
  std::string name = fmt::format("fused[{}]{}", r.spec->ops.size(), r.simd ? "" : ".scalar");
  return {Kernel(std::move(r)), std::move(name)};
}

}  // namespace kiln::compute::cpu
