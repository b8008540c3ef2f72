#pragma once
/// @file
/// Checkpoints: a Store's variables and hyperparameters saved to a folder and loaded back, crash
/// safe (GoMLX's checkpoint package).
///
///   checkpoint::Handler ckpt = checkpoint::Build(store).Dir("run1").Keep(3).Done();  // resumes
///   ...
///   ckpt.Save();  // run1/checkpoint-n0000012-step-00006000.safetensors and .json
///
/// Each checkpoint is a plain safetensors file (the variables, named by their paths) and a JSON
/// commit record holding the sequence number, the global step, the weights file's size, a
/// CRC-32C per tensor, and the hyperparameters. Saving writes both under temporary names,
/// fsyncs them, renames the weights file, then the record, then fsyncs the folder: a checkpoint
/// exists only once its record does, so a crash at any point leaves the previous checkpoint
/// loadable (and the new one, if the record made it).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/model/params.h"
#include "kiln/model/store.h"

namespace kiln::checkpoint {

class Handler;

/// Configures a Handler (checkpoint::Build(store)...Done()).
class Config {
 public:
  /// A configuration for checkpoints of `store`; checkpoint::Build(store) makes one.
  explicit Config(model::Store store) : store_(std::move(store)) {}
  /// The folder (created if missing). Required.
  Config& Dir(std::string path);
  /// Keeps the newest n checkpoints, deleting older ones after each Save (n <= 0: keep all).
  Config& Keep(int n);
  /// Hyperparameters (by key, at any scope) the loaded checkpoint must not override.
  Config& ExcludeParams(std::vector<std::string> keys);
  /// Variables whose path matches `pattern` are neither saved nor loaded ('*' matches any run of
  /// characters: "/optimizer/*").
  Config& ExcludeVars(std::string pattern);
  /// Loads the element-wise mean of the newest k checkpoints' float variables (others from the
  /// newest) instead of the newest alone.
  Config& TakeMean(int k);
  /// The same as TakeMean(k).
  Config& Average(int k) { return TakeMean(k); }
  /// Makes the Handler and loads the newest checkpoint in the folder, if there is one.
  Handler Done();

 private:
  friend class Handler;
  model::Store store_;
  std::string dir_;
  int keep_ = 0;
  int mean_ = 1;
  std::vector<std::string> exclude_params_;
  std::vector<std::string> exclude_vars_;
};

/// checkpoint::Build(store): starts a Config.
inline Config Build(model::Store store) { return Config(std::move(store)); }

/// Saves and loads the checkpoints of one store in one folder (made by Config::Done()).
class Handler {
 public:
  /// Writes a new checkpoint of the store (all variables but the excluded ones, and the
  /// hyperparameters); returns its name ("checkpoint-n0000003-step-00001500").
  std::string Save();
  /// Loads the newest checkpoint (or the mean of the newest k, per TakeMean) into the store:
  /// variables are created or overwritten (a shape or dtype mismatch is a kiln::Error), saved
  /// hyperparameters override the store's except the excluded keys. kiln::Error if there is none,
  /// or if a file is damaged (naming the file and the tensor).
  void Load();
  /// The committed checkpoints' names, oldest first.
  std::vector<std::string> ListCheckpoints() const;
  /// The checkpoint folder.
  const std::string& Dir() const { return config_.dir_; }

  /// For tests of the commit protocol: called at each of its points ("weights written",
  /// "record written", "weights renamed", "record renamed", "folder synced", "old record
  /// deleted", "old weights deleted").
  void SetProtocolHook(std::function<void(std::string_view point)> hook) { hook_ = std::move(hook); }

 private:
  friend class Config;
  explicit Handler(Config config) : config_(std::move(config)) {}
  void Point(std::string_view p) const {
    if (hook_) hook_(p);
  }
  Config config_;
  std::function<void(std::string_view)> hook_;
};

/// Loads into `store` the element-wise mean of the newest k checkpoints in `dir`: the same as
/// Build(store).Dir(dir).TakeMean(k).Done() without keeping the Handler.
inline void Average(model::Store store, const std::string& dir, int k) {
  Build(std::move(store)).Dir(dir).TakeMean(k).Done();
}

/// One variable of a checkpoint read with checkpoint::Read.
struct SavedVariable {
  std::string path;        ///< The variable's path in the store ("/dense_0/weights").
  Tensor value;            ///< Its saved value.
  bool trainable = false;  ///< Whether it was trainable.
};

/// One hyperparameter of a checkpoint read with checkpoint::Read.
struct SavedParam {
  std::string scope;        ///< "/" for the store's root.
  std::string key;          ///< The hyperparameter's name.
  model::ParamValue value;  ///< Its saved value.
};

/// A checkpoint as stored, read without a Store (the `kiln-ckpt` command shows these).
struct Contents {
  std::string name;                      ///< "checkpoint-n0000012-step-00006000" (no extension).
  int64_t seq = 0;                       ///< The sequence number: saves count up from 0 in a folder.
  int64_t step = 0;                      ///< The store's global step when it was saved (0 without one).
  std::vector<SavedVariable> variables;  ///< In the order they were saved.
  std::vector<SavedParam> params;        ///< The hyperparameters.

  /// The variable at `path`, or nullptr.
  const SavedVariable* Find(std::string_view path) const;
};

/// The checkpoints in folder `dir`, oldest first (names without extension, as Read takes them).
/// kiln::Error when `dir` cannot be listed.
std::vector<std::string> List(const std::string& dir);

/// Reads checkpoint `name` of folder `dir` (a name from List), checking its weights file against
/// its record (size, and each tensor's CRC-32C): kiln::Error naming the file and the tensor when
/// anything is missing or damaged.
Contents Read(const std::string& dir, const std::string& name);

/// Whether `path` matches `pattern` ('*' matches any run of characters).
bool MatchesPattern(std::string_view path, std::string_view pattern);

}  // namespace kiln::checkpoint
