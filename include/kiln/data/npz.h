#pragma once
/// @file
/// Datasets from NumPy files: arrays of a .npz archive picked by name, or .npy files.
///
///   auto ds = data::FromNpz(backend, "train.npz", {"x"}, {"y"});
///   ds->BatchSize(64, true).Shuffle();

#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/data/dataset.h"

namespace kiln::data {

/// An in-memory dataset of the arrays `input_names` and `label_names` of the .npz file `path`
/// (examples along axis 0, equal in number). A missing array or a count mismatch is a kiln::Error
/// naming the file and the arrays. Named after the file; batch size 1 until configured.
std::shared_ptr<InMemoryDataset> FromNpz(compute::BackendPtr backend, const std::string& path,
                                         const std::vector<std::string>& input_names,
                                         const std::vector<std::string>& label_names);

/// An in-memory dataset of .npy files, one array each (as FromNpz).
std::shared_ptr<InMemoryDataset> FromNpy(compute::BackendPtr backend,
                                         const std::vector<std::string>& input_paths,
                                         const std::vector<std::string>& label_paths);

}  // namespace kiln::data
