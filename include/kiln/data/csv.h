#pragma once
/// @file
/// CSV files (RFC 4180: quoted fields holding commas, doubled quotes and line breaks; LF or CRLF
/// line ends; a header line naming the columns) read into tensors.
///
///   auto ds = data::CsvDataset(backend, "iris.csv",
///                              {{"sepal_length"}, {"sepal_width"}},           // Float32 inputs [n, 2]
///                              {{"species", DType::Int32, true}});            // class ids [n, 1]

#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/core/tensor.h"
#include "kiln/data/dataset.h"

namespace kiln::data {

/// A column to read: its header name, the dtype (Float32, Float64, Int32 or Int64) and whether
/// its values are category names, turned into ids 0..k-1 in sorted order of the distinct names
/// (an integer dtype).
struct CsvColumn {
  std::string name;              ///< The header name of the column (exact match).
  DType dtype = DType::Float32;  ///< Float32, Float64, Int32 or Int64.
  bool categorical = false;      ///< Values are category names mapped to ids (integer dtypes).
};

/// The records of a CSV file: the header's names and the rows of fields, each row with the
/// 1-based line it starts on. Rows must have as many fields as the header; empty lines are skipped.
struct CsvRecords {
  std::string path;                            ///< The file read (for error messages).
  std::vector<std::string> header;             ///< The column names, in file order.
  std::vector<std::vector<std::string>> rows;  ///< The fields of each record, unquoted.
  std::vector<int64_t> lines;                  ///< The 1-based line each row starts on.
};

/// Parses a CSV file. A malformed file (an unclosed quote, text after a closing quote, a row
/// with the wrong number of fields) is a kiln::Error naming the file and line.
CsvRecords ReadCsvRecords(const std::string& path, char delimiter = ',');

/// The selected columns as tensors (dtype)[n]. A missing (empty) or malformed value is a
/// kiln::Error naming the file, the line and the column. `categories`, when given, receives each
/// categorical column's sorted names (empty for the others).
std::vector<Tensor> ReadCsv(const std::string& path, const std::vector<CsvColumn>& columns,
                            std::vector<std::vector<std::string>>* categories = nullptr,
                            char delimiter = ',');

/// An in-memory dataset of a CSV file: the input columns side by side as one tensor [n, k], the
/// label columns as one tensor [n, m] (each group of one dtype); batch size 1 until configured.
std::shared_ptr<InMemoryDataset> CsvDataset(compute::BackendPtr backend, const std::string& path,
                                            const std::vector<CsvColumn>& inputs,
                                            const std::vector<CsvColumn>& labels, char delimiter = ',');

}  // namespace kiln::data
