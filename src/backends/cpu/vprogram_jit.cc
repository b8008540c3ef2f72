// The vector program compiler (vprogram_jit.h): one AVX-512 function per program, generated with
// Xbyak.
//
// The function is f(in, out, blocks, slots). Registers: rbx the input pointer array, rbp `out`,
// r12 the block's byte offset, r13 `slots`, r14 the blocks left (all callee-saved, so they survive
// the calls to the interpreter's Exp and Logistic); zmm0-3 the accumulator (the block's four
// vectors), zmm4-15 operands and results, zmm16-31 ExpInRange's temporaries, k1-k7 masks.
// Constants live after the code and are read as broadcast memory operands. Each op is the
// instruction sequence Highway's AVX3 target compiles the interpreter's form to (fused_simd.cc:
// Apply, ExtremeImm, MaxOf, MinOf, Logistic, RoundBF16; simd_exp-inl.h: ExpInRange), so the bits
// are the same.

#include "backends/cpu/vprogram_jit.h"

#include <immintrin.h>  // The _CMP_* predicates and _MM_FROUND_* modes.

#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>

#include <xbyak/xbyak.h>
#include <xbyak/xbyak_util.h>

#include "backends/cpu/fused_simd.h"

namespace kiln::compute::cpu {

namespace {

constexpr int kLanes = 16;
constexpr int kVecBytes = kLanes * 4;
constexpr int kBlockBytes = 4 * kVecBytes;

/// Unary op kOp over one block (64 floats at x, into r) through the interpreter's form: the
/// compiled code calls it for blocks with lanes outside its SIMD form's range, which take the
/// op's scalar form.
template <FOp kOp>
void OpBlock(const float* x, float* r) {
  RunFusedOpSimd(kOp, x, x, x, r, VProgramJit::kBlock);
}

}  // namespace

class VProgramJit::Code : public Xbyak::CodeGenerator {
 public:
  explicit Code(size_t max_size) : Xbyak::CodeGenerator(max_size, Xbyak::DontSetProtectRWE) {}

  /// Emits the program (every op has an emitter: EmitterOf).
  void Emit(const VProgram& prog) {
    using namespace Xbyak;
    // Prologue: six callee-saved registers pushed (rsp is then 8 mod 16), then the two blocks of
    // spill area the Exp call uses, keeping rsp 16-byte aligned at the call.
    push(rbx);
    push(rbp);
    push(r12);
    push(r13);
    push(r14);
    push(r15);
    sub(rsp, 2 * kBlockBytes + 8);
    mov(rbx, rdi);
    mov(rbp, rsi);
    xor_(r12, r12);
    mov(r13, rcx);
    mov(r14, rdx);
    Label loop, done;
    L(loop);
    test(r14, r14);
    jz(done, T_NEAR);
    for (const VInstr& ins : prog.code) {
      (this->*EmitterOf(ins.op))(ins);
      if (ins.save >= 0) {
        for (int v = 0; v < 4; ++v) vmovups(ptr[r13 + ins.save * kBlockBytes + v * kVecBytes], Zmm(v));
      }
    }
    if (prog.result_src == VSrc::kSlot) {
      for (int v = 0; v < 4; ++v) vmovups(Zmm(v), ptr[r13 + prog.result_idx * kBlockBytes + v * kVecBytes]);
    }
    for (int v = 0; v < 4; ++v) vmovups(ptr[rbp + r12 + v * kVecBytes], Zmm(v));
    add(r12, kBlockBytes);
    dec(r14);
    jmp(loop, T_NEAR);
    L(done);
    vzeroupper();
    add(rsp, 2 * kBlockBytes + 8);
    pop(r15);
    pop(r14);
    pop(r13);
    pop(r12);
    pop(rbp);
    pop(rbx);
    ret();
    // The constants, each read as a broadcast operand.
    align(16);
    for (auto& [bits, label] : constants_) {
      L(label);
      dd(bits);
    }
  }

  /// Emits one instruction of the block.
  using Emitter = void (Code::*)(const VInstr&);

