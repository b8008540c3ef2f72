// Conformance rows (placeholder until the op family lands).

#include "internal.h"

namespace kiln::conformance::internal {

void AddIndexingCatalogue(std::vector<CatalogueEntry>& entries) { (void)entries; }

void AddIndexingCases(CaseList& list) { (void)list; }

bool IndexingPrimitiveAccepts(OpType op, DType dtype) {
  (void)op;
  (void)dtype;
  return false;
}

}  // namespace kiln::conformance::internal
