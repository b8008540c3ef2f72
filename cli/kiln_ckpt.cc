// kiln-ckpt: looks inside kiln checkpoints without writing a program.
//
//   kiln-ckpt list DIR               the checkpoints in folder DIR, oldest first (sequence
//                                    number, step, size, name; read from the names alone)
//   kiln-ckpt vars CKPT              a checkpoint's variables (path, dtype, shape, trainable,
//                                    min/mean/max, non-finite count) and hyperparameters
//   kiln-ckpt show CKPT PATH [--all] one variable's value (--all: every value, one per line)
//   kiln-ckpt diff CKPT_A CKPT_B     what differs: variables only in one, shapes and dtypes,
//                                    values (max and mean |a-b|), hyperparameters
//   kiln-ckpt DIR                    list, then the newest checkpoint's variables
//
// CKPT is a checkpoint folder (its newest checkpoint) or one checkpoint, named by its record or
// weights file, with or without the extension. Exit status: 0; 1 when `diff` finds differences;
// 2 on an error or bad usage (the error says which file and what is wrong).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "kiln/kiln.h"

namespace fs = std::filesystem;
using kiln::DType;
using kiln::Tensor;

namespace {

constexpr const char* kUsage =
    "usage: kiln-ckpt list DIR\n"
    "       kiln-ckpt vars CKPT\n"
    "       kiln-ckpt show CKPT PATH [--all]\n"
    "       kiln-ckpt diff CKPT_A CKPT_B\n"
    "       kiln-ckpt DIR\n"
    "CKPT: a checkpoint folder (its newest checkpoint) or one checkpoint's .json/.safetensors file\n";

struct Usage {
  std::string message;
};

// A checkpoint named on the command line: its folder and name.
struct Located {
  std::string dir;
  std::string name;
  std::string Label() const { return (fs::path(dir) / name).string(); }
};

Located Locate(const std::string& arg) {
  std::error_code ec;
  if (fs::is_directory(arg, ec)) {
    std::vector<std::string> names = kiln::checkpoint::List(arg);
    if (names.empty()) throw kiln::Error(fmt::format("kiln-ckpt: no checkpoint in folder {}", arg));
    return {arg, names.back()};
  }
  fs::path p(arg);
  if (p.extension() == ".json" || p.extension() == ".safetensors") p.replace_extension();
  if (!fs::exists(fs::path(p.string() + ".json"), ec)) {
    throw kiln::Error(fmt::format(
        "kiln-ckpt: {} is neither a checkpoint folder nor a checkpoint (no {}.json)", arg, p.string()));
  }
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  return {dir, p.filename().string()};
}

struct Stats {
  double min = 0, mean = 0, max = 0;
  int64_t finite = 0, non_finite = 0;
};

Stats StatsOf(const Tensor& t) {
  Stats s;
  double sum = 0;
  for (double x : t.ToDoubles()) {
    if (!std::isfinite(x)) {
      ++s.non_finite;
      continue;
    }
    if (s.finite == 0 || x < s.min) s.min = x;
    if (s.finite == 0 || x > s.max) s.max = x;
    sum += x;
    ++s.finite;
  }
  if (s.finite > 0) s.mean = sum / static_cast<double>(s.finite);
  return s;
}

std::string Dims(const kiln::Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.Dimensions().size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape.Dimensions()[i]);
  return out + "]";
}

std::string HumanBytes(uintmax_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  if (n < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(n) / 1024);
  if (n < 1024ull * 1024 * 1024) return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1024 * 1024));
  return fmt::format("{:.1f} GiB", static_cast<double>(n) / (1024.0 * 1024 * 1024));
}

// The sequence number and step in a checkpoint's name ("checkpoint-n0000012-step-00006000"), read
// without opening its files (a folder may hold many large checkpoints).
std::pair<std::string, std::string> SeqAndStep(const std::string& name) {
  const size_t n = name.find("-n"), step = name.find("-step-");
  if (n == std::string::npos || step == std::string::npos || step < n) return {"?", "?"};
  auto trim = [](std::string digits) {
    const size_t first = digits.find_first_not_of('0');
    return first == std::string::npos ? std::string("0") : digits.substr(first);
  };
  return {trim(name.substr(n + 2, step - n - 2)), trim(name.substr(step + 6))};
}

