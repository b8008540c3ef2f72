#include "tokenizers/json_fields.h"

#include <cmath>

#include "core/check.h"

namespace kiln::tokenizers {

void Fields::Fail(std::string_view what) const { detail::Throw("{}: {}", prefix_, what); }

const io::Json* Fields::Optional(const io::Json& j, std::string_view key) const {
  if (!j.IsObject()) return nullptr;
  const io::Json* v = j.Find(std::string(key));
  return v == nullptr || v->kind() == io::Json::Kind::kNull ? nullptr : v;
}

const io::Json& Fields::Required(const io::Json& j, std::string_view key, std::string_view where) const {
  CheckObject(j, where);
  const io::Json* v = Optional(j, key);
  if (v == nullptr) Fail(fmt::format("{}: \"{}\" is missing", where, key));
  return *v;
}

void Fields::CheckObject(const io::Json& j, std::string_view where) const {
  if (!j.IsObject()) Fail(fmt::format("{} is not an object", where));
}

std::string Fields::Type(const io::Json& j, std::string_view where) const { return String(j, "type", where); }

const std::string& Fields::AsString(const io::Json& v, std::string_view what) const {
  if (v.kind() != io::Json::Kind::kString) Fail(fmt::format("{} is not a string", what));
  return v.AsString(std::string(what));
}

const std::vector<io::Json>& Fields::AsArray(const io::Json& v, std::string_view what) const {
  if (v.kind() != io::Json::Kind::kArray) Fail(fmt::format("{} is not an array", what));
  return v.AsArray(std::string(what));
}

int64_t Fields::AsInt(const io::Json& v, std::string_view what) const {
  if (v.kind() != io::Json::Kind::kNumber) Fail(fmt::format("{} is not a number", what));
  const double d = v.AsNumber();
  if (!(std::abs(d) < 9.0e15) || d != std::floor(d)) Fail(fmt::format("{} is not an integer", what));
  return v.AsInt(std::string(what));
}

std::string Fields::String(const io::Json& j, std::string_view key, std::string_view where) const {
  return AsString(Required(j, key, where), fmt::format("{}: \"{}\"", where, key));
}

std::string Fields::StringOr(const io::Json& j, std::string_view key, std::string_view where,
                             std::string fallback) const {
  const io::Json* v = Optional(j, key);
  return v == nullptr ? fallback : AsString(*v, fmt::format("{}: \"{}\"", where, key));
}

bool Fields::BoolOr(const io::Json& j, std::string_view key, std::string_view where, bool fallback) const {
  const io::Json* v = Optional(j, key);
  if (v == nullptr) return fallback;
  if (v->kind() != io::Json::Kind::kBool) Fail(fmt::format("{}: \"{}\" is not true or false", where, key));
  return v->AsBool();
}

int64_t Fields::IntOr(const io::Json& j, std::string_view key, std::string_view where,
                      int64_t fallback) const {
  const io::Json* v = Optional(j, key);
  return v == nullptr ? fallback : AsInt(*v, fmt::format("{}: \"{}\"", where, key));
}

double Fields::NumberOr(const io::Json& j, std::string_view key, std::string_view where,
                        double fallback) const {
  const io::Json* v = Optional(j, key);
  if (v == nullptr) return fallback;
  if (v->kind() != io::Json::Kind::kNumber) Fail(fmt::format("{}: \"{}\" is not a number", where, key));
  return v->AsNumber();
}

const std::vector<io::Json>& Fields::Array(const io::Json& j, std::string_view key,
                                           std::string_view where) const {
  return AsArray(Required(j, key, where), fmt::format("{}: \"{}\"", where, key));
}

}  // namespace kiln::tokenizers
