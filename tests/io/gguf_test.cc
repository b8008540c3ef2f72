// Tests for GGUF files: the byte layout of a small file written by hand from the format's
// definition, round trips of every metadata type and tensor type, quantized weights through
// nn::QuantizedDense, and the errors for malformed, hostile and truncated files.

#include "kiln/io/gguf.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "io/gguf_test_util.h"
#include "kiln/kiln.h"
#include "kiln/ml/quantized.h"
#include "test_util.h"

namespace {

using namespace kiln;
using io::GgufFile;
using io::GgufTensor;
using io::GgufType;
using io::GgufValue;
using kiln::test::EveryKind;
using kiln::test::RandomMatrix;
using kiln::test::TempDir;
using kiln::test::Throws;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// Appends the little-endian bytes of v.
template <class T>
void Le(std::vector<uint8_t>& b, T v) {
  uint8_t raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  b.insert(b.end(), raw, raw + sizeof(T));
}

void Str(std::vector<uint8_t>& b, const std::string& s) {
  Le<uint64_t>(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

TEST(Gguf, WritesTheFormatsBytes) {
  // One string key and one F32 tensor of ggml sizes ne = [3, 2] (kiln dims [2, 3]).
  GgufFile f;
  f.metadata.emplace_back("general.name", GgufValue::String("tiny"));
  GgufTensor t;
  t.name = "w";
  t.type = nn::GGMLType::F32;
  t.dims = {2, 3};
  t.data = Tensor::FromFlat(Shape(DType::Float32, {2, 3}), std::vector<float>{1, 2, 3, 4, 5, 6});
  f.tensors.push_back(t);
  TempDir dir;
  const int64_t size = io::WriteGguf(dir / "tiny.gguf", f);

  std::vector<uint8_t> want = {'G', 'G', 'U', 'F'};
  Le<uint32_t>(want, 3);  // version
  Le<uint64_t>(want, 1);  // tensors
  Le<uint64_t>(want, 1);  // key/values
  Str(want, "general.name");
  Le<uint32_t>(want, 8);  // String
  Str(want, "tiny");
  Str(want, "w");
  Le<uint32_t>(want, 2);  // n_dims
  Le<uint64_t>(want, 3);  // ne[0]
  Le<uint64_t>(want, 2);  // ne[1]
  Le<int32_t>(want, 0);   // GGML_TYPE_F32
  Le<uint64_t>(want, 0);  // offset in the data section
  while (want.size() % 32 != 0) want.push_back(0);
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}) Le<float>(want, v);
  while (want.size() % 32 != 0) want.push_back(0);
  EXPECT_EQ(ReadAll(dir / "tiny.gguf"), want);
  EXPECT_EQ(size, static_cast<int64_t>(want.size()));
}

TEST(Gguf, RoundTripsEveryKind) {
  const GgufFile f = EveryKind();
  TempDir dir;
  io::WriteGguf(dir / "all.gguf", f);
  const GgufFile g = io::ReadGguf(dir / "all.gguf");
  EXPECT_EQ(g.version, 3u);
  ASSERT_EQ(g.metadata.size(), f.metadata.size());
  for (size_t i = 0; i < f.metadata.size(); ++i) {
    EXPECT_EQ(g.metadata[i].first, f.metadata[i].first);
    EXPECT_TRUE(g.metadata[i].second == f.metadata[i].second) << f.metadata[i].first;
  }
  EXPECT_EQ(g.Find("general.architecture")->AsString(), "llama");
  EXPECT_EQ(g.Find("u64")->AsInt(), static_cast<int64_t>(uint64_t{1} << 63));
  EXPECT_EQ(g.Find("tokens")->AsArray()[2].AsString(), "héllo");
  EXPECT_EQ(g.Find("nested")->AsArray()[0].AsArray()[1].AsInt(), 2);
  EXPECT_EQ(g.Alignment(), 64);
  ASSERT_EQ(g.tensors.size(), f.tensors.size());
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    EXPECT_EQ(g.tensors[i].name, f.tensors[i].name);
    EXPECT_EQ(g.tensors[i].type, f.tensors[i].type);
    EXPECT_EQ(g.tensors[i].dims, f.tensors[i].dims);
    EXPECT_TRUE(g.tensors[i].data.Equal(f.tensors[i].data)) << f.tensors[i].name;
  }
  // Every tensor's data starts on a 64-byte boundary of the file.
  const std::vector<uint8_t> bytes = ReadAll(dir / "all.gguf");
  const std::vector<float> first = f.tensors[0].data.ToVector<float>();
  size_t at = 0;
  for (; at + 4 <= bytes.size(); at += 64) {
    float v;
    std::memcpy(&v, bytes.data() + at, 4);
    if (v == first[0]) break;
  }
  EXPECT_LT(at, bytes.size());
  // The values decode back within each type's precision.
  const Tensor w = RandomMatrix({4, 256}, 1);
  const std::vector<std::pair<std::string, double>> tolerance = {
      {"w.F32", 0},    {"w.F16", 1e-3}, {"w.BF16", 8e-3}, {"w.Q8_0", 0.02},
      {"w.Q4_0", 0.3}, {"w.Q4_K", 0.3}, {"w.Q6_K", 0.08}};
  for (const auto& [name, tol] : tolerance) {
    std::vector<float> got = io::DequantizeGguf(*g.FindTensor(name)).ToVector<float>(),
                       want = w.ToVector<float>();
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << name << " " << i;
  }
  EXPECT_EQ(g.FindTensor("missing"), nullptr);
}