int List(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw kiln::Error(fmt::format("kiln-ckpt: {} is not a folder", dir));
  std::vector<std::string> names = kiln::checkpoint::List(dir);
  fmt::print("{}: {} checkpoint{}\n", dir, names.size(), names.size() == 1 ? "" : "s");
  if (names.empty()) return 0;
  fmt::print("{:>6}  {:>10}  {:>10}  {}\n", "seq", "step", "size", "name");
  for (const std::string& name : names) {
    uintmax_t bytes = 0;
    for (const char* ext : {".json", ".safetensors"}) {
      const uintmax_t size = fs::file_size(fs::path(dir) / (name + ext), ec);
      if (!ec) bytes += size;
    }
    const auto [seq, step] = SeqAndStep(name);
    fmt::print("{:>6}  {:>10}  {:>10}  {}\n", seq, step, HumanBytes(bytes), name);
  }
  return 0;
}

int Vars(const Located& at) {
  kiln::checkpoint::Contents c = kiln::checkpoint::Read(at.dir, at.name);
  int64_t values = 0;
  size_t width = 4;
  for (const auto& v : c.variables) {
    values += v.value.Size();
    width = std::max(width, v.path.size());
  }
  fmt::print("{} (step {}): {} variable{}, {} value{}\n", at.Label(), c.step, c.variables.size(),
             c.variables.size() == 1 ? "" : "s", values, values == 1 ? "" : "s");
  if (!c.variables.empty()) {
    fmt::print("{:<{}}  {:<8}  {:<14}  {:<9}  {:>12}  {:>12}  {:>12}  {}\n", "path", width, "dtype", "shape",
               "trainable", "min", "mean", "max", "non-finite");
    for (const auto& v : c.variables) {
      const Stats s = StatsOf(v.value);
      const bool any = s.finite > 0;
      fmt::print("{:<{}}  {:<8}  {:<14}  {:<9}  {:>12}  {:>12}  {:>12}  {}\n", v.path, width,
                 kiln::DTypeName(v.value.dtype()), Dims(v.value.shape()), v.trainable ? "yes" : "no",
                 any ? fmt::format("{:.6g}", s.min) : "-", any ? fmt::format("{:.6g}", s.mean) : "-",
                 any ? fmt::format("{:.6g}", s.max) : "-", s.non_finite);
    }
  }
  if (!c.params.empty()) {
    fmt::print("hyperparameters:\n");
    for (const auto& p : c.params)
      fmt::print("  {} {} = {}\n", p.scope, p.key, kiln::model::ParamToString(p.value));
  }
  return 0;
}

int Show(const Located& at, const std::string& path, bool all) {
  kiln::checkpoint::Contents c = kiln::checkpoint::Read(at.dir, at.name);
  const kiln::checkpoint::SavedVariable* v = c.Find(path);
  if (v == nullptr) {
    std::string known;
    for (const auto& x : c.variables) known += (known.empty() ? "" : ", ") + x.path;
    throw kiln::Error(
        fmt::format("kiln-ckpt: no variable \"{}\" in {} (it has: {})", path, at.Label(), known));
  }
  fmt::print("{} in {} (step {}), {}{}:\n", v->path, at.Label(), c.step, v->value.shape().ToString(),
             v->trainable ? ", trainable" : "");
  if (!all) {
    fmt::print("{}\n", v->value.ToString());
    return 0;
  }
  const std::vector<double> values = v->value.ToDoubles();
  for (size_t i = 0; i < values.size(); ++i) fmt::print("{} {}\n", i, values[i]);
  return 0;
}

