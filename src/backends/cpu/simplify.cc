// Constant folding and algebraic simplification for the cpu compiler (to be written).

#include "backends/cpu/ir.h"

namespace kiln::compute::cpu {

int Simplify(Module& m) {
  (void)m;
  return 0;
}

}  // namespace kiln::compute::cpu
