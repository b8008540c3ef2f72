// Gradient rows of the control family (to be written).

#include "grad_internal.h"

namespace kiln::conformance::internal {

void AddControlGrads(std::vector<GradCase>& out) { (void)out; }

}  // namespace kiln::conformance::internal
