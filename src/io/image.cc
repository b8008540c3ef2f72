// Images: PNG reading and writing with zlib; JPEG through io/jpeg.cc (libjpeg).

#include "kiln/io/image.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/jpeg.h"
#include "io/read_file.h"

namespace kiln::io {

namespace {

constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

void Put32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((v >> s) & 0xFF);
}

uint32_t Get32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

void Chunk(std::string& out, const char* type, const std::string& data) {
  Put32(out, static_cast<uint32_t>(data.size()));
  std::string body = std::string(type, 4) + data;
  out += body;
  Put32(out, static_cast<uint32_t>(
                 crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

/// The image's samples as 8-bit values (floats clamped to [0, 1] and rounded).
std::vector<uint8_t> Samples(const std::string& path, const Tensor& t) {
  std::vector<uint8_t> out;
  switch (t.dtype()) {
    case DType::Uint8:
      return t.ToVector<uint8_t>();
    case DType::Float32:
      for (float v : t.ToVector<float>())
        out.push_back(static_cast<uint8_t>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255)));
      return out;
    case DType::Float64:
      for (double v : t.ToVector<double>())
        out.push_back(static_cast<uint8_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255)));
      return out;
    default:
      kiln::detail::Throw("WriteImage {}: dtype {} is not Uint8, Float32 or Float64", path,
                          DTypeName(t.dtype()));
  }
}

int Paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

bool HasJpegExtension(const std::string& path) {
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return false;
  std::string ext = path.substr(dot + 1);
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == "jpg" || ext == "jpeg";
}

}  // namespace

void WriteImage(const std::string& path, const Tensor& image, int jpeg_quality) {
  if (!image.Ok()) kiln::detail::Throw("WriteImage {}: the tensor is not Ok", path);
  const auto& d = image.shape().Dimensions();
  if (image.rank() != 2 && image.rank() != 3)
    kiln::detail::Throw("WriteImage {}: {} is not [H, W, C]", path, image.shape());
  const int64_t h = d[0], w = d[1], c = image.rank() == 3 ? d[2] : 1;
  if (c != 1 && c != 3 && c != 4) kiln::detail::Throw("WriteImage {}: {} channels (1, 3 or 4)", path, c);
  if (h < 1 || w < 1 || h > (1 << 24) || w > (1 << 24))
    kiln::detail::Throw("WriteImage {}: size {}x{}", path, h, w);
  std::vector<uint8_t> px = Samples(path, image);
  if (HasJpegExtension(path)) {
    if (jpeg_quality < 1 || jpeg_quality > 100)
      kiln::detail::Throw("WriteImage {}: JPEG quality {} is not in 1..100", path, jpeg_quality);
    const std::string jpeg = jpeg_codec::EncodeJpeg(path, px, h, w, c, jpeg_quality);
    WriteFileAtomically(
        path, [&](std::ostream& out) { out.write(jpeg.data(), static_cast<std::streamsize>(jpeg.size())); });
    return;
  }
  std::string raw;
  raw.reserve(static_cast<size_t>(h * (w * c + 1)));
  for (int64_t y = 0; y < h; ++y) {
    raw += '\0';  // Filter type 0 (none).
    raw.append(reinterpret_cast<const char*>(px.data() + y * w * c), static_cast<size_t>(w * c));
  }
  uLongf zsize = compressBound(static_cast<uLong>(raw.size()));
  std::string z(zsize, '\0');
  if (compress2(reinterpret_cast<Bytef*>(z.data()), &zsize, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), 6) != Z_OK)
    kiln::detail::Throw("WriteImage {}: compression failed", path);
  z.resize(zsize);
  std::string png(reinterpret_cast<const char*>(kSignature), 8);
  std::string ihdr;
  Put32(ihdr, static_cast<uint32_t>(w));
  Put32(ihdr, static_cast<uint32_t>(h));
  ihdr += static_cast<char>(8);                            // bit depth
  ihdr += static_cast<char>(c == 1 ? 0 : c == 3 ? 2 : 6);  // colour type
  ihdr += std::string(3, '\0');                            // compression, filter, interlace
  Chunk(png, "IHDR", ihdr);
  Chunk(png, "IDAT", z);
  Chunk(png, "IEND", "");
  WriteFileAtomically(
      path, [&](std::ostream& out) { out.write(png.data(), static_cast<std::streamsize>(png.size())); });
}

