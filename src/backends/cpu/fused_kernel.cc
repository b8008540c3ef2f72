// The fused elementwise kernel and the evaluator it shares with the fused reductions: the
// group's register-machine program over pieces of the result (kTile elements inside a row of
// the [rows, inner] view; registers are float32 arrays of one piece), inputs read in place, by
// vectorised conversion, as one broadcast value per row or by strided gathers, and the ops run
// with SIMD (hwy_fused.cc: on AVX3 the whole program per block of vectors, elsewhere one pass per
// instruction) or their scalar form (`simd=scalar`). Large results split their pieces across the
// backend's OpenMP threads (above kFusedParallelWork).

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

/// Element i of an input of dtype `d`, as float32 (Bool bytes as 0/1): single values (a
/// broadcast value, strided gathers), where a SIMD call would cost more than it saves.
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

/// The elementwise kernel: the evaluator over the whole result, split across the team.
struct FusedRunner {
  std::shared_ptr<const FusedEvaluator> eval;
  int threads = 1;
  int64_t work = 0;  ///< Elements times FusedCost.

  /// Stores `len` float32 values at element `start` of a result of `dtype`.
  static void Store(DType dtype, const float* v, uint8_t* data, int64_t start, int64_t len) {
    if (dtype == DType::Float32) {
      float* dst = reinterpret_cast<float*>(data) + start;
      if (dst != v) std::memcpy(dst, v, static_cast<size_t>(len) * 4);
    } else {
      ConvertFromF32Simd(dtype, v, data + start * DTypeBits(dtype) / 8, static_cast<size_t>(len));
    }
  }

  /// Pieces [first, last) of the result (pieces are kTile-sized runs inside rows); a
  /// multi-output group's extra results go to `extra` after each piece is computed.
  void Run(std::span<const uint8_t* const> in, uint8_t* out, std::span<uint8_t* const> extra, int64_t first,
           int64_t last) const {
    const FusedEvaluator& e = *eval;
    const FusedSpec& s = e.spec();
    FusedEvaluator::Scratch scratch = e.NewScratch();
    const int64_t inner = e.inner(), per_row = (inner + FusedEvaluator::kTile - 1) / FusedEvaluator::kTile;
    const bool f32 = s.out_dtype == DType::Float32;
    for (int64_t p = first; p < last; ++p) {
      const int64_t row = p / per_row, col = (p % per_row) * FusedEvaluator::kTile;
      const int64_t start = row * inner + col, len = std::min(FusedEvaluator::kTile, inner - col);
      float* direct = f32 ? reinterpret_cast<float*>(out) + start : nullptr;
      const float* r = e.Eval(in, start, len, scratch, direct);
      // Every load of the piece is done: results may overwrite inputs read in place.
      for (size_t k = 0; k < extra.size(); ++k)
        Store(s.extra[k].dtype, scratch.extras[k], extra[k], start, len);
      if (r != direct) Store(s.out_dtype, r, out, start, len);
    }
  }

