// The gradient checker: autodiff on the backend under test against central differences in
// Float64 on ref, first order (the full vector-Jacobian product) and second order (a
// Hessian-vector product).

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <ostream>
#include <random>
#include <set>
#include <stdexcept>

#include "kiln/conformance/gradients.h"
#include "kiln/graph/gradient.h"
#include "kiln/graph/ops.h"

namespace kiln::conformance {

using graph::Graph;
using graph::Node;

bool GradReport::Ok() const {
  for (const GradResult& r : results)
    if (!r.passed) return false;
  return !results.empty();
}

std::set<compute::OpType> GradReport::Covered() const {
  std::set<compute::OpType> s;
  for (const GradResult& r : results)
    if (r.passed) s.insert(r.primitives.begin(), r.primitives.end());
  return s;
}

namespace {

Tensor WithFlat(const Tensor& like, const std::vector<double>& values) {
  return Tensor::FromFlat(like.shape(), std::span<const double>(values));
}

std::vector<double> RandomValues(std::mt19937_64& rng, int64_t n, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = u(rng);
  return v;
}

/// One row's machinery: the loss function, its gradient and its Hessian-vector product.
class Checker {
 public:
  Checker(const GradCase& c, compute::BackendPtr backend, compute::BackendPtr ref)
      : c_(c), backend_(std::move(backend)), ref_(std::move(ref)) {
    for (size_t i = 0; i < c_.inputs.size(); ++i) {
      const bool chosen = c_.wrt.empty()
                              ? c_.inputs[i].dtype() == DType::Float64
                              : std::find(c_.wrt.begin(), c_.wrt.end(), static_cast<int>(i)) != c_.wrt.end();
      if (chosen) {
        if (c_.inputs[i].dtype() != DType::Float64)
          throw std::invalid_argument(fmt::format("input {} is differentiated but is {}, not Float64", i,
                                                  c_.inputs[i].shape().ToString()));
        wrt_.push_back(static_cast<int>(i));
      }
    }
    if (wrt_.empty()) throw std::invalid_argument("no Float64 input to differentiate");
    std::mt19937_64 rng(std::hash<std::string>{}(c_.name));
    // Output weights: probe the output shapes once on ref.
    graph::Exec probe(
        ref_, [this](Graph& g, const std::vector<Node>& p) { return c_.build(g, p); },
        static_cast<int>(c_.inputs.size()), c_.name);
    for (const Tensor& o : probe.Call(c_.inputs)) {
      if (IsFloat(o.dtype()))
        weights_.push_back(Tensor::FromFlat(Shape(DType::Float64, o.shape().Dimensions()),
                                            RandomValues(rng, o.Size(), -1, 1)));
      else
        weights_.push_back(Tensor());
    }
    for (int i : wrt_)
      direction_.push_back(WithFlat(c_.inputs[static_cast<size_t>(i)],
                                    RandomValues(rng, c_.inputs[static_cast<size_t>(i)].Size(), -1, 1)));
  }

  /// L(x) on ref.
  double Loss(const std::vector<Tensor>& inputs) {
    if (!loss_) {
      loss_ = std::make_unique<graph::Exec>(
          ref_, [this](Graph& g, const std::vector<Node>& p) { return std::vector<Node>{LossNode(g, p)}; },
          static_cast<int>(c_.inputs.size()), c_.name + " loss");
    }
    return loss_->Call1(inputs).Item<double>();
  }

  /// The autodiff gradient on `backend` (one tensor per wrt input).
  std::vector<Tensor> Grad(const compute::BackendPtr& backend, const std::vector<Tensor>& inputs) {
    auto& exec = backend == backend_ ? grad_ : grad_ref_;
    if (!exec) {
      exec = std::make_unique<graph::Exec>(
          backend,
          [this](Graph& g, const std::vector<Node>& p) {
            std::vector<Node> targets;
            for (int i : wrt_) targets.push_back(p[static_cast<size_t>(i)]);
            return graph::Gradient(LossNode(g, p), targets);
          },
          static_cast<int>(c_.inputs.size()), c_.name + " gradient");
    }
    return exec->Call(inputs);
  }

  /// The Hessian-vector product along direction_ on the backend under test.
  std::vector<Tensor> Hvp(const std::vector<Tensor>& inputs) {
    if (!hvp_) {
      hvp_ = std::make_unique<graph::Exec>(
          backend_,
          [this](Graph& g, const std::vector<Node>& p) {
            std::vector<Node> targets;
            for (int i : wrt_) targets.push_back(p[static_cast<size_t>(i)]);
            std::vector<Node> grads = graph::Gradient(LossNode(g, p), targets);
            Node inner;
            for (size_t k = 0; k < grads.size(); ++k) {
              Node term = graph::ReduceAllSum(graph::Mul(grads[k], graph::Const(g, direction_[k])));
              inner = inner.Ok() ? graph::Add(inner, term) : term;
            }
            return graph::Gradient(inner, targets);
          },
          static_cast<int>(c_.inputs.size()), c_.name + " hvp");
    }
    return hvp_->Call(inputs);
  }

  const std::vector<int>& wrt() const { return wrt_; }
  const std::vector<Tensor>& direction() const { return direction_; }

