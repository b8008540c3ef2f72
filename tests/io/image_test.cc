// Tests for images: PNG round trips of each channel count and dtype, PNG files written by an
// independent Python encoder (every row filter, palette, 16-bit) read back, damage rejected;
// JPEGs written by libjpeg directly read back within JPEG's loss, WriteImage's JPEG output, and
// damaged or truncated JPEGs rejected with an error.

#include "kiln/io/image.h"

#include <gtest/gtest.h>
#include <jpeglib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::test::TempDir;

using namespace kiln;
namespace fs = std::filesystem;
using kiln::test::Throws;

Tensor Pixels(int64_t h, int64_t w, int64_t c) {
  std::vector<uint8_t> v(static_cast<size_t>(h * w * c));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 13 + 7);
  return Tensor::FromFlat(Shape(DType::Uint8, {h, w, c}), v);
}

TEST(Image, RoundTripsChannelsAndFloats) {
  TempDir dir;
  for (int64_t c : {1, 3, 4}) {
    Tensor img = Pixels(5, 7, c);
    io::WriteImage(dir / "a.png", img);
    EXPECT_TRUE(io::ReadImage(dir / "a.png").Equal(img)) << c;
  }
  Tensor f = Tensor::FromValue(std::vector<std::vector<std::vector<float>>>{{{-1, 0.5f, 2}}});  // [1, 1, 3]
  io::WriteImage(dir / "f.png", f);
  EXPECT_EQ(io::ReadImage(dir / "f.png").ToVector<uint8_t>(), (std::vector<uint8_t>{0, 128, 255}));
  io::WriteImage(dir / "g.png",
                 Tensor::FromValue(std::vector<std::vector<double>>{{0, 1}, {1, 0}}));  // [H, W]
  EXPECT_EQ(io::ReadImage(dir / "g.png").shape(), Shape(DType::Uint8, {2, 2, 1}));
  Tensor batch = io::ImagesToTensor({Pixels(2, 2, 3), Pixels(2, 2, 3)}, DType::Float32);
  EXPECT_EQ(batch.shape(), Shape(DType::Float32, {2, 2, 2, 3}));
  EXPECT_FLOAT_EQ(batch.ToVector<float>()[1], 20.0f / 255);
  EXPECT_TRUE(Throws([&] { io::WriteImage(dir / "x.png", Pixels(2, 2, 2)); }, {"2 channels"}));
  EXPECT_TRUE(
      Throws([&] { io::WriteImage(dir / "x.png", Tensor::FromValue(std::vector<int32_t>{1})); }, {"x.png"}));
}

TEST(Image, ReadsPngsFromAnIndependentEncoder) {
  TempDir dir;
  const std::string script = R"PY(
import struct, zlib
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
def paeth(a, b, c):
    p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)
def png(name, w, h, depth, ctype, rows, bpp, plte=None):
    raw = b''; prev = bytes(len(rows[0]))
    for y, row in enumerate(rows):
        f = y % 5; out = bytearray()
        for i, v in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0; b = prev[i]; c = prev[i - bpp] if i >= bpp else 0
            pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][f]
            out.append((v - pred) & 0xff)
        raw += bytes([f]) + bytes(out); prev = row
    data = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth, ctype, 0, 0, 0))
    if plte: data += chunk(b'PLTE', plte)
    data += chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
    open(name, 'wb').write(data)
w, h = 6, 7
rgb = [bytes(((x * 40 + y * 17 + c * 90) % 256) for x in range(w) for c in range(3)) for y in range(h)]
png('rgb.png', w, h, 8, 2, rgb, 3)
pal = [bytes(((x + y) % 3) for x in range(w)) for y in range(h)]
png('pal.png', w, h, 8, 3, pal, 1, bytes([10, 20, 30, 40, 50, 60, 70, 80, 90]))
g16 = [b''.join(struct.pack('>H', (x * 1000 + y * 77) % 65536) for x in range(w)) for y in range(h)]
png('g16.png', w, h, 16, 0, g16, 2)
)PY";
  std::ofstream(dir / "make.py") << script;
  ASSERT_EQ(std::system(("cd '" + dir.str() + "' && /usr/bin/python3 make.py").c_str()), 0);
  Tensor rgb = io::ReadImage(dir / "rgb.png");
  ASSERT_EQ(rgb.shape(), Shape(DType::Uint8, {7, 6, 3}));
  std::vector<uint8_t> v = rgb.ToVector<uint8_t>();
  for (int y = 0; y < 7; ++y)
    for (int x = 0; x < 6; ++x)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(v[static_cast<size_t>((y * 6 + x) * 3 + c)], (x * 40 + y * 17 + c * 90) % 256)
            << y << "," << x;
  Tensor pal = io::ReadImage(dir / "pal.png");
  ASSERT_EQ(pal.shape(), Shape(DType::Uint8, {7, 6, 3}));
  EXPECT_EQ(pal.ToVector<uint8_t>()[3], 40);  // pixel (0, 1): index 1
  Tensor g16 = io::ReadImage(dir / "g16.png");
  ASSERT_EQ(g16.shape(), Shape(DType::Uint8, {7, 6, 1}));
  EXPECT_EQ(g16.ToVector<uint8_t>()[1], (1000 >> 8));
  // Damage: a flipped byte fails the CRC.
  {
    std::fstream f(dir / "rgb.png", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x55');
  }
  EXPECT_TRUE(Throws([&] { io::ReadImage(dir / "rgb.png"); }, {"rgb.png"}));
  EXPECT_TRUE(Throws([&] { io::ReadImage(dir / "missing.png"); }, {"cannot read"}));
}

