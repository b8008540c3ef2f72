#pragma once
// The explicit list of backends linked into this build, and configuration parsing.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/compute/backend.h"

namespace kiln::compute {

/// Options parsed from "name:key=value,key=value". A factory reads the keys it knows with
/// Take*; the registry then rejects whatever is left, listing the valid keys.
class BackendOptions {
 public:
  BackendOptions(std::string backend, std::map<std::string, std::string> values)
      : backend_(std::move(backend)), values_(std::move(values)) {}

  /// Removes and returns option `key` as an int (default if absent); a non-integer is an error.
  int TakeInt(const std::string& key, int default_value);
  /// Removes and returns option `key` as a bool ("true/false/1/0"; default if absent).
  bool TakeBool(const std::string& key, bool default_value);
  /// Removes and returns option `key` as text (default if absent).
  std::string TakeString(const std::string& key, const std::string& default_value);
  const std::map<std::string, std::string>& Remaining() const { return values_; }

 private:
  std::string backend_;
  std::map<std::string, std::string> values_;
};

struct BackendRegistration {
  BackendInfo info;
  std::function<BackendPtr(BackendOptions&)> factory;
};

/// Every backend of this build, best first. Defined in registry.cc: the one place that lists them.
const std::vector<BackendRegistration>& Registrations();

}  // namespace kiln::compute
