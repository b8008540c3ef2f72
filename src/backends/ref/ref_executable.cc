// The reference interpreter: compiles a Program into one kernel per instruction, then runs them
// in order, each value in a counted buffer of the backend that is freed right after its last use.

#include <algorithm>
#include <cstring>

#include "backends/ref/ref_backend.h"
#include "backends/ref/ref_kernels.h"
#include "core/check.h"

namespace kiln::compute::ref {

namespace {

/// Whether an instruction's result may take over the buffer of an operand whose last use it is
/// (and which the execution owns: an intermediate value, or an input the caller donated).
enum class Reuse {
  None,
  /// Elementwise: the kernel reads element i before writing it, so it may write over an
  /// operand of the same byte size.
  InPlace,
  /// The result's bytes are the operand's bytes (Reshape, Bitcast...): the buffer is taken over
  /// and the kernel has nothing to do.
  Alias,
};

struct Step {
  const Instruction* inst;
  int64_t bytes;             ///< Result size.
  Kernel kernel;             ///< Empty for Parameter, tuple ops and GetTupleElement.
  TupleKernel tuple_kernel;  ///< Tuple ops (While, If, OptimizationBarrier).
  Reuse reuse = Reuse::None;
  std::vector<int> release;  ///< Values whose last use is this step, freed after it.
};

Reuse ReuseOf(const Instruction& inst, const std::vector<Shape>& operands) {
  switch (GetOpCategory(inst.op)) {
    case OpCategory::Unary:
      if (inst.op == OpType::StopGradient) return Reuse::Alias;
      // Abs of a complex operand is real: a result of another type is not written in place.
      return operands[0].dtype() == inst.shape.dtype() ? Reuse::InPlace : Reuse::None;
    case OpCategory::UnaryPredicate:
    case OpCategory::Binary:
    case OpCategory::Compare:
    case OpCategory::Select:
      return Reuse::InPlace;
    case OpCategory::Movement:
      return inst.op == OpType::Reshape ? Reuse::Alias : Reuse::None;
    case OpCategory::Convert:
      // A conversion between types of one size is not done in place: reading T and writing U
      // through the same memory would break strict aliasing.
      return inst.op == OpType::Bitcast || operands[0].dtype() == inst.shape.dtype() ? Reuse::Alias
                                                                                     : Reuse::None;
    case OpCategory::Leaf:
    case OpCategory::Reduce:
    case OpCategory::ArgReduce:
    case OpCategory::Contraction:
    case OpCategory::Convolution:
    case OpCategory::Window:
    case OpCategory::Indexing:
    case OpCategory::SortScan:
    case OpCategory::Complex:
    case OpCategory::Control:
    case OpCategory::Collective:
      return Reuse::None;
  }
  return Reuse::None;
}

/// A value during one execution.
struct Value {
  BufferPtr buffer;
  uint8_t* data = nullptr;
  /// The execution may overwrite it (an intermediate, or an input donated to it).
  bool owned = false;
  /// The results of a tuple op (buffer and data are then empty).
  std::vector<BufferPtr> tuple;
};

class RefExecutable final : public Executable {
 public:
  RefExecutable(RefBackend* backend, std::shared_ptr<const Program> program)
      : backend_(backend), keep_backend_(backend->weak_from_this().lock()), program_(std::move(program)) {
    const std::vector<Instruction>& insts = program_->Instructions();
    const int n = static_cast<int>(insts.size());
    // Last use of each value: the last instruction reading it; outputs live to the end (n).
    std::vector<int> last_use(insts.size());
    for (int id = 0; id < n; ++id) {
      last_use[static_cast<size_t>(id)] = id;  // An unused value is freed right after it is made.
      for (int o : insts[static_cast<size_t>(id)].operands) last_use[static_cast<size_t>(o)] = id;
    }
    for (int o : program_->Outputs()) last_use[static_cast<size_t>(o)] = n;
    for (int id = 0; id < n; ++id) {
      const Instruction& inst = insts[static_cast<size_t>(id)];
      if (!inst.subprograms.empty() && !inst.IsTuple()) {
        detail::Throw("backend \"ref\": instruction #{} ({}) has sub-programs but is not a tuple op", id,
                      OpName(inst.op));
      }
      std::vector<Shape> operands;
      for (int o : inst.operands) operands.push_back(insts[static_cast<size_t>(o)].shape);
      if (inst.IsTuple()) {
        steps_.push_back(Step{&inst, 0, Kernel(), MakeControlKernel(backend_, inst), Reuse::None, {}});
        continue;
      }
      steps_.push_back(Step{&inst,
                            inst.shape.ByteSize(),
                            MakeKernel(inst, operands),
                            TupleKernel(),
                            ReuseOf(inst, operands),
                            {}});
    }
    for (int id = 0; id < n; ++id) {
      const int last = last_use[static_cast<size_t>(id)];
      if (last < n) steps_[static_cast<size_t>(last)].release.push_back(id);
    }
    last_use_ = std::move(last_use);
  }

  const Program& program() const override { return *program_; }

