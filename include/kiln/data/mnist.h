#pragma once
/// @file
/// MNIST-format datasets: IDX files (gzip-compressed or plain) and the Fashion-MNIST folder that
/// Debian's dataset-fashion-mnist package installs (/usr/share/datasets/fashion-mnist).

#include <memory>
#include <string>

#include "kiln/compute/fwd.h"
#include "kiln/core/tensor.h"
#include "kiln/data/dataset.h"

namespace kiln::data {

/// Which half of an MNIST-format dataset to read.
enum class Split {
  Train,  ///< The training files (train-images-idx3-ubyte, train-labels-idx1-ubyte; 60000 examples).
  Test,   ///< The test files (t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte; 10000 examples).
};

/// An IDX file (magic 0x08 unsigned bytes, 0x0B..0x0E other types) as a tensor of its dims;
/// ".gz" files are decompressed. A damaged or truncated file is a kiln::Error naming it.
Tensor ReadIdx(const std::string& path);

/// Fashion-MNIST (or MNIST: the same file names) from `dir`: images (Float32)[n, 28, 28, 1]
/// scaled to [0, 1], labels (Int32)[n, 1]; batch size 1 until configured.
std::shared_ptr<InMemoryDataset> FashionMnist(compute::BackendPtr backend, const std::string& dir,
                                              Split split);

/// The folder Debian's dataset-fashion-mnist installs.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

}  // namespace kiln::data
