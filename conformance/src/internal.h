#pragma once
// Helpers shared by the case tables (cases_*.cc), the runner and the coverage matrix.

#include <complex>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/conformance/conformance.h"
#include "kiln/graph/graph.h"
#include "kiln/graph/ops.h"

namespace kiln::conformance::internal {

using compute::OpType;
using graph::Graph;
using graph::Node;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// True when compute::InferShape accepts `op` on `operands` with `attrs` (the n/a probe).
bool ShapeRuleAccepts(OpType op, const std::vector<Shape>& operands, const compute::OpAttributes& attrs);

// ---- DType groups -------------------------------------------------------------------------------

extern const std::vector<DType> kNumeric;        // Plain integers and floats.
extern const std::vector<DType> kSignedInts;     // Int8..Int64.
extern const std::vector<DType> kUnsignedInts;   // Uint8..Uint64.
extern const std::vector<DType> kInts;           // Both.
extern const std::vector<DType> kFloats;         // Float16, Float32, Float64, BFloat16.
extern const std::vector<DType> kSignedNumeric;  // Signed integers and floats.
extern const std::vector<DType> kUnpacked;       // Bool, kNumeric and kComplex.
extern const std::vector<DType> kComplex;        // Complex64, Complex128.
extern const std::vector<DType> kPacked;         // Int4, Uint4, Int2, Uint2.
extern const std::vector<DType> kFloat8;         // Float8E4M3FN, Float8E5M2 (storage only).
extern const std::vector<DType> kAll;            // All 21.

// ---- Tensors --------------------------------------------------------------------------------------

/// A tensor of `dtype` holding `values` (row-major), each of which must be exactly representable
/// (a programming error otherwise: std::logic_error). Bool takes 0 and 1; packed dtypes their
/// integer range; floats NaN and infinities too; complex dtypes take them as real parts.
Tensor V(DType dtype, std::vector<int64_t> dims, const std::vector<double>& values);
/// A scalar.
Tensor S(DType dtype, double value);
/// A complex tensor (Complex64 rounds each part to float32).
Tensor C(DType dtype, std::vector<int64_t> dims, const std::vector<std::complex<double>>& values);
/// Like V, but float values are rounded to the dtype (round to nearest even; float16 through
/// float32). Integers must still be exact.
Tensor Rounded(DType dtype, std::vector<int64_t> dims, const std::vector<double>& values);
/// An integer tensor from values taken modulo 2^bits (two's complement): -1 is all bits set.
Tensor W(DType dtype, std::vector<int64_t> dims, const std::vector<int64_t>& values);
/// A tensor from raw bit patterns (the low DTypeBits bits of each value).
Tensor Raw(DType dtype, std::vector<int64_t> dims, const std::vector<uint64_t>& bits);

/// Smallest and largest values of an integer dtype (as int64; Uint64's max is in MaxU).
int64_t MinI(DType dtype);
int64_t MaxI(DType dtype);
uint64_t MaxU(DType dtype);

/// Distinct-ish values for data-movement rows: 1, 2, 3... (numeric), a fixed bit pattern (Bool),
/// the range cycled (packed).
std::vector<double> Seq(DType dtype, int64_t n);
/// values[i] for each index (index -1: `fill`).
std::vector<double> Pick(const std::vector<double>& values, const std::vector<int>& indices, double fill = 0);

/// Elements as doubles (packed dtypes unpacked; 64-bit integers may round; complex: real parts).
std::vector<double> ToDoubles(const Tensor& t);
/// Element i as text, exact (integers in full, floats with round-trip precision).
std::string ElementText(const Tensor& t, int64_t i);

// ---- Tolerances ---------------------------------------------------------------------------------

inline Tolerance Exact() { return {}; }
/// For one transcendental op: ±1 ulp for half types (computed in float32, rounded once), a few
/// ulps for float32 and float64. Exact for non-floats.
Tolerance OneOp(DType dtype);
/// For composite functions (several rounded steps): a relative error of a few ulps of the dtype.
Tolerance Composite(DType dtype);

// ---- Graph builders -----------------------------------------------------------------------------

/// Wraps f(params) returning a Node or std::vector<Node>.
template <typename F>
graph::GraphFn P(F f) {
  return [f](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    if constexpr (std::is_same_v<std::invoke_result_t<const F&, const std::vector<Node>&>, Node>) {
      return {f(p)};
    } else {
      return f(p);
    }
  };
}
/// Wraps f(graph, params) returning a Node or std::vector<Node>.
template <typename F>
graph::GraphFn GP(F f) {
  return [f](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
    if constexpr (std::is_same_v<std::invoke_result_t<const F&, Graph&, const std::vector<Node>&>, Node>) {
      return {f(g, p)};
    } else {
      return f(g, p);
    }
  };
}
inline graph::GraphFn Fn1(Node (*f)(Node)) {
  return [f](Graph&, const std::vector<Node>& p) -> std::vector<Node> { return {f(p.at(0))}; };
}
inline graph::GraphFn Fn2(Node (*f)(Node, Node)) {
  return [f](Graph&, const std::vector<Node>& p) -> std::vector<Node> { return {f(p.at(0), p.at(1))}; };
}

// ---- The table ----------------------------------------------------------------------------------

/// Collects rows; the catalogue entry of `op` supplies the primitives.
class CaseList {
 public:
  /// Adds a row named "<op>/<dtype>/<what>".
  Case& Add(const std::string& op, const std::string& what, DType dtype, graph::GraphFn build,
            std::vector<Tensor> inputs, std::vector<Tensor> expected, Tolerance tolerance = {});
  std::vector<Case>& cases() { return cases_; }

