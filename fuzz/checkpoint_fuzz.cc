// libFuzzer target for the checkpoint loader: a folder holding a real checkpoint (the weights of
// a small store, saved once) whose JSON commit record is replaced by the input; loading it into
// a fresh store either succeeds or raises a kiln::Error.

#include <filesystem>
#include <fstream>

#include "fuzz_util.h"
#include "kiln/kiln.h"
#include "kiln/model/checkpoint.h"

namespace {

/// The folder and the record's path, made on the first call.
const std::string& RecordPath() {
  static const std::string record = [] {
    const std::string dir = "/tmp/kiln_fuzz_ckpt_" + std::to_string(getpid());
    std::filesystem::remove_all(dir);
    kiln::model::Store store;
    store.RootScope().In("dense").VariableWithValue(
        "weights",
        kiln::Tensor::FromFlat(kiln::Shape(kiln::DType::Float32, {2, 2}), std::vector<float>{1, 2, 3, 4}));
    store.SetParam("steps", 10);
    kiln::checkpoint::Handler h = kiln::checkpoint::Build(store).Dir(dir).Done();
    return (std::filesystem::path(dir) / (h.Save() + ".json")).string();
  }();
  return record;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& record = RecordPath();
  std::ofstream(record, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  kiln::fuzz::Refused([&] {
    kiln::model::Store store;
    kiln::checkpoint::Build(store).Dir(std::filesystem::path(record).parent_path().string()).Done();
  });
  return 0;
}
