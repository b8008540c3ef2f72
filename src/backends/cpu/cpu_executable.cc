// The cpu executable: compiles a Program through the passes into a flat list of steps over
// pre-planned memory, then runs it: intermediates in one arena per execution (from the pool),
// outputs in pool buffers or in donated inputs.

#include <cstdio>
#include <cstring>
#include <iostream>

#include "backends/cpu/ir.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/plan.h"
#include "backends/cpu/pool_kernels.h"
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
};

struct Value {
  Loc loc = Loc::kNone;
  int64_t bytes = 0;
  int64_t offset = -1;  ///< kArena.
  int param = -1;       ///< kParam.
  int output = -1;      ///< kOutput: the output position whose buffer holds it.
  /// kOutput: donatable parameters whose buffer may hold it (dead by then, or read in place).
  std::vector<int> donors;
};

/// Ops whose result is their operand's bytes unchanged: no kernel, the value aliases it.
bool IsAlias(const Instruction& inst, const Shape& operand) {
  switch (inst.op) {
    case OpType::Reshape:
    case OpType::StopGradient:
      return true;
    case OpType::Bitcast:
      return inst.shape.ByteSize() == operand.ByteSize();
    case OpType::ConvertDType:
      return inst.shape.dtype() == operand.dtype();
    default:
      return false;
  }
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
    Module m = FromProgram(*program_);
    EliminateDeadCode(m);
    const int merged = EliminateCommonSubexpressions(m);
    const int simplified = Simplify(m);
    EliminateDeadCode(m);
    const int widened = WidenHalfContractions(m);
    std::string fusion;
    if (backend_->options().fusion) {
      // Epilogues first: the elementwise pass would otherwise take the bias and activation.
      fusion = CommuteReluWithMaxPool(m);
      EliminateDeadCode(m);
      fusion += FuseEpilogues(m);
      EliminateDeadCode(m);
      fusion += FuseElementwise(m, backend_->options());
      EliminateDeadCode(m);
      fusion += MergeFusedOutputs(m);  // last: nothing renumbers the nodes after it
    }
    Build(m);
    if (backend_->options().dump) {
      std::cerr << "KILN_CPU_DUMP: program (" << m.nodes.size() << " nodes after cleanups; " << merged
                << " common subexpressions merged, " << simplified << " nodes simplified, " << widened
                << " half-precision contractions widened to Float32)\n"
                << m.ToString() << fusion << DescribeSteps();
    }
  }

  const Program& program() const override { return *program_; }

  std::vector<BufferPtr> Execute(const std::vector<BufferPtr>& inputs, const std::vector<bool>& donated,
                                 int device) override;

 private:
  void Build(const Module& m);
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
  int64_t arena_bytes_ = 0;
  int in_place_ = 0;
  int threads_ = 1;  ///< The team size the kernels may use (1 for small programs).
};

