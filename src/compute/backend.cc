#include "kiln/compute/backend.h"

#include "core/check.h"

namespace kiln::compute {

void Backend::CheckDevice(int device) const {
  if (device < 0 || device >= NumDevices()) {
    detail::Throw("backend \"{}\": device {} does not exist (it has {} device{}: 0 to {})", Name(), device,
                  NumDevices(), NumDevices() == 1 ? "" : "s", NumDevices() - 1);
  }
}

BufferPtr Backend::AdoptHostMemory(int, std::shared_ptr<uint8_t>, int64_t) { return nullptr; }

}  // namespace kiln::compute

namespace kiln::compute {

std::vector<BufferPtr> Executable::ExecuteWithShapes(const std::vector<BufferPtr>& inputs,
                                                     const std::vector<Shape>& shapes,
                                                     const std::vector<bool>& donated, int device,
                                                     std::vector<Shape>& output_shapes) {
  const Program& p = program();
  if (shapes.size() != p.Parameters().size()) {
    detail::Throw("Execute: {} input shapes for a program of {} parameters", shapes.size(),
                  p.Parameters().size());
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& want = p.ParameterShape(static_cast<int>(i));
    if (shapes[i].dtype() != want.dtype() || shapes[i].Dimensions() != want.Dimensions()) {
      detail::Throw("Execute: input {} has shape {}, but the program's parameter {} is {}", i, shapes[i], i,
                    want);
    }
  }
  std::vector<BufferPtr> out = Execute(inputs, donated, device);
  output_shapes.clear();
  for (size_t i = 0; i < p.Outputs().size(); ++i) output_shapes.push_back(p.OutputShape(static_cast<int>(i)));
  return out;
}

}  // namespace kiln::compute
