#pragma once
/// The conformance suite (GoMLX's backendtest.RunAll): a table of cases, one or more rows per
/// graph function and primitive, that any backend must pass. Each row builds a small graph with
/// the frontend functions (graph/ops.h), runs it on the backend under test and compares the
/// outputs with expected values computed by hand or by NumPy (conformance/generate_fixtures.py),
/// never by kiln itself.
///
///   kiln::conformance::Report r = kiln::conformance::RunAll(kiln::compute::NewWithConfig("ref"));
///   std::cout << kiln::conformance::CoverageMatrix(r);
///   if (!r.Ok()) std::cerr << kiln::conformance::FailureReport(r);
///
/// Rows whose program needs an op or a dtype the backend's Capabilities() declare absent are
/// skipped; everything else must pass. The coverage matrix has one row per catalogue function
/// (Catalogue()) and one per primitive of ops.def, and one column per dtype.
///
/// Reference values live in conformance/fixtures/*.npz. They are found through the directory
/// compiled in (the source tree), or through $KILN_CONFORMANCE_FIXTURES when set.

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/compute/backend.h"
#include "kiln/compute/program.h"
#include "kiln/core/dtype.h"
#include "kiln/core/tensor.h"
#include "kiln/graph/exec.h"

namespace kiln::conformance {

/// How close a float result must be to the expected value. An element passes when it equals the
/// expected value, or |got - want| <= abs + rel * |want|, or got is at most `ulps` units in the
/// last place of the dtype away from want. NaN matches any NaN; infinities must match exactly.
/// Integer and Bool results are always compared exactly (all zero: exact for floats too).
struct Tolerance {
  double abs = 0;
  double rel = 0;
  int ulps = 0;
};

/// One row of the suite.
struct Case {
  /// The catalogue function the row tests, as printed in the matrix ("Add", "ReduceSum",
  /// "MatMul", "Dot.Product"); see Catalogue().
  std::string op;
  /// Unique name: "<op>/<dtype>/<what>", e.g. "Div/Int32/truncates_toward_zero".
  std::string name;
  /// The primitives the function lowers to (informational; the matrix's primitive rows are
  /// filled from the programs the rows actually built).
  std::vector<compute::OpType> primitives;
  /// The dtype column the row counts for (the operand dtype; for ConvertDType the source and
  /// for OneHot the result dtype).
  DType dtype = DType::Invalid;
  /// Builds the graph: parameters (one per input, in order) in, outputs out.
  graph::GraphFn build;
  std::vector<Tensor> inputs;
  std::vector<Tensor> expected;
  Tolerance tolerance;
  /// Step for numeric gradient checks (the gradient suite checks the Float64 rows that have one
  /// against finite differences): set on Float32 and Float64 rows of differentiable functions at
  /// smooth points with finite values; 0 where such a check does not apply (integers, Bool, half
  /// types, special values, kinks, ties).
  double grad_epsilon = 0;
  /// The replicas the row's program runs on at once (the collectives' rows): `inputs` and
  /// `expected` then hold each replica's in turn (replica 0's parameters, replica 1's...), and
  /// the graph is built with Graph::SetReplicas.
  int replicas = 1;
};

/// The whole table, built once (reads the fixtures on first use; a missing or unreadable fixture
/// is a kiln::Error naming the path and $KILN_CONFORMANCE_FIXTURES).
const std::vector<Case>& Cases();

/// The directory the fixtures are read from: $KILN_CONFORMANCE_FIXTURES if set, else the source
/// tree's conformance/fixtures.
std::string FixturesDir();

/// A function of the catalogue (the graph frontend's functions the suite covers) with the
/// primitives whose shape rules decide which dtypes it applies to.
struct CatalogueEntry {
  std::string name;
  /// The primitives the function lowers to: a dtype one of them rejects is n/a.
  std::vector<compute::OpType> rule;
  /// Defined for float dtypes only, whatever the primitives accept (means, variance: GoMLX's
  /// functions refuse integers rather than truncate).
  bool float_only = false;
  /// Packed dtypes excluded (a scalar value of a storage-only dtype).
  bool unpacked_only = false;
  /// When set, the only dtypes the function has columns for (a result of fixed dtype whatever
  /// its arguments: the triangular masks are Bool, IndicesForShape Int64).
  std::vector<DType> only = {};
  /// Complex dtypes excluded whatever the primitives accept: the function refuses them (GoMLX's
  /// norms and random integers are defined for real numbers).
  bool real_only = false;
};
/// The catalogue, in matrix order.
const std::vector<CatalogueEntry>& Catalogue();

/// True when compute::InferShape accepts `dtype` for `op` on representative operands ([2]-shaped
/// operands of `dtype`, attributes that fit). For ConvertDType and Bitcast, `dtype` may be the
/// source or the target.
bool PrimitiveAccepts(compute::OpType op, DType dtype);
/// True when every primitive of the entry's rule accepts `dtype` and the entry's restrictions
/// allow it (otherwise the cell is n/a).
bool Applicable(const CatalogueEntry& entry, DType dtype);

/// Options of RunAll.
struct RunOptions {
  /// Runs only rows whose op (catalogue function) contains this text; the matrix then shows only
  /// those functions, and no primitive rows. Empty: everything.
  std::string filter;
  /// Runs only these dtypes (empty: all); other columns show "skip".
  std::vector<DType> dtypes;
  /// Where to write a line per failing row as it happens (nullptr: nowhere).
  std::ostream* log = nullptr;
  /// Declares axis 0 of every input of rank >= 1 dynamic (but size-1 axes, which broadcast),
  /// named by its size ("n3"), so each row
  /// runs through one compilation with dynamic axes, specialised to its inputs (for backends with
  /// dynamic shapes). A row whose graph cannot be built with that axis dynamic (its builder reads
  /// the size as a number, or an op needs it static) is counted in Report::static_only with the
  /// error, not run.
  bool dynamic_leading_axis = false;
};

/// A cell of the coverage matrix.
enum class Cell : uint8_t {
  kOk,             ///< At least one row passed and none failed.
  kFail,           ///< A row failed (for primitive rows: no program using it passed, one failed).
  kNotApplicable,  ///< The shape rules reject the dtype for the op.
  kSkip,           ///< The backend's capabilities lack the dtype or an op the rows need.
  kMissing,        ///< Applicable and supported, but no row covers it.
};
/// "ok", "FAIL", "n/a", "skip", "MISSING".
std::string_view CellName(Cell cell);

/// The dtypes of the matrix's columns, in order (the 17 valid dtypes).
inline constexpr int kNumColumns = static_cast<int>(sizeof(kAllDTypes) / sizeof(kAllDTypes[0]));

struct MatrixRow {
  std::string name;
  bool primitive = false;  ///< A primitive of ops.def (else a catalogue function).
  std::array<Cell, kNumColumns> cells{};
};

/// A failing row: what ran and what came out.
struct Failure {
  std::string op;
  std::string name;
  DType dtype = DType::Invalid;
  /// Inputs, expected and got values (and the mismatching elements), or the error thrown.
  std::string message;
};

struct Report {
  std::string backend;  ///< The backend's Description().
  std::vector<MatrixRow> rows;
  std::vector<Failure> failures;
  /// With RunOptions::dynamic_leading_axis: the rows whose graphs need axis 0 static, and why.
  std::vector<Failure> static_only;
  int rows_run = 0, rows_passed = 0, rows_skipped = 0;
  double seconds = 0;

  /// No failing row and no FAIL or MISSING cell.
  bool Ok() const;
  /// The FAIL and MISSING cells: "Add x Int8: MISSING".
  std::vector<std::string> BadCells() const;
};

/// Runs every case on `backend` (device 0) and builds the coverage matrix.
Report RunAll(const compute::BackendPtr& backend, const RunOptions& options = {});
/// Runs the given cases (e.g. a subset, or extra rows) the same way.
Report RunCases(const compute::BackendPtr& backend, const std::vector<Case>& cases,
                const RunOptions& options = {});

/// The matrix as text: a header of dtype names, one line per row, a legend and the totals.
std::string CoverageMatrix(const Report& report);
/// Every failure, in full.
std::string FailureReport(const Report& report);

}  // namespace kiln::conformance