  /// The emitter of `op`'s instructions, null for an op without a compiled form.
  static Emitter EmitterOf(FOp op) {
    switch (op) {
      case FOp::kInput:
      case FOp::kImm:
        return &Code::EmitNothing;
      case FOp::kAdd:
      case FOp::kSub:
      case FOp::kMul:
      case FOp::kDiv:
        return &Code::EmitArith;
      case FOp::kMax:
      case FOp::kMin:
        return &Code::EmitExtreme;
      case FOp::kNeg:
      case FOp::kAbs:
      case FOp::kSqrt:
        return &Code::EmitUnary;
      case FOp::kExp:
        return &Code::EmitExp;
      case FOp::kLogistic:
        return &Code::EmitLogistic;
      case FOp::kRoundF16:
      case FOp::kRoundBF16:
        return &Code::EmitRoundHalf;
      case FOp::kEqual:
      case FOp::kNotEqual:
      case FOp::kLess:
      case FOp::kLessOrEqual:
      case FOp::kGreater:
      case FOp::kGreaterOrEqual:
        return &Code::EmitCompare;
      case FOp::kWhere:
        return &Code::EmitWhere;
      default:
        return nullptr;
    }
  }

 private:
  /// A broadcast operand of constant `value` (by its bits: -0 and +0 are different constants).
  Xbyak::Address Const(float value) { return ptr_b[rip + constants_[std::bit_cast<uint32_t>(value)]]; }
  Xbyak::Address ConstInt(uint32_t bits) { return ptr_b[rip + constants_[bits]]; }
  /// Constant `value` as a scalar memory operand (VBROADCASTSS's source).
  Xbyak::Address Scalar(float value) { return dword[rip + constants_[std::bit_cast<uint32_t>(value)]]; }

  /// Vector v of operand w of `ins` in memory (an input's values or a slot); `base` is loaded
  /// with the input's pointer when the operand is an input.
  Xbyak::Address Mem(const VInstr& ins, int w, int v, const Xbyak::Reg64& base) {
    if (ins.src[w] == VSrc::kInput) return ptr[base + r12 + v * kVecBytes];
    return ptr[r13 + ins.idx[w] * kBlockBytes + v * kVecBytes];
  }
  /// Loads input operand w's pointer into `base` (nothing for other operands).
  void LoadBase(const VInstr& ins, int w, const Xbyak::Reg64& base) {
    if (ins.src[w] == VSrc::kInput) mov(base, ptr[rbx + ins.idx[w] * 8]);
  }

  /// Operand w of `ins` for vector v in a register: the accumulator's, or `scratch` loaded.
  Xbyak::Zmm InReg(const VInstr& ins, int w, int v, const Xbyak::Zmm& scratch, const Xbyak::Reg64& base) {
    switch (ins.src[w]) {
      case VSrc::kInput:
      case VSrc::kSlot:
        vmovups(scratch, Mem(ins, w, v, base));
        return scratch;
      case VSrc::kImm:
        vbroadcastss(scratch, Scalar(ins.imm[w]));
        return scratch;
      default:
        return Xbyak::Zmm(v);
    }
  }

  /// Calls emit(y) with operand w of `ins` for vector v as an instruction's last source, which
  /// x86 takes from a register, memory or a broadcast constant.
  template <class F>
  void WithLast(const VInstr& ins, int w, int v, const Xbyak::Reg64& base, F emit) {
    if (ins.src[w] == VSrc::kImm) {
      emit(Const(ins.imm[w]));
    } else if (InMemory(ins.src[w])) {
      emit(Mem(ins, w, v, base));
    } else {
      emit(Xbyak::Zmm(v));
    }
  }

  /// Input and Imm: the interpreter leaves the accumulator as it is.
  void EmitNothing(const VInstr&) {}

  /// A comparison: 1 where it holds, else 0 (NotEqual, not EQ_OQ, holds for NaN as C++'s != does).
  void EmitCompare(const VInstr& ins) {
    using namespace Xbyak;
    const uint8_t pred = ins.op == FOp::kEqual         ? _CMP_EQ_OQ
                         : ins.op == FOp::kNotEqual    ? _CMP_NEQ_UQ
                         : ins.op == FOp::kLess        ? _CMP_LT_OQ
                         : ins.op == FOp::kLessOrEqual ? _CMP_LE_OQ
                         : ins.op == FOp::kGreater     ? _CMP_GT_OQ
                                                       : _CMP_GE_OQ;
    LoadBase(ins, 0, rax);
    LoadBase(ins, 1, r10);
    for (int v = 0; v < 4; ++v) {
      const Zmm x = InReg(ins, 0, v, Zmm(4 + v), rax);
      WithLast(ins, 1, v, r10, [&](const Operand& y) { vcmpps(k5, x, y, pred); });
      vbroadcastss(Zmm(v) | k5 | T_z, Scalar(1.0f));
    }
  }