Tensor ReadImage(const std::string& path) {
  const std::string file = ReadWholeFile(path, "ReadImage");
  if (jpeg_codec::IsJpeg(file)) return jpeg_codec::DecodeJpeg(path, file);
  const auto* p = reinterpret_cast<const uint8_t*>(file.data());
  if (file.size() < 8 || std::memcmp(p, kSignature, 8) != 0)
    kiln::detail::Throw("ReadImage {}: neither a PNG nor a JPEG file", path);
  size_t pos = 8;
  uint32_t w = 0, h = 0;
  int depth = 0, type = -1;
  std::string idat, palette;
  while (true) {
    if (pos + 12 > file.size()) kiln::detail::Throw("ReadImage {}: truncated at byte {}", path, pos);
    const uint32_t len = Get32(p + pos);
    if (len > file.size() - pos - 12)
      kiln::detail::Throw("ReadImage {}: chunk at byte {} overruns the file", path, pos);
    const std::string ctype = file.substr(pos + 4, 4);
    const uint32_t crc = Get32(p + pos + 8 + len);
    if (crc != static_cast<uint32_t>(crc32(0, p + pos + 4, len + 4)))
      kiln::detail::Throw("ReadImage {}: bad CRC in chunk {} at byte {}", path, ctype, pos);
    const uint8_t* data = p + pos + 8;
    if (ctype == "IHDR") {
      if (len != 13) kiln::detail::Throw("ReadImage {}: bad IHDR", path);
      w = Get32(data);
      h = Get32(data + 4);
      depth = data[8];
      type = data[9];
      if (data[12] != 0) kiln::detail::Throw("ReadImage {}: interlaced PNG is not supported", path);
      if ((depth != 8 && depth != 16) || (type != 0 && type != 2 && type != 3 && type != 4 && type != 6) ||
          (type == 3 && depth != 8))
        kiln::detail::Throw("ReadImage {}: unsupported bit depth {} / colour type {}", path, depth, type);
      if (w == 0 || h == 0 || w > (1u << 24) || h > (1u << 24))
        kiln::detail::Throw("ReadImage {}: size {}x{}", path, w, h);
    } else if (ctype == "PLTE") {
      palette.assign(reinterpret_cast<const char*>(data), len);
    } else if (ctype == "IDAT") {
      idat.append(reinterpret_cast<const char*>(data), len);
    } else if (ctype == "IEND") {
      break;
    }
    pos += 12 + len;
  }
  if (type < 0) kiln::detail::Throw("ReadImage {}: no IHDR", path);
  const int channels = type == 0 ? 1 : type == 2 ? 3 : type == 3 ? 1 : type == 4 ? 2 : 4;
  const int bytes_per_px = channels * depth / 8;
  const size_t stride = static_cast<size_t>(w) * static_cast<size_t>(bytes_per_px);
  // deflate compresses at most 1032:1: image data that cannot inflate to the header's size is
  // refused before the pixels are allocated.
  if ((stride + 1) * h / 1032 > idat.size())
    kiln::detail::Throw("ReadImage {}: {} bytes of image data cannot hold {}x{} pixels", path, idat.size(), w,
                        h);
  std::vector<uint8_t> raw((stride + 1) * h);
  uLongf raw_size = static_cast<uLongf>(raw.size());
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()),
                 static_cast<uLong>(idat.size())) != Z_OK ||
      raw_size != raw.size())
    kiln::detail::Throw("ReadImage {}: damaged image data", path);
  std::vector<uint8_t> img(stride * h), prev(stride, 0);
  for (uint32_t y = 0; y < h; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* src = &raw[y * (stride + 1) + 1];
    uint8_t* row = &img[y * stride];
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= static_cast<size_t>(bytes_per_px) ? row[i - static_cast<size_t>(bytes_per_px)] : 0;
      const int b = prev[i];
      const int c = i >= static_cast<size_t>(bytes_per_px) ? prev[i - static_cast<size_t>(bytes_per_px)] : 0;
      int v = src[i];
      switch (filter) {
        case 0:
          break;
        case 1:
          v += a;
          break;
        case 2:
          v += b;
          break;
        case 3:
          v += (a + b) / 2;
          break;
        case 4:
          v += Paeth(a, b, c);
          break;
        default:
          kiln::detail::Throw("ReadImage {}: bad filter {} on row {}", path, filter, y);
      }
      row[i] = static_cast<uint8_t>(v);
    }
    std::memcpy(prev.data(), row, stride);
  }
  const int out_c = type == 3 ? 3 : channels;
  std::vector<uint8_t> out(static_cast<size_t>(w) * h * static_cast<size_t>(out_c));
  for (size_t i = 0; i < static_cast<size_t>(w) * h; ++i) {
    if (type == 3) {
      const size_t k = img[i];
      if (3 * k + 2 >= palette.size())
        kiln::detail::Throw("ReadImage {}: palette index {} out of range", path, k);
      for (int ch = 0; ch < 3; ++ch)
        out[i * 3 + static_cast<size_t>(ch)] = static_cast<uint8_t>(palette[3 * k + static_cast<size_t>(ch)]);
    } else {
      for (int ch = 0; ch < channels; ++ch)
        out[i * static_cast<size_t>(channels) + static_cast<size_t>(ch)] =
            img[i * static_cast<size_t>(bytes_per_px) +
                static_cast<size_t>(ch * depth / 8)];  // 16-bit: high byte
    }
  }
  return Tensor::FromFlat(Shape(DType::Uint8, {h, w, out_c}), out);
}

Tensor ImagesToTensor(const std::vector<Tensor>& images, DType dtype) {
  if (images.empty()) kiln::detail::Throw("ImagesToTensor: no images");
  const Shape& s = images[0].shape();
  std::vector<uint8_t> all;
  for (size_t i = 0; i < images.size(); ++i) {
    if (images[i].shape() != s || s.dtype() != DType::Uint8)
      kiln::detail::Throw("ImagesToTensor: image {} is {}, the first is {} (all Uint8 of one shape)", i,
                          images[i].shape(), s);
    std::vector<uint8_t> v = images[i].ToVector<uint8_t>();
    all.insert(all.end(), v.begin(), v.end());
  }
  std::vector<int64_t> dims = {static_cast<int64_t>(images.size())};
  dims.insert(dims.end(), s.Dimensions().begin(), s.Dimensions().end());
  if (dtype == DType::Uint8) return Tensor::FromFlat(Shape(DType::Uint8, dims), all);
  if (dtype == DType::Float32) {
    std::vector<float> f;
    for (uint8_t b : all) f.push_back(static_cast<float>(b) / 255.0f);
    return Tensor::FromFlat(Shape(DType::Float32, dims), f);
  }
  if (dtype == DType::Float64) {
    std::vector<double> f;
    for (uint8_t b : all) f.push_back(static_cast<double>(b) / 255.0);
    return Tensor::FromFlat(Shape(DType::Float64, dims), f);
  }
  kiln::detail::Throw("ImagesToTensor: dtype {} (Uint8, Float32 or Float64)", DTypeName(dtype));
}

}  // namespace kiln::io
