// Tests for IDX files (written here, plain and gzip) and the real Fashion-MNIST files of Debian's
// dataset-fashion-mnist.

#include "kiln/data/mnist.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
namespace fs = std::filesystem;
using kiln::test::Throws;

std::string Idx(uint8_t type, const std::vector<uint32_t>& dims, const std::string& payload) {
  std::string s = {'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int k = 3; k >= 0; --k) s += static_cast<char>((d >> (8 * k)) & 0xFF);
  return s + payload;
}

TEST(Idx, ReadsPlainAndGzipFiles) {
  const fs::path dir = fs::temp_directory_path() / "kiln_idx_test";
  fs::create_directories(dir);
  std::ofstream((dir / "a.idx").string(), std::ios::binary)
      << Idx(0x08, {2, 3}, std::string("\x01\x02\x03\x04\x05\xff", 6));
  Tensor a = data::ReadIdx((dir / "a.idx").string());
  EXPECT_EQ(a.shape(), Shape(DType::Uint8, {2, 3}));
  EXPECT_EQ(a.ToVector<uint8_t>(), (std::vector<uint8_t>{1, 2, 3, 4, 5, 255}));
  // Big-endian int32 values, gzip-compressed.
  const std::string ints = Idx(0x0C, {2}, std::string("\x00\x00\x01\x00\xff\xff\xff\xfe", 8));
  gzFile g = gzopen((dir / "b.idx.gz").string().c_str(), "wb");
  gzwrite(g, ints.data(), static_cast<unsigned>(ints.size()));
  gzclose(g);
  EXPECT_EQ(data::ReadIdx((dir / "b.idx.gz").string()).ToVector<int32_t>(), (std::vector<int32_t>{256, -2}));
  std::ofstream((dir / "c.idx").string(), std::ios::binary) << Idx(0x08, {2, 3}, "abc");
  EXPECT_TRUE(Throws([&] { data::ReadIdx((dir / "c.idx").string()); }, {"c.idx", "3 data bytes"}));
  EXPECT_TRUE(Throws([&] { data::FashionMnist(compute::New(), dir.string(), data::Split::Test); },
                     {"t10k-images-idx3-ubyte", "dataset-fashion-mnist"}));
  fs::remove_all(dir);
}

TEST(FashionMnist, TheInstalledFiles) {
  // scripts/install-deps.sh installs Debian's dataset-fashion-mnist: its absence is a failure.
  ASSERT_TRUE(fs::exists(data::kFashionMnistDir)) << "run scripts/install-deps.sh (dataset-fashion-mnist)";
  auto test = data::FashionMnist(compute::New(), data::kFashionMnistDir, data::Split::Test);
  EXPECT_EQ(test->NumExamples(), 10000);
  test->BatchSize(10000, false);
  std::any spec;
  std::vector<Tensor> x, y;
  ASSERT_TRUE(test->Yield(spec, x, y));
  EXPECT_EQ(x[0].shape(), Shape(DType::Float32, {10000, 28, 28, 1}));
  EXPECT_EQ(y[0].shape(), Shape(DType::Int32, {10000, 1}));
  std::vector<int> counts(10, 0);
  for (int32_t c : y[0].ToVector<int32_t>()) ++counts[static_cast<size_t>(c)];
  for (int c : counts) EXPECT_EQ(c, 1000);  // The test set is balanced.
  float lo = 1, hi = 0;
  for (float v : x[0].ToVector<float>()) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);
}

}  // namespace
