// Runs the gradient table (kiln::conformance::CheckGradients) on every registered backend, and
// checks that every differentiable primitive's rule is covered by a passing row.

#include <gtest/gtest.h>

#include <cctype>
#include <iostream>
#include <set>
#include <string>

#include "kiln/conformance/gradients.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using compute::OpType;

TEST(GradientTable, RowsAreWellFormed) {
  std::set<std::string> names;
  ASSERT_GT(conformance::GradCases().size(), 100u);
  for (const conformance::GradCase& c : conformance::GradCases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate row " << c.name;
    EXPECT_TRUE(static_cast<bool>(c.build)) << c.name;
    EXPECT_GT(c.epsilon, 0) << c.name;
    for (const Tensor& t : c.inputs) EXPECT_TRUE(t.Ok()) << c.name;
  }
}

class GradientsOnBackend : public ::testing::TestWithParam<std::string> {};

TEST_P(GradientsOnBackend, MatchCentralDifferences) {
  compute::BackendPtr backend = compute::NewWithConfig(GetParam());
  const conformance::GradReport report = conformance::CheckGradients(backend, "", &std::cerr);
  std::cout << report.backend << ": " << report.results.size() << " gradient rows in " << report.seconds
            << " s\n";
  EXPECT_TRUE(report.Ok()) << conformance::GradFailureReport(report);
  // Every primitive with a gradient rule is exercised by a passing row.
  const std::set<OpType> covered = report.Covered();
  for (OpType op : compute::AllOps()) {
    std::string why;
    if (!graph::HasGradientRule(op, &why)) continue;
    if (op == OpType::Parameter || op == OpType::Constant || op == OpType::Iota ||
        op == OpType::GetTupleElement)
      continue;
    // The collectives' gradients need replicated runs: tests/distributed/collectives_test.cc checks
    // them against central differences on every backend.
    if (compute::GetOpCategory(op) == compute::OpCategory::Collective) continue;
    EXPECT_TRUE(covered.count(op)) << compute::OpName(op)
                                   << " has a gradient rule that no passing row checks";
  }
}

std::vector<std::string> BackendConfigs() {
  std::vector<std::string> configs;
  for (const compute::BackendInfo& info : compute::RegisteredBackends()) {
    configs.push_back(info.name);
    if (info.name == "ref") configs.push_back("ref:shared=false");
    configs.insert(configs.end(), info.variants.begin(), info.variants.end());  // SIMD targets.
  }
  return configs;
}

std::string ConfigName(const ::testing::TestParamInfo<std::string>& param) {
  std::string s;
  for (char ch : param.param) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(All, GradientsOnBackend, ::testing::ValuesIn(BackendConfigs()), ConfigName);

TEST(GradientRules, EveryPrimitiveIsClassified) {
  // Each op either has a rule (possibly "zero") or says why it has no gradient; none is missing.
  for (OpType op : compute::AllOps()) {
    std::string why;
    if (!graph::HasGradientRule(op, &why)) {
      EXPECT_NE(why, "no rule registered") << compute::OpName(op) << " is not in the gradient registry";
    }
  }
}

}  // namespace
}  // namespace kiln