  /// Where: y where x is not zero (NaN included), else z.
  void EmitWhere(const VInstr& ins) {
    using namespace Xbyak;
    LoadBase(ins, 0, rax);
    LoadBase(ins, 1, r10);
    LoadBase(ins, 2, r11);
    for (int v = 0; v < 4; ++v) {
      const Zmm x = InReg(ins, 0, v, Zmm(4 + v), rax);
      const Zmm z = InReg(ins, 2, v, Zmm(8 + v), r11);
      vcmpps(k5, x, Const(0.0f), _CMP_NEQ_UQ);
      WithLast(ins, 1, v, r10, [&](const Operand& y) { vblendmps(Zmm(v) | k5, z, y); });
    }
  }

  /// x op y for the four vectors: x in a register, y a register, memory or a broadcast.
  void EmitArith(const VInstr& ins) {
    using namespace Xbyak;
    LoadBase(ins, 0, rax);
    LoadBase(ins, 1, r10);
    for (int v = 0; v < 4; ++v) {
      const Zmm x = InReg(ins, 0, v, Zmm(4 + v), rax);
      const Zmm dst(v);
      auto apply = [&](const Operand& y) {
        switch (ins.op) {
          case FOp::kAdd:
            vaddps(dst, x, y);
            break;
          case FOp::kSub:
            vsubps(dst, x, y);
            break;
          case FOp::kMul:
            vmulps(dst, x, y);
            break;
          default:
            vdivps(dst, x, y);
            break;
        }
      };
      WithLast(ins, 1, v, r10, apply);
    }
  }

  /// Max or Min: with an immediate c (not NaN, and not Min with -0) the interpreter's ExtremeImm
  /// (VMAXPS(c, x), plus a zero of c's sign for Max); otherwise MaxOf / MinOf.
  void EmitExtreme(const VInstr& ins) {
    using namespace Xbyak;
    const bool max = ins.op == FOp::kMax;
    const int w = ins.src[1] == VSrc::kImm ? 1 : ins.src[0] == VSrc::kImm ? 0 : -1;
    const float c = w >= 0 ? ins.imm[w] : 0.0f;
    if (w >= 0 && !std::isnan(c) && !(!max && c == 0.0f && std::signbit(c))) {
      const int o = 1 - w;
      LoadBase(ins, o, rax);
      const Zmm cv(12);
      vbroadcastss(cv, Scalar(c));
      const float zero = c == 0.0f && !std::signbit(c) ? 0.0f : -0.0f;
      for (int v = 0; v < 4; ++v) {
        const Zmm dst(v);
        WithLast(ins, o, v, rax, [&](const Operand& y) { max ? vmaxps(dst, cv, y) : vminps(dst, cv, y); });
        if (max) vaddps(dst, dst, Const(zero));
      }
      return;
    }
    // MaxOf(a, b): a NaN a wins, then equal values take a & b (Max) or a | b (Min), then the
    // greater (lesser) of the two, else b.
    LoadBase(ins, 0, rax);
    LoadBase(ins, 1, r10);
    for (int v = 0; v < 4; ++v) {
      const Zmm a = InReg(ins, 0, v, Zmm(4 + v), rax);
      const Zmm b = InReg(ins, 1, v, Zmm(8 + v), r10);
      const Zmm r(12 + v);
      vcmpps(k5, a, b, _CMP_EQ_OQ);
      vcmpps(k6, a, b, max ? _CMP_GT_OQ : _CMP_LT_OQ);
      vcmpps(k7, a, a, _CMP_UNORD_Q);
      vmovaps(r, b);
      vmovaps(r | k6, a);
      max ? vpandd(r | k5, a, b) : vpord(r | k5, a, b);
      vmovaps(r | k7, a);
      vmovaps(Zmm(v), r);
    }
  }

