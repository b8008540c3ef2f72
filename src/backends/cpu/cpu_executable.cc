// The cpu executable: compiles a Program (compiler.h) into a flat list of steps over
// pre-planned memory, then runs it: intermediates in one arena per execution (from the pool),
// outputs in pool buffers or in donated inputs; a program whose kernels all split their work
// through kiln runs each execution on one program team (team.h).

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "backends/cpu/compiler.h"
#include "backends/cpu/cost_model.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/plan.h"
#include "backends/cpu/simd_target.h"
#include "backends/cpu/step_profile.h"
#include "backends/cpu/team.h"
#include "core/check.h"

namespace kiln::compute::cpu {

namespace {

/// Where a value lives during an execution.
enum class Loc : uint8_t { kNone, kParam, kConst, kArena, kOutput, kAlias, kTupleElement };

enum class StepKind : uint8_t { kKernel, kTuple, kAlias, kTupleElement };

struct Step {
  StepKind kind;
  int value;  ///< The value the step defines (the tuple op's node for kTuple).
  std::vector<int> operands;
  Kernel kernel;
  TupleKernel tuple;
  int source = -1, index = 0;  ///< kAlias: the aliased value; kTupleElement: tuple slot and result.
  std::string name;
  /// kTuple: the kernel may write over operands it is given as buffers of their own
  /// (TupleKernelChoice::overwrites_operands).
  bool overwrites_operands = false;
  /// kTuple with overwrites_operands: per operand, the parameter whose own buffer it gets when
  /// donated (the operand is that parameter's whole value, read by no later step and by no other
  /// operand), else -1.
  std::vector<int> reusable = {};
  /// The kernel spreads its work over threads of its own (KernelChoice::own_threads).
  bool own_threads = false;
  /// KernelChoice::team_work.
  bool team_work = false;
};

struct Value {
  Loc loc = Loc::kNone;
  int64_t bytes = 0;
  int64_t offset = -1;       ///< kArena.
  int param = -1;            ///< kParam.
  int output = -1;           ///< kOutput: the output position whose buffer holds it.
  int source = -1;           ///< kAlias: the value it aliases; kTupleElement: the tuple op.
  int64_t alias_offset = 0;  ///< kAlias: where in the aliased value's bytes it starts (a Slice).
  int index = 0;             ///< kTupleElement: which of the tuple's results.
  /// kOutput: donatable parameters whose buffer may hold it (dead by then, or read in place).
  std::vector<int> donors;
};

/// Ops whose result is their operand's bytes unchanged: no kernel, the value aliases it.
bool IsAlias(const Instruction& inst, const Shape& operand) {
  if (inst.op == OpType::Reshape || inst.op == OpType::StopGradient) return true;
  if (inst.op == OpType::Bitcast) return inst.shape.ByteSize() == operand.ByteSize();
  if (inst.op == OpType::ConvertDType) return inst.shape.dtype() == operand.dtype();
  return false;
}

/// The byte offset in its operand of a Slice whose result is one contiguous run of the
/// operand's bytes (unit strides; the axes after the last sliced one kept whole, the axes before
/// it of size 1 in the result), or -1.
int64_t ContiguousSliceOffset(const Instruction& inst, const Shape& operand) {
  if (inst.op != OpType::Slice || operand.IsDynamic() || DTypeBits(operand.dtype()) % 8 != 0) return -1;
  const OpAttributes& at = inst.attrs;
  const std::vector<int64_t>& dims = operand.Dimensions();
  const size_t rank = dims.size();
  if (at.starts.size() != rank || at.limits.size() != rank || at.strides.size() != rank) return -1;
  size_t last = rank;  // The last axis the slice does not keep whole (rank: none).
  for (size_t a = 0; a < rank; ++a) {
    if (at.strides[a] != 1) return -1;
    if (at.starts[a] != 0 || at.limits[a] != dims[a]) last = a;
  }
  if (last == rank) return 0;
  for (size_t a = 0; a < last; ++a)
    if (at.limits[a] - at.starts[a] != 1) return -1;
  int64_t offset = 0, stride = DTypeBits(operand.dtype()) / 8;
  for (size_t a = rank; a-- > 0;) {
    if (a <= last) offset += at.starts[a] * stride;
    stride *= dims[a];
  }
  return offset;
}

using Clock = std::chrono::steady_clock;

/// Nanoseconds from t0 to now (KILN_CPU_PROFILE).
int64_t NanosSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

/// A 64-byte aligned copy of a Constant's bytes.
struct ConstBytes {
  std::unique_ptr<uint8_t[]> data;
  explicit ConstBytes(const Tensor& t)
      : data(new uint8_t[static_cast<size_t>(std::max<int64_t>(t.shape().ByteSize(), 1))]) {
    t.ConstBytes([&](std::span<const uint8_t> b) {
      if (!b.empty()) std::memcpy(data.get(), b.data(), b.size());
    });
  }
};

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(CpuBackend* backend, std::shared_ptr<const Program> program)
      : backend_(backend), keep_backend_(backend->weak_from_this().lock()), program_(std::move(program)) {
    CompiledModule compiled = CompileModule(*program_, backend_->options());
    const Module& m = compiled.module;
    threads_ = ProgramThreads(m, backend_->options().threads, backend_->options().serial_work);
    ClassifyValues(m);
    ChooseKernels(m);
    UseTeamIfAllSplit(m);
    const std::vector<int> last_use = LastUses(m);
    PlanReusableOperands(last_use);
    PlanDonors(m, last_use);
    PlanArena(m, last_use);
    if (backend_->options().dump) std::cerr << "KILN_CPU_DUMP: " << compiled.report << DescribeSteps();
    if (backend_->options().profile) {
      std::vector<std::string> labels;
      for (const Step& st : steps_) {
        const Instruction& inst = m.nodes[static_cast<size_t>(st.value)].inst;
        labels.push_back(fmt::format(
            "%{} {} {}", st.value, st.name,
            inst.IsTuple() ? fmt::format("tuple of {}", inst.tuple_shapes.size()) : inst.shape.ToString()));
      }
      profile_ = std::make_unique<StepProfile>(std::move(labels));
    }
  }
  ~CpuExecutable() override {
    if (profile_ != nullptr && profile_->executions() > 0) std::cerr << profile_->Report();
  }
  CpuExecutable(const CpuExecutable&) = delete;
  CpuExecutable& operator=(const CpuExecutable&) = delete;

