// ONNX's own test cases (Debian's libonnx-testdata: the operator cases of onnx.backend.test, and
// PyTorch-exported modules and operators): each model is imported and run on the cpu backend (a case whose
// every input must be fixed at import is computed there, on the reference backend) and its outputs
// compared with ONNX's expected ones (rtol 1e-3, atol 1e-7, as onnx.backend.test; integers and Bool exactly).
// A case kiln cannot run yet is listed with its reason in case_expectations.txt: the test fails when a listed
// case starts passing or fails for another reason, and when an unlisted one fails.
// KILN_ONNX_WRITE_EXPECTATIONS=<path> writes the file the current results call for;
// KILN_ONNX_CASES=<regex> runs only the cases whose "set/name" matches and prints each one's outcome.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/onnx/onnx.h"
#include "test_util.h"

namespace kiln::onnx {
namespace {

namespace fs = std::filesystem;

const char* const kTestData = "/usr/share/libonnx-testdata/data";
/// The case sets: ONNX's operator cases, and models exported by PyTorch (modules with their
/// weights as initializers, and single operators).
const char* const kSets[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};

/// Empty when `got` matches `want`, else what differs.
std::string Compare(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape())
    return fmt::format("shape {}, expected {}", got.shape().ToString(), want.shape().ToString());
  if (IsComplex(want.dtype()) || !(IsFloat(want.dtype()))) {
    bool same = false;
    got.ConstBytes([&](std::span<const uint8_t> a) {
      want.ConstBytes(
          [&](std::span<const uint8_t> b) { same = std::equal(a.begin(), a.end(), b.begin(), b.end()); });
    });
    return same ? "" : "values differ";
  }
  const std::vector<double> g = got.ToDoubles(), w = want.ToDoubles();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (g[i] == w[i]) continue;
    if (!(std::abs(g[i] - w[i]) <= 1e-7 + 1e-3 * std::abs(w[i])))
      return fmt::format("element {} is {}, expected {}", i, g[i], w[i]);
  }
  return "";
}

Tensor AsBFloat16(const Tensor& t) {
  Tensor r;
  t.ConstBytes(
      [&](std::span<const uint8_t> b) { r = Tensor::FromBytes(t.shape().WithDType(DType::BFloat16), b); });
  return r;
}

std::vector<Tensor> Run(const compute::BackendPtr& backend, const Model& m,
                        const std::vector<Tensor>& inputs) {
  graph::Exec exec(
      backend, [&m](graph::Graph& g, const std::vector<graph::Node>& p) { return m.CallGraph(g, p); },
      static_cast<int>(inputs.size()), "onnx case");
  return exec.Call(inputs);
}

/// Runs one case: "" when it passes, else the reason (paths replaced by the case's name).
std::string RunCase(const compute::BackendPtr& backend, const fs::path& dir) {
  try {
    // Random operators draw a fixed stream (not NumPy's: those cases are listed), so a case's
    // outcome is the same on every run.
    Model m = ReadFile((dir / "model.onnx").string()).WithRandomSeed(1);
    int sets = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_directory() || entry.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
      ++sets;
      std::vector<Tensor> inputs, expected;
      for (size_t i = 0; fs::exists(entry.path() / fmt::format("input_{}.pb", i)); ++i)
        inputs.push_back(ReadTensorProto((entry.path() / fmt::format("input_{}.pb", i)).string()));
      for (size_t i = 0; fs::exists(entry.path() / fmt::format("output_{}.pb", i)); ++i)
        expected.push_back(ReadTensorProto((entry.path() / fmt::format("output_{}.pb", i)).string()));
      // ONNX's test data stores BFloat16 values as Uint16 (NumPy has no bfloat16): the same bits.
      for (size_t i = 0; i < inputs.size() && i < m.InputShapes().size(); ++i)
        if (inputs[i].dtype() == DType::Uint16 && m.InputShapes()[i].dtype() == DType::BFloat16)
          inputs[i] = AsBFloat16(inputs[i]);
      for (Tensor& t : expected)
        if (t.dtype() == DType::Uint16 && std::string(dir.filename()).find("BFLOAT16") != std::string::npos)
          t = AsBFloat16(t);
      if (inputs.size() != m.InputNames().size())
        return fmt::format("the case gives {} inputs, the model takes {}", inputs.size(),
                           m.InputNames().size());
      std::vector<Tensor> got;
      try {
        got = Run(backend, m, inputs);
      } catch (const Error& e) {
        // Sizes fed as inputs (a Reshape's shape): fix the integer inputs as constants, as a user
        // of a static-shape compiler does (Model::WithInputsAsConstants), and run again.
        // First the integer inputs, then every input but the first (Resize's float scales), then
        // all of them (an op whose output shape depends on its input's values, as NonZero).
        if (e.message().find("must be known when the model is imported") == std::string::npos) throw;
        for (int pass = 0; pass < 3 && got.empty(); ++pass) {
          std::vector<std::pair<std::string, Tensor>> fixed;
          std::vector<Tensor> rest;
          for (size_t i = 0; i < inputs.size(); ++i) {
            if (pass == 0 ? IsInt(inputs[i].dtype()) : pass == 2 || i > 0) {
              fixed.emplace_back(m.InputNames()[i], inputs[i]);
            } else {
              rest.push_back(inputs[i]);
            }
          }
          try {
            got = Run(backend, m.WithInputsAsConstants(fixed), rest);
          } catch (const Error& again) {
            if (pass == 2 ||
                again.message().find("must be known when the model is imported") == std::string::npos)
              throw;
          }
        }
      }
      if (got.size() != expected.size())
        return fmt::format("{} outputs, expected {}", got.size(), expected.size());
      for (size_t k = 0; k < got.size(); ++k) {
        const std::string diff = Compare(got[k], expected[k]);
        if (!diff.empty()) return fmt::format("output {}: {}", k, diff);
      }
    }
    if (sets == 0) return "no test data set";
    return "";
  } catch (const std::exception& e) {
    std::string msg = e.what();
    msg = msg.substr(0, msg.find('\n'));
    // What follows depends on the machine (its memory size).
    if (const size_t p = msg.find("cannot allocate"); p != std::string::npos) msg = msg.substr(0, p + 15);
    const std::string path = dir.string();
    for (size_t p; (p = msg.find(path)) != std::string::npos;)
      msg.replace(p, path.size(), dir.filename().string());
    return msg.substr(0, 300);
  }
}

