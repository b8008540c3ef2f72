// Tests for PNG images: round trips of each channel count and dtype, PNG files written by an
// independent Python encoder (every row filter, palette, 16-bit) read back, damage rejected.

#include "kiln/io/image.h"

#include <gtest/gtest.h>

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
  EXPECT_TRUE(Throws([&] { io::ReadImage(dir / "missing.png"); }, {"cannot open"}));
}

}  // namespace
