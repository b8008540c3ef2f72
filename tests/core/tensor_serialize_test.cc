// Tests of Tensor::Serialize / Tensor::Deserialize: round trips, the byte layout, and corrupt input
// (truncation, flipped bytes, lying headers) always being a kiln::Error.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/tensor_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using kiln::testing::BytesOf;
using kiln::testing::ThrowsKilnError;

// CRC-32 (zlib's: reflected polynomial 0xEDB88320), written out here to check the format.
uint32_t Crc32(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

template <typename T>
void Put(std::string& s, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  s.append(raw, sizeof(T));
}

template <typename T>
T Get(const std::string& s, size_t offset) {
  T value;
  std::memcpy(&value, s.data() + offset, sizeof(T));
  return value;
}

// A serialized tensor built by hand: every field given explicitly; the CRC appended when asked.
std::string Build(uint8_t dtype_code, const std::vector<int64_t>& dims, uint64_t data_size,
                  const std::string& data, bool with_crc = true, uint32_t version = 1,
                  const char* magic = "KILNTNSR", int64_t rank_override = -1) {
  std::string s(magic, 8);
  Put<uint32_t>(s, version);
  Put<uint8_t>(s, dtype_code);
  s.append(3, '\0');
  Put<uint32_t>(
      s, static_cast<uint32_t>(rank_override >= 0 ? rank_override : static_cast<int64_t>(dims.size())));
  for (int64_t d : dims) Put<int64_t>(s, d);
  Put<uint64_t>(s, data_size);
  s += data;
  if (with_crc) Put<uint32_t>(s, Crc32(s));
  return s;
}

std::string Serialized(const Tensor& t) {
  std::ostringstream out;
  t.Serialize(out);
  return out.str();
}

Tensor Deserialized(const std::string& bytes) {
  std::istringstream in(bytes);
  return Tensor::Deserialize(in);
}

// Deterministic pseudo-random bytes valid for `dtype` (0/1 for Bool).
std::vector<uint8_t> SomeBytes(DType dtype, int64_t n, uint32_t seed) {
  std::vector<uint8_t> out(static_cast<size_t>(n));
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& b : out) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
    if (dtype == DType::Bool) b &= 1;
  }
  return out;
}

TEST(TensorSerializeTest, RoundTripEveryDType) {
  uint32_t seed = 1;
  for (DType d : kAllDTypes) {
    for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{
             {}, {0}, {7}, {3, 5}, {2, 0, 3}, {2, 3, 1, 2}, {1, 1, 1, 1, 1, 1, 1, 9}}) {
      const Shape shape(d, dims);
      SCOPED_TRACE(shape.ToString());
      const std::vector<uint8_t> bytes = SomeBytes(d, shape.ByteSize(), seed++);
      Tensor t = Tensor::FromBytes(shape, bytes);
      const std::string s = Serialized(t);
      EXPECT_EQ(s.size(), 8 + 4 + 1 + 3 + 4 + 8 * dims.size() + 8 + bytes.size() + 4);
      Tensor back = Deserialized(s);
      EXPECT_TRUE(back.Ok());
      EXPECT_TRUE(back.HasLocal());
      EXPECT_EQ(back.shape(), shape);
      EXPECT_EQ(BytesOf(back), bytes);
      EXPECT_TRUE(back.Equal(t));
    }
  }
}

TEST(TensorSerializeTest, RoundTripValues) {
  Tensor f = Tensor::FromValue(
      std::vector<std::vector<float>>{{1.5f, -2}, {std::numeric_limits<float>::infinity(), 0}});
  EXPECT_EQ(Deserialized(Serialized(f)).Value<std::vector<std::vector<float>>>(),
            f.Value<std::vector<std::vector<float>>>());
  Tensor h = Tensor::FromValue(std::vector<float16>{float16(0.5f), float16(-3.0f)});
  EXPECT_EQ(BytesOf(Deserialized(Serialized(h))), (std::vector<uint8_t>{0x00, 0x38, 0x00, 0xC2}));
  Tensor b = Tensor::FromValue(std::vector<bool>{true, false, true});
  EXPECT_EQ(Deserialized(Serialized(b)).ToVector<bool>(), (std::vector<bool>{true, false, true}));
  Tensor s = Tensor::FromScalar(int64_t{-42});
  Tensor sb = Deserialized(Serialized(s));
  EXPECT_EQ(sb.rank(), 0);
  EXPECT_EQ(sb.Item<int64_t>(), -42);
  Tensor p = Tensor::FromBytes(Shape(DType::Int4, {8}), std::vector<uint8_t>{0x10, 0x32, 0x54, 0xF7});
  Tensor pb = Deserialized(Serialized(p));
  EXPECT_EQ(pb.shape(), Shape(DType::Int4, {8}));
  EXPECT_EQ(BytesOf(pb), (std::vector<uint8_t>{0x10, 0x32, 0x54, 0xF7}));
  // A reshape serializes with its own shape.
  Tensor r = Deserialized(Serialized(f.Reshape({4})));
  EXPECT_EQ(r.shape(), Shape(DType::Float32, {4}));
}

