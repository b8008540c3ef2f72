// Tests for safetensors files (io/safetensors.h): round trips of every dtype (packed ones through
// the metadata), files read by an independent Python reader written from the format's
// specification, and hostile or damaged files rejected with the file and tensor named.

#include "kiln/io/safetensors.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
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

/// A file: 8-byte little-endian header size, `header`, then `data`.
void WriteRaw(const std::string& path, const std::string& header, const std::string& data,
              int64_t claimed = -1) {
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = claimed >= 0 ? static_cast<uint64_t>(claimed) : header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xFF));
  out << header << data;
}

Tensor Pattern(DType dtype, std::vector<int64_t> dims) {
  Tensor t = Tensor::FromShape(Shape(dtype, dims));
  t.MutableBytes([](std::span<uint8_t> b) {
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 37 + 11);
  });
  if (dtype == DType::Bool) {
    t.MutableBytes([](std::span<uint8_t> b) {
      for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i % 3 == 0);
    });
  }
  return t;
}

TEST(Safetensors, RoundTripsEveryDType) {
  TempDir dir;
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (DType d : kAllDTypes)
    tensors.emplace_back(std::string("t_") + std::string(DTypeName(d)), Pattern(d, {3, 4}));
  tensors.emplace_back("scalar", Tensor::FromScalar<float>(2.5f));
  tensors.emplace_back("empty", Tensor::FromShape(Shape(DType::Float32, {0, 3})));
  const int64_t size =
      io::WriteSafetensors(dir / "a.safetensors", tensors, {{"format", "pt"}, {"step", "7"}});
  EXPECT_EQ(size, static_cast<int64_t>(fs::file_size(dir / "a.safetensors")));
  io::SafetensorsFile f = io::ReadSafetensors(dir / "a.safetensors");
  ASSERT_EQ(f.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(f.tensors[i].first, tensors[i].first);
    EXPECT_EQ(f.tensors[i].second.shape(), tensors[i].second.shape()) << tensors[i].first;
    EXPECT_TRUE(f.tensors[i].second.Equal(tensors[i].second)) << tensors[i].first;
  }
  EXPECT_EQ(f.metadata.at("format"), "pt");
  EXPECT_EQ(f.metadata.at("step"), "7");
  EXPECT_EQ(f.metadata.at("kiln.dtype.t_Int4"), "Int4");
  // Complex numbers are stored as their parts (PyTorch's view_as_real), the dtype in the metadata.
  EXPECT_EQ(f.metadata.at("kiln.dtype.t_Complex64"), "Complex64");
  EXPECT_EQ(f.Find("t_Complex128").dtype(), DType::Complex128);
  EXPECT_TRUE(f.Find("scalar").Ok());
  EXPECT_FALSE(f.Find("nothing").Ok());
}

TEST(Safetensors, AnIndependentReaderReadsKilnFiles) {
  TempDir dir;
  io::WriteSafetensors(dir / "m.safetensors",
                       {{"w", Tensor::FromValue(std::vector<std::vector<float>>{{1, 2, 3}, {4, 5, 6}})},
                        {"n", Tensor::FromValue(std::vector<int64_t>{-1, 7})},
                        {"h", Tensor::FromValue(std::vector<bfloat16>{bfloat16(1.5f), bfloat16(-2.0f)})}});
  // A reader written from the specification: little-endian u64 header size, JSON header, data.
  const std::string script = R"PY(
import json, struct, sys
import numpy as np
data = open('m.safetensors', 'rb').read()
(n,) = struct.unpack('<Q', data[:8])
header = json.loads(data[8:8 + n])
body = data[8 + n:]
def get(name, dtype):
    e = header[name]
    b, end = e['data_offsets']
    return np.frombuffer(body[b:end], dtype=dtype).reshape(e['shape'])
assert n % 8 == 0
assert header['w']['dtype'] == 'F32' and header['n']['dtype'] == 'I64' and header['h']['dtype'] == 'BF16'
assert get('w', '<f4').tolist() == [[1, 2, 3], [4, 5, 6]]
assert get('n', '<i8').tolist() == [-1, 7]
bf = get('h', '<u2').astype(np.uint32) << 16
assert bf.view(np.float32).tolist() == [1.5, -2.0]
print('ok')
)PY";
  std::ofstream(dir / "read.py") << script;
  const std::string cmd = "cd '" + dir.path().string() + "' && /usr/bin/python3 read.py > out.txt 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream out(dir / "out.txt");
  std::string text((std::istreambuf_iterator<char>(out)), {});
  EXPECT_EQ(text, "ok\n");
}