TEST(Gguf, QuantizedWeightsRunInADenseLayer) {
  // A matrix [K, N] quantized, written as ggml stores it ([N, K]), read back and multiplied.
  const Tensor w = RandomMatrix({256, 6}, 2);
  const Tensor x = RandomMatrix({3, 256}, 3);
  const quant::Quantized q = quant::Quantize(w, quant::Scheme::Q4_K);
  GgufFile f;
  f.tensors.push_back(io::FromQuantized("blk.0.ffn_up.weight", q));
  EXPECT_EQ(f.tensors[0].dims, (std::vector<int64_t>{6, 256}));
  TempDir dir;
  io::WriteGguf(dir / "q.gguf", f);
  const quant::Quantized back =
      io::ToQuantized(*io::ReadGguf(dir / "q.gguf").FindTensor("blk.0.ffn_up.weight"));
  EXPECT_EQ(back.dims, q.dims);
  EXPECT_TRUE(back.weights.Equal(q.weights));
  EXPECT_TRUE(quant::Dequantize(back).Equal(quant::Dequantize(q)));
  kiln::test::ForEachBackend([&](const compute::BackendPtr& backend) {
    graph::Exec exec = graph::NewExec(backend, [&](graph::Node xn) {
      return nn::QuantizedDense(xn, back.WeightsIn(xn.graph()), back.QuantizationIn(xn.graph()));
    });
    const std::vector<float> got = exec.Call1(x).ToVector<float>();
    const std::vector<float> deq = quant::Dequantize(q).ToVector<float>(), xv = x.ToVector<float>();
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t n = 0; n < 6; ++n) {
        double s = 0;
        for (int64_t k = 0; k < 256; ++k)
          s += double{xv[static_cast<size_t>(r * 256 + k)]} * deq[static_cast<size_t>(k * 6 + n)];
        EXPECT_NEAR(got[static_cast<size_t>(r * 6 + n)], s, 1e-4 * (1 + std::abs(s)));
      }
    }
  });
  EXPECT_TRUE(Throws([&] { io::FromQuantized("x", quant::Quantize(w, quant::Scheme::Int8)); },
                     {"Int8", "no GGUF type"}));
}