TEST(OnnxTestCases, PassOrAreListedWithTheirReason) {
  ASSERT_TRUE(fs::is_directory(kTestData))
      << kTestData << " is missing: scripts/install-deps.sh installs libonnx-testdata";
  const char* src = std::getenv("KILN_TEST_SOURCE_DIR");
  const std::string listed_path = std::string(src ? src : ".") + "/tests/onnx/case_expectations.txt";
  std::map<std::string, std::string> listed;
  {
    std::ifstream in(listed_path);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      const size_t tab = line.find('\t');
      ASSERT_NE(tab, std::string::npos) << "bad line: " << line;
      listed[line.substr(0, tab)] = line.substr(tab + 1);
    }
  }
  std::vector<fs::path> cases;
  for (const char* set : kSets) {
    const fs::path dir = fs::path(kTestData) / set;
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory()) cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  const compute::BackendPtr backend = compute::New();
  if (const char* only = std::getenv("KILN_ONNX_CASES")) {
    const std::regex re(only);
    int n = 0, ok = 0;
    for (const fs::path& dir : cases) {
      const std::string name = dir.parent_path().filename().string() + "/" + dir.filename().string();
      if (!std::regex_search(name, re)) continue;
      const std::string reason = RunCase(backend, dir);
      ++n;
      ok += reason.empty() ? 1 : 0;
      std::cout << (reason.empty() ? "pass " : "FAIL ") << name << (reason.empty() ? "" : "  ") << reason
                << "\n";
    }
    std::cout << ok << " of " << n << " selected cases pass\n";
    GTEST_SKIP() << "KILN_ONNX_CASES selects a subset: the expectations are not checked";
  }
  int passed = 0;
  std::map<std::string, std::string> failed;
  std::string expectations =
      "# ONNX test cases kiln does not pass yet, with the reason (tests/onnx/onnx_cases_test.cc).\n";
  for (const fs::path& dir : cases) {
    const std::string name = dir.parent_path().filename().string() + "/" + dir.filename().string();
    const std::string reason = RunCase(backend, dir);
    if (reason.empty()) {
      ++passed;
      EXPECT_EQ(listed.count(name), 0u) << name << " passes now: remove it from " << listed_path;
      continue;
    }
    expectations += name + "\t" + reason + "\n";
    failed.emplace(name, reason);
    auto it = listed.find(name);
    if (it == listed.end()) {
      ADD_FAILURE() << name << " fails: " << reason;
    } else {
      EXPECT_EQ(reason, it->second) << name << " fails differently from what " << listed_path << " says";
    }
  }
  std::map<std::string, std::pair<int, int>> per_set;  // Passed, total.
  for (const fs::path& dir : cases) ++per_set[dir.parent_path().filename().string()].second;
  std::cout << "ONNX test cases: " << passed << " of " << cases.size() << " pass (by set, failing: ";
  std::map<std::string, int> failing;  // This run's failures, not the file's list.
  for (const auto& [name, reason] : failed) ++failing[name.substr(0, name.find('/'))];
  for (const auto& [set, n] : per_set) std::cout << set << " " << failing[set] << " of " << n.second << "; ";
  std::cout << ")\n";
  if (const char* out = std::getenv("KILN_ONNX_WRITE_EXPECTATIONS")) std::ofstream(out) << expectations;
}

}  // namespace
}  // namespace kiln::onnx
