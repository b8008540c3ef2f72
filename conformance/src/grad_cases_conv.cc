// Gradient rows of the conv family (to be written).

#include "grad_internal.h"

namespace kiln::conformance::internal {

void AddConvGrads(std::vector<GradCase>& out) { (void)out; }

}  // namespace kiln::conformance::internal