TEST(Gguf, EveryTruncationIsAnError) {
  GgufFile f = EveryKind();
  f.tensors.resize(3);
  TempDir dir;
  io::WriteGguf(dir / "f.gguf", f);
  const std::vector<uint8_t> bytes = ReadAll(dir / "f.gguf");
  // The last tensor ends before the final padding: cuts inside the padding still read.
  for (size_t n = 0; n + 64 < bytes.size(); n += (n < 2000 ? 1 : 97)) {
    WriteAll(dir / "cut.gguf",
             std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)));
    EXPECT_TRUE(Throws([&] { io::ReadGguf(dir / "cut.gguf"); }, {"cut.gguf"})) << "cut at " << n;
  }
}

TEST(Gguf, RandomlyDamagedFilesAreReadOrRefused) {
  // Seeded mutations of a valid file (flipped bytes, 64-bit fields overwritten with huge or
  // small values, bytes inserted or dropped, cuts): each must read, or raise a kiln::Error
  // naming the file, never crash, hang or allocate what a corrupt count claims. What reads
  // must then map to quant::Quantized or be refused the same way. (Under the asan preset this
  // runs with AddressSanitizer and UndefinedBehaviorSanitizer.)
  GgufFile f = EveryKind();
  TempDir dir;
  io::WriteGguf(dir / "f.gguf", f);
  const std::vector<uint8_t> bytes = ReadAll(dir / "f.gguf");
  std::mt19937_64 rng(2024);
  int read = 0, refused = 0;
  for (int round = 0; round < 1500; ++round) {
    std::vector<uint8_t> b = bytes;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      // Most edits land in the header and metadata (the first ~1000 bytes), where the counts are.
      const size_t span = rng() % 4 == 0 ? b.size() : std::min<size_t>(b.size(), 1024);
      const size_t at = rng() % span;
      switch (rng() % 5) {
        case 0:
          b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1: {  // A 64-bit field made huge, negative or small.
          const uint64_t values[] = {~uint64_t{0}, uint64_t{1} << 62, uint64_t{1} << 31, 0, 1, rng()};
          const uint64_t v = values[rng() % 6];
          for (size_t k = 0; k < 8 && at + k < b.size(); ++k) b[at + k] = static_cast<uint8_t>(v >> (8 * k));
          break;
        }
        case 2:
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(rng()));
          break;
        case 3:
          b.erase(b.begin() + static_cast<std::ptrdiff_t>(at));
          break;
        default:
          b.resize(at);
          break;
      }
      if (b.empty()) b.push_back(0);
    }
    WriteAll(dir / "m.gguf", b);
    try {
      GgufFile g = io::ReadGguf(dir / "m.gguf");
      ++read;
      for (const GgufTensor& t : g.tensors) {
        try {
          quant::Dequantize(io::ToQuantized(t));
        } catch (const kiln::Error&) {
        }
      }
    } catch (const kiln::Error& e) {
      ++refused;
      EXPECT_NE(e.message().find("m.gguf"), std::string::npos) << "round " << round << ": " << e.message();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "round " << round << ": not a kiln::Error: " << e.what();
    }
  }
  // Both outcomes occur (a mutation of the tensor bytes leaves a readable file).
  EXPECT_GT(read, 50);
  EXPECT_GT(refused, 500);
}

