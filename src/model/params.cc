// Hyperparameter values: printing and conversions for GetParamOr.

#include <cmath>

#include "core/check.h"
#include "kiln/model/params.h"

namespace kiln::model {

namespace {

const char* TypeName(const ParamValue& v) {
  static constexpr const char* kNames[] = {"bool",          "integer",       "float",
                                           "string",        "list of bool",  "list of integer",
                                           "list of float", "list of string"};
  return kNames[v.index()];
}

[[noreturn]] void Mismatch(const ParamValue& v, const std::string& key, const char* want) {
  kiln::detail::Throw("hyperparameter \"{}\" is a {} ({}), which does not convert to {}", key, TypeName(v),
                      ParamToString(v), want);
}

}  // namespace

std::string ParamToString(const ParamValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return fmt::format("\"{}\"", v);
        } else if constexpr (std::is_arithmetic_v<T>) {
          return fmt::format("{}", v);
        } else {
          std::vector<std::string> parts;
          for (const auto& e : v) {
            if constexpr (std::is_same_v<T, std::vector<std::string>>) {
              parts.push_back(fmt::format("\"{}\"", e));
            } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
              parts.push_back(e ? "true" : "false");
            } else {
              parts.push_back(fmt::format("{}", e));
            }
          }
          return fmt::format("[{}]", fmt::join(parts, ", "));
        }
      },
      value);
}

namespace detail {

bool ParamAsBool(const ParamValue& v, const std::string& key) {
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  Mismatch(v, key, "a bool");
}

void ThrowParamOutOfRange(const std::string& key, const std::string& value, const std::string& lo,
                          const std::string& hi) {
  kiln::detail::Throw("hyperparameter \"{}\": {} is outside [{}, {}], the range of the type it is read as",
                      key, value, lo, hi);
}

int64_t ParamAsInt(const ParamValue& v, const std::string& key) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
  if (const double* d = std::get_if<double>(&v)) {
    if (std::isfinite(*d) && std::trunc(*d) == *d && std::abs(*d) < 9.2e18) return static_cast<int64_t>(*d);
    Mismatch(v, key, "an integer (it is not integral)");
  }
  Mismatch(v, key, "an integer");
}

double ParamAsDouble(const ParamValue& v, const std::string& key) {
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  Mismatch(v, key, "a float");
}

std::string ParamAsString(const ParamValue& v, const std::string& key) {
  if (const std::string* s = std::get_if<std::string>(&v)) return *s;
  Mismatch(v, key, "a string");
}

std::vector<int64_t> ParamAsInts(const ParamValue& v, const std::string& key) {
  if (const auto* i = std::get_if<std::vector<int64_t>>(&v)) return *i;
  if (const auto* d = std::get_if<std::vector<double>>(&v)) {
    std::vector<int64_t> out;
    for (double x : *d) out.push_back(ParamAsInt(ParamValue(x), key));
    return out;
  }
  Mismatch(v, key, "a list of integers");
}

std::vector<double> ParamAsDoubles(const ParamValue& v, const std::string& key) {
  if (const auto* d = std::get_if<std::vector<double>>(&v)) return *d;
  if (const auto* i = std::get_if<std::vector<int64_t>>(&v)) return {i->begin(), i->end()};
  Mismatch(v, key, "a list of floats");
}

std::vector<bool> ParamAsBools(const ParamValue& v, const std::string& key) {
  if (const auto* b = std::get_if<std::vector<bool>>(&v)) return *b;
  Mismatch(v, key, "a list of bools");
}

std::vector<std::string> ParamAsStrings(const ParamValue& v, const std::string& key) {
  if (const auto* s = std::get_if<std::vector<std::string>>(&v)) return *s;
  Mismatch(v, key, "a list of strings");
}

}  // namespace detail
}  // namespace kiln::model