  void operator()(std::span<const uint8_t* const> operands, uint8_t* out) const {
    const FusedEvaluator& e = *eval;
    if (e.size() == 0) return;
    const FusedSpec& s = e.spec();
    // The operands: the group's inputs, then the buffers of its extra results (written).
    const size_t num_in = s.inputs.size();
    std::vector<const uint8_t*> in(operands.begin(), operands.begin() + static_cast<std::ptrdiff_t>(num_in));
    std::vector<uint8_t*> extra;
    for (size_t k = num_in; k < operands.size(); ++k) extra.push_back(const_cast<uint8_t*>(operands[k]));
    // A broadcast input read in place of a result would be overwritten before it is read.
    std::vector<std::vector<uint8_t>> copies;
    for (size_t i = 0; i < in.size(); ++i) {
      const FInput& fi = s.inputs[i];
      const bool written = in[i] == out || std::find(extra.begin(), extra.end(), in[i]) != extra.end();
      if (written && !fi.identity) {
        int64_t count = 1;
        for (size_t k = 0; k < fi.strides.size(); ++k) count = std::max(count, fi.strides[k] * s.out_dims[k]);
        copies.emplace_back(in[i], in[i] + count * DTypeBits(fi.dtype) / 8);
        in[i] = copies.back().data();
      }
    }
    const int64_t rows = e.size() / e.inner();
    const int64_t pieces = rows * ((e.inner() + FusedEvaluator::kTile - 1) / FusedEvaluator::kTile);
    const int team = work >= kFusedParallelWork ? static_cast<int>(std::min<int64_t>(threads, pieces)) : 1;
    if (team <= 1) {
      Run(in, out, extra, 0, pieces);
      return;
    }
#pragma omp parallel num_threads(team)
    {
      const int64_t id = omp_get_thread_num(), count = omp_get_num_threads();
      Run(in, out, extra, pieces * id / count, pieces * (id + 1) / count);
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

bool FOpTranscendental(FOp op) {
  switch (op) {
    case FOp::kExp:
    case FOp::kExpm1:
    case FOp::kLog:
    case FOp::kLog1p:
    case FOp::kSin:
    case FOp::kCos:
    case FOp::kTanh:
    case FOp::kLogistic:
    case FOp::kErf:
      return true;
    default:
      return false;
  }
}

// One per load, cheap op and the store; transcendentals count 8, Pow 40.
int64_t FusedCost(const FusedSpec& spec) {
  int64_t c = 1;
  for (const FInstr& ins : spec.code) {
    if (ins.op == FOp::kImm) continue;
    c += FOpTranscendental(ins.op) ? 8 : ins.op == FOp::kPow ? 40 : 1;
  }
  return c;
}

// Follows the registers through the program: an operand written by the previous compute
// instruction is the accumulator, one written earlier is saved to its register's slot.
VProgram MakeVProgram(const FusedSpec& spec) {
  VProgram p;
  p.num_inputs = static_cast<int>(spec.inputs.size());
  p.num_regs = spec.num_regs;
  struct Writer {
    VSrc src = VSrc::kNone;
    int at = -1;  ///< kInput: the input; kSlot: the compute instruction.
    float imm = 0;
  };
  std::vector<Writer> writer(static_cast<size_t>(std::max(spec.num_regs, 1)));
  // Where register r's current value is, seen from the next instruction; kNone if unwritten.
  auto source = [&](uint16_t r, VSrc& src, uint16_t& idx, float& imm) {
    const Writer& w = writer[r];
    src = w.src;
    idx = r;
    if (w.src == VSrc::kImm) {
      imm = w.imm;
    } else if (w.src == VSrc::kInput) {
      idx = static_cast<uint16_t>(w.at);
    } else if (w.src == VSrc::kSlot) {
      if (static_cast<size_t>(w.at) + 1 == p.code.size()) {
        src = VSrc::kAcc;
      } else {
        p.code[static_cast<size_t>(w.at)].save = r;
      }
    }
    return src != VSrc::kNone;
  };
  for (const FInstr& ins : spec.code) {
    if (ins.op == FOp::kImm) {
      writer[ins.dst] = {VSrc::kImm, -1, ins.imm};
      continue;
    }
    if (ins.op == FOp::kInput) {
      writer[ins.dst] = {VSrc::kInput, ins.input, 0};
      continue;
    }
    VInstr v;
    v.op = ins.op;
    const uint16_t regs[3] = {ins.a, ins.b, ins.c};
    for (int k = 0; k < FOpArity(ins.op); ++k)
      if (!source(regs[k], v.src[k], v.idx[k], v.imm[k])) return {};
    p.code.push_back(v);
    writer[ins.dst] = {VSrc::kSlot, static_cast<int>(p.code.size()) - 1, 0};
  }
  float unused = 0;
  if (writer[static_cast<size_t>(spec.result)].src != VSrc::kSlot ||
      !source(static_cast<uint16_t>(spec.result), p.result_src, p.result_idx, unused))
    return {};
  return p;
}

// The evaluator: the [rows, inner] view and how each input is read within a row.
FusedEvaluator::FusedEvaluator(std::shared_ptr<const FusedSpec> spec, bool simd)
    : spec_(std::move(spec)), simd_(simd) {
  const std::vector<int64_t>& dims = spec_->out_dims;
  n_ = 1;
  for (int64_t d : dims) n_ *= d;
  out_strides_ = ref::RowMajorStrides(dims);
  const size_t rank = dims.size(), num = spec_->inputs.size();
  // Per input and axis: 1 when the input is contiguous over axes [k, rank), 0 when constant
  // there, -1 otherwise; the inner run is the longest suffix where every input is one or the
  // other (axes of size 1 never break it).
  read_.assign(num, Read::kContiguous);
  size_t first = rank;
  std::vector<int> kind(num, 2);  // 2: undecided (only size-1 axes so far).
  while (first > 0) {
    const size_t k = first - 1;
    bool ok = true;
    std::vector<int> next = kind;
    for (size_t i = 0; i < num && dims[k] != 1; ++i) {
      const FInput& in = spec_->inputs[i];
      const int64_t stride = in.identity ? out_strides_[k] : in.strides[k];
      const int want = stride == 0 ? 0 : stride == out_strides_[k] ? 1 : -1;
      if (want < 0 || (kind[i] != 2 && kind[i] != want)) ok = false;
      next[i] = want;
    }
    if (!ok) break;
    kind = next;
    first = k;
  }
  row_axes_ = first;
  inner_ = 1;
  for (size_t k = first; k < rank; ++k) inner_ *= dims[k];
  if (n_ == 0 || inner_ == 0) inner_ = 1;
  outer_.resize(num);
  for (size_t i = 0; i < num; ++i) {
    const FInput& in = spec_->inputs[i];
    read_[i] = kind[i] == 0 ? Read::kBroadcast : Read::kContiguous;
    for (size_t k = 0; k < first; ++k) outer_[i].push_back(in.identity ? out_strides_[k] : in.strides[k]);
    if (n_ == 0) read_[i] = Read::kGather;
  }
  // A broadcast input whose register no other instruction writes keeps its value between
  // pieces: it is filled again only when the row changes.
  keep_.assign(num, false);
  for (const FInstr& ins : spec_->code) {
    if (ins.op != FOp::kInput) continue;
    bool alone = true;
    for (const FInstr& other : spec_->code) alone = alone && (&other == &ins || other.dst != ins.dst);
    keep_[static_cast<size_t>(ins.input)] = alone;
  }
  // A multi-output group runs one pass per instruction: its extra results stay in registers of
  // the whole piece (the vector program keeps only a block of vectors).
  if (simd_ && spec_->extra.empty()) vprog_ = MakeVProgram(*spec_);
  // Short rows: pieces run over the flat result instead, and strided inputs gather (inputs
  // constant over every axis still read one value).
  if (inner_ < kMinRow && n_ > inner_) {
    inner_ = n_;
    row_axes_ = 0;
    for (size_t i = 0; i < num; ++i) {
      outer_[i].clear();
      const FInput& in = spec_->inputs[i];
      const bool constant = !in.identity && std::all_of(in.strides.begin(), in.strides.end(),
                                                        [](int64_t st) { return st == 0; });
      read_[i] = in.identity ? Read::kContiguous : constant ? Read::kBroadcast : Read::kGather;
    }
  }
}

FusedEvaluator::Scratch FusedEvaluator::NewScratch() const {
  Scratch s;
  s.regs.resize(static_cast<size_t>(std::max(spec_->num_regs, 1) * kTile));
  s.filled.assign(spec_->inputs.size(), 0);
  s.extras.assign(spec_->extra.size(), nullptr);
  for (const FInstr& ins : spec_->code)
    if (ins.op == FOp::kImm)
      std::fill(s.regs.begin() + ins.dst * kTile, s.regs.begin() + (ins.dst + 1) * kTile, ins.imm);
  if (!vprog_.code.empty()) {
    const size_t inputs = spec_->inputs.size();
    s.loads.resize(std::max<size_t>(inputs, 1) * kTile);
    s.slots.resize(vprog_.SlotFloats());
    s.tail.resize(vprog_.TailFloats());
    s.result.resize(kTile);
    s.in.assign(inputs, nullptr);
    s.tail_in.assign(inputs, nullptr);
  }
  return s;
}

void FusedEvaluator::Op(FOp op, const float* a, const float* b, const float* c, float* out,
                        size_t count) const {
  if (simd_) {
    RunFusedOpSimd(op, a, b, c, out, count);
  } else {
    RunFusedOpScalar(op, a, b, c, out, count);
  }
}

// Strided reads of an input for pieces that cross rows (or small rows): an index walk.
void FusedEvaluator::Gather(size_t input, const uint8_t* data, int64_t start, int64_t len, float* dst) const {
  const FInput& in = spec_->inputs[input];
  const size_t rank = out_strides_.size();
  const std::vector<int64_t>& dims = spec_->out_dims;
  if (in.identity || rank == 0) {
    ConvertToF32Simd(in.dtype, data + (rank == 0 ? 0 : start) * DTypeBits(in.dtype) / 8, dst,
                     static_cast<size_t>(len));
    return;
  }
  const int64_t bytes = DTypeBits(in.dtype) / 8;
  int64_t index[16] = {}, rest = start, offset = 0;
  for (size_t k = 0; k < rank; ++k) {
    index[k] = rest / out_strides_[k];
    rest %= out_strides_[k];
    offset += index[k] * in.strides[k];
  }
  const int64_t inner = dims[rank - 1], inner_stride = in.strides[rank - 1];
  int64_t i = 0;
  while (i < len) {
    const int64_t count = std::min(len - i, inner - index[rank - 1]);
    if (inner_stride == 0) {
      std::fill(dst + i, dst + i + count, LoadAs(in.dtype, data, offset));
    } else if (inner_stride == 1 && count >= 16) {
      ConvertToF32Simd(in.dtype, data + offset * bytes, dst + i, static_cast<size_t>(count));
    } else {
      for (int64_t j = 0; j < count; ++j) dst[i + j] = LoadAs(in.dtype, data, offset + j * inner_stride);
    }
    i += count;
    offset += count * inner_stride;
    index[rank - 1] += count;
    for (size_t k = rank - 1; k > 0 && index[k] == dims[k]; --k) {  // Carry into the outer axes.
      offset -= index[k] * in.strides[k];
      index[k] = 0;
      ++index[k - 1];
      offset += in.strides[k - 1];
    }
  }
}

// Within a row: a pointer into Float32 data, a vectorised conversion, or one value repeated.
void FusedEvaluator::Load(size_t input, const uint8_t* data, int64_t start, int64_t len, float* dst,
                          int64_t& filled, const float** at) const {
  const FInput& in = spec_->inputs[input];
  const int64_t row = start / inner_, col = start % inner_;
  if (read_[input] == Read::kGather || col + len > inner_) {
    Gather(input, data, start, len, dst);
    filled = 0;
    *at = dst;
    return;
  }
  int64_t offset = 0, rest = row;
  for (size_t k = row_axes_; k-- > 0;) {
    const int64_t d = spec_->out_dims[k];
    offset += (rest % d) * outer_[input][k];
    rest /= d;
  }
  const int64_t bytes = DTypeBits(in.dtype) / 8;
  if (read_[input] == Read::kBroadcast) {
    *at = dst;
    if (keep_[input] && filled == offset + 1) return;
    FillSimd(dst, LoadAs(in.dtype, data, offset), static_cast<size_t>(keep_[input] ? kTile : len));
    filled = offset + 1;
    return;
  }
  offset += col;
  if (in.dtype == DType::Float32) {
    *at = reinterpret_cast<const float*>(data) + offset;
    return;
  }
  ConvertToF32Simd(in.dtype, data + offset * bytes, dst, static_cast<size_t>(len));
  *at = dst;
}

// The loads once over the piece, then the whole program per block of vectors.
const float* FusedEvaluator::EvalVector(std::span<const uint8_t* const> in, int64_t start, int64_t len,
                                        Scratch& scratch, float* direct) const {
  for (const FInstr& ins : spec_->code) {
    if (ins.op != FOp::kInput) continue;
    const auto i = static_cast<size_t>(ins.input);
    Load(i, in[i], start, len, scratch.loads.data() + i * kTile, scratch.filled[i], &scratch.in[i]);
  }
  float* out = direct != nullptr ? direct : scratch.result.data();
  RunVProgramSimd(vprog_, scratch.in.data(), out, static_cast<size_t>(len), scratch.slots.data(),
                  scratch.tail.data(), scratch.tail_in.data());
  return out;
}

// The program once over the piece: loads, then each op over the piece's registers.
const float* FusedEvaluator::Eval(std::span<const uint8_t* const> in, int64_t start, int64_t len,
                                  Scratch& scratch, float* direct) const {
  if (!vprog_.code.empty() && UseVProgramSimd()) return EvalVector(in, start, len, scratch, direct);
  const FusedSpec& s = *spec_;
  float* regs = scratch.regs.data();
  const float* rp[256];
  const size_t last = s.code.size() - 1;
  for (size_t k = 0; k < s.code.size(); ++k) {
    const FInstr& ins = s.code[k];
    float* own = regs + ins.dst * kTile;
    if (ins.op == FOp::kImm) {
      rp[ins.dst] = own;
    } else if (ins.op == FOp::kInput) {
      const auto i = static_cast<size_t>(ins.input);
      Load(i, in[i], start, len, own, scratch.filled[i], &rp[ins.dst]);
    } else {
      float* w = k == last && direct != nullptr && ins.dst == s.result ? direct : own;
      Op(ins.op, rp[ins.a], rp[ins.b], rp[ins.c], w, static_cast<size_t>(len));
      rp[ins.dst] = w;
    }
  }
  for (size_t k = 0; k < s.extra.size(); ++k) scratch.extras[k] = rp[s.extra[k].reg];
  return rp[s.result];
}

// Checks the spec against the node and packs what the kernel needs.
KernelChoice MakeFusedKernel(CpuBackend& backend, int threads, const Node& node,
                             const std::vector<Shape>& operands) {
  if (operands.size() != node.fused->inputs.size()) {
    detail::Throw("backend \"cpu\": fused node {} has {} operands, its program reads {} inputs",
                  OpName(node.inst.op), operands.size(), node.fused->inputs.size());
  }
  if (node.fused->out_dims.size() > 16)
    detail::Throw("backend \"cpu\": fused node of rank {} (at most 16)", node.fused->out_dims.size());
  if (node.fused->num_regs > 256)
    detail::Throw("backend \"cpu\": fused node with {} registers (at most 256)", node.fused->num_regs);
  if (GetOpCategory(node.inst.op) == OpCategory::Reduce)
    return MakeFusedReduceKernel(backend, threads, node, operands);
  FusedRunner r;
  r.eval = std::make_shared<const FusedEvaluator>(node.fused, backend.options().simd);
  r.threads = std::max(1, threads);
  r.work = r.eval->size() * FusedCost(*node.fused);
  std::string name =
      fmt::format("fused[{}]{}", node.fused->ops.size(), backend.options().simd ? "" : ".scalar");
  return {Kernel(std::move(r)), std::move(name)};
}

}  // namespace kiln::compute::cpu