TEST(Safetensors, ReadsFilesWrittenFromTheSpecification) {
  TempDir dir;
  // Two float32 values and an int16 scalar, with metadata and header padding spaces.
  std::string data(4 * 2 + 2, '\0');
  const float v[2] = {0.5f, -4.0f};
  std::memcpy(data.data(), v, 8);
  const int16_t s = -300;
  std::memcpy(data.data() + 8, &s, 2);
  WriteRaw(dir / "s.safetensors",
           R"({"__metadata__":{"k":"v"},"b":{"dtype":"I16","shape":[],"data_offsets":[8,10]},)"
           R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}   )",
           data);
  io::SafetensorsFile f = io::ReadSafetensors(dir / "s.safetensors");
  EXPECT_EQ(f.Find("a").ToVector<float>(), (std::vector<float>{0.5f, -4.0f}));
  EXPECT_EQ(f.Find("b").Item<int16_t>(), -300);
  EXPECT_EQ(f.metadata.at("k"), "v");
}

TEST(Safetensors, HostileAndDamagedFilesAreRejected) {
  TempDir dir;
  const std::string p = dir / "bad.safetensors";
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  auto rejects = [&](const std::vector<std::string>& parts) {
    return Throws([&] { io::ReadSafetensors(p); }, parts);
  };
  WriteRaw(p, "", "", 0);
  std::filesystem::resize_file(p, 5);
  EXPECT_TRUE(rejects({p, "truncated"}));
  WriteRaw(p, "{" + ok_entry + "}", std::string(8, '\0'), 1 << 30);
  EXPECT_TRUE(rejects({p, "header size"}));
  WriteRaw(p, "{" + ok_entry + "}", std::string(4, '\0'));
  EXPECT_TRUE(rejects({p, "\"a\"", "out of the data section"}));
  WriteRaw(p, R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0'));
  EXPECT_TRUE(rejects({p, "\"a\"", "needs 12 bytes"}));
  WriteRaw(
      p,
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
      std::string(8, '\0'));
  EXPECT_TRUE(rejects({p, "\"b\"", "overlaps"}));
  WriteRaw(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0'));
  EXPECT_TRUE(rejects({p, "belong to no tensor"}));
  WriteRaw(p, R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0'));
  EXPECT_TRUE(rejects({p, "\"a\"", "C64"}));
  WriteRaw(p, R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,8]}})",
           std::string(8, '\0'));
  EXPECT_TRUE(rejects({p, "\"a\"", "absurd"}));
  WriteRaw(p, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", std::string(8, '\0'));
  EXPECT_TRUE(rejects({p, "invalid JSON"}));
  WriteRaw(p, R"({"a":{"dtype":"F32","shape":[2]}})", std::string(8, '\0'));
  EXPECT_TRUE(rejects({p, "\"a\"", "data_offsets"}));
  EXPECT_TRUE(Throws([&] { io::ReadSafetensors(dir / "missing.safetensors"); }, {"cannot read"}));
  EXPECT_TRUE(Throws([&] { io::WriteSafetensors(dir / "x", {{"a", Tensor()}}); }, {"\"a\"", "not Ok"}));
  EXPECT_TRUE(Throws(
      [&] {
        io::WriteSafetensors(dir / "x",
                             {{"a", Tensor::FromScalar<float>(1)}, {"a", Tensor::FromScalar<float>(2)}});
      },
      {"\"a\" repeated"}));
}

TEST(Safetensors, Crc32cKnownValues) {
  const std::string s = "123456789";
  EXPECT_EQ(io::Crc32c({reinterpret_cast<const uint8_t*>(s.data()), s.size()}), 0xE3069283u);
  EXPECT_EQ(io::Crc32c({}), 0u);
  // Incremental equals one pass.
  const uint32_t a = io::Crc32c({reinterpret_cast<const uint8_t*>(s.data()), 4});
  EXPECT_EQ(io::Crc32c({reinterpret_cast<const uint8_t*>(s.data()) + 4, 5}, a), 0xE3069283u);
}

}  // namespace