  const Program& program() const override { return *program_; }

  std::vector<BufferPtr> Execute(const std::vector<BufferPtr>& inputs, const std::vector<bool>& donated,
                                 int device) override;

 private:
  /// Where each value lives (Value::loc), which values alias which (root_), the constants'
  /// bytes and the tuple ops' result slots.
  void ClassifyValues(const Module& m);
  /// The steps, in node order: a kernel for each value computed in the arena or an output
  /// buffer (ChooseKernel: fused, pooling, oneDNN or reference), the tuple ops and the aliases.
  void ChooseKernels(const Module& m);
  /// Sets team_size_ to TeamThreads (else it stays 1: no team) when the backend has a team,
  /// no step spreads its work over threads of its own, and either the program runs on several
  /// threads with a sizeable kernel or a step has team work (a small program's matrix-vector
  /// products: KernelChoice::team_work). Even a single sizeable kernel gains: a product called
  /// back to back under OMP_WAIT_POLICY=PASSIVE ran 10-30% faster as row blocks on the team's
  /// spinning helpers than as oneDNN's own OpenMP region (docs/performance.md, "A persistent
  /// team").
  void UseTeamIfAllSplit(const Module& m);
  /// Per value, the last node reading it (an alias's reads count for its root); outputs live to
  /// the end.
  std::vector<int> LastUses(const Module& m) const;
  /// Whether `writer` (a node that WritesInPlace) may write over the memory of value `root`: it
  /// reads that memory through an operand it may write over (MayWriteOver) and through no other
  /// (an update that aliases the memory it is written into would be overwritten as it is read).
  bool MayWriteOverRoot(const Node& writer, int root) const;
  /// For each output a kernel writes: the donatable parameters whose buffers it may take.
  void PlanDonors(const Module& m, const std::vector<int>& last_use);
  /// For the tuple steps whose kernels may overwrite operands: which operands are parameters a
  /// donated buffer of which they may take (Step::reusable).
  void PlanReusableOperands(const std::vector<int>& last_use);
  /// Offsets of the arena values (in place over a dying operand where the kernel allows).
  void PlanArena(const Module& m, const std::vector<int>& last_use);
  /// Marks the operands of concatenations that are whole results of kernels (a gradient
  /// flattened for one AllReduce) to be computed inside the concatenation's block, where its
  /// copy then finds them (req.within).
  void PlaceConcatenatedOperands(const Module& m, PlanRequest& req) const;
  std::string DescribeSteps() const;
  std::vector<bool> CheckInputs(const std::vector<BufferPtr>& inputs, const std::vector<bool>& donated) const;

