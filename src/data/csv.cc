// CSV reading: an RFC 4180 parser over the whole file, then typed columns.

#include "kiln/data/csv.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/ranges.h>

#include "core/check.h"
#include "io/read_file.h"

namespace kiln::data {

namespace {

bool IsCrLf(const std::string& s, size_t i) { return s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n'; }

std::string Printable(char ch) {
  if (ch >= 32 && ch < 127) return std::string(1, ch);
  return fmt::format("\\x{:02x}", static_cast<unsigned char>(ch));
}

// The index of column `name` in the header; unknown or repeated names are errors.
size_t ColumnIndex(const CsvRecords& csv, const std::string& name) {
  auto it = std::find(csv.header.begin(), csv.header.end(), name);
  if (it == csv.header.end())
    kiln::detail::Throw("CSV {}: no column \"{}\" (the header has: {})", csv.path, name,
                        fmt::join(csv.header, ", "));
  if (std::find(it + 1, csv.header.end(), name) != csv.header.end())
    kiln::detail::Throw("CSV {}: column name \"{}\" appears more than once in the header", csv.path, name);
  return static_cast<size_t>(it - csv.header.begin());
}

std::string_view Trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  // from_chars takes no '+': one is dropped, unless a sign follows it ("+-5" is no number).
  if (v.size() >= 2 && v.front() == '+' && v[1] != '-' && v[1] != '+') v.remove_prefix(1);
  return v;
}

template <typename T>
bool ParseNumber(std::string_view v, T& out) {
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size();
}

// One column as a tensor (dtype)[n].
Tensor Column(const CsvRecords& csv, const CsvColumn& col, std::vector<std::string>* categories) {
  const size_t index = ColumnIndex(csv, col.name);
  const DType dt = col.dtype;
  if (dt != DType::Float32 && dt != DType::Float64 && dt != DType::Int32 && dt != DType::Int64)
    kiln::detail::Throw("CSV {}: column \"{}\": dtype {} (Float32, Float64, Int32 or Int64)", csv.path,
                        col.name, dt);
  if (col.categorical && dt != DType::Int32 && dt != DType::Int64)
    kiln::detail::Throw("CSV {}: categorical column \"{}\" needs Int32 or Int64 ids, not {}", csv.path,
                        col.name, dt);
  const size_t n = csv.rows.size();
  auto fail = [&](size_t r, std::string_view what) {
    kiln::detail::Throw("CSV {}: line {}, column \"{}\": {}", csv.path, csv.lines[r], col.name, what);
  };
  for (size_t r = 0; r < n; ++r)
    if (Trim(csv.rows[r][index]).empty()) fail(r, "missing value");
  const Shape shape(dt, {static_cast<int64_t>(n)});
  if (col.categorical) {
    std::map<std::string, int64_t> ids;
    for (const auto& row : csv.rows) ids.emplace(row[index], 0);
    int64_t next = 0;
    for (auto& [name, id] : ids) id = next++;
    if (dt == DType::Int32 && next > INT32_MAX) fail(0, "too many categories for Int32");
    if (categories)
      for (const auto& [name, id] : ids) categories->push_back(name);
    std::vector<int64_t> v(n);
    for (size_t r = 0; r < n; ++r) v[r] = ids.at(csv.rows[r][index]);
    if (dt == DType::Int64) return Tensor::FromFlat(shape, v);
    return Tensor::FromFlat(shape, std::vector<int32_t>(v.begin(), v.end()));
  }
  if (dt == DType::Float32 || dt == DType::Float64) {
    std::vector<double> v(n);
    for (size_t r = 0; r < n; ++r) {
      const std::string_view text = Trim(csv.rows[r][index]);
      if (!ParseNumber(text, v[r])) fail(r, fmt::format("\"{}\" is not a number", csv.rows[r][index]));
      if (dt == DType::Float32 && std::isfinite(v[r]) && std::fabs(v[r]) > FLT_MAX)
        fail(r, fmt::format("{} is out of the Float32 range", text));
    }
    if (dt == DType::Float64) return Tensor::FromFlat(shape, v);
    return Tensor::FromFlat(shape, std::vector<float>(v.begin(), v.end()));
  }
  std::vector<int64_t> v(n);
  for (size_t r = 0; r < n; ++r) {
    const std::string_view text = Trim(csv.rows[r][index]);
    if (!ParseNumber(text, v[r]) || (dt == DType::Int32 && (v[r] < INT32_MIN || v[r] > INT32_MAX)))
      fail(r, fmt::format("\"{}\" is not an {}", csv.rows[r][index], DTypeName(dt)));
  }
  if (dt == DType::Int64) return Tensor::FromFlat(shape, v);
  return Tensor::FromFlat(shape, std::vector<int32_t>(v.begin(), v.end()));
}

std::vector<Tensor> Columns(const CsvRecords& csv, const std::vector<CsvColumn>& columns,
                            std::vector<std::vector<std::string>>* categories) {
  std::vector<Tensor> out;
  if (categories) categories->assign(columns.size(), {});
  for (size_t i = 0; i < columns.size(); ++i)
    out.push_back(Column(csv, columns[i], categories ? &(*categories)[i] : nullptr));
  return out;
}

// Columns (dtype)[n] side by side as (dtype)[n, k].
Tensor Stack(const std::string& path, const std::vector<Tensor>& columns,
             const std::vector<CsvColumn>& specs) {
  const DType dt = columns[0].dtype();
  const int64_t n = columns[0].shape().Dim(0), k = static_cast<int64_t>(columns.size());
  for (size_t j = 1; j < columns.size(); ++j)
    if (columns[j].dtype() != dt)
      kiln::detail::Throw("CSV {}: column \"{}\" is {} but \"{}\" is {}: a group of columns shares one dtype",
                          path, specs[j].name, columns[j].dtype(), specs[0].name, dt);
  const size_t item = static_cast<size_t>(DTypeByteSize(dt, 1));
  Tensor out = Tensor::FromShape(Shape(dt, {n, k}));
  out.MutableBytes([&](std::span<uint8_t> dst) {
    for (int64_t j = 0; j < k; ++j) {
      columns[static_cast<size_t>(j)].ConstBytes([&](std::span<const uint8_t> src) {
        for (int64_t r = 0; r < n; ++r)
          std::memcpy(dst.data() + static_cast<size_t>(r * k + j) * item,
                      src.data() + static_cast<size_t>(r) * item, item);
      });
    }
  });
  return out;
}

}  // namespace

CsvRecords ReadCsvRecords(const std::string& path, char delimiter) {
  if (delimiter == '"' || delimiter == '\n' || delimiter == '\r')
    kiln::detail::Throw("CSV {}: delimiter '{}' is not allowed", path, Printable(delimiter));
  const std::string s = io::ReadWholeFile(path, "CSV");
  CsvRecords csv;
  csv.path = path;
  size_t i = s.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // A UTF-8 byte order mark.
  int64_t line = 1;
  bool first = true;
  while (i < s.size()) {
    if (s[i] == '\n' || IsCrLf(s, i)) {  // An empty line.
      i += s[i] == '\n' ? 1 : 2;
      ++line;
      continue;
    }
    const int64_t start_line = line;
    std::vector<std::string> fields;
    bool end_of_record = false;
    while (!end_of_record) {
      std::string field;
      if (i < s.size() && s[i] == '"') {
        const int64_t open_line = line;
        ++i;
        while (true) {
          if (i >= s.size())
            kiln::detail::Throw("CSV {}: line {}: the quoted field opened here is not closed", path,
                                open_line);
          const char ch = s[i++];
          if (ch == '"') {
            if (i < s.size() && s[i] == '"') {
              field += '"';
              ++i;
              continue;
            }
            break;
          }
          if (ch == '\n') ++line;
          field += ch;
        }
        if (i < s.size() && s[i] != delimiter && s[i] != '\n' && !IsCrLf(s, i))
          kiln::detail::Throw(
              "CSV {}: line {}: '{}' after a closing quote (a delimiter or line end expected)", path, line,
              Printable(s[i]));
      } else {
        while (i < s.size() && s[i] != delimiter && s[i] != '\n' && !IsCrLf(s, i)) {
          if (s[i] == '"')
            kiln::detail::Throw("CSV {}: line {}: a quote inside an unquoted field (quote the whole field)",
                                path, line);
          field += s[i++];
        }
      }
      fields.push_back(std::move(field));
      if (i >= s.size()) {
        end_of_record = true;
      } else if (s[i] == delimiter) {
        ++i;
      } else {
        i += s[i] == '\n' ? 1 : 2;
        ++line;
        end_of_record = true;
      }
    }
    if (first) {
      csv.header = std::move(fields);
      first = false;
      continue;
    }
    if (fields.size() != csv.header.size())
      kiln::detail::Throw("CSV {}: line {} has {} fields, the header has {}", path, start_line, fields.size(),
                          csv.header.size());
    csv.rows.push_back(std::move(fields));
    csv.lines.push_back(start_line);
  }
  if (first) kiln::detail::Throw("CSV {}: the file is empty (a header line is needed)", path);
  return csv;
}

std::vector<Tensor> ReadCsv(const std::string& path, const std::vector<CsvColumn>& columns,
                            std::vector<std::vector<std::string>>* categories, char delimiter) {
  return Columns(ReadCsvRecords(path, delimiter), columns, categories);
}

std::shared_ptr<InMemoryDataset> CsvDataset(compute::BackendPtr backend, const std::string& path,
                                            const std::vector<CsvColumn>& inputs,
                                            const std::vector<CsvColumn>& labels, char delimiter) {
  if (inputs.empty()) kiln::detail::Throw("CSV {}: no input columns selected", path);
  const CsvRecords csv = ReadCsvRecords(path, delimiter);
  if (csv.rows.empty()) kiln::detail::Throw("CSV {}: no rows after the header", path);
  std::vector<Tensor> x = {Stack(path, Columns(csv, inputs, nullptr), inputs)};
  std::vector<Tensor> y;
  if (!labels.empty()) y.push_back(Stack(path, Columns(csv, labels, nullptr), labels));
  return InMemoryFromData(std::move(backend), std::filesystem::path(path).filename().string(), std::move(x),
                          std::move(y));
}

}  // namespace kiln::data
