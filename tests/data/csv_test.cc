// Tests for CSV reading: RFC 4180 quoting (delimiters, doubled quotes and line breaks inside
// quotes), CRLF, typed and categorical columns, the dataset, and errors naming file, line and
// column.

#include "kiln/data/csv.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using kiln::test::TempDir;
using kiln::test::Throws;

std::string Write(const TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name, std::ios::binary) << text;
  return dir / name;
}

TEST(Csv, QuotingAndLineEnds) {
  TempDir dir;
  // Line 1: header (CRLF); line 2: a quoted comma and doubled quotes; lines 3-4: a line break
  // inside quotes; line 5 empty; line 6 unquoted, last line without a line end.
  const std::string path = Write(dir, "q.csv",
                                 "id,\"the text\",x\r\n"
                                 "1,\"a, \"\"b\"\"\",2.5\r\n"
                                 "2,\"two\nlines\",-3\n"
                                 "\n"
                                 "3,,1e3");
  data::CsvRecords csv = data::ReadCsvRecords(path);
  EXPECT_EQ(csv.header, (std::vector<std::string>{"id", "the text", "x"}));
  ASSERT_EQ(csv.rows.size(), 3u);
  EXPECT_EQ(csv.rows[0], (std::vector<std::string>{"1", "a, \"b\"", "2.5"}));
  EXPECT_EQ(csv.rows[1], (std::vector<std::string>{"2", "two\nlines", "-3"}));
  EXPECT_EQ(csv.rows[2], (std::vector<std::string>{"3", "", "1e3"}));
  EXPECT_EQ(csv.lines, (std::vector<int64_t>{2, 3, 6}));
}

