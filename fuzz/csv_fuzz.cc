// libFuzzer target for the CSV reader: the records, then the first column read as floats, as
// integers and as categories.

#include "fuzz_util.h"
#include "kiln/data/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kiln::fuzz::WriteScratch(data, size, ".csv");
  kiln::fuzz::Refused([&] {
    const kiln::data::CsvRecords records = kiln::data::ReadCsvRecords(path);
    if (records.header.empty()) return;
    const std::string& name = records.header.front();
    kiln::fuzz::Refused([&] { kiln::data::ReadCsv(path, {{name, kiln::DType::Float32}}); });
    kiln::fuzz::Refused([&] { kiln::data::ReadCsv(path, {{name, kiln::DType::Int64}}); });
    kiln::fuzz::Refused([&] { kiln::data::ReadCsv(path, {{name, kiln::DType::Int32, true}}); });
  });
  return 0;
}
