// Conformance rows (placeholder until the op family lands).

#include "internal.h"

namespace kiln::conformance::internal {

void AddConvCatalogue(std::vector<CatalogueEntry>& entries) { (void)entries; }

void AddConvCases(CaseList& list) { (void)list; }

bool ConvPrimitiveAccepts(OpType op, DType dtype) {
  (void)op;
  (void)dtype;
  return false;
}

}  // namespace kiln::conformance::internal
