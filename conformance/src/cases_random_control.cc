// Conformance rows (placeholder until the op family lands).

#include "internal.h"

namespace kiln::conformance::internal {

void AddRandomControlCatalogue(std::vector<CatalogueEntry>& entries) { (void)entries; }

void AddRandomControlCases(CaseList& list) { (void)list; }

}  // namespace kiln::conformance::internal
