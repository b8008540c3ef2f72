// libFuzzer target for running random graphs (graph_builder.h) on the ref and cpu backends:
// each compiles and runs or raises a kiln::Error, never crashes; when both run, their results
// have the same shapes. Graphs with a value over 64 KiB are only built, not run.

#include <memory>

#include "fuzz_util.h"
#include "graph_builder.h"
#include "kiln/compute/backend.h"
#include "kiln/core/tensor.h"

namespace {

/// Deterministic inputs: each byte i of the buffer is i · 37 mod 251 (any bit pattern may come
/// up: NaNs, infinities, negative and huge integers).
kiln::Tensor InputFor(const kiln::Shape& shape) {
  std::vector<uint8_t> bytes(static_cast<size_t>(shape.ByteSize()));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 % 251);
  return kiln::Tensor::FromBytes(shape, bytes);
}

std::vector<kiln::Shape> Run(const kiln::compute::BackendPtr& backend,
                             const std::shared_ptr<const kiln::compute::Program>& program,
                             const std::vector<kiln::Tensor>& inputs) {
  std::unique_ptr<kiln::compute::Executable> exe = backend->Compile(program);
  std::vector<kiln::compute::BufferPtr> buffers;
  for (const kiln::Tensor& t : inputs) buffers.push_back(t.DeviceBuffer(backend, 0));
  const std::vector<kiln::compute::BufferPtr> out =
      exe->Execute(buffers, std::vector<bool>(inputs.size(), false), 0);
  std::vector<kiln::Shape> shapes;
  for (size_t i = 0; i < out.size(); ++i) {
    const kiln::Tensor t =
        kiln::Tensor::FromBuffer(backend, 0, program->OutputShape(static_cast<int>(i)), out[i]);
    t.ConstBytes([](std::span<const uint8_t>) {});  // Brought to the host.
    shapes.push_back(t.shape());
  }
  return shapes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kiln::compute::BackendPtr ref = kiln::compute::NewWithConfig("ref");
  static const kiln::compute::BackendPtr cpu = kiln::compute::NewWithConfig("cpu:threads=1");
  kiln::fuzz::Bytes in(data, size);
  kiln::graph::Graph g("fuzz");
  const std::vector<kiln::graph::Node> nodes = kiln::fuzz::BuildFromBytes(g, in);
  if (nodes.empty()) return 0;
  std::shared_ptr<const kiln::compute::Program> program;
  kiln::fuzz::Refused([&] { program = g.Build({nodes.back()}); });
  if (!program) return 0;
  for (const kiln::compute::Instruction& inst : program->Instructions()) {
    for (const kiln::Shape& s : inst.IsTuple() ? inst.tuple_shapes : std::vector<kiln::Shape>{inst.shape})
      if (s.IsDynamic() || s.ByteSize() > (64 << 10)) return 0;
  }
  std::vector<kiln::Tensor> inputs;
  for (int p : program->Parameters())
    inputs.push_back(InputFor(program->Instructions()[static_cast<size_t>(p)].shape));
  std::vector<kiln::Shape> a, b;
  kiln::fuzz::Refused([&] { a = Run(ref, program, inputs); });
  kiln::fuzz::Refused([&] { b = Run(cpu, program, inputs); });
  if (!a.empty() && !b.empty() && a != b) __builtin_trap();
  return 0;
}
