// The GGUF files kiln writes, read by an independent parser: npm's @huggingface/gguf, which
// `scripts/install-deps.sh --peers` installs into tools/npm (label `peers`: `ctest --preset peers`).

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "io/gguf_test_util.h"
#include "test_util.h"

namespace {

using namespace kiln;
using kiln::test::StdoutOf;

TEST(GgufPeer, AnIndependentParserReadsWhatKilnWrites) {
  const char* src = std::getenv("KILN_TEST_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (KILN_TEST_SOURCE_DIR)";
  const std::string modules = std::string(src) + "/tools/npm/node_modules";
  ASSERT_TRUE(std::filesystem::exists(modules + "/@huggingface/gguf"))
      << modules << "/@huggingface/gguf is missing: run scripts/install-deps.sh --peers";
  test::TempDir dir;
  const io::GgufFile f = test::EveryKind();
  io::WriteGguf(dir / "all.gguf", f);
  const std::string got = StdoutOf("NODE_PATH='" + modules + "' node '" + src +
                                   "/tests/io/gguf_peer_check.mjs' '" + (dir / "all.gguf") + "' 2>&1");
  std::string want =
      "kv version = 3\nkv tensor_count = \"8\"\nkv kv_count = \"14\"\n"
      "kv general.architecture = \"llama\"\nkv general.alignment = 64\nkv u8 = 200\nkv i8 = -100\n"
      "kv u16 = 60000\nkv i16 = -30000\nkv i32 = -7\nkv f32 = 0.5\nkv bool = true\n"
      "kv u64 = \"9223372036854775808\"\nkv i64 = \"-1099511627776\"\nkv f64 = 1e-300\n"
      "kv tokens = [\"<s>\",\"\",\"héllo\"]\nkv nested = [[1,2],[]]\n";
  int64_t offset = 0;
  for (const io::GgufTensor& t : f.tensors) {
    std::string shape;
    for (auto d = t.dims.rbegin(); d != t.dims.rend(); ++d)
      shape += (shape.empty() ? "" : ",") + std::to_string(*d);
    want += "tensor " + t.name + " type " + std::to_string(static_cast<int>(t.type)) + " shape " + shape +
            " offset " + std::to_string(offset) + "\n";
    offset = (offset + t.data.shape().ByteSize() + 63) / 64 * 64;
  }
  EXPECT_EQ(got, want);
}

}  // namespace
