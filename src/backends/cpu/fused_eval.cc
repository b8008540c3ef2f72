// The fused evaluator: a FusedSpec over pieces of its result (kTile elements inside a row of the
// [rows, inner] view; registers are float32 arrays of one piece), inputs read in place, by
// vectorised conversion, as one broadcast value per row or by strided gathers, and the ops run
// with SIMD (fused_simd.h: on AVX3 the whole program per block of vectors, elsewhere one pass per
// instruction) or their scalar form (`simd=scalar`).

#include "backends/cpu/fused_eval.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/fused_simd.h"
#include "backends/ref/ref_kernels.h"

namespace kiln::compute::cpu {

// The evaluator: the [rows, inner] view and how each input is read within a row.
FusedEvaluator::FusedEvaluator(std::shared_ptr<const FusedSpec> spec, bool simd, bool jit,
                               ComputedInput computed)
    : spec_(std::move(spec)), computed_(std::move(computed)), simd_(simd) {
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
  // the whole piece (the vector program keeps only a block of vectors). Extra results that are
  // the result itself (a fused reduction that also stores its operand) need no register.
  const bool extras_are_result =
      std::all_of(spec_->extra.begin(), spec_->extra.end(),
                  [&](const FusedSpec::Extra& e) { return e.reg == spec_->result; });
  if (simd_ && extras_are_result) vprog_ = MakeVProgram(*spec_);
  if (jit && !vprog_.code.empty()) jit_ = VProgramJit::Compile(vprog_);
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

namespace {

/// The calling thread's spare Scratch objects (their buffers keep their capacity).
std::vector<std::unique_ptr<FusedEvaluator::Scratch>>& ScratchPool() {
  thread_local std::vector<std::unique_ptr<FusedEvaluator::Scratch>> pool;
  return pool;
}

}  // namespace

FusedEvaluator::ScratchLease::~ScratchLease() {
  if (s_) ScratchPool().push_back(std::move(s_));
}

FusedEvaluator::ScratchLease FusedEvaluator::NewScratch() const {
  std::vector<std::unique_ptr<Scratch>>& pool = ScratchPool();
  std::unique_ptr<Scratch> held;
  if (pool.empty()) {
    held = std::make_unique<Scratch>();
  } else {
    held = std::move(pool.back());
    pool.pop_back();
  }
  Scratch& s = *held;
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
  return ScratchLease(std::move(held));
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
  int64_t index[kMaxFusedRank] = {}, rest = start, offset = 0;
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
      std::fill(dst + i, dst + i + count, LoadAsF32(in.dtype, data, offset));
    } else if (inner_stride == 1 && count >= 16) {
      ConvertToF32Simd(in.dtype, data + offset * bytes, dst + i, static_cast<size_t>(count));
    } else {
      for (int64_t j = 0; j < count; ++j) dst[i + j] = LoadAsF32(in.dtype, data, offset + j * inner_stride);
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
void FusedEvaluator::Load(size_t input, std::span<const uint8_t* const> inputs, int64_t start, int64_t len,
                          float* dst, int64_t& filled, const float** at) const {
  if (static_cast<int>(input) == computed_.input) {
    computed_.fill(inputs, start, len, dst);
    filled = 0;
    *at = dst;
    return;
  }
  const uint8_t* data = inputs[input];
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
    FillSimd(dst, LoadAsF32(in.dtype, data, offset), static_cast<size_t>(keep_[input] ? kTile : len));
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
    Load(i, in, start, len, scratch.loads.data() + i * kTile, scratch.filled[i], &scratch.in[i]);
  }
  float* out = direct != nullptr ? direct : scratch.result.data();
  std::fill(scratch.extras.begin(), scratch.extras.end(), out);  // Each is the result (above).
  const auto n = static_cast<size_t>(len);
  size_t done = 0;
  const float* const* at = scratch.in.data();
  const float* rest[VProgramJit::kMaxInputs];
  if (jit_ != nullptr) {
    // Whole blocks as compiled code; the rest (under a block) through the interpreter.
    const size_t blocks = n / VProgramJit::kBlock;
    jit_->Run(at, out, blocks, scratch.slots.data());
    done = blocks * VProgramJit::kBlock;
    if (done == n) return out;
    for (int k = 0; k < vprog_.num_inputs; ++k) rest[k] = at[k] != nullptr ? at[k] + done : nullptr;
    at = rest;
  }
  RunVProgramSimd(vprog_, at, out + done, n - done, scratch.slots.data(), scratch.tail.data(),
                  scratch.tail_in.data());
  return out;
}

// The program once over the piece: loads, then each op over the piece's registers.
const float* FusedEvaluator::Eval(std::span<const uint8_t* const> in, int64_t start, int64_t len,
                                  Scratch& scratch, float* direct) const {
  if (!vprog_.code.empty() && UseVProgramSimd()) return EvalVector(in, start, len, scratch, direct);
  const FusedSpec& s = *spec_;
  float* regs = scratch.regs.data();
  const float* rp[kMaxFusedRegisters];
  const size_t last = s.code.size() - 1;
  for (size_t k = 0; k < s.code.size(); ++k) {
    const FInstr& ins = s.code[k];
    float* own = regs + ins.dst * kTile;
    if (ins.op == FOp::kImm) {
      rp[ins.dst] = own;
    } else if (ins.op == FOp::kInput) {
      const auto i = static_cast<size_t>(ins.input);
      Load(i, in, start, len, own, scratch.filled[i], &rp[ins.dst]);
    } else {
      float* w = k == last && direct != nullptr && ins.dst == s.result ? direct : own;
      Op(ins.op, rp[ins.a], rp[ins.b], rp[ins.c], w, static_cast<size_t>(len));
      rp[ins.dst] = w;
    }
  }
  for (size_t k = 0; k < s.extra.size(); ++k) scratch.extras[k] = rp[s.extra[k].reg];
  return rp[s.result];
}

std::vector<std::vector<uint8_t>> FusedEvaluator::CopyInputsWrittenOver(
    std::vector<const uint8_t*>& in, const std::vector<const uint8_t*>& written) const {
  const FusedSpec& spec = *spec_;
  std::vector<std::vector<uint8_t>> copies;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const FInput& fi = spec.inputs[i];
    const bool elementwise = fi.identity && static_cast<int>(i) != computed_.input;
    if (elementwise || std::find(written.begin(), written.end(), in[i]) == written.end()) continue;
    int64_t count = 1;
    for (size_t k = 0; k < fi.strides.size(); ++k) count = std::max(count, fi.strides[k] * spec.out_dims[k]);
    copies.emplace_back(in[i], in[i] + count * DTypeBits(fi.dtype) / 8);
    in[i] = copies.back().data();
  }
  return copies;
}

}  // namespace kiln::compute::cpu