// Writes `px` (h x w x c, c = 1 or 3) as a JPEG of `quality` with libjpeg itself.
void WriteJpegWithLibjpeg(const std::string& path, const std::vector<uint8_t>& px, int h, int w, int c,
                          int quality) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  jpeg_stdio_dest(&cinfo, f);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = c;
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    auto* row = const_cast<JSAMPROW>(px.data() + static_cast<size_t>(cinfo.next_scanline * w * c));
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::fclose(f);
}

// A smooth image (JPEG's loss on it is small): gradients per channel, up to 53 x 37.
std::vector<uint8_t> Smooth(int h, int w, int c) {
  std::vector<uint8_t> v;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < c; ++ch) v.push_back(static_cast<uint8_t>(20 + x * 2 + y + ch * 30));
  return v;
}

// Largest and mean absolute difference between two byte images.
std::pair<int, double> Diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  int worst = 0;
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const int d = std::abs(int{a[i]} - int{b[i]});
    worst = std::max(worst, d);
    sum += d;
  }
  return {worst, sum / static_cast<double>(a.size())};
}

TEST(Jpeg, ReadsJpegsWrittenByLibjpeg) {
  TempDir dir;
  for (int c : {1, 3}) {
    SCOPED_TRACE(c);
    const int h = 37, w = 53;  // Not multiples of the 8x8 (or 16x16) blocks.
    const std::vector<uint8_t> src = Smooth(h, w, c);
    WriteJpegWithLibjpeg(dir / "a.jpg", src, h, w, c, 95);
    Tensor img = io::ReadImage(dir / "a.jpg");
    ASSERT_EQ(img.shape(), Shape(DType::Uint8, {h, w, c}));
    const auto [worst, mean] = Diff(img.ToVector<uint8_t>(), src);
    EXPECT_LE(worst, 12);
    EXPECT_LT(mean, 1.5);
  }
  // The file name's extension does not matter: the content decides.
  WriteJpegWithLibjpeg(dir / "really_a_jpeg.png", Smooth(8, 8, 3), 8, 8, 3, 90);
  EXPECT_EQ(io::ReadImage(dir / "really_a_jpeg.png").shape(), Shape(DType::Uint8, {8, 8, 3}));
}

TEST(Jpeg, WriteImageByExtension) {
  TempDir dir;
  const std::vector<uint8_t> src = Smooth(16, 24, 3);
  std::vector<float> f;
  for (uint8_t v : src) f.push_back(static_cast<float>(v) / 255.0f);
  io::WriteImage(dir / "f.JPEG", Tensor::FromFlat(Shape(DType::Float32, {16, 24, 3}), f));
  Tensor back = io::ReadImage(dir / "f.JPEG");
  ASSERT_EQ(back.shape(), Shape(DType::Uint8, {16, 24, 3}));
  EXPECT_LE(Diff(back.ToVector<uint8_t>(), src).first, 12);
  // Quality matters: a low one loses more, and makes a smaller file.
  Tensor u8 = Tensor::FromFlat(Shape(DType::Uint8, {16, 24, 3}), src);
  io::WriteImage(dir / "q95.jpg", u8, 95);
  io::WriteImage(dir / "q10.jpg", u8, 10);
  EXPECT_LT(fs::file_size(dir / "q10.jpg"), fs::file_size(dir / "q95.jpg"));
  EXPECT_GT(Diff(io::ReadImage(dir / "q10.jpg").ToVector<uint8_t>(), src).second,
            Diff(io::ReadImage(dir / "q95.jpg").ToVector<uint8_t>(), src).second);
  EXPECT_TRUE(Throws([&] { io::WriteImage(dir / "a.jpg", Pixels(2, 2, 4)); }, {"a.jpg", "1 or 3 channels"}));
  EXPECT_TRUE(Throws([&] { io::WriteImage(dir / "a.jpg", u8, 0); }, {"a.jpg", "quality 0"}));
  EXPECT_FALSE(fs::exists(dir / "a.jpg"));
}

TEST(Jpeg, DamagedOrTruncatedFilesAreErrors) {
  TempDir dir;
  WriteJpegWithLibjpeg(dir / "ok.jpg", Smooth(40, 40, 3), 40, 40, 3, 90);
  std::ifstream in(dir / "ok.jpg", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 400u);
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir / name, std::ios::binary) << content;
    return dir / name;
  };
  for (size_t keep : {size_t{3}, size_t{20}, size_t{200}, bytes.size() / 2, bytes.size() - 2}) {
    SCOPED_TRACE(keep);
    const std::string path = write("cut.jpg", bytes.substr(0, keep));
    EXPECT_TRUE(Throws([&] { io::ReadImage(path); }, {"cut.jpg", "JPEG"}));
  }
  std::string zeroed = bytes;
  std::fill(zeroed.begin() + 4, zeroed.begin() + 60, '\0');  // The header's first segments wiped out.
  const std::string path = write("zeroed.jpg", zeroed);
  EXPECT_TRUE(Throws([&] { io::ReadImage(path); }, {"zeroed.jpg", "damaged JPEG"}));
  EXPECT_TRUE(
      Throws([&] { io::ReadImage(write("text.jpg", "hello")); }, {"text.jpg", "neither a PNG nor a JPEG"}));
}

}  // namespace
