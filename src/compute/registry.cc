#include "compute/registry.h"

#include <climits>
#include <cstdlib>

#include "backends/cpu/cpu_backend.h"
#include "backends/ref/ref_backend.h"
#include "core/check.h"
#include "core/checked.h"

namespace kiln::compute {

const std::vector<BackendRegistration>& Registrations() {
  // Explicit registration (no static initialisers: linkers drop those from static libraries).
  static const std::vector<BackendRegistration> registrations = {
      {CpuBackendInfo(), NewCpuBackend},
      {RefBackendInfo(), NewRefBackend},
  };
  return registrations;
}

std::vector<BackendInfo> RegisteredBackends() {
  std::vector<BackendInfo> infos;
  for (const auto& r : Registrations()) infos.push_back(r.info);
  return infos;
}

int BackendOptions::TakeInt(const std::string& key, int default_value) {
  auto it = values_.find(key);
  if (it == values_.end()) return default_value;
  const std::string text = it->second;
  values_.erase(it);
  int64_t value = 0;
  switch (detail::TryParseInt64(text, value)) {
    case detail::IntParse::kOk:
      if (value >= INT_MIN && value <= INT_MAX) return static_cast<int>(value);
      [[fallthrough]];
    case detail::IntParse::kOutOfRange:
      detail::Throw("backend \"{}\": option {}={} is out of range for an int", backend_, key, text);
    case detail::IntParse::kNotAnInteger:
      break;
  }
  detail::Throw("backend \"{}\": option {}={} is not an integer", backend_, key, text);
}

std::string BackendOptions::TakeString(const std::string& key, const std::string& default_value) {
  auto it = values_.find(key);
  if (it == values_.end()) return default_value;
  std::string text = it->second;
  values_.erase(it);
  return text;
}

bool BackendOptions::TakeBool(const std::string& key, bool default_value) {
  auto it = values_.find(key);
  if (it == values_.end()) return default_value;
  const std::string text = it->second;
  values_.erase(it);
  if (text == "true" || text == "1" || text.empty()) return true;
  if (text == "false" || text == "0") return false;
  detail::Throw("backend \"{}\": option {}={} is not a boolean (true, false, 1 or 0)", backend_, key, text);
}

namespace {

std::string ValidNames() {
  std::string names;
  for (const auto& r : Registrations()) names += (names.empty() ? "" : ", ") + r.info.name;
  return names;
}

}  // namespace

BackendPtr NewWithConfig(const std::string& config) {
  const size_t colon = config.find(':');
  const std::string name = config.substr(0, colon);
  const BackendRegistration* reg = nullptr;
  for (const auto& r : Registrations()) {
    if (r.info.name == name) reg = &r;
  }
  if (reg == nullptr)
    detail::Throw("unknown backend \"{}\" (from \"{}\"); valid backends: {}", name, config, ValidNames());

  std::map<std::string, std::string> values;
  if (colon != std::string::npos) {
    std::string rest = config.substr(colon + 1);
    size_t start = 0;
    while (start <= rest.size()) {
      size_t comma = rest.find(',', start);
      if (comma == std::string::npos) comma = rest.size();
      std::string item = rest.substr(start, comma - start);
      if (!item.empty()) {
        const size_t eq = item.find('=');
        values[item.substr(0, eq)] = eq == std::string::npos ? "" : item.substr(eq + 1);
      }
      start = comma + 1;
    }
  }
  // Reject unknown keys before building anything.
  for (const auto& [key, value] : values) {
    if (!reg->info.options.contains(key)) {
      std::string valid;
      for (const auto& [k, doc] : reg->info.options) valid += fmt::format("\n  {}: {}", k, doc);
      detail::Throw("backend \"{}\": unknown option \"{}\"; valid options:{}", name, key,
                    valid.empty() ? " none" : valid);
    }
  }
  BackendOptions options(name, std::move(values));
  BackendPtr backend = reg->factory(options);
  return backend;
}

BackendPtr New() {
  const char* env = std::getenv("KILN_BACKEND");
  if (env != nullptr && *env != '\0') return NewWithConfig(env);
  return NewWithConfig(Registrations().front().info.name);
}

}  // namespace kiln::compute