TEST(Gguf, HostileHeadersAreErrors) {
  TempDir dir;
  const std::string p = dir / "bad.gguf";
  auto header = [](uint64_t tensors, uint64_t kvs) {
    std::vector<uint8_t> b = {'G', 'G', 'U', 'F'};
    Le<uint32_t>(b, 3);
    Le<uint64_t>(b, tensors);
    Le<uint64_t>(b, kvs);
    return b;
  };
  auto expect = [&](const std::vector<uint8_t>& b, const std::vector<std::string>& parts) {
    WriteAll(p, b);
    EXPECT_TRUE(Throws([&] { io::ReadGguf(p); }, parts));
  };
  std::vector<uint8_t> b = header(0, 0);
  b[0] = 'X';
  expect(b, {"not a GGUF file"});
  b = header(0, 0);
  b[4] = 1;
  expect(b, {"version 1"});
  expect(header(uint64_t{1} << 60, 0), {"tensor count"});
  expect(header(0, uint64_t{1} << 62), {"metadata count"});
  b = header(0, 1);
  Str(b, "k");
  Le<uint32_t>(b, 99);
  expect(b, {"\"k\"", "unknown value type 99"});
  b = header(0, 1);
  Str(b, "k");
  Le<uint32_t>(b, 8);
  Le<uint64_t>(b, uint64_t{1} << 40);  // a string longer than the file
  expect(b, {"k", "more than"});
  b = header(0, 1);
  Str(b, "arr");
  Le<uint32_t>(b, 9);
  Le<uint32_t>(b, 6);
  Le<uint64_t>(b, uint64_t{1} << 50);  // an array longer than the file
  expect(b, {"arr", "more than"});
  b = header(0, 1);
  Str(b, "general.alignment");
  Le<uint32_t>(b, 4);
  Le<uint32_t>(b, 48);
  expect(b, {"alignment 48"});
  // A tensor: bad dims, unknown type, offset beyond the file, data past the end.
  auto tensor = [&](uint32_t n_dims, std::vector<uint64_t> ne, int32_t type, uint64_t offset) {
    std::vector<uint8_t> t = header(1, 0);
    Str(t, "t");
    Le<uint32_t>(t, n_dims);
    for (uint64_t v : ne) Le<uint64_t>(t, v);
    Le<int32_t>(t, type);
    Le<uint64_t>(t, offset);
    while (t.size() % 32 != 0) t.push_back(0);
    return t;
  };
  expect(tensor(5, {1, 1, 1, 1, 1}, 0, 0), {"\"t\"", "5 dimensions"});
  expect(tensor(2, {uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0), {"\"t\"", "larger than the file"});
  expect(tensor(1, {4}, 77, 0), {"\"t\"", "ggml type 77"});
  expect(tensor(1, {48}, 2, 0), {"\"t\"", "Q4_0", "48"});
  expect(tensor(1, {4}, 0, 1 << 20), {"\"t\"", "offset"});
  expect(tensor(1, {4}, 0, 7), {"\"t\"", "offset 7"});
  expect(tensor(1, {16}, 0, 0), {"\"t\"", "past the end"});
  EXPECT_TRUE(Throws([&] { io::ReadGguf(dir / "none.gguf"); }, {"none.gguf", "cannot read"}));
}

TEST(Gguf, WriteChecksTensors) {
  TempDir dir;
  GgufFile f;
  GgufTensor t;
  t.name = "t";
  t.type = nn::GGMLType::Q4_0;
  t.dims = {2, 32};
  t.data = Tensor::FromFlat(Shape(DType::Uint8, {2, 16}), std::vector<uint8_t>(32));
  f.tensors.push_back(t);
  EXPECT_TRUE(Throws([&] { io::WriteGguf(dir / "w.gguf", f); }, {"\"t\"", "Q4_0", "Uint8)[2, 18]"}));
  f.tensors[0] = io::ToGgufTensor("t", RandomMatrix({2, 32}, 4), nn::GGMLType::Q4_0);
  f.tensors.push_back(f.tensors[0]);
  EXPECT_TRUE(Throws([&] { io::WriteGguf(dir / "w.gguf", f); }, {"\"t\"", "twice"}));
  EXPECT_TRUE(Throws(
      [&] {
        io::ToGgufTensor("t", RandomMatrix({2, 33}, 4), nn::GGMLType::Q8_0);
      },
      {"Q8_0", "33"}));
  // A refused write leaves the previous file untouched.
  f.tensors.resize(1);
  io::WriteGguf(dir / "w.gguf", f);
  const std::vector<uint8_t> before = ReadAll(dir / "w.gguf");
  f.tensors.push_back(f.tensors[0]);
  EXPECT_ANY_THROW(io::WriteGguf(dir / "w.gguf", f));
  EXPECT_EQ(ReadAll(dir / "w.gguf"), before);
}

}  // namespace
