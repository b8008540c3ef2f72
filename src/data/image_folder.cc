// Image folders: classes from subfolder names, images decoded by io::ReadImage, converted to the
// requested channels, resized or checked for equal sizes, and stacked.

#include "kiln/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "core/check.h"
#include "kiln/io/image.h"

namespace kiln::data {

namespace fs = std::filesystem;

namespace {

bool IsImageFile(const fs::directory_entry& e) {
  if (!e.is_regular_file()) return false;
  const std::string name = e.path().filename().string();
  if (name.empty() || name[0] == '.') return false;
  std::string ext = e.path().extension().string();
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

uint8_t Luma(int r, int g, int b) {
  return static_cast<uint8_t>(std::lround(0.299 * r + 0.587 * g + 0.114 * b));
}

// `px` (n pixels of `from` channels) as `to` channels.
std::vector<uint8_t> ConvertChannels(const std::vector<uint8_t>& px, int64_t from, int64_t to) {
  if (from == to) return px;
  const size_t n = px.size() / static_cast<size_t>(from);
  std::vector<uint8_t> out(n * static_cast<size_t>(to));
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = &px[i * static_cast<size_t>(from)];
    uint8_t* q = &out[i * static_cast<size_t>(to)];
    const bool gray = from <= 2;
    const uint8_t r = p[0], g = gray ? p[0] : p[1], b = gray ? p[0] : p[2];
    const uint8_t alpha = from == 2 ? p[1] : from == 4 ? p[3] : 255;
    if (to == 1) {
      q[0] = gray ? p[0] : Luma(r, g, b);
    } else {
      q[0] = r;
      q[1] = g;
      q[2] = b;
      if (to == 4) q[3] = alpha;
    }
  }
  return out;
}

}  // namespace

Tensor ResizeImage(const Tensor& image, int64_t height, int64_t width) {
  if (image.dtype() != DType::Uint8 || image.rank() != 3)
    kiln::detail::Throw("ResizeImage: {} is not (Uint8)[H, W, C]", image.shape());
  if (height < 1 || width < 1) kiln::detail::Throw("ResizeImage: target size {}x{}", height, width);
  const int64_t h = image.shape().Dim(0), w = image.shape().Dim(1), c = image.shape().Dim(2);
  const std::vector<uint8_t> src = image.ToVector<uint8_t>();
  // Source coordinate of output index i: (i + 0.5) * in / out - 0.5, clamped at 0; the two
  // neighbours and the weight of the second.
  struct Tap {
    int64_t i0, i1;
    double t;
  };
  auto taps = [](int64_t in, int64_t out) {
    std::vector<Tap> v(static_cast<size_t>(out));
    const double scale = static_cast<double>(in) / static_cast<double>(out);
    for (int64_t i = 0; i < out; ++i) {
      const double s = std::max(0.0, (static_cast<double>(i) + 0.5) * scale - 0.5);
      const int64_t i0 = std::min(static_cast<int64_t>(s), in - 1);
      v[static_cast<size_t>(i)] = {i0, std::min(i0 + 1, in - 1), s - static_cast<double>(i0)};
    }
    return v;
  };
  const std::vector<Tap> ys = taps(h, height), xs = taps(w, width);
  std::vector<uint8_t> out(static_cast<size_t>(height * width * c));
  auto at = [&](int64_t y, int64_t x, int64_t ch) {
    return static_cast<double>(src[static_cast<size_t>((y * w + x) * c + ch)]);
  };
  for (int64_t y = 0; y < height; ++y) {
    const Tap& ty = ys[static_cast<size_t>(y)];
    for (int64_t x = 0; x < width; ++x) {
      const Tap& tx = xs[static_cast<size_t>(x)];
      for (int64_t ch = 0; ch < c; ++ch) {
        const double top = at(ty.i0, tx.i0, ch) * (1 - tx.t) + at(ty.i0, tx.i1, ch) * tx.t;
        const double bottom = at(ty.i1, tx.i0, ch) * (1 - tx.t) + at(ty.i1, tx.i1, ch) * tx.t;
        const double v = top * (1 - ty.t) + bottom * ty.t;
        out[static_cast<size_t>((y * width + x) * c + ch)] =
            static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  }
  return Tensor::FromFlat(Shape(DType::Uint8, {height, width, c}), out);
}

ImageFolderDataset::ImageFolderDataset(compute::BackendPtr backend, std::string name,
                                       std::vector<Tensor> inputs, std::vector<Tensor> labels,
                                       std::vector<std::string> class_names, std::vector<std::string> files)
    : InMemoryDataset(std::move(backend), std::move(name), std::move(inputs), std::move(labels)),
      class_names_(std::move(class_names)),
      files_(std::move(files)) {}

std::shared_ptr<ImageFolderDataset> ImageFolder(compute::BackendPtr backend, const std::string& dir,
                                                const ImageFolderOptions& options) {
  const ImageFolderOptions& o = options;
  if (o.channels != 0 && o.channels != 1 && o.channels != 3 && o.channels != 4)
    kiln::detail::Throw("ImageFolder {}: channels {} (0 to keep the files', 1, 3 or 4)", dir, o.channels);
  if ((o.height > 0) != (o.width > 0) || o.height < 0 || o.width < 0)
    kiln::detail::Throw("ImageFolder {}: resize to {}x{}: give both height and width, or neither", dir,
                        o.height, o.width);
  if (o.dtype != DType::Float32 && o.dtype != DType::Uint8)
    kiln::detail::Throw("ImageFolder {}: dtype {} (Float32 or Uint8)", dir, o.dtype);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) kiln::detail::Throw("ImageFolder: {} is not a directory", dir);
  std::vector<std::string> classes;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && !name.empty() && name[0] != '.') classes.push_back(name);
  }
  std::sort(classes.begin(), classes.end());
  if (classes.empty()) kiln::detail::Throw("ImageFolder {}: no class subfolders", dir);