 private:
  std::vector<Case> cases_;
};

/// Marks a row as fit for numeric gradient checks (sets grad_epsilon for Float32 and Float64).
Case& Smooth(Case& c);

/// The rule primitives of catalogue function `name` (std::logic_error if unknown).
const std::vector<OpType>& RuleOf(const std::string& name);

// One function per family (cases_*.cc).
void AddConstantCases(CaseList& list);
void AddUnaryCases(CaseList& list);
void AddUnaryFloatCases(CaseList& list);
void AddBinaryCases(CaseList& list);
void AddIntegerSemanticsCases(CaseList& list);
void AddCompareCases(CaseList& list);
void AddReduceCases(CaseList& list);
void AddShapeCases(CaseList& list);
void AddConvertCases(CaseList& list);
void AddDotCases(CaseList& list);
void AddEdgeCases(CaseList& list);
// Each op family's catalogue entries and rows live in its own file.
void AddConvCatalogue(std::vector<CatalogueEntry>& entries);  // cases_conv.cc
void AddConvCases(CaseList& list);
bool ConvPrimitiveAccepts(OpType op, DType dtype);                // For PrimitiveAccepts.
void AddIndexingCatalogue(std::vector<CatalogueEntry>& entries);  // cases_indexing.cc
void AddIndexingCases(CaseList& list);
bool IndexingPrimitiveAccepts(OpType op, DType dtype);
void AddRandomControlCatalogue(std::vector<CatalogueEntry>& entries);  // cases_random_control.cc
void AddRandomControlCases(CaseList& list);
bool ControlPrimitiveAccepts(OpType op, DType dtype);
void AddUtilCatalogue(std::vector<CatalogueEntry>& entries);  // cases_util.cc
void AddUtilCases(CaseList& list);
void AddComplexCatalogue(std::vector<CatalogueEntry>& entries);  // cases_complex.cc
void AddComplexCases(CaseList& list);
void AddCollectiveCatalogue(std::vector<CatalogueEntry>& entries);  // cases_collective.cc
void AddCollectiveCases(CaseList& list);

// ---- Running ------------------------------------------------------------------------------------

/// What happened to one row.
struct Outcome {
  enum class Status { kNotRun, kPass, kFail, kSkip, kStaticOnly } status = Status::kNotRun;
  std::shared_ptr<const compute::Program> program;  // Set once the graph was built.
};

/// Fills report.rows from the rows' outcomes (coverage.cc).
void FillMatrix(Report& report, const compute::BackendCapabilities& caps, const std::vector<Case>& cases,
                const std::vector<Outcome>& outcomes, const RunOptions& options);

// ---- Fixtures -------------------------------------------------------------------------------------

/// Array `key` of fixture file `file` ("unary.npz"); a kiln::Error if the file or key is missing.
const Tensor& Fixture(const std::string& file, const std::string& key);
/// A float64 fixture converted to `dtype`: exactly (inputs; std::logic_error if not exact) or
/// rounded (reference results).
Tensor FixtureAs(DType dtype, const std::string& file, const std::string& key, bool exact);

}  // namespace kiln::conformance::internal
