// Gradient rows of the sortscan family (to be written).

#include "grad_internal.h"

namespace kiln::conformance::internal {

void AddSortScanGrads(std::vector<GradCase>& out) { (void)out; }

}  // namespace kiln::conformance::internal
