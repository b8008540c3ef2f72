// The cpu kernel of the "kiln.adam_update" composite (kiln/compute/composite.h): checks that the
// instance is the one the kernel computes (Float32 arrays of one static shape, Float32 scalars),
// then runs adam_simd.cc's pass over the elements, split across the team for large variables,
// writing over m, v and w when the executable hands over their donated buffers. Other instances
// run the decomposition (cpu_control.cc).

#include <bit>
#include <cstdint>
#include <vector>

#include "backends/cpu/adam_simd.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/team_split.h"
#include "kiln/compute/composite.h"

namespace kiln::compute::cpu {

namespace {

namespace cm = composite;

/// Elements per unit of work split across the team, and the fewest elements worth a team (below,
/// waking the other threads costs more than the pass: 64 Ki elements is about 15 us on one core).
constexpr int64_t kAdamUnit = 4096, kAdamParallel = int64_t{1} << 16;

float FloatOf(int64_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits)); }

}  // namespace

TupleKernel MakeAdamUpdateKernel(CpuBackend* backend, const Instruction& inst) {
  const std::vector<int64_t>& v = inst.attrs.values;
  if (v.size() != static_cast<size_t>(cm::kNumAdamUpdateValues) || inst.subprograms.size() != 1) return {};
  const bool has_decay = v[cm::kAdamHasDecay] != 0;
  const Program& body = *inst.subprograms[0];
  const size_t operands = has_decay ? 7 : 6;
  if (body.Parameters().size() != operands || inst.tuple_shapes.size() != 3) return {};
  const Shape w = body.ParameterShape(0);
  if (w.IsDynamic() || w.dtype() != DType::Float32) return {};
  for (int i = 1; i < 4; ++i)
    if (body.ParameterShape(i) != w) return {};
  for (size_t i = 4; i < operands; ++i) {
    const Shape s = body.ParameterShape(static_cast<int>(i));
    if (!s.IsScalar() || s.dtype() != DType::Float32) return {};
  }
  for (const Shape& s : inst.tuple_shapes)
    if (s != w) return {};
  AdamConstants c;
  c.b1 = FloatOf(v[cm::kAdamBeta1]);
  c.one_minus_b1 = FloatOf(v[cm::kAdamOneMinusBeta1]);
  c.b2 = FloatOf(v[cm::kAdamBeta2]);
  c.one_minus_b2 = FloatOf(v[cm::kAdamOneMinusBeta2]);
  c.eps = FloatOf(v[cm::kAdamEpsilon]);
  c.has_decay = has_decay;
  const int64_t n = w.Size();
  const int threads = n >= kAdamParallel ? backend->options().threads : 1;
  return [backend, c, n, threads](const std::vector<BufferPtr>& in, int device) -> std::vector<BufferPtr> {
    auto data = [&](size_t i) {
      return reinterpret_cast<const float*>(backend->AsCpuBuffer(*in[i])->data());
    };
    AdamConstants k = c;
    k.step_size = *data(4);
    k.sqrt_bc2 = *data(5);
    if (k.has_decay) k.decay = *data(6);
    // m', v' and w' go over m, v and w where the executable gave their own buffers (donated
    // parameters no later step reads), else into new ones.
    const int64_t bytes = n * static_cast<int64_t>(sizeof(float));
    auto result_over = [&](size_t i) -> BufferPtr {
      if (backend->AsCpuBuffer(*in[i])->OwnsMemory()) return in[i];
      return backend->NewBuffer(bytes, false, device);
    };
    std::vector<BufferPtr> out = {result_over(2), result_over(3), result_over(0)};
    auto result = [&](size_t i) { return reinterpret_cast<float*>(backend->AsCpuBuffer(*out[i])->data()); };
    const AdamArrays a{data(0), data(1), data(2), data(3), result(0), result(1), result(2)};
    const int64_t units = (n + kAdamUnit - 1) / kAdamUnit;
    SplitAcrossTeam(units, threads, threads > 1, [&](int64_t first, int64_t last) {
      AdamUpdateRange(k, a, static_cast<size_t>(first * kAdamUnit),
                      static_cast<size_t>(std::min(n, last * kAdamUnit)));
    });
    return out;
  };
}

}  // namespace kiln::compute::cpu
