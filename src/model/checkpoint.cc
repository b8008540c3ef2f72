// Checkpoints: saving a Store to safetensors + a JSON commit record with the crash-safe
// protocol, listing, loading (with checksums), keeping the newest n, and averaging.

#include "kiln/model/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/check.h"
#include "core/checked.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/read_file.h"
#include "kiln/distributed/distributed.h"
#include "kiln/io/safetensors.h"
#include "model/model_internal.h"

namespace kiln::checkpoint {

namespace fs = std::filesystem;
using io::Json;

bool MatchesPattern(std::string_view path, std::string_view pattern) {
  // Iterative glob with '*' only.
  size_t p = 0, s = 0, star = std::string_view::npos, mark = 0;
  while (s < path.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = s;
    } else if (p < pattern.size() && pattern[p] == path[s]) {
      ++p;
      ++s;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      s = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Config& Config::Dir(std::string path) {
  dir_ = std::move(path);
  return *this;
}
Config& Config::Keep(int n) {
  keep_ = n;
  return *this;
}
Config& Config::ExcludeParams(std::vector<std::string> keys) {
  exclude_params_.insert(exclude_params_.end(), keys.begin(), keys.end());
  return *this;
}
Config& Config::ExcludeVars(std::string pattern) {
  exclude_vars_.push_back(std::move(pattern));
  return *this;
}
Config& Config::TakeMean(int k) {
  if (k < 1) detail::Throw("checkpoint: TakeMean({}) needs at least 1 checkpoint", k);
  mean_ = k;
  return *this;
}

Handler Config::Done() {
  if (dir_.empty()) detail::Throw("checkpoint::Build: no Dir() given");
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) detail::Throw("checkpoint: cannot create folder {}: {}", dir_, ec.message());
  Handler h(*this);
  if (!h.ListCheckpoints().empty()) h.Load();
  return h;
}

namespace {

struct Entry {
  int64_t seq = -1;
  std::string name;  // Without extension.
};

/// "checkpoint-n0000012-step-00006000" -> 12; -1 when the name is not a checkpoint's.
int64_t SeqOf(const std::string& file) {
  if (file.rfind("checkpoint-n", 0) != 0) return -1;
  const size_t dash = file.find("-step-");
  if (dash == std::string::npos) return -1;
  const std::string digits = file.substr(12, dash - 12);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return detail::ParseInt64(digits, "checkpoint: the sequence number in file name " + file);
}

Json ParamJson(const model::ParamValue& v) {
  Json j = Json::Object();
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          j.Set("type", Json::String("bool"));
          j.Set("value", Json::Bool(x));
        } else if constexpr (std::is_same_v<T, int64_t>) {
          j.Set("type", Json::String("int"));
          j.Set("value", Json::Int(x));
        } else if constexpr (std::is_same_v<T, double>) {
          j.Set("type", Json::String("float"));
          j.Set("value", Json::Number(x));
        } else if constexpr (std::is_same_v<T, std::string>) {
          j.Set("type", Json::String("string"));
          j.Set("value", Json::String(x));
        } else {
          Json a = Json::Array();
          using E = typename T::value_type;
          for (const auto& e : x) {
            if constexpr (std::is_same_v<E, bool>) {
              a.Push(Json::Bool(e));
            } else if constexpr (std::is_same_v<E, int64_t>) {
              a.Push(Json::Int(e));
            } else if constexpr (std::is_same_v<E, double>) {
              a.Push(Json::Number(e));
            } else {
              a.Push(Json::String(e));
            }
          }
          const char* type = std::is_same_v<E, bool>      ? "bools"
                             : std::is_same_v<E, int64_t> ? "ints"
                             : std::is_same_v<E, double>  ? "floats"
                                                          : "strings";
          j.Set("type", Json::String(type));
          j.Set("value", std::move(a));
        }
      },
      v);
  return j;
}