int Diff(const Located& a, const Located& b) {
  kiln::checkpoint::Contents ca = kiln::checkpoint::Read(a.dir, a.name);
  kiln::checkpoint::Contents cb = kiln::checkpoint::Read(b.dir, b.name);
  fmt::print("A: {} (step {})\nB: {} (step {})\n", a.Label(), ca.step, b.Label(), cb.step);
  int differences = 0;
  int equal = 0;
  for (const auto& va : ca.variables) {
    const kiln::checkpoint::SavedVariable* vb = cb.Find(va.path);
    if (vb == nullptr) {
      fmt::print("only in A: {} {}\n", va.path, va.value.shape().ToString());
      ++differences;
      continue;
    }
    if (va.value.shape() != vb->value.shape()) {
      fmt::print("shape:     {} {} in A, {} in B\n", va.path, va.value.shape().ToString(),
                 vb->value.shape().ToString());
      ++differences;
      continue;
    }
    if (va.value.Equal(vb->value)) {
      if (va.trainable != vb->trainable) {
        fmt::print("trainable: {} {} in A, {} in B\n", va.path, va.trainable, vb->trainable);
        ++differences;
      } else {
        ++equal;
      }
      continue;
    }
    const std::vector<double> x = va.value.ToDoubles();
    const std::vector<double> y = vb->value.ToDoubles();
    double max_abs = 0, sum_abs = 0;
    int64_t differ = 0;
    bool nan_on_one_side = false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))) continue;
      ++differ;
      const double d = std::fabs(x[i] - y[i]);
      if (std::isnan(d)) {
        nan_on_one_side = true;
        continue;
      }
      max_abs = std::max(max_abs, d);
      sum_abs += d;
    }
    fmt::print("values:    {} {}: {} of {} differ, max |a-b| {:.6g}, mean |a-b| {:.6g}{}\n", va.path,
               va.value.shape().ToString(), differ, x.size(), max_abs,
               sum_abs / static_cast<double>(x.size()), nan_on_one_side ? " (and NaN on one side only)" : "");
    ++differences;
  }
  for (const auto& vb : cb.variables) {
    if (ca.Find(vb.path) == nullptr) {
      fmt::print("only in B: {} {}\n", vb.path, vb.value.shape().ToString());
      ++differences;
    }
  }
  auto find_param = [](const kiln::checkpoint::Contents& c, const kiln::checkpoint::SavedParam& p) {
    for (const auto& q : c.params)
      if (q.scope == p.scope && q.key == p.key) return &q;
    return static_cast<const kiln::checkpoint::SavedParam*>(nullptr);
  };
  for (const auto& pa : ca.params) {
    const kiln::checkpoint::SavedParam* pb = find_param(cb, pa);
    const std::string va = kiln::model::ParamToString(pa.value);
    if (pb == nullptr) {
      fmt::print("only in A: hyperparameter {} {} = {}\n", pa.scope, pa.key, va);
      ++differences;
    } else if (pa.value != pb->value) {
      fmt::print("hyperparameter {} {}: {} in A, {} in B\n", pa.scope, pa.key, va,
                 kiln::model::ParamToString(pb->value));
      ++differences;
    }
  }
  for (const auto& pb : cb.params) {
    if (find_param(ca, pb) == nullptr) {
      fmt::print("only in B: hyperparameter {} {} = {}\n", pb.scope, pb.key,
                 kiln::model::ParamToString(pb.value));
      ++differences;
    }
  }
  fmt::print("{} difference{}, {} variable{} equal\n", differences, differences == 1 ? "" : "s", equal,
             equal == 1 ? "" : "s");
  return differences == 0 ? 0 : 1;
}

int Run(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    if (args.empty()) throw Usage{"kiln-ckpt: no command"};
    fmt::print("{}", kUsage);
    return 0;
  }
  const std::string& cmd = args[0];
  auto want = [&](size_t n) {
    if (args.size() != n)
      throw Usage{fmt::format("kiln-ckpt {}: expected {} argument{}", cmd, n - 1, n == 2 ? "" : "s")};
  };
  if (cmd == "list") {
    want(2);
    return List(args[1]);
  }
  if (cmd == "vars") {
    want(2);
    return Vars(Locate(args[1]));
  }
  if (cmd == "show") {
    const bool all = args.size() == 4 && args[3] == "--all";
    if (!all) want(3);
    return Show(Locate(args[1]), args[2], all);
  }
  if (cmd == "diff") {
    want(3);
    return Diff(Locate(args[1]), Locate(args[2]));
  }
  std::error_code ec;
  if (args.size() == 1 && fs::is_directory(cmd, ec)) {
    List(cmd);
    if (!kiln::checkpoint::List(cmd).empty()) {
      fmt::print("\n");
      Vars(Locate(cmd));
    }
    return 0;
  }
  throw Usage{fmt::format("kiln-ckpt: unknown command \"{}\"", cmd)};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const Usage& u) {
    std::fprintf(stderr, "%s\n%s", u.message.c_str(), kUsage);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "%s\n", e.message().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln-ckpt: %s\n", e.what());
  }
  return 2;
}