TEST(Csv, TypedAndCategoricalColumns) {
  TempDir dir;
  const std::string path = Write(dir, "t.csv",
                                 "\xEF\xBB\xBF"
                                 "a;b;kind;big\n"
                                 " 1.5;+7;cat;5000000000\n"
                                 "-2;-3;\"dog\";-1\n"
                                 "0.25; 0 ;cat;2\n");
  std::vector<std::vector<std::string>> categories;
  std::vector<Tensor> cols = data::ReadCsv(path,
                                           {{"a", DType::Float64},
                                            {"b", DType::Int32},
                                            {"kind", DType::Int64, true},
                                            {"big", DType::Int64},
                                            {"a", DType::Float32}},
                                           &categories, ';');
  ASSERT_EQ(cols.size(), 5u);
  EXPECT_EQ(cols[0].shape(), Shape(DType::Float64, {3}));
  EXPECT_EQ(cols[0].ToVector<double>(), (std::vector<double>{1.5, -2, 0.25}));
  EXPECT_EQ(cols[1].ToVector<int32_t>(), (std::vector<int32_t>{7, -3, 0}));
  EXPECT_EQ(cols[2].ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(cols[3].ToVector<int64_t>(), (std::vector<int64_t>{5000000000, -1, 2}));
  EXPECT_EQ(cols[4].ToVector<float>(), (std::vector<float>{1.5f, -2, 0.25f}));
  EXPECT_EQ(categories[2], (std::vector<std::string>{"cat", "dog"}));
  EXPECT_TRUE(categories[0].empty());
}

TEST(Csv, DatasetStacksInputAndLabelColumns) {
  TempDir dir;
  const std::string path = Write(dir, "iris.csv",
                                 "w,h,species\n"
                                 "1,2,virginica\n"
                                 "3,4,setosa\n"
                                 "5,6,versicolor\n");
  for (const char* config : {"cpu", "ref"}) {
    SCOPED_TRACE(config);
    auto ds = data::CsvDataset(compute::NewWithConfig(config), path, {{"h"}, {"w"}},
                               {{"species", DType::Int32, true}});
    EXPECT_EQ(ds->Name(), "iris.csv");
    EXPECT_EQ(ds->NumExamples(), 3);
    ds->BatchSize(3, false);
    std::any spec;
    std::vector<Tensor> x, y;
    ASSERT_TRUE(ds->Yield(spec, x, y));
    EXPECT_EQ(x[0].shape(), Shape(DType::Float32, {3, 2}));
    EXPECT_EQ(x[0].ToVector<float>(), (std::vector<float>{2, 1, 4, 3, 6, 5}));
    EXPECT_EQ(y[0].shape(), Shape(DType::Int32, {3, 1}));
    EXPECT_EQ(y[0].ToVector<int32_t>(), (std::vector<int32_t>{2, 0, 1}));  // setosa, versicolor, virginica
  }
  EXPECT_TRUE(Throws(
      [&] {
        data::CsvDataset(compute::New(), path, {{"w"}, {"h", DType::Int32}}, {});
      },
      {"iris.csv", "\"h\" is Int32", "\"w\" is Float32"}));
}

TEST(Csv, ValueErrorsNameFileLineAndColumn) {
  TempDir dir;
  // The first record spans lines 2-3, so the rows after it are on lines 4 and 5.
  const std::string path = Write(dir, "bad.csv",
                                 "n,x,label\n"
                                 "1,\"multi\nline\",a\n"
                                 "2,oops,\n"
                                 "3000000000,4,c\n");
  EXPECT_TRUE(Throws([&] { data::ReadCsv(path, {{"x"}}); }, {"bad.csv", "line 2", "column \"x\"", "multi"}));
  EXPECT_TRUE(Throws(
      [&] {
        data::ReadCsv(path, {{"label", DType::Int32, true}});
      },
      {"bad.csv", "line 4", "column \"label\"", "missing value"}));
  EXPECT_TRUE(Throws(
      [&] {
        data::ReadCsv(path, {{"n", DType::Int32}});
      },
      {"bad.csv", "line 5", "column \"n\"", "3000000000", "Int32"}));
  EXPECT_EQ(data::ReadCsv(path, {{"n", DType::Int64}})[0].ToVector<int64_t>(),
            (std::vector<int64_t>{1, 2, 3000000000}));
  EXPECT_TRUE(Throws([&] { data::ReadCsv(path, {{"y"}}); }, {"bad.csv", "no column \"y\"", "n, x, label"}));
  EXPECT_TRUE(Throws([&] { data::ReadCsv(path, {{"n", DType::Uint8}}); }, {"column \"n\"", "Uint8"}));
  EXPECT_TRUE(Throws(
      [&] {
        data::ReadCsv(path, {{"label", DType::Float32, true}});
      },
      {"categorical", "Float32"}));
  EXPECT_TRUE(Throws([&] { data::ReadCsv(dir / "none.csv", {{"n"}}); }, {"cannot read", "none.csv"}));
}

TEST(Csv, MalformedFilesNameFileAndLine) {
  TempDir dir;
  EXPECT_TRUE(Throws([&] { data::ReadCsvRecords(Write(dir, "a.csv", "a,b\n1,2\n3,\"open\n4,5\n")); },
                     {"a.csv", "line 3", "not closed"}));
  EXPECT_TRUE(Throws([&] { data::ReadCsvRecords(Write(dir, "b.csv", "a,b\n1,\"x\"y\n")); },
                     {"b.csv", "line 2", "'y'"}));
  EXPECT_TRUE(Throws([&] { data::ReadCsvRecords(Write(dir, "c.csv", "a,b\n1,x\"y\n")); },
                     {"c.csv", "line 2", "quote inside an unquoted field"}));
  EXPECT_TRUE(Throws([&] { data::ReadCsvRecords(Write(dir, "d.csv", "a,b\r\n1,2\r\n3\r\n")); },
                     {"d.csv", "line 3 has 1 fields, the header has 2"}));
  EXPECT_TRUE(Throws([&] { data::ReadCsvRecords(Write(dir, "e.csv", "")); }, {"e.csv", "empty"}));
  EXPECT_NO_THROW(
      data::ReadCsvRecords(Write(dir, "f.csv", "a,a\n1,2\n")));  // Only selecting "a" is ambiguous.
  EXPECT_TRUE(
      Throws([&] { data::ReadCsv(dir / "f.csv", {{"a"}}); }, {"f.csv", "\"a\" appears more than once"}));
}

}  // namespace
