// Datasets from .npy/.npz files: the arrays are read with kiln::io and checked here, so that a
// mismatch names the files and arrays rather than the dataset's tensor positions.

#include <filesystem>
#include <utility>

#include <fmt/ranges.h>

#include "core/check.h"
#include "kiln/data/npz.h"
#include "kiln/io/npy.h"

namespace kiln::data {

namespace {

// Checks that every array has an example axis and the same number of examples as the first.
void CheckExamples(const std::string& where, const std::vector<std::string>& names,
                   const std::vector<Tensor>& arrays) {
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i].rank() < 1)
      kiln::detail::Throw("{}: array \"{}\" is a scalar {}: examples go along axis 0", where, names[i],
                          arrays[i].shape());
    if (arrays[i].shape().Dim(0) != arrays[0].shape().Dim(0))
      kiln::detail::Throw("{}: array \"{}\" {} has {} examples but \"{}\" {} has {}", where, names[i],
                          arrays[i].shape(), arrays[i].shape().Dim(0), names[0], arrays[0].shape(),
                          arrays[0].shape().Dim(0));
  }
}

}  // namespace

std::shared_ptr<InMemoryDataset> FromNpz(compute::BackendPtr backend, const std::string& path,
                                         const std::vector<std::string>& input_names,
                                         const std::vector<std::string>& label_names) {
  if (input_names.empty()) kiln::detail::Throw("FromNpz {}: no input arrays named", path);
  std::map<std::string, Tensor> arrays = io::ReadNpz(path);
  auto take = [&](const std::vector<std::string>& names) {
    std::vector<Tensor> out;
    for (const std::string& name : names) {
      auto it = arrays.find(name);
      if (it == arrays.end()) {
        std::vector<std::string> have;
        for (const auto& [k, v] : arrays) have.push_back(k);
        kiln::detail::Throw("FromNpz {}: no array \"{}\" (the file has: {})", path, name,
                            fmt::join(have, ", "));
      }
      out.push_back(it->second);
    }
    return out;
  };
  std::vector<Tensor> inputs = take(input_names), labels = take(label_names);
  std::vector<std::string> names = input_names;
  names.insert(names.end(), label_names.begin(), label_names.end());
  std::vector<Tensor> all = inputs;
  all.insert(all.end(), labels.begin(), labels.end());
  CheckExamples("FromNpz " + path, names, all);
  return InMemoryFromData(std::move(backend), std::filesystem::path(path).stem().string(), std::move(inputs),
                          std::move(labels));
}

std::shared_ptr<InMemoryDataset> FromNpy(compute::BackendPtr backend,
                                         const std::vector<std::string>& input_paths,
                                         const std::vector<std::string>& label_paths) {
  if (input_paths.empty()) kiln::detail::Throw("FromNpy: no input files");
  std::vector<Tensor> inputs, labels;
  for (const std::string& p : input_paths) inputs.push_back(io::ReadNpy(p));
  for (const std::string& p : label_paths) labels.push_back(io::ReadNpy(p));
  std::vector<std::string> names = input_paths;
  names.insert(names.end(), label_paths.begin(), label_paths.end());
  std::vector<Tensor> all = inputs;
  all.insert(all.end(), labels.begin(), labels.end());
  CheckExamples("FromNpy", names, all);
  return InMemoryFromData(std::move(backend), std::filesystem::path(input_paths[0]).stem().string(),
                          std::move(inputs), std::move(labels));
}

}  // namespace kiln::data