model::ParamValue ParamFromJson(const Json& j, const std::string& what) {
  const Json* t = j.Find("type");
  const Json* v = j.Find("value");
  if (t == nullptr || v == nullptr) detail::Throw("{}: a hyperparameter without type or value", what);
  const std::string& type = t->AsString(what);
  if (type == "bool") return v->AsBool();
  if (type == "int") return v->AsInt(what);
  if (type == "float") return v->AsNumber();
  if (type == "string") return v->AsString(what);
  const std::vector<Json>& a = v->AsArray(what);
  if (type == "bools") {
    std::vector<bool> out;
    for (const Json& e : a) out.push_back(e.AsBool());
    return out;
  }
  if (type == "ints") {
    std::vector<int64_t> out;
    for (const Json& e : a) out.push_back(e.AsInt(what));
    return out;
  }
  if (type == "floats") {
    std::vector<double> out;
    for (const Json& e : a) out.push_back(e.AsNumber());
    return out;
  }
  if (type == "strings") {
    std::vector<std::string> out;
    for (const Json& e : a) out.push_back(e.AsString(what));
    return out;
  }
  detail::Throw("{}: unknown hyperparameter type \"{}\"", what, type);
}

uint32_t TensorCrc(const Tensor& t) {
  uint32_t crc = 0;
  t.ConstBytes([&](std::span<const uint8_t> b) { crc = io::Crc32c(b); });
  return crc;
}

std::string ReadFile(const std::string& path) { return io::ReadWholeFile(path, "checkpoint"); }

}  // namespace

const SavedVariable* Contents::Find(std::string_view path) const {
  for (const SavedVariable& v : variables)
    if (v.path == path) return &v;
  return nullptr;
}

Contents Read(const std::string& dir, const std::string& name) {
  const std::string record_path = (fs::path(dir) / (name + ".json")).string();
  const std::string weights_path = (fs::path(dir) / (name + ".safetensors")).string();
  Json record = Json::Parse(ReadFile(record_path), record_path);
  const Json* size = record.Find("weights_size");
  const Json* tensors = record.Find("tensors");
  if (size == nullptr || tensors == nullptr) detail::Throw("{}: not a checkpoint record", record_path);
  std::error_code ec;
  const auto actual = fs::file_size(weights_path, ec);
  if (ec) detail::Throw("{}: its weights file {} is missing: {}", record_path, weights_path, ec.message());
  if (static_cast<int64_t>(actual) != size->AsInt(record_path)) {
    detail::Throw("{}: has {} bytes, its record {} says {}", weights_path, actual, record_path,
                  size->AsInt(record_path));
  }
  io::SafetensorsFile file = io::ReadSafetensors(weights_path);
  Contents out;
  out.name = name;
  if (const Json* seq = record.Find("seq")) out.seq = seq->AsInt(record_path);
  if (const Json* step = record.Find("step")) out.step = step->AsInt(record_path);
  for (const auto& [path, info] : tensors->Members(record_path)) {
    Tensor t = file.Find(path);
    if (!t.Ok()) detail::Throw("{}: tensor \"{}\" of the record is missing", weights_path, path);
    const Json* crc = info.Find("crc32c");
    if (crc == nullptr) detail::Throw("{}: no checksum for tensor \"{}\"", record_path, path);
    const uint32_t want = static_cast<uint32_t>(crc->AsInt(record_path));
    const uint32_t got = TensorCrc(t);
    if (got != want) {
      detail::Throw("{}: tensor \"{}\" is damaged (CRC-32C {:08x}, the record {} says {:08x})", weights_path,
                    path, got, record_path, want);
    }
    const Json* tr = info.Find("trainable");
    out.variables.push_back({path, std::move(t), tr != nullptr && tr->AsBool()});
  }
  if (const Json* params = record.Find("params")) {
    for (const Json& p : params->AsArray(record_path)) {
      const Json* scope = p.Find("scope");
      const Json* key = p.Find("key");
      if (scope == nullptr || key == nullptr)
        detail::Throw("{}: a hyperparameter without scope or key", record_path);
      out.params.push_back(
          {scope->AsString(record_path), key->AsString(record_path), ParamFromJson(p, record_path)});
    }
  }
  return out;
}

