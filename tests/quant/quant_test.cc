// Tests for host-side quantization: the ggml block layouts against per-element readings of
// ggml's reference definitions and hand-made blocks, the accuracy of every scheme on random
// weights, the storage sizes, and the errors for bad input.

#include "kiln/quant/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <vector>

#include "kiln/core/half.h"
#include "test_util.h"

namespace {

using namespace kiln;
using kiln::test::Throws;
using quant::Scheme;

Tensor Gaussian(int64_t k, int64_t n, uint32_t seed, float mean = 0, float stddev = 1) {
  return kiln::test::NormalTensor({k, n}, seed, stddev, mean);
}

/// ||a - b|| / ||b|| (Frobenius).
double RelativeError(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.ToVector<float>(), y = b.ToVector<float>();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    den += static_cast<double>(y[i]) * y[i];
  }
  return std::sqrt(num / den);
}

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n);
  for (uint8_t& x : b) x = static_cast<uint8_t>(rng() & 0xFF);
  return b;
}

void PutF16(uint8_t* p, float v) {
  const uint16_t h = detail::FloatToHalfBits(v);
  std::memcpy(p, &h, 2);
}
float GetF16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return detail::HalfBitsToFloat(h);
}

// ---- ggml layouts, element by element -----------------------------------------------------------

// The value of element e of one block, read straight from the layout ggml's block structs and
// dequantize_row functions define (independently of the loop form in the library).
float Q8_0Element(const uint8_t* b, int e) {
  return static_cast<float>(static_cast<int8_t>(b[2 + e])) * GetF16(b);
}

float Q4_0Element(const uint8_t* b, int e) {
  const int nibble = e < 16 ? b[2 + e] & 0x0F : b[2 + e - 16] >> 4;
  return static_cast<float>(nibble - 8) * GetF16(b);
}

float Q4_KElement(const uint8_t* b, int e) {
  const uint8_t* s = b + 4;
  const int chunk = e / 64, high = (e % 64) / 32, l = e % 32, sub = 2 * chunk + high;
  const int byte = b[16 + 32 * chunk + l];
  const int q = high ? byte >> 4 : byte & 0x0F;
  int sc, m;
  if (sub < 4) {
    sc = s[sub] & 63;
    m = s[sub + 4] & 63;
  } else {
    sc = (s[sub + 4] & 0x0F) | ((s[sub - 4] >> 6) << 4);
    m = (s[sub + 4] >> 4) | ((s[sub] >> 6) << 4);
  }
  const float d1 = GetF16(b) * static_cast<float>(sc), m1 = GetF16(b + 2) * static_cast<float>(m);
  return d1 * static_cast<float>(q) - m1;
}

float Q6_KElement(const uint8_t* b, int e) {
  const int h = e / 128, r = e % 128, i = r / 32, l = r % 32, part = i % 2, nib = i / 2;
  const int low = (b[64 * h + 32 * part + l] >> (4 * nib)) & 0x0F;
  const int high = (b[128 + 32 * h + l] >> (2 * i)) & 3;
  const int q = (low | (high << 4)) - 32;
  const auto sc = static_cast<int8_t>(b[192 + 8 * h + 2 * i + l / 16]);
  return GetF16(b + 208) * static_cast<float>(sc) * static_cast<float>(q);
}

void ExpectDecodesAsLayout(nn::GGMLType type, float (*element)(const uint8_t*, int), int scale_at) {
  const int64_t values = quant::GGMLBlockValues(type), bytes = quant::GGMLBlockBytes(type);
  const int blocks = 5;
  std::vector<uint8_t> raw =
      RandomBytes(static_cast<size_t>(blocks * bytes), 7 + static_cast<uint32_t>(type));
  for (int k = 0; k < blocks; ++k) {  // Sane float16 scales (random bits may be NaN).
    PutF16(raw.data() + k * bytes + scale_at, 0.03125f * static_cast<float>(k + 1));
    if (type == nn::GGMLType::Q4_K)
      PutF16(raw.data() + k * bytes + 2, -0.015625f * static_cast<float>(k + 1));
  }
  std::vector<float> got(static_cast<size_t>(blocks * values));
  quant::DecodeGGML(type, raw.data(), blocks * values, got.data());
  for (int k = 0; k < blocks; ++k) {
    for (int e = 0; e < values; ++e)
      ASSERT_EQ(got[static_cast<size_t>(k * values + e)], element(raw.data() + k * bytes, e))
          << nn::GGMLTypeName(type) << " block " << k << " element " << e;
  }
}