  CpuBackend* backend_;
  std::shared_ptr<Backend> keep_backend_;
  std::shared_ptr<const Program> program_;
  std::vector<Value> values_;
  std::vector<Step> steps_;
  std::vector<int> outputs_;  ///< Output positions -> values.
  std::vector<ConstBytes> consts_;
  std::vector<const uint8_t*> const_data_;  ///< Per value: kConst data.
  std::vector<int> tuple_slot_;             ///< Per value: its slot among the tuple results (tuple ops).
  int num_tuples_ = 0;
  std::vector<int> root_;  ///< Per value: the value whose bytes it is (itself if none).
  int64_t arena_bytes_ = 0;
  int in_place_ = 0;
  int within_ = 0;     ///< Values computed inside a concatenation's block.
  int threads_ = 1;    ///< The team size the kernels may use (1 for small programs).
  int team_size_ = 1;  ///< Executions run on one program team of this size (team.h); 1: none.
  std::unique_ptr<StepProfile> profile_;  ///< $KILN_CPU_PROFILE: per-step times.
};

/// The operands' shapes of a node.
std::vector<Shape> OperandShapes(const Module& m, const Node& node) {
  std::vector<Shape> shapes;
  for (int o : node.inst.operands) shapes.push_back(m.nodes[static_cast<size_t>(o)].inst.shape);
  return shapes;
}

void CpuExecutable::ClassifyValues(const Module& m) {
  const size_t n = m.nodes.size();
  values_.assign(n, Value{});
  const_data_.assign(n, nullptr);
  tuple_slot_.assign(n, -1);
  root_.resize(n);
  consts_.reserve(n);
  for (size_t v = 0; v < n; ++v) {
    const Node& node = m.nodes[v];
    const Instruction& inst = node.inst;
    Value& val = values_[v];
    root_[v] = static_cast<int>(v);
    // An OptimizationBarrier is the identity: its results alias its operands (GetTupleElement).
    if (inst.op == OpType::OptimizationBarrier) continue;
    if (inst.IsTuple()) {
      tuple_slot_[v] = num_tuples_++;
      continue;
    }
    val.bytes = inst.shape.ByteSize();
    const Node* operand0 = inst.operands.empty() ? nullptr : &m.nodes[static_cast<size_t>(inst.operands[0])];
    if (node.kind == NodeKind::kWrittenBy) {
      val.loc = Loc::kArena;  // An extra result: its writer's kernel stores it.
    } else if (inst.op == OpType::Parameter) {
      val.loc = Loc::kParam;
      val.param = static_cast<int>(inst.attrs.index);
    } else if (inst.op == OpType::Constant) {
      val.loc = Loc::kConst;
      consts_.emplace_back(inst.attrs.literal);
      const_data_[v] = consts_.back().data.get();
    } else if (inst.op == OpType::GetTupleElement && operand0->inst.op == OpType::OptimizationBarrier) {
      val.loc = Loc::kAlias;
      val.source = operand0->inst.operands.at(static_cast<size_t>(inst.attrs.index));
    } else if (inst.op == OpType::GetTupleElement) {
      val.loc = Loc::kTupleElement;
      val.source = inst.operands[0];
      val.index = static_cast<int>(inst.attrs.index);
    } else if (node.kind == NodeKind::kPrimitive && operand0 != nullptr &&
               IsAlias(inst, operand0->inst.shape)) {
      val.loc = Loc::kAlias;
      val.source = inst.operands[0];
    } else if (const int64_t at = node.kind == NodeKind::kPrimitive && operand0 != nullptr
                                      ? ContiguousSliceOffset(inst, operand0->inst.shape)
                                      : -1;
               at >= 0) {
      val.loc = Loc::kAlias;  // A contiguous slice: a view into its operand's bytes.
      val.source = inst.operands[0];
      val.alias_offset = at;
    } else {
      val.loc = Loc::kArena;
    }
    if (val.loc == Loc::kAlias) root_[v] = root_[static_cast<size_t>(val.source)];
  }
  // Outputs computed by a kernel get buffers of their own (the first time a value is output).
  for (size_t k = 0; k < m.outputs.size(); ++k) {
    Value& val = values_[static_cast<size_t>(m.outputs[k])];
    if (val.loc == Loc::kArena) {
      val.loc = Loc::kOutput;
      val.output = static_cast<int>(k);
    }
  }
  outputs_ = m.outputs;
}

void CpuExecutable::ChooseKernels(const Module& m) {
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const int v = static_cast<int>(i);
    const Node& node = m.nodes[i];
    const Instruction& inst = node.inst;
    const Value& val = values_[i];
    if (inst.op == OpType::OptimizationBarrier) continue;
    if (inst.IsTuple()) {
      TupleKernelChoice k = ChooseTupleKernel(backend_, inst);
      steps_.push_back(
          Step{StepKind::kTuple, v, inst.operands, Kernel(), std::move(k.kernel), -1, 0, std::move(k.name)});
      steps_.back().overwrites_operands = k.overwrites_operands;
      steps_.back().own_threads = k.own_threads;
    } else if (val.loc == Loc::kAlias) {
      steps_.push_back(
          Step{StepKind::kAlias,
               v,
               {val.source},
               Kernel(),
               TupleKernel(),
               val.source,
               0,
               std::string(inst.op == OpType::GetTupleElement ? "OptimizationBarrier" : OpName(inst.op))});
    } else if (val.loc == Loc::kTupleElement) {
      steps_.push_back(Step{StepKind::kTupleElement, v, inst.operands, Kernel(), TupleKernel(), val.source,
                            val.index, "GetTupleElement"});
    } else if ((val.loc == Loc::kArena || val.loc == Loc::kOutput) && node.kind != NodeKind::kWrittenBy) {
      KernelChoice k = ChooseKernel(*backend_, threads_, node, OperandShapes(m, node));
      // A multi-output kernel gets the buffers of its extra results after its operands.
      std::vector<int> operands = inst.operands;
      operands.insert(operands.end(), node.writes.begin(), node.writes.end());
      steps_.push_back(
          Step{StepKind::kKernel, v, std::move(operands), std::move(k.kernel), TupleKernel(), -1, 0,
               std::move(k.name) +
                   (node.writes.empty() ? "" : fmt::format(" (+{} results)", node.writes.size()))});
      steps_.back().own_threads = k.own_threads;
      steps_.back().team_work = k.team_work;
    }
  }
}