TEST(TensorSerializeTest, MaxRank) {
  std::vector<int64_t> dims(64, 1);
  dims[63] = 2;
  Tensor t = Tensor::FromValue(std::vector<int8_t>{5, -5}).Reshape(dims);
  Tensor back = Deserialized(Serialized(t));
  EXPECT_EQ(back.rank(), 64);
  EXPECT_TRUE(back.Equal(t));
}

TEST(TensorSerializeTest, ByteLayout) {
  Tensor t = Tensor::FromValue(std::vector<std::vector<float>>{{1, 2, 3}, {4, 5, 6}});
  const std::string s = Serialized(t);
  ASSERT_EQ(s.size(), 72u);
  EXPECT_EQ(s.substr(0, 8), "KILNTNSR");
  EXPECT_EQ(Get<uint32_t>(s, 8), 1u);                // Version.
  EXPECT_EQ(static_cast<uint8_t>(s[12]), 11);        // DType::Float32's stable code.
  EXPECT_EQ(s.substr(13, 3), std::string(3, '\0'));  // Reserved.
  EXPECT_EQ(Get<uint32_t>(s, 16), 2u);               // Rank.
  EXPECT_EQ(Get<int64_t>(s, 20), 2);
  EXPECT_EQ(Get<int64_t>(s, 28), 3);
  EXPECT_EQ(Get<uint64_t>(s, 36), 24u);  // Data size.
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(Get<float>(s, 44 + 4 * static_cast<size_t>(i)), static_cast<float>(i + 1));
  EXPECT_EQ(Get<uint32_t>(s, 68), Crc32(s.substr(0, 68)));
  // The same bytes built by hand.
  std::string data;
  for (int i = 1; i <= 6; ++i) Put<float>(data, static_cast<float>(i));
  EXPECT_EQ(Build(11, {2, 3}, 24, data), s);
  // A scalar Bool.
  const std::string b = Serialized(Tensor::FromScalar(true));
  EXPECT_EQ(b, Build(1, {}, 1, std::string(1, '\1')));
}

TEST(TensorSerializeTest, HandBuiltInputIsRead) {
  std::string data;
  Put<int16_t>(data, -7);
  Put<int16_t>(data, 300);
  Tensor t = Deserialized(Build(3, {2}, 4, data));  // 3 = Int16.
  EXPECT_EQ(t.shape(), Shape(DType::Int16, {2}));
  EXPECT_EQ(t.ToVector<int16_t>(), (std::vector<int16_t>{-7, 300}));
}

TEST(TensorSerializeTest, SeveralTensorsInOneStream) {
  Tensor a = Tensor::FromValue(std::vector<int32_t>{1, 2, 3});
  Tensor b = Tensor::FromScalar(2.5);
  Tensor c = Tensor::FromShape(Shape(DType::Uint8, {0}));
  std::stringstream stream;
  a.Serialize(stream);
  b.Serialize(stream);
  c.Serialize(stream);
  const auto total = static_cast<std::streamoff>(stream.str().size());
  EXPECT_TRUE(Tensor::Deserialize(stream).Equal(a));
  EXPECT_TRUE(Tensor::Deserialize(stream).Equal(b));
  EXPECT_TRUE(Tensor::Deserialize(stream).Equal(c));
  EXPECT_EQ(static_cast<std::streamoff>(stream.tellg()), total);
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::Deserialize(stream); }));  // Nothing left.
}

