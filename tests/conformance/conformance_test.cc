// Runs the conformance suite (kiln::conformance) on every registered backend, printing the
// op x dtype coverage matrix, and tests the suite's own machinery: the n/a rule, skipping by
// capabilities, and the failure report.

#include "kiln/conformance/conformance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

using compute::OpType;
using conformance::Cell;

// ---- The table and the n/a rule ---------------------------------------------------------------------

TEST(ConformanceTable, RowsAreWellFormed) {
  const std::vector<conformance::Case>& cases = conformance::Cases();
  ASSERT_GT(cases.size(), 1000u);
  std::set<std::string> catalogue;
  for (const auto& e : conformance::Catalogue()) {
    EXPECT_TRUE(catalogue.insert(e.name).second) << "duplicate catalogue entry " << e.name;
  }
  std::set<std::string> names;
  const auto entry_of = [](const std::string& op) {
    for (const auto& e : conformance::Catalogue())
      if (e.name == op) return e;
    return conformance::CatalogueEntry{};
  };
  for (const conformance::Case& c : cases) {
    // No row for a cell the shape rules make n/a.
    EXPECT_TRUE(conformance::Applicable(entry_of(c.op), c.dtype)) << c.name << " is in an n/a cell";
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate row " << c.name;
    EXPECT_TRUE(catalogue.count(c.op)) << c.name << ": op " << c.op << " is not in the catalogue";
    EXPECT_TRUE(IsValid(c.dtype)) << c.name;
    EXPECT_TRUE(static_cast<bool>(c.build)) << c.name;
    EXPECT_FALSE(c.expected.empty()) << c.name;
    EXPECT_FALSE(c.primitives.empty() && c.op != "Identity") << c.name;
    for (const Tensor& t : c.inputs) EXPECT_TRUE(t.Ok()) << c.name;
    for (const Tensor& t : c.expected) EXPECT_TRUE(t.Ok()) << c.name;
    if (!IsFloat(c.dtype)) {
      EXPECT_EQ(c.grad_epsilon, 0) << c.name;
    }
  }
}

TEST(ConformanceTable, NotApplicableFollowsTheShapeRules) {
  EXPECT_FALSE(conformance::PrimitiveAccepts(OpType::Sqrt, DType::Int32));
  EXPECT_TRUE(conformance::PrimitiveAccepts(OpType::Sqrt, DType::BFloat16));
  EXPECT_FALSE(conformance::PrimitiveAccepts(OpType::LogicalAnd, DType::Float32));
  EXPECT_TRUE(conformance::PrimitiveAccepts(OpType::LogicalAnd, DType::Bool));
  EXPECT_FALSE(conformance::PrimitiveAccepts(OpType::Add, DType::Bool));
  EXPECT_TRUE(conformance::PrimitiveAccepts(OpType::Equal, DType::Bool));
  EXPECT_FALSE(conformance::PrimitiveAccepts(OpType::Less, DType::Bool));
  EXPECT_TRUE(conformance::PrimitiveAccepts(OpType::Where, DType::Bool));
  EXPECT_FALSE(conformance::PrimitiveAccepts(OpType::BitCount, DType::Float16));
  // Packed dtypes: storage only (a Composite hands them to its decomposition as they are).
  for (DType d : {DType::Int4, DType::Uint4, DType::Int2, DType::Uint2}) {
    for (OpType op : compute::AllOps()) {
      const bool storage = op == OpType::ConvertDType || op == OpType::Reshape || op == OpType::Parameter ||
                           op == OpType::Constant || op == OpType::Composite;
      EXPECT_EQ(conformance::PrimitiveAccepts(op, d), storage)
          << compute::OpName(op) << " x " << DTypeName(d);
    }
  }
  const auto entry = [](const std::string& name) {
    for (const auto& e : conformance::Catalogue())
      if (e.name == name) return e;
    ADD_FAILURE() << "no catalogue entry " << name;
    return conformance::CatalogueEntry{};
  };
  EXPECT_FALSE(conformance::Applicable(entry("Sigmoid"), DType::Int8));
  EXPECT_FALSE(conformance::Applicable(entry("ReduceMean"), DType::Int32));
  EXPECT_TRUE(conformance::Applicable(entry("ReduceMean"), DType::Float16));
  EXPECT_TRUE(conformance::Applicable(entry("Reshape"), DType::Int4));
  EXPECT_FALSE(conformance::Applicable(entry("Transpose"), DType::Int4));
  EXPECT_TRUE(conformance::Applicable(entry("Where"), DType::Bool));
  EXPECT_TRUE(conformance::Applicable(entry("Reciprocal"), DType::Uint16));
}

