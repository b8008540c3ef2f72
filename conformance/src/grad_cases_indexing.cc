// Gradient rows of the indexing family (to be written).

#include "grad_internal.h"

namespace kiln::conformance::internal {

void AddIndexingGrads(std::vector<GradCase>& out) { (void)out; }

}  // namespace kiln::conformance::internal