  /// Neg (sign bit flipped), Abs (sign bit cleared), Sqrt.
  void EmitUnary(const VInstr& ins) {
    using namespace Xbyak;
    LoadBase(ins, 0, rax);
    for (int v = 0; v < 4; ++v) {
      const Zmm x = InReg(ins, 0, v, Zmm(4 + v), rax);
      const Zmm dst(v);
      if (ins.op == FOp::kNeg) {
        vpxord(dst, x, ConstInt(0x80000000u));
      } else if (ins.op == FOp::kAbs) {
        vpandd(dst, x, ConstInt(0x7FFFFFFFu));
      } else {
        vsqrtps(dst, x);
      }
    }
  }

  /// Operand 0 of `ins` into the accumulator's registers (zmm0-3).
  void OperandToAcc(const VInstr& ins) {
    using namespace Xbyak;
    LoadBase(ins, 0, rax);
    for (int v = 0; v < 4; ++v) {
      const Zmm x = InReg(ins, 0, v, Zmm(4 + v), rax);
      if (x.getIdx() != v) vmovaps(Zmm(v), x);
    }
  }

  /// out = ExpInRange(x) (simd_exp-inl.h), with temporaries zmm[base, base + 7).
  void EmitExpInRange(const Xbyak::Zmm& x, const Xbyak::Zmm& out, int base) {
    using namespace Xbyak;
    const Zmm q(base), r(base + 1), a(base + 2), b(base + 3), c(base + 4), x2(base + 5), x4(base + 6);
    // q: x / ln 2 plus half with x's sign, truncated.
    vpandd(q, x, ConstInt(0x80000000u));
    vpord(q, q, Const(0.5f));
    vfmadd231ps(q, x, Const(1.442695040888963407359924681f));
    vrndscaleps(q, q, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    // r = x - q ln 2, ln 2 in two parts.
    vmovaps(r, x);
    vfmadd231ps(r, q, Const(-0.693145751953125f));
    vfmadd231ps(r, q, Const(-1.428606765330187045e-6f));
    // Highway's ExpPoly: Estrin's scheme, then r + r^2 * p, plus one.
    vmulps(x2, r, r);
    vmulps(x4, x2, x2);
    vbroadcastss(a, Scalar(+0.000198527617612853646278381f));
    vfmadd213ps(a, r, Const(+0.00139304355252534151077271f));
    vbroadcastss(b, Scalar(+0.00833336077630519866943359f));
    vfmadd213ps(b, r, Const(+0.0416664853692054748535156f));
    vbroadcastss(c, Scalar(+0.166666671633720397949219f));
    vfmadd213ps(c, r, Const(+0.5f));
    vfmadd213ps(b, x2, c);
    vfmadd213ps(a, x4, b);
    vfmadd213ps(a, x2, r);
    vaddps(a, a, Const(1.0f));
    vscalefps(out, a, q);
  }

  /// k(1 + v) = lo <= x <= hi for vector v's x (zmm v).
  void InRange(int v, float lo, float hi) {
    const Xbyak::Opmask k(1 + v);
    vcmpps(k, Xbyak::Zmm(v), Const(lo), _CMP_GE_OQ);
    vcmpps(k | k, Xbyak::Zmm(v), Const(hi), _CMP_LE_OQ);
  }

  /// The op's results are in zmm4-7 and k1-k4 mark the lanes its SIMD form covers: where a lane
  /// of the block is not covered, the whole block again through the interpreter's form of the op
  /// (`block`: x at its first argument, the result to its second), which takes the op's scalar
  /// form there. Then the results become the accumulator.
  void FixLanes(void (*block)(const float*, float*)) {
    using namespace Xbyak;
    Label covered;
    kandw(k1, k1, k2);
    kandw(k3, k3, k4);
    kandw(k1, k1, k3);
    kortestw(k1, k1);
    jc(covered, T_NEAR);
    for (int v = 0; v < 4; ++v) vmovups(ptr[rsp + v * kVecBytes], Zmm(v));
    mov(rdi, rsp);
    lea(rsi, ptr[rsp + kBlockBytes]);
    mov(rax, reinterpret_cast<uintptr_t>(block));
    call(rax);
    for (int v = 0; v < 4; ++v) vmovups(Zmm(4 + v), ptr[rsp + kBlockBytes + v * kVecBytes]);
    L(covered);
    for (int v = 0; v < 4; ++v) vmovaps(Zmm(v), Zmm(4 + v));
  }

  /// Exp: ExpInRange where x is in [-87, 88.5] (not NaN), the interpreter's Exp for blocks with
  /// other lanes.
  void EmitExp(const VInstr& ins) {
    OperandToAcc(ins);
    for (int v = 0; v < 4; ++v) {
      EmitExpInRange(Xbyak::Zmm(v), Xbyak::Zmm(4 + v), 16 + 8 * (v % 2));
      InRange(v, -87.0f, 88.5f);
    }
    FixLanes(&OpBlock<FOp::kExp>);
  }

  /// Logistic (fused_simd.cc): e = ExpInRange(-|x|), then (x >= 0 ? 1 : e) / (1 + e) where x is
  /// in [-87, 87], the interpreter's Logistic for blocks with other lanes.
  void EmitLogistic(const VInstr& ins) {
    using namespace Xbyak;
    OperandToAcc(ins);
    for (int v = 0; v < 4; ++v) {
      const int base = 16 + 8 * (v % 2);
      const Zmm x(v), e(4 + v), n(8 + v), num(12 + v), den(base + 7);
      vpandd(n, x, ConstInt(0x7FFFFFFFu));
      vpxord(n, n, ConstInt(0x80000000u));
      EmitExpInRange(n, e, base);
      vcmpps(k5, x, Const(0.0f), _CMP_GE_OQ);
      vblendmps(num | k5, e, Const(1.0f));
      vaddps(den, e, Const(1.0f));
      vdivps(e, num, den);
      InRange(v, -87.0f, 87.0f);
    }
    FixLanes(&OpBlock<FOp::kLogistic>);
  }

  /// The nearest Float16 (F16C's conversion, ties to even; NaN kept) or BFloat16 (the bits
  /// rounded to their upper half, ties to even; NaN quieted in its upper half).
  void EmitRoundHalf(const VInstr& ins) {
    using namespace Xbyak;
    OperandToAcc(ins);
    for (int v = 0; v < 4; ++v) {
      const Zmm x(v), t(4 + v), n(8 + v);
      if (ins.op == FOp::kRoundF16) {
        vcvtps2ph(Ymm(8 + v), x, _MM_FROUND_NO_EXC);  // To nearest even, as Highway's DemoteTo.
        vcvtph2ps(t, Ymm(8 + v));
        vcmpps(k5, x, x, _CMP_UNORD_Q);
        vmovaps(t | k5, x);
      } else {
        vpsrld(t, x, 16);
        vpandd(t, t, ConstInt(1u));
        vpaddd(t, t, x);
        vpaddd(t, t, ConstInt(0x7FFFu));
        vpandd(t, t, ConstInt(0xFFFF0000u));
        vpandd(n, x, ConstInt(0xFFFF0000u));
        vpord(n, n, ConstInt(0x00400000u));
        vcmpps(k5, x, x, _CMP_UNORD_Q);
        vmovaps(t | k5, n);
      }
      vmovaps(x, t);
    }
  }

  std::map<uint32_t, Xbyak::Label> constants_;
};

bool VProgramJit::CompilesOp(FOp op) { return Code::EmitterOf(op) != nullptr; }

std::unique_ptr<VProgramJit> VProgramJit::Compile(const VProgram& prog) {
  static const bool avx512 = [] {
    const Xbyak::util::Cpu cpu;
    return cpu.has(Xbyak::util::Cpu::tAVX512F);
  }();
  if (!avx512 || prog.code.empty() || prog.num_inputs > kMaxInputs) return nullptr;
  for (const VInstr& ins : prog.code) {
    if (!CompilesOp(ins.op)) return nullptr;
  }
  try {
    // About a kilobyte per instruction at most (Exp: four vectors of 19 instructions and the
    // call), plus the loop and the constants.
    auto code = std::make_unique<Code>(4096 + 2048 * prog.code.size());
    code->Emit(prog);
    code->setProtectModeRE();
    const Fn fn = code->getCode<Fn>();
    return std::unique_ptr<VProgramJit>(new VProgramJit(std::move(code), fn));
  } catch (const Xbyak::Error&) {
    return nullptr;  // No executable memory to be had (or a program past the size bound).
  }
}

VProgramJit::VProgramJit(std::unique_ptr<Code> code, Fn fn) : code_(std::move(code)), fn_(fn) {}

VProgramJit::~VProgramJit() = default;

}  // namespace kiln::compute::cpu