void CpuExecutable::Build(const Module& m) {
  const int n = static_cast<int>(m.nodes.size());
  values_.assign(static_cast<size_t>(n), Value{});
  const_data_.assign(static_cast<size_t>(n), nullptr);
  tuple_slot_.assign(static_cast<size_t>(n), -1);
  std::vector<int> last_use(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) {
    last_use[static_cast<size_t>(v)] = v;
    for (int o : m.nodes[static_cast<size_t>(v)].inst.operands) last_use[static_cast<size_t>(o)] = v;
  }
  for (int o : m.outputs) last_use[static_cast<size_t>(o)] = n;
  outputs_ = m.outputs;
  std::vector<bool> is_output(static_cast<size_t>(n), false);
  consts_.reserve(static_cast<size_t>(n));
  std::vector<int> root(static_cast<size_t>(n));
  threads_ = ProgramThreads(m, backend_->options().threads, backend_->options().serial_work);
  for (int v = 0; v < n; ++v) {
    const Node& node = m.nodes[static_cast<size_t>(v)];
    const Instruction& inst = node.inst;
    Value& val = values_[static_cast<size_t>(v)];
    root[static_cast<size_t>(v)] = v;
    std::vector<Shape> shapes;
    for (int o : inst.operands) shapes.push_back(m.nodes[static_cast<size_t>(o)].inst.shape);
    if (inst.op == OpType::OptimizationBarrier) {
      continue;  // The identity: its results alias its operands (see GetTupleElement below).
    }
    if (inst.IsTuple()) {
      tuple_slot_[static_cast<size_t>(v)] = num_tuples_++;
      steps_.push_back(Step{StepKind::kTuple, v, inst.operands, Kernel(), MakeTupleKernel(backend_, inst), -1,
                            0, std::string(OpName(inst.op))});
      continue;
    }
    val.bytes = inst.shape.ByteSize();
    if (node.written_by >= 0) {
      val.loc = Loc::kArena;  // An output (MergeFusedOutputs): its writer's kernel stores it.
    } else if (inst.op == OpType::Parameter) {
      val.loc = Loc::kParam;
      val.param = static_cast<int>(inst.attrs.index);
    } else if (inst.op == OpType::Constant) {
      val.loc = Loc::kConst;
      consts_.emplace_back(inst.attrs.literal);
      const_data_[static_cast<size_t>(v)] = consts_.back().data.get();
    } else if (inst.op == OpType::GetTupleElement &&
               m.nodes[static_cast<size_t>(inst.operands[0])].inst.op == OpType::OptimizationBarrier) {
      const int src = m.nodes[static_cast<size_t>(inst.operands[0])].inst.operands.at(
          static_cast<size_t>(inst.attrs.index));
      val.loc = Loc::kAlias;
      root[static_cast<size_t>(v)] = root[static_cast<size_t>(src)];
      steps_.push_back(
          Step{StepKind::kAlias, v, {src}, Kernel(), TupleKernel(), src, 0, "OptimizationBarrier"});
    } else if (inst.op == OpType::GetTupleElement) {
      val.loc = Loc::kTupleElement;
      steps_.push_back(Step{StepKind::kTupleElement, v, inst.operands, Kernel(), TupleKernel(),
                            inst.operands[0], static_cast<int>(inst.attrs.index), "GetTupleElement"});
    } else if (!node.fused && !shapes.empty() && IsAlias(inst, shapes[0])) {
      val.loc = Loc::kAlias;
      root[static_cast<size_t>(v)] = root[static_cast<size_t>(inst.operands[0])];
      steps_.push_back(Step{StepKind::kAlias, v, inst.operands, Kernel(), TupleKernel(), inst.operands[0], 0,
                            std::string(OpName(inst.op))});
    } else {
      KernelChoice k = TryPoolKernel(*backend_, threads_, node, shapes);
      if (!k.kernel) k = ChooseKernel(*backend_, threads_, node, shapes);
      val.loc = Loc::kArena;
      // A multi-output kernel gets the buffers of its extra results after its operands.
      std::vector<int> operands = inst.operands;
      operands.insert(operands.end(), node.writes.begin(), node.writes.end());
      steps_.push_back(
          Step{StepKind::kKernel, v, std::move(operands), std::move(k.kernel), TupleKernel(), -1, 0,
               std::move(k.name) +
                   (node.writes.empty() ? "" : fmt::format(" (+{} results)", node.writes.size()))});
    }
  }
  // Outputs computed by a kernel get buffers of their own (the first time a value is output).
  for (size_t k = 0; k < m.outputs.size(); ++k) {
    Value& val = values_[static_cast<size_t>(m.outputs[k])];
    if (val.loc == Loc::kArena) {
      val.loc = Loc::kOutput;
      val.output = static_cast<int>(k);
    }
  }
  // Aliases keep their root alive.
  for (int v = 0; v < n; ++v) {
    const int r = root[static_cast<size_t>(v)];
    last_use[static_cast<size_t>(r)] =
        std::max(last_use[static_cast<size_t>(r)], last_use[static_cast<size_t>(v)]);
  }
  PlanRequest req;
  req.bytes.assign(static_cast<size_t>(n), -1);
  req.in_place.resize(static_cast<size_t>(n));
  req.last_use = last_use;
  std::vector<int> step_of(static_cast<size_t>(n), -1);
  for (size_t s = 0; s < steps_.size(); ++s)
    step_of[static_cast<size_t>(steps_[s].value)] = static_cast<int>(s);
  for (int v = 0; v < n; ++v) {
    Value& val = values_[static_cast<size_t>(v)];
    const Node& node = m.nodes[static_cast<size_t>(v)];
    if (val.loc != Loc::kArena && val.loc != Loc::kOutput) continue;
    std::vector<Shape> shapes;
    for (int o : node.inst.operands) shapes.push_back(m.nodes[static_cast<size_t>(o)].inst.shape);
    const bool in_place = WritesInPlace(node, shapes);
    if (val.loc == Loc::kArena) {
      req.bytes[static_cast<size_t>(v)] = val.bytes;
      if (in_place) {
        for (int o : node.inst.operands) {
          const int r = root[static_cast<size_t>(o)];
          if (values_[static_cast<size_t>(r)].loc == Loc::kArena &&
              values_[static_cast<size_t>(r)].bytes == val.bytes)
            req.in_place[static_cast<size_t>(v)].push_back(r);
        }
      }
      continue;
    }
    // kOutput: donated inputs that are dead by the step that writes it, or read in place by it
    // (a multi-output kernel's extra results are written at its step).
    const int w = node.written_by >= 0 ? node.written_by : v;
    const Node& writer = m.nodes[static_cast<size_t>(w)];
    bool writer_in_place = in_place;
    if (w != v) {
      std::vector<Shape> writer_shapes;
      for (int o : writer.inst.operands) writer_shapes.push_back(m.nodes[static_cast<size_t>(o)].inst.shape);
      writer_in_place = WritesInPlace(writer, writer_shapes);
    }
    for (int p = 0; p < n; ++p) {
      const Value& pv = values_[static_cast<size_t>(p)];
      if (pv.loc != Loc::kParam || pv.bytes != val.bytes) continue;
      if (static_cast<size_t>(pv.param) >= m.donatable.size() || !m.donatable[static_cast<size_t>(pv.param)])
        continue;
      const int lu = last_use[static_cast<size_t>(p)];
      bool ok = lu < w;
      if (lu == w && writer_in_place) {
        for (int o : writer.inst.operands) ok = ok || root[static_cast<size_t>(o)] == p;
      }
      if (ok) val.donors.push_back(pv.param);
    }
  }
  MemoryPlan plan = MakePlan(req);
  for (int v = 0; v < n; ++v)
    if (values_[static_cast<size_t>(v)].loc == Loc::kArena)
      values_[static_cast<size_t>(v)].offset = plan.offset[static_cast<size_t>(v)];
  arena_bytes_ = plan.size;
  in_place_ = plan.in_place;
}

