// The 8-bit floats: every byte decodes to a value that encodes back to the same byte, the format
// constants (largest, smallest subnormal, NaN and infinity patterns) are the OCP FP8 ones, and
// encoding rounds to nearest with ties to even, overflowing to NaN (E4M3FN) or infinity (E5M2).

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {

TEST(Float8, EveryByteRoundTrips) {
  int nans_e4 = 0, nans_e5 = 0, infs_e5 = 0;
  for (int b = 0; b < 256; ++b) {
    const auto byte = static_cast<uint8_t>(b);
    const double e4 = Float8E4M3FNToDouble(byte), e5 = Float8E5M2ToDouble(byte);
    if (std::isnan(e4)) {
      ++nans_e4;
    } else {
      EXPECT_EQ(Float8E4M3FNFromDouble(e4), byte) << b;
    }
    if (std::isnan(e5)) {
      ++nans_e5;
    } else {
      infs_e5 += std::isinf(e5) ? 1 : 0;
      EXPECT_EQ(Float8E5M2FromDouble(e5), byte) << b;
    }
  }
  EXPECT_EQ(nans_e4, 2);  // S.1111.111 only.
  EXPECT_EQ(nans_e5, 6);  // S.11111.{01,10,11}.
  EXPECT_EQ(infs_e5, 2);
}

TEST(Float8, FormatConstants) {
  EXPECT_EQ(Float8E4M3FNToDouble(0x7E), 448.0);
  EXPECT_EQ(Float8E4M3FNToDouble(0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(Float8E4M3FNToDouble(0x08), std::ldexp(1.0, -6));  // Smallest normal.
  EXPECT_EQ(Float8E4M3FNToDouble(0x38), 1.0);
  EXPECT_EQ(Float8E4M3FNToDouble(0xC0), -2.0);
  EXPECT_EQ(Float8E5M2ToDouble(0x7B), 57344.0);
  EXPECT_EQ(Float8E5M2ToDouble(0x01), std::ldexp(1.0, -16));
  EXPECT_EQ(Float8E5M2ToDouble(0x3C), 1.0);
  EXPECT_EQ(Float8E5M2ToDouble(0x7C), INFINITY);
  EXPECT_EQ(Float8E5M2ToDouble(0xFC), -INFINITY);
  EXPECT_TRUE(std::signbit(Float8E4M3FNToDouble(0x80)));  // -0.
}

TEST(Float8, EncodingRoundsToNearestEven) {
  // E4M3FN around 1: quantum 1/8; 1 + 1/16 is a tie and goes to the even 1.
  EXPECT_EQ(Float8E4M3FNToDouble(Float8E4M3FNFromDouble(1.0625)), 1.0);
  EXPECT_EQ(Float8E4M3FNToDouble(Float8E4M3FNFromDouble(1.1875)), 1.25);
  EXPECT_EQ(Float8E4M3FNToDouble(Float8E4M3FNFromDouble(1.07)), 1.125);
  EXPECT_EQ(Float8E4M3FNToDouble(Float8E4M3FNFromDouble(464)), 448.0);  // Tie: to 448, not up.
  EXPECT_TRUE(std::isnan(Float8E4M3FNToDouble(Float8E4M3FNFromDouble(465))));
  EXPECT_TRUE(std::isnan(Float8E4M3FNToDouble(Float8E4M3FNFromDouble(-INFINITY))));
  EXPECT_EQ(Float8E4M3FNFromDouble(std::ldexp(1.0, -11)), 0x00);  // Below half the smallest: 0.
  EXPECT_EQ(Float8E4M3FNFromDouble(std::ldexp(1.5, -10)), 0x01);  // Above half: the smallest.
  EXPECT_EQ(Float8E4M3FNFromDouble(-0.0), 0x80);
  // E5M2: quantum 1/4 around 1; overflow to infinity.
  EXPECT_EQ(Float8E5M2ToDouble(Float8E5M2FromDouble(1.125)), 1.0);
  EXPECT_EQ(Float8E5M2ToDouble(Float8E5M2FromDouble(1.375)), 1.5);
  EXPECT_EQ(Float8E5M2ToDouble(Float8E5M2FromDouble(61439)), 57344.0);
  EXPECT_EQ(Float8E5M2ToDouble(Float8E5M2FromDouble(61440)), INFINITY);
  EXPECT_EQ(Float8E5M2ToDouble(Float8E5M2FromDouble(-1e9)), -INFINITY);
}

TEST(Float8, TensorsConvertPrintAndSave) {
  const Tensor x = Tensor::FromValue(std::vector<float>{0.3f, -2, 500, 1e-3f});
  std::vector<Tensor> r = graph::ExecOnce(
      kiln::test::Backend("cpu"),
      [](graph::Node v) -> std::vector<graph::Node> {
        graph::Node e4 = graph::ConvertDType(v, DType::Float8E4M3FN);
        graph::Node e5 = graph::ConvertDType(v, DType::Float8E5M2);
        return {e4, e5, graph::ConvertDType(graph::Reshape(e4, {2, 2}), DType::Float32)};
      },
      x);
  EXPECT_EQ(r[0].ToString(), "[4]float8e4m3fn{0.3125, -2, NaN, 0.001953125}");  // 1e-3: subnormal 2^-9.
  EXPECT_EQ(r[1].ToString(), "[4]float8e5m2{0.3125, -2, 512, 0.0009765625}");
  EXPECT_EQ(r[2].shape(), Shape(DType::Float32, {2, 2}));
  // Arithmetic needs a conversion first.
  graph::Graph g;
  graph::Node p = g.Parameter(Shape(DType::Float8E5M2, {2}));
  EXPECT_TRUE(test::Throws([&] { graph::Add(p, p); }, {"storage-only", "ConvertDType"}));
  // Safetensors names them F8_E4M3 and F8_E5M2.
  test::TempDir dir;
  const std::string path = dir / "f8.safetensors";
  io::WriteSafetensors(path, {{"a", r[0]}, {"b", r[1]}}, {});
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("\"F8_E4M3\""), std::string::npos);
  EXPECT_NE(bytes.find("\"F8_E5M2\""), std::string::npos);
  io::SafetensorsFile f = io::ReadSafetensors(path);
  EXPECT_TRUE(f.tensors[0].second.Equal(r[0]));
  EXPECT_TRUE(f.tensors[1].second.Equal(r[1]));
}

}  // namespace
}  // namespace kiln
