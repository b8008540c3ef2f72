// Hostile input gets a clear kiln::Error: paths that are not regular files, headers that claim
// more data than their file can hold, sizes that overflow int64, numbers out of range, and an
// Exec called from inside its own graph function. Each case is a class of failure fixed at its
// root (the one file-opening helper, the checked arithmetic of the shape rules, the checked
// integer parser, the Exec's state lock); the inputs are made here.

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "kiln/data/csv.h"
#include "kiln/data/mnist.h"
#include "kiln/io/gguf.h"
#include "kiln/io/image.h"
#include "kiln/io/safetensors.h"
#include "kiln/kiln.h"
#include "kiln/model/checkpoint.h"
#include "test_util.h"

namespace {

using kiln::test::TempDir;
using kiln::test::Throws;
namespace fs = std::filesystem;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Every reader of a file kiln takes from outside, by name.
std::vector<std::pair<std::string, std::function<void(const std::string&)>>> Readers() {
  return {
      {"ReadNpy", [](const std::string& p) { kiln::io::ReadNpy(p); }},
      {"ReadNpz", [](const std::string& p) { kiln::io::ReadNpz(p); }},
      {"ReadSafetensors", [](const std::string& p) { kiln::io::ReadSafetensors(p); }},
      {"ReadGguf", [](const std::string& p) { kiln::io::ReadGguf(p); }},
      {"ReadImage", [](const std::string& p) { kiln::io::ReadImage(p); }},
      {"ReadIdx", [](const std::string& p) { kiln::data::ReadIdx(p); }},
      {"CSV", [](const std::string& p) { kiln::data::ReadCsvRecords(p); }},
  };
}

TEST(BadInput, ReadersRefuseDirectoriesSymlinkLoopsAndMissingFiles) {
  TempDir dir;
  const std::string folder = dir / "folder";
  fs::create_directory(folder);
  const std::string loop = dir / "loop";
  fs::create_symlink(loop, loop);
  for (const auto& [name, read] : Readers()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(Throws([&] { read(folder); }, {name, folder, "directory"}));
    EXPECT_TRUE(Throws([&] { read(loop); }, {name, loop}));
    EXPECT_TRUE(Throws([&] { read(dir / "missing"); }, {name, dir / "missing"}));
  }
}

TEST(BadInput, CheckpointFolderWithADirectoryOrAnAbsurdNumberForAName) {
  TempDir dir;
  kiln::model::Store store;
  // A record that is a directory.
  fs::create_directory(dir / "checkpoint-n0000001-step-00000001.json");
  EXPECT_TRUE(Throws([&] { kiln::checkpoint::Build(store).Dir(dir.str()).Done(); }, {"directory"}));
  fs::remove(dir / "checkpoint-n0000001-step-00000001.json");
  // A sequence number beyond int64.
  WriteBytes(dir / "checkpoint-n99999999999999999999-step-00000001.json", "{}");
  EXPECT_TRUE(Throws([&] { kiln::checkpoint::Build(store).Dir(dir.str()).Done(); },
                     {"99999999999999999999", "does not fit in int64"}));
}

/// An IDX header: Uint8 with the given dimensions.
std::string IdxHeader(const std::vector<uint32_t>& dims) {
  std::string h = {0, 0, 8, static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) h += static_cast<char>((d >> s) & 0xFF);
  return h;
}

void WriteGzip(const std::string& path, const std::string& head, int64_t zeros) {
  gzFile f = gzopen(path.c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  gzwrite(f, head.data(), static_cast<unsigned>(head.size()));
  const std::string block(1 << 20, '\0');
  for (int64_t left = zeros; left > 0; left -= static_cast<int64_t>(block.size()))
    gzwrite(f, block.data(),
            static_cast<unsigned>(std::min<int64_t>(left, static_cast<int64_t>(block.size()))));
  gzclose(f);
}

TEST(BadInput, IdxHeadersAreCheckedAgainstTheFileBeforeAllocating) {
  TempDir dir;
  // 2^48 bytes claimed by a file of 36.
  WriteBytes(dir / "huge.idx", IdxHeader({65536, 65536, 65536}) + std::string(20, '\1'));
  EXPECT_TRUE(Throws([&] { kiln::data::ReadIdx(dir / "huge.idx"); }, {"huge.idx", "cannot hold"}));
  // Compressed: 4 bytes claimed, 64 MiB of zeros follow; read no further than one byte past.
  WriteGzip(dir / "long.idx.gz", IdxHeader({4}), 64 << 20);
  EXPECT_TRUE(Throws([&] { kiln::data::ReadIdx(dir / "long.idx.gz"); }, {"long.idx.gz", "continues after"}));
  // Compressed: 16 MiB claimed by 1 KiB of zeros (1 MiB inflated), beyond deflate's ratio.
  WriteGzip(dir / "short.idx.gz", IdxHeader({4096, 4096}), 1 << 20);
  EXPECT_TRUE(Throws([&] { kiln::data::ReadIdx(dir / "short.idx.gz"); }, {"short.idx.gz", "cannot hold"}));
  // Plain and truncated: 1 MiB present of the 16 MiB claimed.
  WriteBytes(dir / "short.idx", IdxHeader({4096, 4096}) + std::string(1 << 20, '\1'));
  EXPECT_TRUE(Throws([&] { kiln::data::ReadIdx(dir / "short.idx"); }, {"short.idx", "1048576 data bytes"}));
  // A valid one still reads.
  WriteGzip(dir / "ok.idx.gz", IdxHeader({2, 3}), 6);
  EXPECT_EQ(kiln::data::ReadIdx(dir / "ok.idx.gz").shape(), kiln::Shape(kiln::DType::Uint8, {2, 3}));
}

void Put32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + static_cast<size_t>(i)] = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
}

