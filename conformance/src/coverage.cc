// The op x dtype coverage matrix: filled from the rows' outcomes, printed as text.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "internal.h"

namespace kiln::conformance {

std::string_view CellName(Cell cell) {
  switch (cell) {
    case Cell::kOk:
      return "ok";
    case Cell::kFail:
      return "FAIL";
    case Cell::kNotApplicable:
      return "n/a";
    case Cell::kSkip:
      return "skip";
    case Cell::kMissing:
      return "MISSING";
  }
  return "?";
}

bool Report::Ok() const { return failures.empty() && BadCells().empty(); }

std::vector<std::string> Report::BadCells() const {
  std::vector<std::string> bad;
  for (const MatrixRow& row : rows) {
    for (int c = 0; c < kNumColumns; ++c) {
      const Cell cell = row.cells[static_cast<size_t>(c)];
      if (cell == Cell::kFail || cell == Cell::kMissing) {
        bad.push_back(fmt::format("{}{} x {}: {}", row.primitive ? "primitive " : "", row.name,
                                  DTypeName(kAllDTypes[c]), CellName(cell)));
      }
    }
  }
  return bad;
}

namespace internal {

namespace {

// The dtypes an instruction counts for in the primitive rows: the operand dtype (the values'
// for Where, every value's for control flow), the result's for leaves, both for conversions.
std::vector<DType> KeyDTypes(const compute::Program& program, const compute::Instruction& inst) {
  auto operand = [&](size_t i) {
    return program.Instructions()[static_cast<size_t>(inst.operands[i])].shape.dtype();
  };
  switch (compute::GetOpCategory(inst.op)) {
    case compute::OpCategory::Leaf:
      return {inst.shape.dtype()};
    case compute::OpCategory::Select:
      return {operand(1)};
    case compute::OpCategory::Convert:
      return {operand(0), inst.shape.dtype()};
    case compute::OpCategory::Control: {
      // GetTupleElement: its value's; tuple ops: their values' (not If's predicate).
      if (inst.op == compute::OpType::GetTupleElement) return {inst.shape.dtype()};
      std::vector<DType> v;
      for (size_t i = inst.op == compute::OpType::If ? 1 : 0; i < inst.operands.size(); ++i)
        v.push_back(operand(i));
      return v;
    }
    case compute::OpCategory::Unary:
    case compute::OpCategory::UnaryPredicate:
    case compute::OpCategory::Binary:
    case compute::OpCategory::Compare:
    case compute::OpCategory::Reduce:
    case compute::OpCategory::ArgReduce:
    case compute::OpCategory::Movement:
    case compute::OpCategory::Contraction:
    case compute::OpCategory::Convolution:
    case compute::OpCategory::Window:
    case compute::OpCategory::Indexing:
    case compute::OpCategory::SortScan:
    case compute::OpCategory::Complex:
    case compute::OpCategory::Collective:
      break;
  }
  if (inst.operands.empty()) return {inst.shape.dtype()};
  return {operand(0)};
}

struct Counts {
  int passed = 0, failed = 0, skipped = 0;
};

}  // namespace

void FillMatrix(Report& report, const compute::BackendCapabilities& caps, const std::vector<Case>& cases,
                const std::vector<Outcome>& outcomes, const RunOptions& options) {
  // Per (function, dtype) and per (primitive, dtype): what the rows did.
  std::map<std::pair<std::string, DType>, Counts> by_function;
  std::map<std::pair<compute::OpType, DType>, Counts> by_primitive;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Outcome& o = outcomes[i];
    if (o.status == Outcome::Status::kNotRun || o.status == Outcome::Status::kStaticOnly) continue;
    Counts& f = by_function[{cases[i].op, cases[i].dtype}];
    const bool pass = o.status == Outcome::Status::kPass, fail = o.status == Outcome::Status::kFail;
    f.passed += pass;
    f.failed += fail;
    f.skipped += o.status == Outcome::Status::kSkip;
    if (!o.program || !(pass || fail)) continue;
    std::set<std::pair<compute::OpType, DType>> used;
    for (const compute::Instruction& inst : o.program->Instructions()) {
      for (DType d : KeyDTypes(*o.program, inst)) used.insert({inst.op, d});
    }
    for (const auto& key : used) {
      Counts& p = by_primitive[key];
      p.passed += pass;
      p.failed += fail;
    }
  }
  auto dtype_selected = [&](DType d) {
    return options.dtypes.empty() ||
           std::find(options.dtypes.begin(), options.dtypes.end(), d) != options.dtypes.end();
  };

