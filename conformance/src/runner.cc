// RunAll: builds each row's graph, skips what the backend's capabilities lack, compiles, runs,
// compares; then fills the coverage matrix.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <memory>
#include <ostream>
#include <utility>

#include "internal.h"
#include "kiln/compute/backend.h"
#include "kiln/compute/replicas.h"
#include "kiln/core/error.h"

namespace kiln::conformance {

namespace {

using internal::Outcome;

std::string ErrorText(const std::exception& e) {
  if (const auto* k = dynamic_cast<const kiln::Error*>(&e)) return k->message();
  return e.what();
}

// Raw bits of element i of a float tensor, mapped to integers ordered like the values (so that
// the difference of two is their distance in units in the last place).
int64_t OrderedBits(const Tensor& t, int64_t i) {
  const int bytes = DTypeBits(t.dtype()) / 8;
  uint64_t bits = 0;
  t.ConstBytes([&](std::span<const uint8_t> data) {
    for (int k = 0; k < bytes; ++k)
      bits |= static_cast<uint64_t>(data[static_cast<size_t>(i * bytes + k)]) << (8 * k);
  });
  const int width = bytes * 8;
  const uint64_t sign = uint64_t{1} << (width - 1);
  const auto magnitude = static_cast<int64_t>(bits & (sign - 1));
  return (bits & sign) != 0 ? -magnitude : magnitude;
}

bool ElementMatches(double got, double want, uint64_t ulp_distance, const Tolerance& tol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  if (got == want) return true;
  if ((tol.abs > 0 || tol.rel > 0) && std::fabs(got - want) <= tol.abs + tol.rel * std::fabs(want))
    return true;
  return tol.ulps > 0 && ulp_distance <= static_cast<uint64_t>(tol.ulps);
}

// Empty when `got` matches `want`; else a description of the mismatching elements.
std::string Compare(const Tensor& got, const Tensor& want, const Tolerance& tol) {
  if (got.shape() != want.shape()) {
    return fmt::format("shape {}, expected {}", got.shape().ToString(), want.shape().ToString());
  }
  if (IsComplex(want.dtype())) {
    // Part by part: each complex number as its two floats along a last axis.
    auto parts = [](const Tensor& t) {
      std::vector<int64_t> dims = t.shape().Dimensions();
      dims.push_back(2);
      Tensor p;
      t.ConstBytes([&](std::span<const uint8_t> b) {
        p = Tensor::FromBytes(Shape(ComplexPartDType(t.dtype()), dims), b);
      });
      return p;
    };
    return Compare(parts(got), parts(want), tol);
  }
  std::vector<int64_t> bad;
  if (!IsFloat(want.dtype())) {
    std::vector<uint8_t> a, b;
    got.ConstBytes([&](std::span<const uint8_t> x) { a.assign(x.begin(), x.end()); });
    want.ConstBytes([&](std::span<const uint8_t> x) { b.assign(x.begin(), x.end()); });
    if (a == b) return "";
    // Locate the elements.
    for (int64_t i = 0; i < got.Size(); ++i) {
      if (internal::ElementText(got, i) != internal::ElementText(want, i)) bad.push_back(i);
    }
    if (bad.empty()) return "the bytes differ (padding bits of a packed dtype?)";
  } else {
    const std::vector<double> g = internal::ToDoubles(got), w = internal::ToDoubles(want);
    for (int64_t i = 0; i < got.Size(); ++i) {
      const auto k = static_cast<size_t>(i);
      uint64_t ulps = 0;
      if (!std::isnan(g[k]) && !std::isnan(w[k])) {
        // |a|, |b| < 2^63: their difference fits uint64 (computed modulo 2^64).
        const int64_t a = OrderedBits(got, i), b = OrderedBits(want, i);
        ulps = a > b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
                     : static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
      }
      if (!ElementMatches(g[k], w[k], ulps, tol)) bad.push_back(i);
    }
    if (bad.empty()) return "";
  }
  std::string s = fmt::format("{} of {} elements differ:", bad.size(), got.Size());
  const size_t shown = std::min<size_t>(bad.size(), 12);
  for (size_t j = 0; j < shown; ++j) {
    s += fmt::format("\n      [{}] got {}, expected {}", bad[j], internal::ElementText(got, bad[j]),
                     internal::ElementText(want, bad[j]));
  }
  if (shown < bad.size()) s += fmt::format("\n      ... and {} more", bad.size() - shown);
  return s;
}

std::string TensorList(const std::vector<Tensor>& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) {
    s += fmt::format("\n    [{}] {}: {}", i, ts[i].shape().ToString(), ts[i].ToString());
  }
  return ts.empty() ? " (none)" : s;
}

std::string ToleranceText(const Tolerance& t) {
  if (t.abs == 0 && t.rel == 0 && t.ulps == 0) return "exact";
  return fmt::format("abs {}, rel {}, {} ulp", t.abs, t.rel, t.ulps);
}

// Runs one row; fills `failure` when it fails.
Outcome RunOne(const compute::BackendPtr& backend, const compute::BackendCapabilities& caps, const Case& c,
               const RunOptions& options, std::string& failure) {
  Outcome out;
  auto fail = [&](const std::string& what) {
    out.status = Outcome::Status::kFail;
    failure = what;
    return out;
  };
  const auto header = [&c] {
    return fmt::format("inputs:{}\n  expected ({}):{}", TensorList(c.inputs), ToleranceText(c.tolerance),
                       TensorList(c.expected));
  };
  // Build.
  graph::Graph g(c.name);
  g.SetReplicas(c.replicas);
  // A replicated row's inputs and expected outputs hold each replica's in turn.
  const size_t num_params = c.inputs.size() / static_cast<size_t>(c.replicas);
  std::vector<graph::Node> params;
  std::vector<graph::Node> outputs;
  const bool dynamic = options.dynamic_leading_axis;
  try {
    for (size_t i = 0; i < num_params; ++i) {
      const Shape& s = c.inputs[i].shape();
      // A size-1 axis stays static: it broadcasts, which a dynamic axis does not.
      if (!dynamic || s.Rank() == 0 || s.Dim(0) == 1) {
        params.push_back(g.Parameter(s));
        continue;
      }
      std::vector<int64_t> dims = s.Dimensions();
      std::vector<std::string> names(dims.size());
      names[0] = fmt::format("n{}", dims[0]);
      dims[0] = Shape::kDynamic;
      params.push_back(g.Parameter(Shape::MakeDynamic(s.dtype(), dims, names)));
    }
    outputs = c.build(g, params);
    out.program = g.Build(outputs);
  } catch (const std::exception& e) {
    if (dynamic) {
      out.status = Outcome::Status::kStaticOnly;
      failure = ErrorText(e);
      return out;
    }
    return fail(fmt::format("building the graph threw: {}\n  {}", ErrorText(e), header()));
  }
  // Skip what the backend declares absent (in sub-programs too; a tuple op by its results).
  std::function<bool(const compute::Program&)> supported = [&](const compute::Program& p) {
    for (const compute::Instruction& inst : p.Instructions()) {
      if (!caps.HasOp(inst.op)) return false;
      if (!inst.IsTuple() && !caps.HasDType(inst.shape.dtype())) return false;
      for (const Shape& s : inst.tuple_shapes) {
        if (!caps.HasDType(s.dtype())) return false;
      }
      for (const auto& sub : inst.subprograms) {
        if (sub && !supported(*sub)) return false;
      }
    }
    return true;
  };
  if (!supported(*out.program)) {
    out.status = Outcome::Status::kSkip;
    return out;
  }
  for (const Tensor& t : c.expected) {
    if (!caps.HasDType(t.dtype())) {
      out.status = Outcome::Status::kSkip;
      return out;
    }
  }
  // Compile and run on private copies of the inputs (the table's tensors stay untouched).
  std::vector<Tensor> results;
  std::vector<Tensor> inputs;
  try {
    std::unique_ptr<compute::Executable> exe = backend->Compile(out.program);
    for (const Tensor& t : c.inputs) inputs.push_back(t.Clone());
    // Replica r runs on its own thread with inputs[r * num_params...], all on device 0.
    std::vector<std::vector<Tensor>> per_replica(static_cast<size_t>(c.replicas));
    auto run = [&](int r) {
      std::vector<compute::BufferPtr> buffers;
      std::vector<Shape> shapes, out_shapes;
      for (size_t i = 0; i < num_params; ++i) {
        const Tensor& t = inputs[static_cast<size_t>(r) * num_params + i];
        buffers.push_back(t.DeviceBuffer(backend, 0));
        shapes.push_back(t.shape());
      }
      std::vector<compute::BufferPtr> raw =
          exe->ExecuteWithShapes(buffers, shapes, std::vector<bool>(buffers.size(), false), 0, out_shapes);
      if (raw.size() != out.program->Outputs().size() || out_shapes.size() != raw.size())
        throw kiln::Error(fmt::format("Execute returned {} outputs, the program has {}", raw.size(),
                                      out.program->Outputs().size()));
      for (size_t i = 0; i < raw.size(); ++i)
        per_replica[static_cast<size_t>(r)].push_back(
            Tensor::FromBuffer(backend, 0, out_shapes[i], std::move(raw[i])));
    };
    if (c.replicas == 1) {
      run(0);
    } else {
      compute::ReplicaGroup group(c.replicas, 1, 0, nullptr, std::chrono::seconds(30));
      compute::RunReplicas(group, run);
    }
    for (auto& replica : per_replica) results.insert(results.end(), replica.begin(), replica.end());
  } catch (const std::exception& e) {
    return fail(fmt::format("compiling or running threw: {}\n  {}\n  program:\n{}", ErrorText(e), header(),
                            out.program->ToString()));
  }
  // Compare.
  std::string problems;
  if (results.size() != c.expected.size()) {
    problems += fmt::format("\n  {} outputs, expected {}", results.size(), c.expected.size());
  }
  for (size_t i = 0; i < std::min(results.size(), c.expected.size()); ++i) {
    std::string diff;
    try {
      diff = Compare(results[i], c.expected[i], c.tolerance);
    } catch (const std::exception& e) {
      diff = "reading the output threw: " + ErrorText(e);
    }
    if (!diff.empty()) problems += fmt::format("\n  output {}: {}", i, diff);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].Equal(c.inputs[i]))
      problems += fmt::format("\n  input {} was modified by the execution", i);
  }
  if (!problems.empty()) {
    std::string got;
    for (size_t i = 0; i < results.size(); ++i) {
      try {
        got += fmt::format("\n    [{}] {}: {}", i, results[i].shape().ToString(), results[i].ToString());
      } catch (const std::exception& e) {
        got += fmt::format("\n    [{}] unreadable: {}", i, ErrorText(e));
      }
    }
    return fail(fmt::format("{}\n  got:{}\n  mismatch:{}\n  program:\n{}", header(), got, problems,
                            out.program->ToString()));
  }
  out.status = Outcome::Status::kPass;
  return out;
}

