#pragma once
/// @file
/// Image folders: one subfolder per class holding PNG or JPEG files (as torchvision's
/// ImageFolder), read into an in-memory dataset.
///
///   auto ds = data::ImageFolder(backend, "flowers/train", {.height = 64, .width = 64, .channels = 3});
///   ds->BatchSize(32, true).Shuffle();
///   ds->ClassNames();  // {"daisy", "rose", "tulip"}: label i is ClassNames()[i]

#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/core/tensor.h"
#include "kiln/data/dataset.h"

namespace kiln::data {

/// How ImageFolder decodes the images: size, channels and dtype.
struct ImageFolderOptions {
  /// Resize every image to height x width (bilinear, pixel centres aligned as PyTorch's
  /// align_corners=false) when both are > 0; else all images must be of one size.
  int64_t height = 0;
  int64_t width = 0;  ///< The resized width (see height).
  /// Channels: 1 (gray), 3 (RGB) or 4 (RGBA), converting as needed (gray from RGB by the
  /// luma weights 0.299, 0.587, 0.114; alpha dropped, or added opaque); 0 keeps the files'
  /// channels, which must then agree.
  int64_t channels = 0;
  /// Float32 scaled to [0, 1], or Uint8.
  DType dtype = DType::Float32;
};

/// An image-folder dataset: inputs (dtype)[n, H, W, C], labels (Int32)[n, 1].
class ImageFolderDataset : public InMemoryDataset {
 public:
  /// An in-memory dataset of decoded `inputs` and `labels` (as InMemoryDataset) that also keeps
  /// the `class_names` and the `files` the examples came from. ImageFolder() makes one.
  ImageFolderDataset(compute::BackendPtr backend, std::string name, std::vector<Tensor> inputs,
                     std::vector<Tensor> labels, std::vector<std::string> class_names,
                     std::vector<std::string> files);
  /// The class names (subfolder names) in sorted order: label i names ClassNames()[i].
  const std::vector<std::string>& ClassNames() const { return class_names_; }
  /// The image files in example order (by class, then by file name).
  const std::vector<std::string>& Files() const { return files_; }

 private:
  std::vector<std::string> class_names_, files_;
};

/// Reads every .png, .jpg and .jpeg file (any letter case) in the subfolders of `dir`; other
/// files, and hidden ones, are ignored. An unreadable image, a size or channel mismatch, or a
/// folder without images is a kiln::Error naming the file or folder. Batch size 1 until configured.
std::shared_ptr<ImageFolderDataset> ImageFolder(compute::BackendPtr backend, const std::string& dir,
                                                const ImageFolderOptions& options = {});

/// Bilinear resize of an (Uint8)[H, W, C] image to [height, width, C] (align_corners=false, no
/// antialiasing), rounded to the nearest byte.
Tensor ResizeImage(const Tensor& image, int64_t height, int64_t width);

}  // namespace kiln::data
