#include "kiln/compute/backend.h"

#include "core/check.h"

namespace kiln::compute {

void Backend::CheckDevice(int device) const {
  if (device < 0 || device >= NumDevices()) {
    detail::Throw("backend \"{}\": device {} does not exist (it has {} device{}: 0 to {})", Name(), device,
                  NumDevices(), NumDevices() == 1 ? "" : "s", NumDevices() - 1);
  }
}

}  // namespace kiln::compute