std::string CpuExecutable::DescribeSteps() const {
  std::string s = fmt::format("  {} steps, arena {} bytes, {} values written in place, {} thread{}{}\n",
                              steps_.size(), arena_bytes_, in_place_, threads_, threads_ == 1 ? "" : "s",
                              threads_ < backend_->options().threads ? " (a small program)" : "");
  for (const Step& st : steps_) {
    if (st.kind == StepKind::kKernel) s += fmt::format("  step %{} kernel {}\n", st.value, st.name);
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
        if (!b) b = backend_->NewBuffer(val.bytes);
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
  for (const Step& st : steps_) {
    switch (st.kind) {
      case StepKind::kKernel:
        operand_data.clear();
        for (int o : st.operands) operand_data.push_back(ptr[static_cast<size_t>(o)]);
        st.kernel(operand_data, ptr[static_cast<size_t>(st.value)]);
        break;
      case StepKind::kAlias:
        ptr[static_cast<size_t>(st.value)] = ptr[static_cast<size_t>(st.source)];
        break;
      case StepKind::kTupleElement: {
        const BufferPtr& b = tuples[static_cast<size_t>(tuple_slot_[static_cast<size_t>(st.source)])].at(
            static_cast<size_t>(st.index));
        ptr[static_cast<size_t>(st.value)] = backend_->AsCpuBuffer(*b)->data();
        break;
      }
      case StepKind::kTuple: {
        std::vector<BufferPtr> operands;
        for (int o : st.operands) {
          const int64_t bytes = values_[static_cast<size_t>(o)].bytes;
          std::shared_ptr<CpuBuffer> b = backend_->NewBuffer(bytes);
          if (bytes > 0) std::memcpy(b->data(), ptr[static_cast<size_t>(o)], static_cast<size_t>(bytes));
          operands.push_back(std::move(b));
        }
        tuples[static_cast<size_t>(tuple_slot_[static_cast<size_t>(st.value)])] = st.tuple(operands, device);
        break;
      }
    }
  }
  std::vector<BufferPtr> outputs;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const int v = outputs_[k];
    if (out_buffers[k]) {
      outputs.push_back(std::move(out_buffers[k]));
      continue;
    }
    const int64_t bytes = values_[static_cast<size_t>(v)].bytes;
    std::shared_ptr<CpuBuffer> copy = backend_->NewBuffer(bytes);
    if (bytes > 0) std::memcpy(copy->data(), ptr[static_cast<size_t>(v)], static_cast<size_t>(bytes));
    outputs.push_back(std::move(copy));
  }
  return outputs;
}

}  // namespace

std::unique_ptr<Executable> CompileCpu(CpuBackend* backend, std::shared_ptr<const Program> program) {
  return std::make_unique<CpuExecutable>(backend, std::move(program));
}

}  // namespace kiln::compute::cpu