void CpuExecutable::UseTeamIfAllSplit(const Module& m) {
  const int team = TeamThreads(backend_->options());
  if (team <= 1) return;
  if (std::any_of(steps_.begin(), steps_.end(), [](const Step& st) { return st.own_threads; })) return;
  const bool team_work =
      std::any_of(steps_.begin(), steps_.end(), [](const Step& st) { return st.team_work; });
  if (team_work || (threads_ > 1 && ProgramWork(m).sizeable >= 1)) team_size_ = team;
}

std::vector<int> CpuExecutable::LastUses(const Module& m) const {
  const size_t n = m.nodes.size();
  std::vector<int> last_use(n);
  for (size_t v = 0; v < n; ++v) {
    last_use[v] = static_cast<int>(v);
    for (int o : m.nodes[v].inst.operands) last_use[static_cast<size_t>(o)] = static_cast<int>(v);
  }
  for (int o : m.outputs) last_use[static_cast<size_t>(o)] = static_cast<int>(n);
  // Aliases keep their root alive.
  for (size_t v = 0; v < n; ++v) {
    const auto r = static_cast<size_t>(root_[v]);
    last_use[r] = std::max(last_use[r], last_use[v]);
  }
  return last_use;
}

bool CpuExecutable::MayWriteOverRoot(const Node& writer, int root) const {
  bool over = false, other = false;
  for (size_t i = 0; i < writer.inst.operands.size(); ++i) {
    if (root_[static_cast<size_t>(writer.inst.operands[i])] != root) continue;
    (MayWriteOver(writer, i) ? over : other) = true;
  }
  return over && !other;
}

