// Gradient rows of the window family (to be written).

#include "grad_internal.h"

namespace kiln::conformance::internal {

void AddWindowGrads(std::vector<GradCase>& out) { (void)out; }

}  // namespace kiln::conformance::internal