TEST(BadInput, ImagesDeclaringHugeFramesInSmallFilesAreRefused) {
  TempDir dir;
  const kiln::Tensor image =
      kiln::Tensor::FromFlat(kiln::Shape(kiln::DType::Uint8, {4, 4, 1}), std::vector<uint8_t>(16, 100));
  // PNG: IHDR's width and height (bytes 16-23) made 65536 x 65536, its CRC recomputed.
  kiln::io::WriteImage(dir / "a.png", image);
  std::string png = ReadBytes(dir / "a.png");
  Put32(png, 16, 65536);
  Put32(png, 20, 65536);
  Put32(png, 29, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17)));
  WriteBytes(dir / "big.png", png);
  EXPECT_TRUE(
      Throws([&] { kiln::io::ReadImage(dir / "big.png"); }, {"big.png", "cannot hold", "65536x65536"}));
  // JPEG: the frame header's height and width (after FFC0, length and precision) made 60000
  // (libjpeg's own limit is 65500).
  kiln::io::WriteImage(dir / "a.jpg", image);
  std::string jpg = ReadBytes(dir / "a.jpg");
  const size_t sof = jpg.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  for (size_t i : {sof + 5, sof + 7}) {
    jpg[i] = '\xEA';
    jpg[i + 1] = '\x60';
  }
  WriteBytes(dir / "big.jpg", jpg);
  EXPECT_TRUE(
      Throws([&] { kiln::io::ReadImage(dir / "big.jpg"); }, {"big.jpg", "cannot hold", "60000x60000"}));
  // The originals still read.
  EXPECT_EQ(kiln::io::ReadImage(dir / "a.png").shape(), image.shape());
  EXPECT_EQ(kiln::io::ReadImage(dir / "a.jpg").shape(), image.shape());
}