TEST(QuantGGML, BlockSizesAreGgmls) {
  EXPECT_EQ(quant::GGMLBlockBytes(nn::GGMLType::Q8_0), 34);
  EXPECT_EQ(quant::GGMLBlockBytes(nn::GGMLType::Q4_0), 18);
  EXPECT_EQ(quant::GGMLBlockBytes(nn::GGMLType::Q4_K), 144);
  EXPECT_EQ(quant::GGMLBlockBytes(nn::GGMLType::Q6_K), 210);
  EXPECT_EQ(quant::GGMLBlockValues(nn::GGMLType::Q4_0), 32);
  EXPECT_EQ(quant::GGMLBlockValues(nn::GGMLType::Q6_K), 256);
}

TEST(QuantGGML, DecodeFollowsTheBlockLayouts) {
  ExpectDecodesAsLayout(nn::GGMLType::Q8_0, Q8_0Element, 0);
  ExpectDecodesAsLayout(nn::GGMLType::Q4_0, Q4_0Element, 0);
  ExpectDecodesAsLayout(nn::GGMLType::Q4_K, Q4_KElement, 0);
  ExpectDecodesAsLayout(nn::GGMLType::Q6_K, Q6_KElement, 208);
}

TEST(QuantGGML, HandMadeBlocks) {
  // Q8_0: d = 0.5, q_j = j - 16.
  std::vector<uint8_t> q8(34);
  PutF16(q8.data(), 0.5f);
  for (int j = 0; j < 32; ++j)
    q8[2 + static_cast<size_t>(j)] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  std::vector<float> y(32);
  quant::DecodeGGML(nn::GGMLType::Q8_0, q8.data(), 32, y.data());
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[static_cast<size_t>(j)], 0.5f * static_cast<float>(j - 16));
  // Q4_0: d = 2, byte j holds j (low) and 15 - j (high): y_j = 2(j - 8), y_{j+16} = 2(7 - j).
  std::vector<uint8_t> q4(18);
  PutF16(q4.data(), 2.0f);
  for (int j = 0; j < 16; ++j) q4[2 + static_cast<size_t>(j)] = static_cast<uint8_t>(j | ((15 - j) << 4));
  quant::DecodeGGML(nn::GGMLType::Q4_0, q4.data(), 32, y.data());
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[static_cast<size_t>(j)], 2.0f * static_cast<float>(j - 8));
    EXPECT_EQ(y[static_cast<size_t>(j + 16)], 2.0f * static_cast<float>(7 - j));
  }
  // Q4_K: d = 1, dmin = 0.5, every sub-block scale 2 and min 3 (6-bit fields), all nibbles 5:
  // y = 1·2·5 - 0.5·3 = 8.5 everywhere. Sub-blocks 4-7 keep their high bits in bytes 0-7.
  std::vector<uint8_t> k4(144, 0);
  PutF16(k4.data(), 1.0f);
  PutF16(k4.data() + 2, 0.5f);
  for (int j = 0; j < 4; ++j) {
    k4[4 + static_cast<size_t>(j)] = 2;              // scale of sub-block j
    k4[8 + static_cast<size_t>(j)] = 3;              // min of sub-block j
    k4[12 + static_cast<size_t>(j)] = 2 | (3 << 4);  // low bits of scale/min of sub-block j + 4
  }
  for (size_t i = 16; i < 144; ++i) k4[i] = 0x55;
  std::vector<float> y256(256);
  quant::DecodeGGML(nn::GGMLType::Q4_K, k4.data(), 256, y256.data());
  for (float v : y256) EXPECT_EQ(v, 8.5f);
  // Q6_K: d = 0.25, every scale 4, every 6-bit value 32 + 3 = 35 (low 3, high 2): y = 0.25·4·3 = 3.
  std::vector<uint8_t> k6(210, 0);
  for (size_t i = 0; i < 128; ++i) k6[i] = 0x33;
  for (size_t i = 128; i < 192; ++i) k6[i] = 0xAA;  // 2 in each 2-bit field
  for (size_t i = 192; i < 208; ++i) k6[i] = 4;
  PutF16(k6.data() + 208, 0.25f);
  quant::DecodeGGML(nn::GGMLType::Q6_K, k6.data(), 256, y256.data());
  for (float v : y256) EXPECT_EQ(v, 3.0f);
}