TEST(TensorSerializeTest, SerializeErrors) {
  Tensor empty;
  std::ostringstream out;
  EXPECT_TRUE(ThrowsKilnError([&] { empty.Serialize(out); }));
  Tensor t = Tensor::FromValue(std::vector<float>{1});
  Tensor copy = t;
  t.FinalizeAll();
  EXPECT_TRUE(ThrowsKilnError([&] { copy.Serialize(out); }));
  // A stream that fails.
  Tensor u = Tensor::FromValue(std::vector<float>{1, 2});
  std::ostringstream bad;
  bad.setstate(std::ios::badbit);
  EXPECT_TRUE(ThrowsKilnError([&] { u.Serialize(bad); }));
}

std::vector<std::string> SmallSerializedTensors() {
  return {Serialized(Tensor::FromValue(std::vector<std::vector<int16_t>>{{1, -2, 3}, {400, 5, -600}})),
          Serialized(Tensor::FromScalar(1.5f)),
          Serialized(Tensor::FromBytes(Shape(DType::Int4, {3}), std::vector<uint8_t>{0x21, 0x08})),
          Serialized(Tensor::FromShape(Shape(DType::Float64, {2, 0})))};
}

TEST(TensorSerializeTest, EveryTruncationIsAnError) {
  for (const std::string& s : SmallSerializedTensors()) {
    ASSERT_NO_THROW(Deserialized(s));
    for (size_t n = 0; n < s.size(); ++n) {
      SCOPED_TRACE("truncated to " + std::to_string(n) + " of " + std::to_string(s.size()) + " bytes");
      EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(s.substr(0, n)); }));
    }
  }
}

TEST(TensorSerializeTest, EveryFlippedByteIsAnError) {
  for (const std::string& s : SmallSerializedTensors()) {
    for (size_t i = 0; i < s.size(); ++i) {
      for (unsigned mask : {0x01u, 0x10u, 0x80u, 0xFFu}) {
        SCOPED_TRACE("byte " + std::to_string(i) + " of " + std::to_string(s.size()) + " xor " +
                     std::to_string(mask));
        std::string bad = s;
        bad[i] = static_cast<char>(static_cast<unsigned char>(bad[i]) ^ mask);
        EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(bad); }));
      }
    }
  }
}

TEST(TensorSerializeTest, HugeHeaderFailsFast) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t big = int64_t{1} << 40;
  const int64_t mid = int64_t{1} << 20;
  // Float32 [2^40, 2^20]: 4 * 2^60 bytes claimed, a few present.
  EXPECT_TRUE(ThrowsKilnError([&] {
    Deserialized(Build(11, {big, mid}, uint64_t{4} << 60, "abcdefgh", false));
  }));
  EXPECT_TRUE(ThrowsKilnError([&] {
    Deserialized(Build(11, {big, mid}, uint64_t{4} << 60, "abcdefgh", true));
  }));
  // Int8 [2^40, 2^20]: a size that fits int64 exactly.
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(2, {big, mid}, uint64_t{1} << 60, "abcdefgh")); }));
  // Float64 [2^40, 2^20]: bytes overflow int64.
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(12, {big, mid}, 0, "")); }));
  // Element count overflowing int64.
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(2, {big, big}, 0, "")); }));
  EXPECT_TRUE(ThrowsKilnError([&] {
    Deserialized(Build(2, {std::numeric_limits<int64_t>::max(), 2}, 0, ""));
  }));
  // A data size lying about a small shape.
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(2, {4}, uint64_t{1} << 62, "abcd")); }));
  // Same, through the device path.
  compute::BackendPtr backend = compute::NewWithConfig("ref:shared=false");
  EXPECT_TRUE(ThrowsKilnError([&] {
    std::istringstream in(Build(2, {big, mid}, uint64_t{1} << 60, "abcdefgh"));
    Tensor::Deserialize(in, backend, 0);
  }));
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0);
}