void CpuExecutable::PlanDonors(const Module& m, const std::vector<int>& last_use) {
  const int n = static_cast<int>(m.nodes.size());
  for (int v = 0; v < n; ++v) {
    Value& val = values_[static_cast<size_t>(v)];
    if (val.loc != Loc::kOutput) continue;
    // Donated inputs that are dead by the step that writes it, or read in place by it (a
    // multi-output kernel's extra results are written at its step).
    const Node& node = m.nodes[static_cast<size_t>(v)];
    const int w = node.kind == NodeKind::kWrittenBy ? node.written_by : v;
    const Node& writer = m.nodes[static_cast<size_t>(w)];
    const bool writer_in_place = WritesInPlace(writer, OperandShapes(m, writer));
    for (int p = 0; p < n; ++p) {
      const Value& pv = values_[static_cast<size_t>(p)];
      if (pv.loc != Loc::kParam || pv.bytes != val.bytes) continue;
      if (static_cast<size_t>(pv.param) >= m.donatable.size() || !m.donatable[static_cast<size_t>(pv.param)])
        continue;
      const int lu = last_use[static_cast<size_t>(p)];
      bool ok = lu < w;
      if (lu == w && writer_in_place) ok = MayWriteOverRoot(writer, p);
      if (ok) val.donors.push_back(pv.param);
    }
  }
}

void CpuExecutable::PlanReusableOperands(const std::vector<int>& last_use) {
  for (Step& st : steps_) {
    if (st.kind != StepKind::kTuple || !st.overwrites_operands) continue;
    st.reusable.assign(st.operands.size(), -1);
    for (size_t k = 0; k < st.operands.size(); ++k) {
      const auto o = static_cast<size_t>(st.operands[k]);
      const int r = root_[o];
      const Value& rv = values_[static_cast<size_t>(r)];
      int readers = 0;
      for (int other : st.operands) readers += root_[static_cast<size_t>(other)] == r ? 1 : 0;
      const bool whole = rv.loc == Loc::kParam && values_[o].bytes == rv.bytes;  // All its bytes.
      st.reusable[k] = whole && readers == 1 && last_use[static_cast<size_t>(r)] == st.value ? rv.param : -1;
    }
  }
}

