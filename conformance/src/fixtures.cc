// Reads the NumPy reference values (conformance/fixtures/*.npz, written by generate_fixtures.py).

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "internal.h"
#include "kiln/core/error.h"
#include "kiln/io/npy.h"

#ifndef KILN_CONFORMANCE_FIXTURES_DIR
#define KILN_CONFORMANCE_FIXTURES_DIR ""
#endif

namespace kiln::conformance {

std::string FixturesDir() {
  if (const char* env = std::getenv("KILN_CONFORMANCE_FIXTURES"); env != nullptr && *env != '\0') return env;
  return KILN_CONFORMANCE_FIXTURES_DIR;
}

namespace internal {

const Tensor& Fixture(const std::string& file, const std::string& key) {
  static std::mutex mu;
  static std::map<std::string, std::map<std::string, Tensor>> files;
  std::lock_guard lock(mu);
  auto it = files.find(file);
  if (it == files.end()) {
    const std::string dir = FixturesDir();
    const std::string path = dir + "/" + file;
    try {
      it = files.emplace(file, io::ReadNpz(path)).first;
    } catch (const kiln::Error& e) {
      throw kiln::Error(fmt::format(
          "conformance: cannot read the fixture file {} ({}); set KILN_CONFORMANCE_FIXTURES to the "
          "directory holding kiln's conformance/fixtures",
          path, e.message()));
    }
  }
  auto k = it->second.find(key);
  if (k == it->second.end()) {
    throw kiln::Error(
        fmt::format("conformance: fixture file {} has no array \"{}\"; rerun "
                    "conformance/generate_fixtures.py",
                    file, key));
  }
  return k->second;
}

Tensor FixtureAs(DType dtype, const std::string& file, const std::string& key, bool exact) {
  const Tensor& t = Fixture(file, key);
  if (t.dtype() != DType::Float64) {
    throw kiln::Error(
        fmt::format("conformance: fixture {}:{} is {}, not Float64", file, key, DTypeName(t.dtype())));
  }
  const std::vector<double> values = t.ToVector<double>();
  return exact ? V(dtype, t.shape().Dimensions(), values) : Rounded(dtype, t.shape().Dimensions(), values);
}

}  // namespace internal
}  // namespace kiln::conformance