TEST(ConformanceTable, DTypeColumnHoldsWhatTheShapeRulesAccept) {
  // A DTypes entry of ops.def narrower than its op's shape rule (the families that check their
  // own dtypes: Iota, convolution, windows, sorting) fails here.
  int accepted = 0;
  for (OpType op : compute::AllOps()) {
    for (DType d : kAllDTypes) {
      if (!conformance::PrimitiveAccepts(op, d)) continue;
      ++accepted;
      EXPECT_TRUE(compute::InDTypeClass(d, compute::OpDTypeClass(op)))
          << compute::OpName(op) << " accepts " << DTypeName(d);
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_EQ(compute::OpDTypeClass(OpType::Log1p), compute::DTypeClass::Float);
  EXPECT_EQ(compute::OpDTypeClass(OpType::ConvGeneral), compute::DTypeClass::Numeric);
  EXPECT_FALSE(compute::InDTypeClass(DType::Int4, compute::DTypeClass::Int));
  EXPECT_TRUE(compute::InDTypeClass(DType::Int4, compute::DTypeClass::Any));
  EXPECT_FALSE(compute::InDTypeClass(DType::Bool, compute::DTypeClass::Numeric));
}

// ---- The suite on every registered backend ------------------------------------------------------------

std::vector<std::string> BackendConfigs() {
  std::vector<std::string> configs;
  for (const compute::BackendInfo& info : compute::RegisteredBackends()) {
    configs.push_back(info.name);
    if (info.name == "ref") configs.push_back("ref:shared=false");
    configs.insert(configs.end(), info.variants.begin(), info.variants.end());  // SIMD targets.
  }
  return configs;
}

class ConformanceOnBackend : public ::testing::TestWithParam<std::string> {};

TEST_P(ConformanceOnBackend, RunAll) {
  const compute::BackendPtr backend = compute::NewWithConfig(GetParam());
  const conformance::Report report = conformance::RunAll(backend);
  std::cout << conformance::CoverageMatrix(report) << std::flush;
  EXPECT_TRUE(report.failures.empty()) << report.failures.size() << " failing rows:\n"
                                       << conformance::FailureReport(report);
  const std::vector<std::string> bad = report.BadCells();
  std::string bad_text;
  for (const std::string& b : bad) bad_text += "  " + b + "\n";
  EXPECT_TRUE(bad.empty()) << bad.size() << " cells are neither implemented nor n/a:\n" << bad_text;
  EXPECT_GT(report.rows_passed, 0);
  EXPECT_TRUE(report.Ok() || !report.failures.empty() || !bad.empty());
}

// Every row again with the inputs' axis 0 declared dynamic: one dynamic compilation per row,
// specialised to the row's inputs, must give the same values. Rows whose graphs need that axis
// static are listed, with the reason.
TEST_P(ConformanceOnBackend, RunAllWithADynamicLeadingAxis) {
  const compute::BackendPtr backend = compute::NewWithConfig(GetParam());
  if (!backend->Capabilities().HasDynamicShapes()) GTEST_SKIP() << "static-only backend";
  conformance::RunOptions options;
  options.dynamic_leading_axis = true;
  const conformance::Report report = conformance::RunAll(backend, options);
  EXPECT_TRUE(report.failures.empty()) << report.failures.size() << " failing rows:\n"
                                       << conformance::FailureReport(report);
  std::cout << report.rows_passed << " rows passed with a dynamic axis 0, " << report.static_only.size()
            << " need it static:\n";
  for (const conformance::Failure& f : report.static_only)
    std::cout << "  " << f.name << ": " << f.message << "\n";
  // Most rows build on a dynamic axis 0; the others are listed above with the op that needs it static.
  EXPECT_GT(report.rows_passed, 10 * static_cast<int>(report.static_only.size()));
}

std::string ConfigName(const ::testing::TestParamInfo<std::string>& info) {
  std::string s;
  for (char c : info.param) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Registered, ConformanceOnBackend, ::testing::ValuesIn(BackendConfigs()), ConfigName);

// ---- The runner itself ---------------------------------------------------------------------------------

// A backend that forwards to another but declares fewer capabilities.
class LimitedBackend final : public compute::Backend {
 public:
  LimitedBackend(compute::BackendPtr inner, std::vector<DType> drop_dtypes, std::vector<OpType> drop_ops)
      : inner_(std::move(inner)), caps_(inner_->Capabilities()) {
    std::erase_if(caps_.dtypes, [&](DType d) {
      return std::find(drop_dtypes.begin(), drop_dtypes.end(), d) != drop_dtypes.end();
    });
    std::erase_if(caps_.ops,
                  [&](OpType o) { return std::find(drop_ops.begin(), drop_ops.end(), o) != drop_ops.end(); });
  }
  std::string Name() const override { return "limited"; }
  std::string Description() const override { return "limited " + inner_->Description(); }
  int NumDevices() const override { return inner_->NumDevices(); }
  bool HasSharedBuffers() const override { return inner_->HasSharedBuffers(); }
  compute::BufferPtr NewSharedBuffer(int device, int64_t bytes) override {
    return inner_->NewSharedBuffer(device, bytes);
  }
  compute::BufferPtr BufferFromHost(int device, const void* data, int64_t bytes) override {
    return inner_->BufferFromHost(device, data, bytes);
  }
  void BufferToHost(const compute::Buffer& buffer, void* dst) override { inner_->BufferToHost(buffer, dst); }
  const compute::BackendCapabilities& Capabilities() const override { return caps_; }
  std::unique_ptr<compute::Executable> Compile(std::shared_ptr<const compute::Program> program) override {
    return inner_->Compile(std::move(program));
  }
  compute::MemoryUsage MemoryStats() const override { return inner_->MemoryStats(); }
  void ResetPeakMemory() override { inner_->ResetPeakMemory(); }

 private:
  compute::BackendPtr inner_;
  compute::BackendCapabilities caps_;
};

const conformance::MatrixRow* FindRow(const conformance::Report& r, const std::string& name, bool primitive) {
  for (const auto& row : r.rows) {
    if (row.name == name && row.primitive == primitive) return &row;
  }
  return nullptr;
}

Cell CellOf(const conformance::MatrixRow& row, DType d) {
  for (int c = 0; c < conformance::kNumColumns; ++c) {
    if (kAllDTypes[c] == d) return row.cells[static_cast<size_t>(c)];
  }
  return Cell::kMissing;
}

TEST(ConformanceRunner, SkipsWhatTheCapabilitiesLack) {
  auto backend = std::make_shared<LimitedBackend>(
      compute::NewWithConfig("ref"), std::vector<DType>{DType::Float64}, std::vector<OpType>{OpType::Sqrt});
  conformance::RunOptions options;
  options.filter = "Sqrt";
  const conformance::Report report = conformance::RunAll(backend, options);
  const conformance::MatrixRow* sqrt = FindRow(report, "Sqrt", false);
  ASSERT_NE(sqrt, nullptr);
  EXPECT_EQ(CellOf(*sqrt, DType::Float32), Cell::kSkip);
  EXPECT_EQ(CellOf(*sqrt, DType::Float64), Cell::kSkip);
  EXPECT_EQ(CellOf(*sqrt, DType::Int32), Cell::kNotApplicable);
  EXPECT_EQ(report.rows_passed, 0);
  EXPECT_GT(report.rows_skipped, 0);
  EXPECT_TRUE(report.failures.empty()) << conformance::FailureReport(report);

  // Dropping a dtype only: other dtypes still run.
  auto no_f64 = std::make_shared<LimitedBackend>(compute::NewWithConfig("ref"),
                                                 std::vector<DType>{DType::Float64}, std::vector<OpType>{});
  options.filter = "Add";
  const conformance::Report r2 = conformance::RunAll(no_f64, options);
  const conformance::MatrixRow* add = FindRow(r2, "Add", false);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(CellOf(*add, DType::Float64), Cell::kSkip);
  EXPECT_EQ(CellOf(*add, DType::Bool), Cell::kNotApplicable);
  EXPECT_EQ(FindRow(r2, "Add", true), nullptr) << "a filtered run has no primitive rows";
}

TEST(ConformanceRunner, ReportsFailingRowsInFull) {
  conformance::Case wrong;
  wrong.op = "Add";
  wrong.name = "Add/Int32/deliberately_wrong";
  wrong.dtype = DType::Int32;
  wrong.primitives = {OpType::Add};
  wrong.build = [](graph::Graph&, const std::vector<graph::Node>& p) -> std::vector<graph::Node> {
    return {graph::Add(p[0], p[1])};
  };
  wrong.inputs = {Tensor::FromValue(std::vector<int32_t>{1, 2}),
                  Tensor::FromValue(std::vector<int32_t>{10, 20})};
  wrong.expected = {Tensor::FromValue(std::vector<int32_t>{11, 23})};
  conformance::Case throws = wrong;
  throws.name = "Add/Int32/bad_graph";
  throws.inputs = {Tensor::FromValue(std::vector<int32_t>{1, 2}),
                   Tensor::FromValue(std::vector<float>{1, 2})};

  const conformance::Report report = conformance::RunCases(compute::NewWithConfig("ref"), {wrong, throws});
  ASSERT_EQ(report.failures.size(), 2u);
  const std::string& m = report.failures[0].message;
  EXPECT_EQ(report.failures[0].op, "Add");
  EXPECT_EQ(report.failures[0].dtype, DType::Int32);
  EXPECT_NE(m.find("[2]int32{1, 2}"), std::string::npos) << m;    // Inputs.
  EXPECT_NE(m.find("[2]int32{11, 23}"), std::string::npos) << m;  // Expected.
  EXPECT_NE(m.find("[2]int32{11, 22}"), std::string::npos) << m;  // Got.
  EXPECT_NE(m.find("[1] got 22, expected 23"), std::string::npos) << m;
  EXPECT_NE(report.failures[1].message.find("building the graph threw"), std::string::npos)
      << report.failures[1].message;
  const std::string text = conformance::FailureReport(report);
  EXPECT_NE(text.find("Add/Int32/deliberately_wrong"), std::string::npos);
  EXPECT_FALSE(report.Ok());
  // The matrix marks the cell.
  const conformance::MatrixRow* add = FindRow(report, "Add", false);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(CellOf(*add, DType::Int32), Cell::kFail);
  EXPECT_EQ(CellOf(*add, DType::Int8), Cell::kMissing);
  EXPECT_NE(conformance::CoverageMatrix(report).find("FAIL"), std::string::npos);
}

TEST(ConformanceRunner, ToleranceAndNaN) {
  // A float row within tolerance passes; NaN matches NaN; a wrong sign of infinity does not.
  conformance::Case c;
  c.op = "Div";
  c.name = "Div/Float32/tolerance";
  c.dtype = DType::Float32;
  c.build = [](graph::Graph&, const std::vector<graph::Node>& p) -> std::vector<graph::Node> {
    return {graph::Div(p[0], p[1])};
  };
  c.inputs = {Tensor::FromValue(std::vector<float>{1, 0, 1}), Tensor::FromValue(std::vector<float>{3, 0, 0})};
  c.expected = {
      Tensor::FromValue(std::vector<float>{std::nextafter(1.0f / 3, 1.0f), NAN, HUGE_VALF})};  // 1 ulp off.
  c.tolerance = {0, 0, 2};
  conformance::Case exact = c;
  exact.name = "Div/Float32/exact";
  exact.tolerance = {};
  conformance::Case inf = c;
  inf.name = "Div/Float32/wrong_infinity";
  inf.expected = {Tensor::FromValue(std::vector<float>{0.33333334f, NAN, -HUGE_VALF})};
  const conformance::Report report = conformance::RunCases(compute::NewWithConfig("ref"), {c, exact, inf});
  ASSERT_EQ(report.failures.size(), 2u) << conformance::FailureReport(report);
  EXPECT_EQ(report.failures[0].name, "Div/Float32/exact");
  EXPECT_EQ(report.failures[1].name, "Div/Float32/wrong_infinity");
}

// Flips one bit of the first element of `t`'s data: the lowest for integers and Bool, the top
// exponent bit for floats and complex numbers' real parts (far beyond any tolerance; NaN and
// infinities stop being so).
Tensor Perturbed(const Tensor& t) {
  Tensor c = t.Clone();
  c.MutableBytes([&](std::span<uint8_t> bytes) {
    if (IsFloat(t.dtype()) || IsComplex(t.dtype())) {  // A complex number's real part.
      bytes[static_cast<size_t>(DTypeBits(ComplexPartDType(t.dtype())) / 8 - 1)] ^= 0x40;
    } else {
      bytes[0] ^= 0x01;
    }
  });
  return c;
}

TEST(ConformanceRunner, EveryRowDetectsAWrongExpectation) {
  std::vector<conformance::Case> mutated;
  for (const conformance::Case& c : conformance::Cases()) {
    if (c.expected.empty() || c.expected[0].Size() == 0) continue;
    conformance::Case m = c;
    m.expected[0] = Perturbed(c.expected[0]);
    mutated.push_back(std::move(m));
  }
  const compute::BackendPtr ref = compute::NewWithConfig("ref");
  const conformance::Report report = conformance::RunCases(ref, mutated);
  std::set<std::string> failed;
  for (const auto& f : report.failures) failed.insert(f.name);
  int undetected = 0;
  for (const conformance::Case& m : mutated) {
    if (failed.count(m.name) != 0) continue;
    // Rows the backend skips (a dtype it lacks) cannot fail.
    bool skippable = !ref->Capabilities().HasDType(m.dtype);
    for (const Tensor& t : m.inputs) skippable = skippable || !ref->Capabilities().HasDType(t.dtype());
    for (const Tensor& t : m.expected) skippable = skippable || !ref->Capabilities().HasDType(t.dtype());
    if (skippable) continue;
    ADD_FAILURE() << m.name << " passes with a wrong expected value " << m.expected[0].ToString();
    if (++undetected > 20) break;
  }
}

TEST(ConformanceFixtures, DirectoryIsFound) { EXPECT_FALSE(conformance::FixturesDir().empty()); }

}  // namespace
}  // namespace kiln