namespace {

/// The element-wise mean of `ts` (float tensors of one shape), in double, rounded to the dtype.
Tensor Mean(const std::vector<Tensor>& ts) {
  const Tensor& first = ts.front();
  std::vector<double> sum(static_cast<size_t>(first.Size()), 0.0);
  for (const Tensor& t : ts) {
    if (t.dtype() != DType::Float64) {
      // Through a float64 copy of the values.
      std::vector<double> v;
      switch (t.dtype()) {
        case DType::Float32:
          for (float x : t.ToVector<float>()) v.push_back(x);
          break;
        case DType::Float16:
          for (float16 x : t.ToVector<float16>()) v.push_back(static_cast<float>(x));
          break;
        case DType::BFloat16:
          for (bfloat16 x : t.ToVector<bfloat16>()) v.push_back(static_cast<float>(x));
          break;
        default:
          detail::Throw("checkpoint: cannot average a {} tensor", DTypeName(t.dtype()));
      }
      for (size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
    } else {
      std::vector<double> v = t.ToVector<double>();
      for (size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
    }
  }
  for (double& x : sum) x /= static_cast<double>(ts.size());
  switch (first.dtype()) {
    case DType::Float64:
      return Tensor::FromFlat(first.shape(), sum);
    case DType::Float32: {
      std::vector<float> f(sum.begin(), sum.end());
      return Tensor::FromFlat(first.shape(), f);
    }
    case DType::Float16: {
      std::vector<float16> f;
      for (double x : sum) f.push_back(float16(static_cast<float>(x)));
      return Tensor::FromFlat(first.shape(), f);
    }
    default: {
      std::vector<bfloat16> f;
      for (double x : sum) f.push_back(bfloat16(static_cast<float>(x)));
      return Tensor::FromFlat(first.shape(), f);
    }
  }
}

}  // namespace

std::vector<std::string> List(const std::string& dir) {
  std::vector<Entry> entries;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    if (f.path().extension() != ".json") continue;
    const std::string name = f.path().stem().string();
    const int64_t seq = SeqOf(name);
    if (seq >= 0) entries.push_back({seq, name});
  }
  if (ec) detail::Throw("checkpoint: cannot list {}: {}", dir, ec.message());
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.seq < b.seq; });
  std::vector<std::string> names;
  for (const Entry& e : entries) names.push_back(e.name);
  return names;
}

std::vector<std::string> Handler::ListCheckpoints() const { return List(config_.dir_); }

std::string Handler::Save() {
  const model::Store& store = config_.store_;
  const std::string& dir = config_.dir_;
  // The next sequence number: above every checkpoint file ever seen here (records, weights and
  // temporaries), so numbers never repeat. Leftover temporaries of an interrupted save go.
  int64_t seq = 0;
  std::error_code ec;
  std::vector<fs::path> leftovers;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    const std::string file = f.path().filename().string();
    const int64_t s = SeqOf(file.substr(0, file.find('.')));
    if (s >= 0) seq = std::max(seq, s + 1);
    if (s >= 0 && file.find(".tmp") != std::string::npos) leftovers.push_back(f.path());
  }
  if (distributed::Rank() == 0)
    for (const fs::path& p : leftovers) fs::remove(p, ec);
  int64_t step = 0;
  if (model::Variable gs = store.FindVariable("/global_step"); gs.Ok()) step = gs.Value().Item<int64_t>();
  const std::string name = fmt::format("checkpoint-n{:07d}-step-{:08d}", seq, step);
  const std::string weights = (fs::path(dir) / (name + ".safetensors")).string();
  const std::string record_path = (fs::path(dir) / (name + ".json")).string();
  // A distributed job writes from rank 0 alone (the replicas' variables are identical).
  if (distributed::Rank() != 0) return name;

  std::vector<std::pair<std::string, Tensor>> tensors;
  Json record = Json::Object();
  record.Set("format", Json::String("kiln checkpoint 1"));
  record.Set("seq", Json::Int(seq));
  record.Set("step", Json::Int(step));
  record.Set("weights", Json::String(name + ".safetensors"));
  Json info = Json::Object();
  for (const model::Variable& v : store.Variables()) {
    bool excluded = false;
    for (const std::string& p : config_.exclude_vars_) excluded = excluded || MatchesPattern(v.Path(), p);
    if (excluded) continue;
    Tensor value = v.Value();
    tensors.emplace_back(v.Path(), value);
    Json e = Json::Object();
    e.Set("crc32c", Json::Int(TensorCrc(value)));
    e.Set("trainable", Json::Bool(v.Trainable()));
    info.Set(v.Path(), std::move(e));
  }
  Json params = Json::Array();
  for (const auto& [scope, key, value] : store.Params()) {
    Json p = ParamJson(value);
    p.Set("scope", Json::String(scope));
    p.Set("key", Json::String(key));
    params.Push(std::move(p));
  }
  try {
    // 1. Both files under temporary names, each fsynced.
    int64_t size = 0;
    io::StagedFile weights_file(weights, [&](std::ostream& out) {
      size = io::WriteSafetensors(out, tensors, {{"kiln.step", std::to_string(step)}});
    });
    Point("weights written");
    record.Set("weights_size", Json::Int(size));
    record.Set("tensors", std::move(info));
    record.Set("params", std::move(params));
    io::StagedFile record_file(record_path, [&](std::ostream& out) { out << record.Dump() << "\n"; });
    Point("record written");
    // 2. The weights first, then the record that commits them; then the folder.
    weights_file.Commit();
    Point("weights renamed");
    record_file.Commit();
    Point("record renamed");
    io::SyncDirectory(dir);
    Point("folder synced");
  } catch (const Error& e) {
    detail::Throw("checkpoint: saving {} in {}: {}", name, dir, e.message());
  }
  // 3. Keep the newest n: each old record goes before its weights.
  if (config_.keep_ > 0) {
    std::vector<std::string> all = ListCheckpoints();
    for (size_t i = 0; i + static_cast<size_t>(config_.keep_) < all.size(); ++i) {
      fs::remove(fs::path(dir) / (all[i] + ".json"), ec);
      Point("old record deleted");
      fs::remove(fs::path(dir) / (all[i] + ".safetensors"), ec);
      Point("old weights deleted");
    }
    try {
      io::SyncDirectory(dir);
    } catch (const Error& e) {
      detail::Throw("checkpoint: deleting old checkpoints in {}: {}", dir, e.message());
    }
  }
  return name;
}