void CpuExecutable::PlaceConcatenatedOperands(const Module& m, PlanRequest& req) const {
  const size_t n = m.nodes.size();
  req.within.assign(n, -1);
  req.within_offset.assign(n, 0);
  for (size_t c = 0; c < n; ++c) {
    const Node& node = m.nodes[c];
    const Instruction& inst = node.inst;
    if (values_[c].loc != Loc::kArena || node.kind != NodeKind::kPrimitive ||
        inst.op != OpType::Concatenate || inst.shape.IsDynamic() || DTypeBits(inst.shape.dtype()) % 8 != 0)
      continue;
    // Each operand must be one run of the result's bytes: no axis before the joined one.
    const std::vector<int64_t>& dims = inst.shape.Dimensions();
    if (std::any_of(dims.begin(), dims.begin() + inst.attrs.axis, [](int64_t d) { return d != 1; })) continue;
    int64_t at = 0;
    for (int o : inst.operands) {
      const int64_t bytes = values_[static_cast<size_t>(o)].bytes;
      // The operand is all of a kernel's result (itself, or a view of as many bytes: a reshape),
      // starting 64-byte aligned, as a block of its own would (kernels may rely on it).
      const auto r = static_cast<size_t>(root_[static_cast<size_t>(o)]);
      const Node& producer = m.nodes[r];
      if (values_[r].loc == Loc::kArena && values_[r].bytes == bytes && at % 64 == 0 && req.within[r] < 0 &&
          r != c && producer.kind != NodeKind::kWrittenBy && producer.writes.empty()) {
        req.within[r] = static_cast<int>(c);
        req.within_offset[r] = at;
      }
      at += bytes;
    }
  }
}

void CpuExecutable::PlanArena(const Module& m, const std::vector<int>& last_use) {
  const size_t n = m.nodes.size();
  PlanRequest req;
  req.bytes.assign(n, -1);
  req.in_place.resize(n);
  req.written_at.assign(n, -1);
  req.last_use = last_use;
  for (size_t v = 0; v < n; ++v) {
    const Value& val = values_[v];
    if (val.loc != Loc::kArena) continue;
    req.bytes[v] = val.bytes;
    // An extra result may take the block of an operand of the kernel that writes it (fused
    // kernels store each piece's results after its loads).
    const Node& node = m.nodes[v];
    const bool extra = node.kind == NodeKind::kWrittenBy;
    const Node& writer = extra ? m.nodes[static_cast<size_t>(node.written_by)] : node;
    if (extra) req.written_at[v] = node.written_by;
    if (extra ? !ExtraResultsWriteInPlace(writer) : !WritesInPlace(node, OperandShapes(m, node))) continue;
    for (int o : writer.inst.operands) {
      const int r = root_[static_cast<size_t>(o)];
      const Value& rv = values_[static_cast<size_t>(r)];
      if (rv.loc == Loc::kArena && rv.bytes == val.bytes && MayWriteOverRoot(writer, r))
        req.in_place[v].push_back(r);
    }
  }
  PlaceConcatenatedOperands(m, req);
  const MemoryPlan plan = MakePlan(req);
  for (size_t v = 0; v < n; ++v)
    if (values_[v].loc == Loc::kArena) values_[v].offset = plan.offset[v];
  arena_bytes_ = plan.size;
  in_place_ = plan.in_place;
  within_ = plan.within;
}

std::string CpuExecutable::DescribeSteps() const {
  std::string s = fmt::format(
      "  {} steps, arena {} bytes, {} values written in place, {} concatenated in place, {} thread{}{}{}\n",
      steps_.size(), arena_bytes_, in_place_, within_, threads_, threads_ == 1 ? "" : "s",
      threads_ < backend_->options().threads ? " (a small program)" : "",
      team_size_ > 1 ? fmt::format(" on a team of {}", team_size_) : "");
  for (const Step& st : steps_) {
    if (st.kind == StepKind::kKernel || st.kind == StepKind::kTuple)
      s += fmt::format("  step %{} kernel {}\n", st.value, st.name);
  }
  return s;
}