/// A PNG from its IHDR fields and raw rows (each row's filter byte first), chunks CRC'd.
std::string Png(uint32_t w, uint32_t h, int depth, int type, int interlace, const std::string& rows) {
  auto chunk = [](const std::string& type_name, const std::string& data) {
    std::string c(4, '\0');
    Put32(c, 0, static_cast<uint32_t>(data.size()));
    std::string body = type_name + data;
    c += body;
    std::string crc(4, '\0');
    Put32(crc, 0,
          static_cast<uint32_t>(
              crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
    return c + crc;
  };
  std::string ihdr(13, '\0');
  Put32(ihdr, 0, w);
  Put32(ihdr, 4, h);
  ihdr[8] = static_cast<char>(depth);
  ihdr[9] = static_cast<char>(type);
  ihdr[12] = static_cast<char>(interlace);
  uLongf zsize = compressBound(static_cast<uLong>(rows.size()));
  std::string z(zsize, '\0');
  compress(reinterpret_cast<Bytef*>(z.data()), &zsize, reinterpret_cast<const Bytef*>(rows.data()),
           static_cast<uLong>(rows.size()));
  z.resize(zsize);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", "");
}

TEST(BadInput, DamagedPngsAreErrors) {
  TempDir dir;
  const std::string rows = std::string("\0\1\2", 3) + std::string("\1\3\4", 3);  // 2x2 gray, filters 0 and 1.
  auto read = [&](const std::string& png) {
    WriteBytes(dir / "p.png", png);
    return kiln::io::ReadImage(dir / "p.png");
  };
  EXPECT_EQ(read(Png(2, 2, 8, 0, 0, rows)).ToVector<uint8_t>(), (std::vector<uint8_t>{1, 2, 3, 7}));
  EXPECT_TRUE(Throws([&] { read(Png(2, 2, 8, 0, 1, rows)); }, {"p.png", "interlaced"}));
  EXPECT_TRUE(Throws([&] { read(Png(2, 2, 4, 0, 0, rows)); }, {"p.png", "bit depth 4"}));
  EXPECT_TRUE(Throws([&] { read(Png(2, 2, 8, 5, 0, rows)); }, {"p.png", "colour type 5"}));
  EXPECT_TRUE(Throws([&] { read(Png(0, 2, 8, 0, 0, rows)); }, {"p.png", "size 0x2"}));
  EXPECT_TRUE(
      Throws([&] { read(Png(2, 2, 8, 0, 0, std::string("\7\1\2\0\3\4", 6))); }, {"p.png", "bad filter 7"}));
  EXPECT_TRUE(Throws([&] { read(Png(2, 3, 8, 0, 0, rows)); }, {"p.png", "damaged image data"}));
  std::string overrun = Png(2, 2, 8, 0, 0, rows);
  Put32(overrun, 33, 1u << 30);  // IDAT's length.
  EXPECT_TRUE(Throws([&] { read(overrun); }, {"p.png", "overruns the file"}));
  std::string cut = Png(2, 2, 8, 0, 0, rows);
  EXPECT_TRUE(Throws([&] { read(cut.substr(0, cut.size() - 12)); }, {"p.png", "truncated"}));
}

TEST(BadInput, BackendOptionsOutOfRangeAreErrors) {
  EXPECT_TRUE(Throws([] { kiln::compute::NewWithConfig("cpu:threads=99999999999"); },
                     {"threads=99999999999", "out of range"}));
  EXPECT_TRUE(
      Throws([] { kiln::compute::NewWithConfig("cpu:threads=99999999999999999999"); }, {"out of range"}));
  EXPECT_TRUE(
      Throws([] { kiln::compute::NewWithConfig("cpu:threads=+-2"); }, {"threads=+-2", "not an integer"}));
  EXPECT_TRUE(Throws([] { kiln::compute::NewWithConfig("cpu:threads= 2"); }, {"not an integer"}));
}

TEST(BadInput, ShapeRulesRefuseSizesBeyondInt64) {
  using kiln::graph::Node;
  kiln::graph::Graph g("overflow");
  const Node x = g.Parameter(kiln::Shape(kiln::DType::Float32, {3}));
  const Node zero = kiln::graph::Scalar(g, kiln::DType::Float32, 0.0f);
  EXPECT_TRUE(Throws(
      [&] {
        kiln::graph::Pad(x, zero, {{0, 0, kMax / 2}});
      },
      {"Pad", "does not fit in int64"}));
  EXPECT_TRUE(Throws([&] { kiln::graph::Pad(x, zero, {{kMax, 1, 0}}); }, {"Pad", "does not fit in int64"}));
  EXPECT_TRUE(Throws([&] { kiln::graph::Pad(x, zero, {{kMax / 2, kMax / 2, 1}}); }, {"Pad"}));
  EXPECT_TRUE(
      Throws([&] { kiln::graph::ReduceWindow(x, kiln::compute::ReduceKind::Sum, {3}, {}, {}, {kMax}); },
             {"ReduceWindow", "does not fit in int64"}));
  EXPECT_TRUE(
      Throws([&] { kiln::graph::ReduceWindow(x, kiln::compute::ReduceKind::Sum, {1}, {}, {}, {}, {kMax}); },
             {"ReduceWindow", "does not fit in int64"}));
  // Sizes whose elements fit but whose bytes do not.
  EXPECT_TRUE(Throws([&] { g.Parameter(kiln::Shape(kiln::DType::Float64, {int64_t{1} << 61})); },
                     {"more bytes than int64 holds"}));
  const Node big = g.Parameter(kiln::Shape(kiln::DType::Int8, {int64_t{1} << 62}));
  EXPECT_TRUE(Throws(
      [&] {
        kiln::graph::Concatenate({big, big}, 0);
      },
      {"Concatenate", "does not fit in int64"}));
}

TEST(BadInput, PackedByteSizesStayExact) {
  EXPECT_EQ(kiln::Shape(kiln::DType::Int4, {kMax}).ByteSize(), kMax / 2 + 1);
  EXPECT_EQ(kiln::Shape(kiln::DType::Int4, {7}).ByteSize(), 4);
  EXPECT_EQ(kiln::DTypeByteSize(kiln::DType::Uint2, kMax), kMax / 4 + 1);
  EXPECT_TRUE(Throws([&] { kiln::Shape(kiln::DType::Float64, {int64_t{1} << 61}).ByteSize(); }, {"int64"}));
  EXPECT_TRUE(Throws([&] { kiln::DTypeByteSize(kiln::DType::Int4, -1); }, {"negative"}));
}

TEST(BadInput, AllocationsBeyondMemoryAreErrors) {
  // 2^50 bytes: more than any machine here has; a kiln::Error, not std::bad_alloc.
  EXPECT_TRUE(Throws([] { kiln::Tensor::FromShape(kiln::Shape(kiln::DType::Float32, {int64_t{1} << 48})); },
                     {"cannot allocate"}));
  for (const char* backend : {"ref", "cpu"}) {
    SCOPED_TRACE(backend);
    EXPECT_TRUE(Throws(
        [&] {
          kiln::Tensor::FromShapeForBackend(kiln::test::Backend(backend), 0,
                                            kiln::Shape(kiln::DType::Float32, {int64_t{1} << 48}));
        },
        {"cannot allocate"}));
  }
}

TEST(BadInput, SettingsOutOfRangeAreErrors) {
  kiln::model::Store store;
  EXPECT_TRUE(Throws([&] { kiln::model::ParseSettings(store, "steps=99999999999999999999"); },
                     {"steps=99999999999999999999", "does not fit in int64"}));
  EXPECT_TRUE(Throws([&] { kiln::model::ParseSettings(store, "lr=1e999"); }, {"lr=1e999", "range"}));
  kiln::model::ParseSettings(store, "steps=5000000000;scale=1e300;neg=-1;list=[1,2]");
  EXPECT_EQ(kiln::model::GetRootParamOr(store, "steps", int64_t{0}), 5000000000);
  EXPECT_TRUE(
      Throws([&] { kiln::model::GetRootParamOr(store, "steps", 0); }, {"steps", "5000000000", "outside"}));
  EXPECT_TRUE(
      Throws([&] { kiln::model::GetRootParamOr(store, "neg", uint32_t{0}); }, {"neg", "-1", "outside"}));
  EXPECT_TRUE(Throws([&] { kiln::model::GetRootParamOr(store, "scale", 0.0f); }, {"scale", "outside"}));
  EXPECT_EQ(kiln::model::GetRootParamOr(store, "scale", 0.0), 1e300);
  EXPECT_EQ(kiln::model::GetRootParamOr(store, "neg", 0), -1);
  // "+5" is 5; "+-5" and "++5" are not numbers (strings).
  kiln::model::ParseSettings(store, "a=+5;b=+-5;c=++5");
  EXPECT_EQ(kiln::model::GetRootParamOr(store, "a", 0), 5);
  EXPECT_EQ(kiln::model::GetRootParamOr(store, "b", std::string()), "+-5");
  EXPECT_EQ(kiln::model::GetRootParamOr(store, "c", std::string()), "++5");
}

TEST(BadInput, CsvSignsAreReadOnce) {
  TempDir dir;
  WriteBytes(dir / "a.csv", "n\n+5\n-5\n");
  EXPECT_EQ(kiln::data::ReadCsv(dir / "a.csv", {{"n", kiln::DType::Int32}})[0].ToVector<int32_t>(),
            (std::vector<int32_t>{5, -5}));
  for (const char* bad : {"+-5", "++5", "-+5", "+"}) {
    SCOPED_TRACE(bad);
    WriteBytes(dir / "b.csv", std::string("n\n") + bad + "\n");
    EXPECT_TRUE(Throws(
        [&] {
          kiln::data::ReadCsv(dir / "b.csv", {{"n", kiln::DType::Int32}});
        },
        {"b.csv", bad}));
    EXPECT_TRUE(Throws(
        [&] {
          kiln::data::ReadCsv(dir / "b.csv", {{"n", kiln::DType::Float32}});
        },
        {"b.csv"}));
  }
}

TEST(BadInput, ExecCalledFromItsOwnGraphFunctionIsAnError) {
  const kiln::compute::BackendPtr backend = kiln::test::Backend("ref");
  kiln::graph::Exec* self = nullptr;
  kiln::graph::Exec exec = kiln::graph::NewExec(backend, [&](kiln::graph::Node x) {
    self->Call(kiln::Tensor::FromValue(1.0f));
    return x;
  });
  self = &exec;
  EXPECT_TRUE(
      Throws([&] { exec.Call(kiln::Tensor::FromValue(2.0f)); }, {"exec", "inside its own graph function"}));
  // The Exec is usable afterwards (nothing was left locked).
  EXPECT_GE(exec.NumBuilds(), 1);

  kiln::model::Store store;
  kiln::model::Exec* model_self = nullptr;
  kiln::model::Exec model_exec =
      kiln::model::NewExec(backend, store, [&](kiln::model::Scope, kiln::graph::Node x) {
        model_self->Call(kiln::Tensor::FromValue(1.0f));
        return x;
      });
  model_self = &model_exec;
  EXPECT_TRUE(Throws([&] { model_exec.Call(kiln::Tensor::FromValue(2.0f)); },
                     {"model exec", "inside its own graph function"}));
  EXPECT_GE(model_exec.NumBuilds(), 1);
}

}  // namespace
