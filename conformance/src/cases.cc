// The table: every family's rows, built once.

#include <set>
#include <stdexcept>

#include "internal.h"

namespace kiln::conformance {

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = [] {
    internal::CaseList list;
    internal::AddConstantCases(list);
    internal::AddUnaryCases(list);
    internal::AddUnaryFloatCases(list);
    internal::AddBinaryCases(list);
    internal::AddIntegerSemanticsCases(list);
    internal::AddCompareCases(list);
    internal::AddReduceCases(list);
    internal::AddShapeCases(list);
    internal::AddConvertCases(list);
    internal::AddDotCases(list);
    internal::AddEdgeCases(list);
    internal::AddConvCases(list);
    internal::AddIndexingCases(list);
    internal::AddRandomControlCases(list);
    internal::AddUtilCases(list);
    internal::AddComplexCases(list);
    internal::AddCollectiveCases(list);
    std::set<std::string> names;
    for (const Case& c : list.cases()) {
      if (!names.insert(c.name).second) throw std::logic_error("conformance table: duplicate row " + c.name);
    }
    return std::move(list.cases());
  }();
  return cases;
}

}  // namespace kiln::conformance