TEST(TensorSerializeTest, BadHeaderFields) {
  std::string data;
  Put<int16_t>(data, 1);
  Put<int16_t>(data, 2);
  ASSERT_NO_THROW(Deserialized(Build(3, {2}, 4, data)));
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(3, {2}, 4, data, true, 1, "KILNTNSX")); }, {"magic"}));
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(3, {2}, 4, data, true, 1, "kilntnsr")); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(3, {2}, 4, data, true, 2)); }, {"version"}));
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(3, {2}, 4, data, true, 0)); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(3, {2}, 4, data, true, 0x01000000)); }));
  for (uint8_t code : {uint8_t{0}, uint8_t{22}, uint8_t{23}, uint8_t{200}, uint8_t{255}}) {
    SCOPED_TRACE(static_cast<int>(code));
    EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(code, {4}, 4, "abcd")); }, {"dtype"}));
  }
  // Rank above 64, with dimensions present or not.
  EXPECT_TRUE(
      ThrowsKilnError([&] { Deserialized(Build(2, std::vector<int64_t>(65, 1), 1, "a")); }, {"rank"}));
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(2, {}, 1, "a", true, 1, "KILNTNSR", 0xFFFFFFFF)); }));
  // Negative dimension.
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(2, {-1}, 0, "")); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(2, {-1, -1}, 1, "a")); }));
  // Data size not matching the shape.
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(3, {2}, 3, data.substr(0, 3))); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(3, {2}, 5, data + "x")); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(Build(14, {3}, 1, "a")); }));  // Int4[3] takes 2 bytes.
  // Wrong checksum.
  std::string s = Build(3, {2}, 4, data);
  s.back() = static_cast<char>(s.back() ^ 1);
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(s); }, {"checksum"}));
  EXPECT_TRUE(ThrowsKilnError([&] { Deserialized(""); }));
}

TEST(TensorSerializeTest, DeserializeOntoSharedDevice) {
  compute::BackendPtr backend = compute::NewWithConfig("ref");
  Tensor t = Tensor::FromValue(std::vector<std::vector<int32_t>>{{1, 2}, {3, 4}});
  std::istringstream in(Serialized(t));
  Tensor d = Tensor::Deserialize(in, backend, 0);
  EXPECT_TRUE(d.Ok());
  EXPECT_TRUE(d.IsShared());
  EXPECT_TRUE(d.HasLocal());
  EXPECT_TRUE(d.IsOnDevice(backend, 0));
  EXPECT_EQ(backend->MemoryStats().live_bytes, 16);
  EXPECT_EQ(backend->MemoryStats().live_buffers, 1);
  EXPECT_EQ(d.shape(), t.shape());
  EXPECT_TRUE(d.Equal(t));
  // The device buffer holds the data (no extra buffer is made).
  compute::BufferPtr buffer = d.DeviceBuffer(backend, 0);
  std::vector<int32_t> raw(4);
  backend->BufferToHost(*buffer, raw.data());
  EXPECT_EQ(raw, (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(backend->MemoryStats().live_buffers, 1);
}

TEST(TensorSerializeTest, DeserializeOntoDiscreteDevice) {
  compute::BackendPtr backend = compute::NewWithConfig("ref:shared=false");
  Tensor t = Tensor::FromValue(std::vector<double>{1.25, -2, 1e300});
  std::istringstream in(Serialized(t));
  Tensor d = Tensor::Deserialize(in, backend, 0);
  EXPECT_TRUE(d.Ok());
  EXPECT_FALSE(d.IsShared());
  EXPECT_FALSE(d.HasLocal());
  EXPECT_TRUE(d.IsOnDevice(backend, 0));
  EXPECT_EQ(backend->MemoryStats().live_bytes, 24);
  compute::BufferPtr buffer = d.DeviceBuffer(backend, 0);
  std::vector<double> raw(3);
  backend->BufferToHost(*buffer, raw.data());
  EXPECT_EQ(raw, (std::vector<double>{1.25, -2, 1e300}));
  buffer.reset();
  EXPECT_EQ(d.ToVector<double>(), (std::vector<double>{1.25, -2, 1e300}));
  EXPECT_TRUE(d.HasLocal());
  EXPECT_TRUE(d.IsOnDevice(backend, 0));  // Reading leaves the device copy valid.
}

TEST(TensorSerializeTest, DeserializeOntoDeviceErrors) {
  for (const char* config : {"ref", "ref:shared=false"}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    const std::string s = Serialized(Tensor::FromValue(std::vector<float>{1, 2}));
    for (int device : {-1, 1}) {
      std::istringstream in(s);
      EXPECT_TRUE(ThrowsKilnError([&] { Tensor::Deserialize(in, backend, device); }, {"ref"}));
    }
    std::istringstream in(s);
    EXPECT_TRUE(ThrowsKilnError([&] { Tensor::Deserialize(in, nullptr, 0); }));
    // Corrupt input leaves no buffer behind.
    std::istringstream truncated(s.substr(0, s.size() - 1));
    EXPECT_TRUE(ThrowsKilnError([&] { Tensor::Deserialize(truncated, backend, 0); }));
    EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
    EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
  }
}

}  // namespace
}  // namespace kiln