TEST(QuantGGML, ExactValuesRoundTrip) {
  // Multiples of a float16 scale that the block's largest value sets exactly survive encoding.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[static_cast<size_t>(j)] = 0.25f * static_cast<float>((j * 7) % 255 - 127);
  x[3] = 0.25f * 127;
  std::vector<uint8_t> b(34);
  std::vector<float> y(32);
  quant::EncodeGGML(nn::GGMLType::Q8_0, x.data(), 32, b.data());
  quant::DecodeGGML(nn::GGMLType::Q8_0, b.data(), 32, y.data());
  EXPECT_EQ(y, x);
  for (int j = 0; j < 32; ++j) x[static_cast<size_t>(j)] = static_cast<float>(j % 16 - 8);
  std::vector<uint8_t> b4(18);
  quant::EncodeGGML(nn::GGMLType::Q4_0, x.data(), 32, b4.data());
  quant::DecodeGGML(nn::GGMLType::Q4_0, b4.data(), 32, y.data());
  EXPECT_EQ(y, x);
}

TEST(QuantGGML, EncodeErrors) {
  std::vector<float> x(40, 1.0f);
  std::vector<uint8_t> b(64);
  EXPECT_TRUE(
      Throws([&] { quant::EncodeGGML(nn::GGMLType::Q8_0, x.data(), 40, b.data()); }, {"40", "Q8_0", "32"}));
  EXPECT_TRUE(
      Throws([&] { quant::DecodeGGML(nn::GGMLType::Q4_K, b.data(), 40, x.data()); }, {"Q4_K", "256"}));
}

// ---- accuracy and storage -----------------------------------------------------------------------

struct Accuracy {
  Scheme scheme;
  int64_t block;
  double max_error;
};

TEST(Quant, RandomWeightsAccuracy) {
  const Tensor w = Gaussian(512, 96, 1);
  // Bounds a little above the measured errors; the bars are 1e-2 (int8 per channel) and
  // 0.12 (4-bit schemes).
  for (const Accuracy& a : std::vector<Accuracy>{{Scheme::Int8, 0, 0.01},
                                                 {Scheme::Int8, 64, 0.0065},
                                                 {Scheme::Int8Asymmetric, 0, 0.01},
                                                 {Scheme::Int4, 32, 0.12},
                                                 {Scheme::Int4Asymmetric, 32, 0.09},
                                                 {Scheme::NF4, 64, 0.1},
                                                 {Scheme::Q8_0, 0, 0.006},
                                                 {Scheme::Q4_0, 0, 0.095},
                                                 {Scheme::Q4_K, 0, 0.08},
                                                 {Scheme::Q6_K, 0, 0.02}}) {
    quant::Quantized q = quant::Quantize(w, a.scheme, a.block);
    const double err = RelativeError(quant::Dequantize(q), w);
    std::cout << quant::SchemeName(a.scheme) << " block " << a.block << ": relative error " << err << ", "
              << static_cast<double>(q.ByteSize()) * 8 / static_cast<double>(w.Size())
              << " bits per weight\n";
    EXPECT_LT(err, a.max_error) << quant::SchemeName(a.scheme) << " block " << a.block;
    EXPECT_GT(err, 0) << quant::SchemeName(a.scheme);
  }
}