  std::vector<std::string> files;
  std::vector<int32_t> labels;
  std::vector<uint8_t> pixels;
  int64_t h = o.height, w = o.width, c = o.channels;
  std::string first;  // The file that fixed the size or channels.
  for (size_t k = 0; k < classes.size(); ++k) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(fs::path(dir) / classes[k]))
      if (IsImageFile(e)) names.push_back(e.path().string());
    std::sort(names.begin(), names.end());
    for (const std::string& file : names) {
      Tensor img = io::ReadImage(file);
      const int64_t ic = img.shape().Dim(2);
      if (first.empty()) {
        first = file;
        if (c == 0) c = ic;
        if (h == 0) {
          h = img.shape().Dim(0);
          w = img.shape().Dim(1);
        }
      }
      if (o.channels == 0 && ic != c)
        kiln::detail::Throw("ImageFolder {}: {} has {} channels but {} has {}; set channels to convert", dir,
                            file, ic, first, c);
      if (ic != c)
        img = Tensor::FromFlat(Shape(DType::Uint8, {img.shape().Dim(0), img.shape().Dim(1), c}),
                               ConvertChannels(img.ToVector<uint8_t>(), ic, c));
      if (o.height > 0) {
        if (img.shape().Dim(0) != h || img.shape().Dim(1) != w) img = ResizeImage(img, h, w);
      } else if (img.shape().Dim(0) != h || img.shape().Dim(1) != w) {
        kiln::detail::Throw("ImageFolder {}: {} is {}x{} but {} is {}x{}; set height and width to resize",
                            dir, file, img.shape().Dim(0), img.shape().Dim(1), first, h, w);
      }
      const std::vector<uint8_t> v = img.ToVector<uint8_t>();
      pixels.insert(pixels.end(), v.begin(), v.end());
      files.push_back(file);
      labels.push_back(static_cast<int32_t>(k));
    }
  }
  if (files.empty())
    kiln::detail::Throw("ImageFolder {}: no .png, .jpg or .jpeg files in its class subfolders", dir);
  const int64_t n = static_cast<int64_t>(files.size());
  Tensor inputs;
  if (o.dtype == DType::Uint8) {
    inputs = Tensor::FromFlat(Shape(DType::Uint8, {n, h, w, c}), pixels);
  } else {
    std::vector<float> f(pixels.size());
    for (size_t i = 0; i < pixels.size(); ++i) f[i] = static_cast<float>(pixels[i]) / 255.0f;
    inputs = Tensor::FromFlat(Shape(DType::Float32, {n, h, w, c}), f);
  }
  Tensor label_tensor = Tensor::FromFlat(Shape(DType::Int32, {n, 1}), labels);
  std::string name = fs::path(dir).filename().string();
  if (name.empty()) name = fs::path(dir).parent_path().filename().string();  // "dir/" spelled with a slash.
  return std::make_shared<ImageFolderDataset>(std::move(backend), name, std::vector<Tensor>{inputs},
                                              std::vector<Tensor>{label_tensor}, std::move(classes),
                                              std::move(files));
}

}  // namespace kiln::data
