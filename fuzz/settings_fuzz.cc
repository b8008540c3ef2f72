// libFuzzer target for the configuration strings: hyperparameter settings
// (model::ParseSettings, then every key read as an int, a float and a string) on the first line,
// a backend configuration for `ref` on the second.

#include "fuzz_util.h"
#include "kiln/compute/backend.h"
#include "kiln/model/store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const size_t nl = text.find('\n');
  const std::string settings = text.substr(0, nl);
  kiln::fuzz::Refused([&] {
    kiln::model::Store store;
    kiln::model::ParseSettings(store, settings);
    for (const auto& param : store.Params()) {
      const std::string& key = std::get<1>(param);
      const kiln::model::ParamValue& value = std::get<2>(param);
      kiln::fuzz::Refused([&] { kiln::model::detail::FromParam<int>(value, key); });
      kiln::fuzz::Refused([&] { kiln::model::detail::FromParam<float>(value, key); });
      kiln::fuzz::Refused([&] { kiln::model::detail::FromParam<std::vector<uint8_t>>(value, key); });
      kiln::fuzz::Refused([&] { kiln::model::detail::FromParam<std::string>(value, key); });
    }
  });
  if (nl != std::string::npos)
    kiln::fuzz::Refused([&] { kiln::compute::NewWithConfig("ref:" + text.substr(nl + 1)); });
  return 0;
}