TEST(Quant, AsymmetricFitsAnOffsetRange) {
  const Tensor w = Gaussian(64, 16, 2, /*mean=*/5, /*stddev=*/0.2f);
  const double sym = RelativeError(quant::Dequantize(quant::Quantize(w, Scheme::Int4, 16)), w);
  const double asym = RelativeError(quant::Dequantize(quant::Quantize(w, Scheme::Int4Asymmetric, 16)), w);
  EXPECT_LT(asym, sym / 4);
  // Q4_K's mins cover a negative offset (the format subtracts a non-negative min).
  const Tensor wk = Gaussian(256, 4, 3, -5, 0.2f);
  EXPECT_LT(RelativeError(quant::Dequantize(quant::Quantize(wk, Scheme::Q4_K)), wk), 0.01);
}

TEST(Quant, LinearValuesAndLayout) {
  // One block per column (block_axis 0, whole axis): scale = max|w| / 127.
  const Tensor w =
      Tensor::FromFlat(Shape(DType::Float32, {2, 3}), std::vector<float>{1, -1.5f, 0.5f, -1, 4, 0.3f});
  quant::Quantized q = quant::Quantize(w, Scheme::Int8);
  EXPECT_EQ(q.weights.shape(), Shape(DType::Int8, {2, 3}));
  EXPECT_EQ(q.scales.shape(), Shape(DType::Float32, {1, 3}));
  EXPECT_EQ(q.scales.ToVector<float>(), (std::vector<float>{1 / 127.0f, 4 / 127.0f, 0.5f / 127.0f}));
  EXPECT_EQ(q.weights.ToVector<int8_t>(), (std::vector<int8_t>{127, -48, 127, -127, 127, 76}));
  // Blocks along N (block_axis 1) of 3: one scale per row.
  quant::Quantized r = quant::Quantize(w, Scheme::Int4, 3, 1);
  EXPECT_EQ(r.weights.shape(), Shape(DType::Int4, {2, 3}));
  EXPECT_EQ(r.scales.shape(), Shape(DType::Float32, {2, 1}));
  EXPECT_EQ(r.scales.ToVector<float>(), (std::vector<float>{1.5f / 7.0f, 4 / 7.0f}));
  // Packed two per byte, the first in the low nibble: 5, -7, 2 | -2, 7, 1.
  std::vector<uint8_t> bytes;
  r.weights.ConstBytes([&](std::span<const uint8_t> b) { bytes.assign(b.begin(), b.end()); });
  EXPECT_EQ(bytes, (std::vector<uint8_t>{0x95, 0xE2, 0x17}));
  std::vector<float> back = quant::Dequantize(r).ToVector<float>();
  EXPECT_FLOAT_EQ(back[1], -7 * (1.5f / 7.0f));
  EXPECT_FLOAT_EQ(back[3], -2 * (4 / 7.0f));
}

TEST(Quant, NF4UsesTheTable) {
  const Tensor w = Tensor::FromFlat(Shape(DType::Float32, {4, 1}), std::vector<float>{-2, 1.0f, 0.0f, 0.16f});
  quant::Quantized q = quant::Quantize(w, Scheme::NF4);
  EXPECT_EQ(q.weights.shape(), Shape(DType::Uint4, {4, 1}));
  EXPECT_EQ(q.scales.ToVector<float>(), std::vector<float>{2.0f});
  std::vector<float> back = quant::Dequantize(q).ToVector<float>();
  EXPECT_EQ(back[0], -2.0f);
  EXPECT_EQ(back[1], quant::kNF4Table[12] * 2);  // 0.5 is nearest to 0.4407
  EXPECT_EQ(back[2], 0.0f);
  EXPECT_EQ(back[3], quant::kNF4Table[8] * 2);  // 0.08 is nearest to 0.0796
}