  /// Ops of the row's own function (not the loss around it) that depend on a wrt input.
  std::vector<compute::OpType> Primitives() {
    Graph g("primitives");
    std::vector<Node> params;
    for (const Tensor& t : c_.inputs) params.push_back(g.Parameter(t.shape()));
    c_.build(g, params);
    std::vector<bool> dep(static_cast<size_t>(g.NumNodes()), false);
    for (int i : wrt_) dep[static_cast<size_t>(params[static_cast<size_t>(i)].id())] = true;
    std::set<compute::OpType> ops;
    for (int id = 0; id < g.NumNodes(); ++id) {
      const compute::Instruction& inst = g.instruction(id);
      for (int o : inst.operands)
        if (dep[static_cast<size_t>(o)]) dep[static_cast<size_t>(id)] = true;
      if (dep[static_cast<size_t>(id)] && inst.op != compute::OpType::Parameter) ops.insert(inst.op);
    }
    return {ops.begin(), ops.end()};
  }

 private:
  Node LossNode(Graph& g, const std::vector<Node>& p) {
    std::vector<Node> outs = c_.build(g, p);
    Node loss;
    for (size_t k = 0; k < outs.size() && k < weights_.size(); ++k) {
      if (!weights_[k].Ok()) continue;
      Node o = outs[k].dtype() == DType::Float64 ? outs[k] : graph::ConvertDType(outs[k], DType::Float64);
      Node term = graph::ReduceAllSum(graph::Mul(o, graph::Const(g, weights_[k])));
      loss = loss.Ok() ? graph::Add(loss, term) : term;
    }
    if (!loss.Ok()) throw std::invalid_argument("the function has no float output");
    return loss;
  }

  const GradCase& c_;
  compute::BackendPtr backend_, ref_;
  std::vector<int> wrt_;
  std::vector<Tensor> weights_, direction_;
  std::unique_ptr<graph::Exec> loss_, grad_, grad_ref_, hvp_;
};

/// Compares element by element; returns "" or the mismatches.
std::string Compare(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
                    double tol) {
  std::string msg;
  int shown = 0;
  for (size_t j = 0; j < got.size(); ++j) {
    const bool ok = std::abs(got[j] - want[j]) <= tol * (1 + std::abs(want[j]));
    if (!ok && shown++ < 6)
      msg += fmt::format("  {}[{}]: autodiff {} numeric {}\n", what, j, got[j], want[j]);
  }
  if (shown > 6) msg += fmt::format("  ... {} mismatches in {}\n", shown, what);
  return msg;
}

GradResult RunOne(const GradCase& c, const compute::BackendPtr& backend, const compute::BackendPtr& ref) {
  GradResult r;
  r.name = c.name;
  try {
    Checker k(c, backend, ref);
    r.primitives = k.Primitives();
    std::vector<Tensor> grads = k.Grad(backend, c.inputs);
    std::string msg;
    for (size_t w = 0; w < k.wrt().size(); ++w) {
      const size_t i = static_cast<size_t>(k.wrt()[w]);
      std::vector<double> x = c.inputs[i].ToVector<double>();
      std::vector<double> numeric(x.size());
      std::vector<Tensor> in = c.inputs;
      for (size_t j = 0; j < x.size(); ++j) {
        std::vector<double> xp = x, xm = x;
        xp[j] += c.epsilon;
        xm[j] -= c.epsilon;
        in[i] = WithFlat(c.inputs[i], xp);
        const double lp = k.Loss(in);
        in[i] = WithFlat(c.inputs[i], xm);
        const double lm = k.Loss(in);
        numeric[j] = (lp - lm) / (2 * c.epsilon);
      }
      msg += Compare(fmt::format("d/d input{}", i), grads[w].ToVector<double>(), numeric, c.tolerance);
    }
    if (c.second_order && msg.empty()) {
      std::vector<Tensor> hvp = k.Hvp(c.inputs);
      std::vector<Tensor> plus = c.inputs, minus = c.inputs;
      for (size_t w = 0; w < k.wrt().size(); ++w) {
        const size_t i = static_cast<size_t>(k.wrt()[w]);
        std::vector<double> x = c.inputs[i].ToVector<double>(), v = k.direction()[w].ToVector<double>();
        std::vector<double> xp = x, xm = x;
        for (size_t j = 0; j < x.size(); ++j) {
          xp[j] += c.epsilon * v[j];
          xm[j] -= c.epsilon * v[j];
        }
        plus[i] = WithFlat(c.inputs[i], xp);
        minus[i] = WithFlat(c.inputs[i], xm);
      }
      std::vector<Tensor> gp = k.Grad(ref, plus), gm = k.Grad(ref, minus);
      for (size_t w = 0; w < k.wrt().size(); ++w) {
        std::vector<double> a = gp[w].ToVector<double>(), b = gm[w].ToVector<double>();
        std::vector<double> numeric(a.size());
        for (size_t j = 0; j < a.size(); ++j) numeric[j] = (a[j] - b[j]) / (2 * c.epsilon);
        msg += Compare(fmt::format("Hv input{}", k.wrt()[w]), hvp[w].ToVector<double>(), numeric,
                       c.tolerance * 10);
      }
    }
    r.passed = msg.empty();
    r.message = msg;
  } catch (const std::exception& e) {
    r.message = fmt::format("  error: {}\n", e.what());
  }
  return r;
}

}  // namespace

GradReport CheckGradients(const compute::BackendPtr& backend, const std::string& filter, std::ostream* log) {
  const auto start = std::chrono::steady_clock::now();
  GradReport report;
  report.backend = backend->Description();
  compute::BackendPtr ref = compute::NewWithConfig("ref");
  for (const GradCase& c : GradCases()) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    GradResult r = RunOne(c, backend, ref);
    if (!r.passed && log != nullptr) *log << "FAIL " << r.name << "\n" << r.message;
    report.results.push_back(std::move(r));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::string GradFailureReport(const GradReport& report) {
  std::string s;
  for (const GradResult& r : report.results)
    if (!r.passed) s += fmt::format("{} on {}:\n{}", r.name, report.backend, r.message);
  return s;
}

}  // namespace kiln::conformance