std::vector<bool> CpuExecutable::CheckInputs(const std::vector<BufferPtr>& inputs,
                                             const std::vector<bool>& donated) const {
  const Program& p = *program_;
  const size_t num = p.Parameters().size();
  if (inputs.size() != num) {
    detail::Throw("backend \"cpu\": the program takes {} input{}, Execute was given {}", num,
                  num == 1 ? "" : "s", inputs.size());
  }
  if (!donated.empty() && donated.size() != num)
    detail::Throw("backend \"cpu\": {} donation flags for {} inputs", donated.size(), num);
  std::vector<bool> owned(num, false);
  for (size_t i = 0; i < num; ++i) {
    const Shape& shape = p.ParameterShape(static_cast<int>(i));
    if (!inputs[i])
      detail::Throw("backend \"cpu\": input {} (parameter {} {}) is a null buffer", i, i, shape);
    if (backend_->AsCpuBuffer(*inputs[i]) == nullptr)
      detail::Throw("backend \"cpu\": input {} (parameter {} {}) is a buffer of another backend", i, i,
                    shape);
    if (inputs[i]->ByteSize() != shape.ByteSize()) {
      detail::Throw("backend \"cpu\": input {} (parameter {} {}) holds {} bytes, the parameter needs {}", i,
                    i, shape, inputs[i]->ByteSize(), shape.ByteSize());
    }
    owned[i] = !donated.empty() && donated[i] && i < p.Donatable().size() && p.Donatable()[i] &&
               std::count(inputs.begin(), inputs.end(), inputs[i]) == 1;
  }
  return owned;
}

/// The arena of one execution, back to the pool when the execution ends.
class ArenaLease {
 public:
  ArenaLease(BufferPool& pool, int64_t bytes) : pool_(pool), bytes_(bytes) {
    data_ = bytes > 0 ? pool.Allocate(bytes) : nullptr;
  }
  ~ArenaLease() { pool_.Release(data_, bytes_); }
  ArenaLease(const ArenaLease&) = delete;
  ArenaLease& operator=(const ArenaLease&) = delete;
  uint8_t* data() const { return data_; }

 private:
  BufferPool& pool_;
  int64_t bytes_;
  uint8_t* data_;
};