TEST(Quant, ByteSizes) {
  const Tensor w = Gaussian(256, 128, 4);
  EXPECT_EQ(quant::Quantize(w, Scheme::Int8).ByteSize(), 256 * 128 + 128 * 4);
  EXPECT_EQ(quant::Quantize(w, Scheme::Int4, 32).ByteSize(), 256 * 128 / 2 + 8 * 128 * 4);
  EXPECT_EQ(quant::Quantize(w, Scheme::Int4Asymmetric, 32).ByteSize(), 256 * 128 / 2 + 2 * 8 * 128 * 4);
  EXPECT_EQ(quant::Quantize(w, Scheme::NF4, 64).ByteSize(), 256 * 128 / 2 + 4 * 128 * 4);
  EXPECT_EQ(quant::Quantize(w, Scheme::Q8_0).ByteSize(), 128 * 8 * 34);
  EXPECT_EQ(quant::Quantize(w, Scheme::Q4_0).ByteSize(), 128 * 8 * 18);
  EXPECT_EQ(quant::Quantize(w, Scheme::Q4_K).ByteSize(), 128 * 144);
  EXPECT_EQ(quant::Quantize(w, Scheme::Q6_K).ByteSize(), 128 * 210);
  quant::Quantized g = quant::Quantize(w, Scheme::Q4_K);
  EXPECT_EQ(g.weights.shape(), Shape(DType::Uint8, {128, 144}));
  EXPECT_FALSE(g.scales.Ok());
}

TEST(Quant, SchemeNames) {
  for (Scheme s : {Scheme::Int8, Scheme::Int8Asymmetric, Scheme::Int4, Scheme::Int4Asymmetric, Scheme::NF4,
                   Scheme::Q8_0, Scheme::Q4_0, Scheme::Q4_K, Scheme::Q6_K})
    EXPECT_EQ(quant::SchemeFromName(quant::SchemeName(s)), s);
  EXPECT_TRUE(Throws([] { quant::SchemeFromName("Q5_1"); }, {"Q5_1", "Q4_K"}));
  EXPECT_EQ(quant::SchemeOf(nn::GGMLType::Q6_K), Scheme::Q6_K);
  EXPECT_TRUE(Throws([] { quant::SchemeOf(nn::GGMLType::F16); }, {"F16"}));
}

TEST(Quant, BadInput) {
  const Tensor w = Gaussian(48, 8, 5);
  EXPECT_TRUE(Throws([&] { quant::Quantize(w, Scheme::Int8, 32); }, {"block size 32", "axis 0", "48"}));
  EXPECT_TRUE(Throws([&] { quant::Quantize(w, Scheme::Int8, 0, 2); }, {"block_axis 2"}));
  EXPECT_TRUE(Throws([&] { quant::Quantize(w, Scheme::Q4_0); }, {"Q4_0", "multiple of 32"}));
  EXPECT_TRUE(
      Throws([&] { quant::Quantize(Gaussian(64, 8, 5), Scheme::Q4_0, 16); }, {"Q4_0", "blocks of 32"}));
  EXPECT_TRUE(Throws(
      [&] {
        quant::Quantize(Tensor::FromFlat(Shape(DType::Int32, {2, 2}), std::vector<int32_t>{1, 2, 3, 4}),
                        Scheme::Int8);
      },
      {"float matrix"}));
  EXPECT_TRUE(Throws(
      [&] {
        quant::Quantize(Tensor::FromFlat(Shape(DType::Float32, {4}), std::vector<float>{1, 2, 3, 4}),
                        Scheme::Int8);
      },
      {"[K, N]"}));
  EXPECT_TRUE(Throws(
      [&] {
        quant::Quantize(Tensor::FromFlat(Shape(DType::Float32, {1, 2}), std::vector<float>{1, NAN}),
                        Scheme::Int8);
      },
      {"element 1", "nan"}));
  EXPECT_TRUE(Throws(
      [&] {
        quant::Quantize(Tensor::FromFlat(Shape(DType::Float32, {32, 1}), std::vector<float>(32, 1e9f)),
                        Scheme::Q8_0);
      },
      {"too large", "Q8_0"}));
  quant::Quantized q = quant::Quantize(w, Scheme::Int8, 16);
  q.scales = Tensor::FromFlat(Shape(DType::Float32, {2, 8}), std::vector<float>(16, 1));
  EXPECT_TRUE(Throws([&] { quant::Dequantize(q); }, {"scales must be", "[3, 8]", "[2, 8]"}));
  quant::Quantized g = quant::Quantize(Gaussian(64, 2, 6), Scheme::Q8_0);
  g.dims = {96, 2};
  EXPECT_TRUE(Throws([&] { quant::Dequantize(g); }, {"Q8_0", "weights"}));
}

}  // namespace