  for (const CatalogueEntry& entry : Catalogue()) {
    if (!options.filter.empty() && entry.name.find(options.filter) == std::string::npos) continue;
    MatrixRow row;
    row.name = entry.name;
    const bool ops_present =
        std::all_of(entry.rule.begin(), entry.rule.end(), [&](compute::OpType op) { return caps.HasOp(op); });
    for (int c = 0; c < kNumColumns; ++c) {
      const DType d = kAllDTypes[c];
      Cell& cell = row.cells[static_cast<size_t>(c)];
      if (!Applicable(entry, d)) {
        cell = Cell::kNotApplicable;
      } else if (!dtype_selected(d) || !caps.HasDType(d)) {
        cell = Cell::kSkip;
      } else {
        auto it = by_function.find({entry.name, d});
        const Counts n = it == by_function.end() ? Counts{} : it->second;
        cell = n.failed > 0    ? Cell::kFail
               : n.passed > 0  ? Cell::kOk
               : n.skipped > 0 ? Cell::kSkip
               : ops_present   ? Cell::kMissing
                               : Cell::kSkip;
      }
    }
    report.rows.push_back(row);
  }
  if (!options.filter.empty()) return;

  for (compute::OpType op : compute::AllOps()) {
    MatrixRow row;
    row.name = std::string(compute::OpName(op));
    row.primitive = true;
    for (int c = 0; c < kNumColumns; ++c) {
      const DType d = kAllDTypes[c];
      Cell& cell = row.cells[static_cast<size_t>(c)];
      if (!PrimitiveAccepts(op, d)) {
        cell = Cell::kNotApplicable;
      } else if (!dtype_selected(d) || !caps.HasDType(d) || !caps.HasOp(op)) {
        cell = Cell::kSkip;
      } else {
        auto it = by_primitive.find({op, d});
        const Counts n = it == by_primitive.end() ? Counts{} : it->second;
        cell = n.passed > 0 ? Cell::kOk : n.failed > 0 ? Cell::kFail : Cell::kMissing;
      }
    }
    report.rows.push_back(row);
  }
}

}  // namespace internal

namespace {

std::string_view ShortName(DType d) {
  switch (d) {
    case DType::Bool:
      return "bool";
    case DType::Int8:
      return "i8";
    case DType::Int16:
      return "i16";
    case DType::Int32:
      return "i32";
    case DType::Int64:
      return "i64";
    case DType::Uint8:
      return "u8";
    case DType::Uint16:
      return "u16";
    case DType::Uint32:
      return "u32";
    case DType::Uint64:
      return "u64";
    case DType::Float16:
      return "f16";
    case DType::Float32:
      return "f32";
    case DType::Float64:
      return "f64";
    case DType::BFloat16:
      return "bf16";
    case DType::Int4:
      return "i4";
    case DType::Uint4:
      return "u4";
    case DType::Int2:
      return "i2";
    case DType::Uint2:
      return "u2";
    case DType::Float8E4M3FN:
      return "f8e4m3";
    case DType::Float8E5M2:
      return "f8e5m2";
    case DType::Complex64:
      return "c64";
    case DType::Complex128:
      return "c128";
    default:
      return "?";
  }
}

}  // namespace

std::string CoverageMatrix(const Report& report) {
  size_t width = 10;
  for (const MatrixRow& row : report.rows) width = std::max(width, row.name.size() + 1);
  std::string header = fmt::format("{:<{}}", "", width);
  for (DType d : kAllDTypes) header += fmt::format("{:>8}", ShortName(d));
  std::string s = fmt::format("conformance coverage on {}\n", report.backend);
  std::map<Cell, int> totals;
  bool in_primitives = false;
  s += "-- functions (graph/ops.h) --\n" + header + "\n";
  for (const MatrixRow& row : report.rows) {
    if (row.primitive && !in_primitives) {
      in_primitives = true;
      s += "-- primitives (compute/ops.def) --\n" + header + "\n";
    }
    std::string line = fmt::format("{:<{}}", row.name, width);
    for (Cell cell : row.cells) {
      line += fmt::format("{:>8}", CellName(cell));
      ++totals[cell];
    }
    s += line + "\n";
  }
  s += "legend: ok = a row passed (none failed); FAIL = a row failed; n/a = the shape rules reject the "
       "dtype;\n"
       "        skip = the backend's capabilities lack the dtype or op; MISSING = applicable but no row\n";
  s += fmt::format(
      "cells: {} ok, {} FAIL, {} n/a, {} skip, {} MISSING; rows: {} run, {} passed, {} failed, {} skipped "
      "({:.2f} s)\n",
      totals[Cell::kOk], totals[Cell::kFail], totals[Cell::kNotApplicable], totals[Cell::kSkip],
      totals[Cell::kMissing], report.rows_run, report.rows_passed, report.failures.size(),
      report.rows_skipped, report.seconds);
  return s;
}

std::string FailureReport(const Report& report) {
  std::string s;
  for (const Failure& f : report.failures) {
    s += fmt::format("FAIL {} (function {}, dtype {}):\n  {}\n", f.name, f.op, DTypeName(f.dtype), f.message);
  }
  for (const std::string& cell : report.BadCells()) s += "cell " + cell + "\n";
  return s;
}

}  // namespace kiln::conformance