std::vector<BufferPtr> CpuExecutable::Execute(const std::vector<BufferPtr>& inputs,
                                              const std::vector<bool>& donated, int device) {
  backend_->CheckDevice(device);
  const SimdTargetScope simd_target(backend_->options().simd_target);  // `simd=` (simd_target.h).
  const std::vector<bool> owned = CheckInputs(inputs, donated);
  std::vector<bool> taken(inputs.size(), false);
  ArenaLease arena(backend_->pool(), arena_bytes_);
  const size_t n = values_.size();
  std::vector<uint8_t*> ptr(n, nullptr);
  std::vector<BufferPtr> out_buffers(outputs_.size());
  for (size_t v = 0; v < n; ++v) {
    const Value& val = values_[v];
    switch (val.loc) {
      case Loc::kParam:
        ptr[v] = backend_->AsCpuBuffer(*inputs[static_cast<size_t>(val.param)])->data();
        break;
      case Loc::kConst:
        ptr[v] = const_cast<uint8_t*>(const_data_[v]);
        break;
      case Loc::kArena:
        ptr[v] = arena.data() + val.offset;
        break;
      case Loc::kOutput: {
        BufferPtr b;
        for (int p : val.donors) {
          if (owned[static_cast<size_t>(p)] && !taken[static_cast<size_t>(p)]) {
            taken[static_cast<size_t>(p)] = true;
            b = inputs[static_cast<size_t>(p)];
            break;
          }
        }
        if (!b) b = backend_->NewBuffer(val.bytes, false, device);
        ptr[v] = backend_->AsCpuBuffer(*b)->data();
        out_buffers[static_cast<size_t>(val.output)] = std::move(b);
        break;
      }
      default:
        break;
    }
  }
  std::vector<std::vector<BufferPtr>> tuples(static_cast<size_t>(num_tuples_));
  std::vector<const uint8_t*> operand_data;
  const Clock::time_point start = profile_ != nullptr ? Clock::now() : Clock::time_point();
  // The steps, on the calling thread; on a program team its threads join the kernels that split.
  const auto run_steps = [&] {
    for (size_t step = 0; step < steps_.size(); ++step) {
      const Step& st = steps_[step];
      switch (st.kind) {
        case StepKind::kKernel: {
          operand_data.clear();
          for (int o : st.operands) operand_data.push_back(ptr[static_cast<size_t>(o)]);
          const Clock::time_point t0 = profile_ != nullptr ? Clock::now() : Clock::time_point();
          st.kernel(operand_data, ptr[static_cast<size_t>(st.value)]);
          if (profile_ != nullptr) profile_->AddStep(step, NanosSince(t0));
          break;
        }
        case StepKind::kAlias:
          ptr[static_cast<size_t>(st.value)] =
              ptr[static_cast<size_t>(st.source)] + values_[static_cast<size_t>(st.value)].alias_offset;
          break;
        case StepKind::kTupleElement: {
          const BufferPtr& b = tuples[static_cast<size_t>(tuple_slot_[static_cast<size_t>(st.source)])].at(
              static_cast<size_t>(st.index));
          ptr[static_cast<size_t>(st.value)] = backend_->AsCpuBuffer(*b)->data();
          break;
        }
        case StepKind::kTuple: {
          // The operands are lent as views, not copied: tuple kernels only read them (their
          // sub-programs take them undonated) and return results that never alias them, and the
          // call ends before any later step may write over that memory. The exception: a kernel
          // that overwrites operands gets the own buffers of donated parameters no later step
          // reads, which its results may then be.
          std::vector<BufferPtr> operands;
          for (size_t k = 0; k < st.operands.size(); ++k) {
            const int o = st.operands[k];
            const int p = st.reusable.empty() ? -1 : st.reusable[k];
            if (p >= 0 && owned[static_cast<size_t>(p)] && !taken[static_cast<size_t>(p)]) {
              taken[static_cast<size_t>(p)] = true;
              operands.push_back(inputs[static_cast<size_t>(p)]);
              continue;
            }
            const int64_t bytes = values_[static_cast<size_t>(o)].bytes;
            operands.push_back(std::make_shared<CpuBuffer>(backend_, ptr[static_cast<size_t>(o)], bytes));
          }
          const Clock::time_point t0 = profile_ != nullptr ? Clock::now() : Clock::time_point();
          tuples[static_cast<size_t>(tuple_slot_[static_cast<size_t>(st.value)])] =
              st.tuple(operands, device);
          if (profile_ != nullptr) profile_->AddStep(step, NanosSince(t0));
          break;
        }
      }
    }
  };
  if (team_size_ > 1) {
    RunOnTeam(team_size_, run_steps, backend_->options().team_spin_us);
  } else {
    run_steps();
  }
  std::vector<BufferPtr> outputs;
  std::vector<const Buffer*> handed;  // Tuple results already given to an output.
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const int v = outputs_[k];
    if (out_buffers[k]) {
      outputs.push_back(std::move(out_buffers[k]));
      continue;
    }
    // A tuple op's result (a Composite kernel's, a loop's) is memory of its own: it becomes the
    // output as it is, the first time, instead of a copy (Adam's kernel returns three variables'
    // worth of them per step).
    const Value& val = values_[static_cast<size_t>(v)];
    if (val.loc == Loc::kTupleElement) {
      const BufferPtr& b = tuples[static_cast<size_t>(tuple_slot_[static_cast<size_t>(val.source)])].at(
          static_cast<size_t>(val.index));
      const auto* cpu = backend_->AsCpuBuffer(*b);
      if (cpu != nullptr && cpu->OwnsMemory() && b->Device() == device && b->ByteSize() == val.bytes &&
          std::find(handed.begin(), handed.end(), b.get()) == handed.end()) {
        handed.push_back(b.get());
        outputs.push_back(b);
        continue;
      }
    }
    const int64_t bytes = values_[static_cast<size_t>(v)].bytes;
    std::shared_ptr<CpuBuffer> copy = backend_->NewBuffer(bytes, false, device);
    if (bytes > 0) std::memcpy(copy->data(), ptr[static_cast<size_t>(v)], static_cast<size_t>(bytes));
    outputs.push_back(std::move(copy));
  }
  if (profile_ != nullptr) profile_->AddExecution(NanosSince(start));
  return outputs;
}

}  // namespace

std::unique_ptr<Executable> CompileCpu(CpuBackend* backend, std::shared_ptr<const Program> program) {
  return std::make_unique<CpuExecutable>(backend, std::move(program));
}

}  // namespace kiln::compute::cpu
