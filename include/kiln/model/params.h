#pragma once
/// @file
/// Hyperparameters: typed values stored by key at a scope of a model::Store, found from a scope
/// up to the root (so a sub-scope inherits its parents' settings and may override them).

#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::model {

/// A hyperparameter's value: a bool, an integer, a float, a string, or a list of one of them.
using ParamValue = std::variant<bool, int64_t, double, std::string, std::vector<bool>, std::vector<int64_t>,
                                std::vector<double>, std::vector<std::string>>;

/// "true", "3", "0.01", "\"adam\"", "[1, 2]".
std::string ParamToString(const ParamValue& value);

namespace detail {

/// C++ values SetParam takes, mapped to their ParamValue alternative: bool; integers -> int64_t;
/// floats -> double; string literals and strings -> std::string; std::vectors of those.
template <typename T>
ParamValue ToParam(const T& value) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::same_as<U, bool>) {
    return value;
  } else if constexpr (std::integral<U>) {
    return static_cast<int64_t>(value);
  } else if constexpr (std::floating_point<U>) {
    return static_cast<double>(value);
  } else if constexpr (std::convertible_to<const U&, std::string>) {
    return std::string(value);
  } else if constexpr (std::same_as<U, std::vector<bool>>) {
    return value;
  } else if constexpr (std::same_as<U, std::vector<std::string>>) {
    return value;
  } else if constexpr (std::integral<typename U::value_type>) {
    return std::vector<int64_t>(value.begin(), value.end());
  } else {
    static_assert(std::floating_point<typename U::value_type>, "SetParam: unsupported value type");
    return std::vector<double>(value.begin(), value.end());
  }
}

// Readers of one alternative (params.cc); each throws kiln::Error naming `key` and both types
// when the value does not convert. Integers and floats convert into each other (a float to an
// integer only when it is integral).
bool ParamAsBool(const ParamValue& value, const std::string& key);
int64_t ParamAsInt(const ParamValue& value, const std::string& key);
double ParamAsDouble(const ParamValue& value, const std::string& key);
std::string ParamAsString(const ParamValue& value, const std::string& key);
std::vector<int64_t> ParamAsInts(const ParamValue& value, const std::string& key);
std::vector<double> ParamAsDoubles(const ParamValue& value, const std::string& key);
std::vector<bool> ParamAsBools(const ParamValue& value, const std::string& key);
std::vector<std::string> ParamAsStrings(const ParamValue& value, const std::string& key);

/// Throws the kiln::Error for hyperparameter `key` whose `value` is outside [lo, hi], the range of
/// the type it is read as.
[[noreturn]] void ThrowParamOutOfRange(const std::string& key, const std::string& value,
                                       const std::string& lo, const std::string& hi);

/// An integer read as T, checked to fit.
template <std::integral T>
T NarrowParam(int64_t v, const std::string& key) {
  if (!std::in_range<T>(v))
    ThrowParamOutOfRange(key, std::to_string(v), std::to_string(std::numeric_limits<T>::min()),
                         std::to_string(std::numeric_limits<T>::max()));
  return static_cast<T>(v);
}
/// A float read as T, checked to be in its range (a finite double beyond a float's is an error).
template <std::floating_point T>
T NarrowParam(double v, const std::string& key) {
  if (std::isfinite(v) && (v > std::numeric_limits<T>::max() || v < std::numeric_limits<T>::lowest()))
    ThrowParamOutOfRange(key, std::to_string(v), std::to_string(std::numeric_limits<T>::lowest()),
                         std::to_string(std::numeric_limits<T>::max()));
  return static_cast<T>(v);
}

/// `value` as T (the type of a GetParamOr default): integers and floats checked to fit T.
template <typename T>
T FromParam(const ParamValue& value, const std::string& key) {
  if constexpr (std::same_as<T, bool>) {
    return ParamAsBool(value, key);
  } else if constexpr (std::integral<T>) {
    return NarrowParam<T>(ParamAsInt(value, key), key);
  } else if constexpr (std::floating_point<T>) {
    return NarrowParam<T>(ParamAsDouble(value, key), key);
  } else if constexpr (std::same_as<T, std::string>) {
    return ParamAsString(value, key);
  } else if constexpr (std::same_as<T, std::vector<bool>>) {
    return ParamAsBools(value, key);
  } else if constexpr (std::same_as<T, std::vector<std::string>>) {
    return ParamAsStrings(value, key);
  } else if constexpr (std::integral<typename T::value_type>) {
    T out;
    for (int64_t v : ParamAsInts(value, key)) out.push_back(NarrowParam<typename T::value_type>(v, key));
    return out;
  } else {
    T out;
    for (double v : ParamAsDoubles(value, key)) out.push_back(NarrowParam<typename T::value_type>(v, key));
    return out;
  }
}

}  // namespace detail

}  // namespace kiln::model
