// Elementwise fusion for the cpu compiler (to be written).

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/ir.h"

namespace kiln::compute::cpu {

std::string FuseElementwise(Module& m, const Options& options) {
  (void)m;
  (void)options;
  return {};
}

}  // namespace kiln::compute::cpu
