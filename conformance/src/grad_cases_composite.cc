// Gradient rows of the composite family (to be written).

#include "grad_internal.h"

namespace kiln::conformance::internal {

void AddCompositeGrads(std::vector<GradCase>& out) { (void)out; }

}  // namespace kiln::conformance::internal