  std::vector<BufferPtr> Execute(const std::vector<BufferPtr>& inputs, const std::vector<bool>& donated,
                                 int device) override {
    backend_->CheckDevice(device);
    const std::vector<bool> owned_inputs = CheckInputs(inputs, donated);
    std::vector<Value> values(steps_.size());
    // Donated inputs past their last use, kept to hold a later result of the same size: the
    // caller's list still references them, so freeing them would not lower the memory in use.
    std::vector<BufferPtr> spare;
    std::vector<const uint8_t*> operand_data;
    for (size_t id = 0; id < steps_.size(); ++id) {
      const Step& step = steps_[id];
      const Instruction& inst = *step.inst;
      Value& result = values[id];
      if (inst.op == OpType::Parameter) {
        const auto index = static_cast<size_t>(inst.attrs.index);
        result = Value{inputs[index], backend_->AsRefBuffer(*inputs[index])->data(), owned_inputs[index], {}};
      } else if (step.tuple_kernel) {
        std::vector<BufferPtr> operand_buffers;
        for (int o : inst.operands) operand_buffers.push_back(values[static_cast<size_t>(o)].buffer);
        result.tuple = step.tuple_kernel(operand_buffers, device);
      } else if (inst.op == OpType::GetTupleElement) {
        // Shares the tuple's buffer, so not owned: never overwritten, copied when output.
        BufferPtr b =
            values[static_cast<size_t>(inst.operands[0])].tuple.at(static_cast<size_t>(inst.attrs.index));
        uint8_t* data = backend_->AsRefBuffer(*b)->data();
        result = Value{std::move(b), data, false, {}};
      } else {
        operand_data.clear();
        for (int o : inst.operands) operand_data.push_back(values[static_cast<size_t>(o)].data);
        result = NewResult(step, static_cast<int>(id), values, spare);
        const bool aliased = step.reuse == Reuse::Alias && result.data == operand_data[0];
        if (!aliased) step.kernel(operand_data, result.data);
      }
      for (int v : step.release) {
        Value& dead = values[static_cast<size_t>(v)];
        if (dead.owned && steps_[static_cast<size_t>(v)].inst->op == OpType::Parameter) {
          spare.push_back(std::move(dead.buffer));
        }
        dead = Value{};
      }
    }
    spare.clear();
    // Outputs: owned buffers are handed over; a non-donated input (or a value already handed
    // over, when it is output twice) is copied, so outputs never alias what the caller keeps.
    std::vector<BufferPtr> outputs;
    for (int o : program_->Outputs()) {
      Value& v = values[static_cast<size_t>(o)];
      if (v.owned) {
        outputs.push_back(v.buffer);
        v.owned = false;
        continue;
      }
      const int64_t bytes = steps_[static_cast<size_t>(o)].bytes;
      std::shared_ptr<RefBuffer> copy = backend_->NewBuffer(bytes);
      if (bytes > 0) std::memcpy(copy->data(), v.data, static_cast<size_t>(bytes));
      outputs.push_back(std::move(copy));
    }
    return outputs;
  }

 private:
  /// Checks the inputs; returns which of them the execution may overwrite: donated ones the
  /// program lets it reuse, unless the same buffer is also passed as another input.
  std::vector<bool> CheckInputs(const std::vector<BufferPtr>& inputs,
                                const std::vector<bool>& donated) const {
    const Program& p = *program_;
    const size_t num = p.Parameters().size();
    if (inputs.size() != num) {
      detail::Throw("backend \"ref\": the program takes {} input{}, Execute was given {}", num,
                    num == 1 ? "" : "s", inputs.size());
    }
    if (!donated.empty() && donated.size() != num) {
      detail::Throw("backend \"ref\": {} donation flags for {} inputs", donated.size(), num);
    }
    std::vector<bool> owned(num, false);
    for (size_t i = 0; i < num; ++i) {
      const Shape& shape = p.ParameterShape(static_cast<int>(i));
      if (!inputs[i])
        detail::Throw("backend \"ref\": input {} (parameter {} {}) is a null buffer", i, i, shape);
      if (backend_->AsRefBuffer(*inputs[i]) == nullptr) {
        detail::Throw("backend \"ref\": input {} (parameter {} {}) is a buffer of another backend", i, i,
                      shape);
      }
      if (inputs[i]->ByteSize() != shape.ByteSize()) {
        detail::Throw("backend \"ref\": input {} (parameter {} {}) holds {} bytes, the parameter needs {}", i,
                      i, shape, inputs[i]->ByteSize(), shape.ByteSize());
      }
      owned[i] = !donated.empty() && donated[i] && p.Donatable()[i] &&
                 std::count(inputs.begin(), inputs.end(), inputs[i]) == 1;
    }
    return owned;
  }

  /// The buffer for step `id`'s result: an owned operand at its last use when the op allows
  /// reuse, else a spare donated input of the right size, else a new buffer.
  Value NewResult(const Step& step, int id, std::vector<Value>& values, std::vector<BufferPtr>& spare) const {
    if (step.reuse != Reuse::None) {
      for (int o : step.inst->operands) {
        Value& v = values[static_cast<size_t>(o)];
        if (v.owned && last_use_[static_cast<size_t>(o)] == id && v.buffer->ByteSize() == step.bytes) {
          Value taken = std::move(v);
          v = Value{};
          return taken;
        }
      }
    }
    for (auto it = spare.begin(); it != spare.end(); ++it) {
      if ((*it)->ByteSize() == step.bytes) {
        Value taken{std::move(*it), nullptr, true, {}};
        spare.erase(it);
        taken.data = backend_->AsRefBuffer(*taken.buffer)->data();
        return taken;
      }
    }
    std::shared_ptr<RefBuffer> buffer = backend_->NewBuffer(step.bytes);
    uint8_t* data = buffer->data();
    return Value{std::move(buffer), data, true, {}};
  }

  RefBackend* backend_;
  std::shared_ptr<Backend> keep_backend_;  // Keeps the backend alive while the executable is.
  std::shared_ptr<const Program> program_;
  std::vector<Step> steps_;  // One per instruction, in program order.
  std::vector<int> last_use_;
};

}  // namespace

std::unique_ptr<Executable> CompileRef(RefBackend* backend, std::shared_ptr<const Program> program) {
  return std::make_unique<RefExecutable>(backend, std::move(program));
}

}  // namespace kiln::compute::ref