bool Selected(const Case& c, const RunOptions& options) {
  if (!options.filter.empty() && c.op.find(options.filter) == std::string::npos) return false;
  if (!options.dtypes.empty() &&
      std::find(options.dtypes.begin(), options.dtypes.end(), c.dtype) == options.dtypes.end()) {
    return false;
  }
  return true;
}

}  // namespace

Report RunCases(const compute::BackendPtr& backend, const std::vector<Case>& cases,
                const RunOptions& options) {
  if (!backend) throw kiln::Error("conformance::RunAll: null backend");
  const auto start = std::chrono::steady_clock::now();
  Report report;
  report.backend = backend->Description();
  const compute::BackendCapabilities& caps = backend->Capabilities();
  std::vector<Outcome> outcomes(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    if (!Selected(c, options)) continue;
    ++report.rows_run;
    std::string failure;
    outcomes[i] = RunOne(backend, caps, c, options, failure);
    switch (outcomes[i].status) {
      case Outcome::Status::kPass:
        ++report.rows_passed;
        break;
      case Outcome::Status::kSkip:
        ++report.rows_skipped;
        break;
      case Outcome::Status::kFail:
        report.failures.push_back(Failure{c.op, c.name, c.dtype, failure});
        if (options.log != nullptr)
          *options.log << "conformance FAIL " << c.name << "\n  " << failure << "\n";
        break;
      case Outcome::Status::kStaticOnly:
        report.static_only.push_back(Failure{c.op, c.name, c.dtype, failure});
        break;
      case Outcome::Status::kNotRun:
        break;
    }
  }
  internal::FillMatrix(report, caps, cases, outcomes, options);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

Report RunAll(const compute::BackendPtr& backend, const RunOptions& options) {
  return RunCases(backend, Cases(), options);
}

}  // namespace kiln::conformance