void Handler::Load() {
  std::vector<std::string> names = ListCheckpoints();
  if (names.empty()) detail::Throw("checkpoint: no checkpoint in {}", config_.dir_);
  const size_t k = std::min(names.size(), static_cast<size_t>(config_.mean_));
  std::vector<Contents> loaded;
  for (size_t i = names.size() - k; i < names.size(); ++i) loaded.push_back(Read(config_.dir_, names[i]));
  const Contents& newest = loaded.back();
  model::Store& store = config_.store_;
  std::shared_ptr<model::detail::StoreData> data = store.data();
  for (const auto& [path, tensor, trainable] : newest.variables) {
    bool excluded = false;
    for (const std::string& p : config_.exclude_vars_) excluded = excluded || MatchesPattern(path, p);
    if (excluded) continue;
    Tensor value = tensor;
    if (k > 1 && IsFloat(tensor.dtype())) {
      std::vector<Tensor> all;
      for (const Contents& l : loaded) {
        for (const auto& [p2, t2, tr2] : l.variables)
          if (p2 == path && t2.shape() == tensor.shape()) all.push_back(t2);
      }
      value = Mean(all);
    }
    if (model::Variable v = store.FindVariable(path); v.Ok()) {
      if (v.shape() != value.shape()) {
        detail::Throw("checkpoint {}: variable \"{}\" is {} in the checkpoint but {} in the store",
                      names.back(), path, value.shape(), v.shape());
      }
      v.SetValue(value);
      continue;
    }
    if (path.empty() || path[0] != '/')
      detail::Throw("checkpoint {}: bad variable path \"{}\"", names.back(), path);
    const size_t slash = path.rfind('/');
    model::Scope scope(store, slash == 0 ? "/" : path.substr(0, slash));
    model::Variable v = scope.VariableWithValue(path.substr(slash + 1), value);
    if (IsFloat(value.dtype())) v.SetTrainable(trainable);
  }
  for (const auto& [scope, key, value] : newest.params) {
    if (std::find(config_.exclude_params_.begin(), config_.exclude_params_.end(), key) !=
        config_.exclude_params_.end())
      continue;
    store.SetParamValue(scope, key, value);
  }
}

}  // namespace kiln::checkpoint
