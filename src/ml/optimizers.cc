// Optimizers: learning-rate schedules, gradient clipping and weight decay, and the update rules
// of SGD, Adam/AdamW/Adamax (with AMSGrad), RMSProp and Adagrad (torch.optim's formulas), with their state as
// non-trainable store variables.

#include "kiln/ml/optimizers.h"

#include <bit>
#include <cmath>
#include <numbers>

#include "core/check.h"
#include "kiln/compute/composite.h"
#include "kiln/graph/control_flow.h"

namespace kiln::optimizers {

using graph::Graph;

namespace {

/// `step` (Int64) as Float64.
Node StepF64(Node step) { return graph::ConvertDType(step, DType::Float64); }

Node F64(Graph& g, double v) { return graph::Scalar(g, DType::Float64, v); }

}  // namespace

Schedule Constant(double rate) {
  return [rate](Node step, DType dtype) { return graph::Scalar(step.graph(), dtype, rate); };
}

Schedule LinearWarmup(double rate, int64_t warmup_steps, Schedule after) {
  if (warmup_steps < 1) kiln::detail::Throw("LinearWarmup: warmup_steps {} must be at least 1", warmup_steps);
  if (!after) after = Constant(rate);
  return [rate, warmup_steps, after](Node step, DType dtype) {
    Graph& g = step.graph();
    Node s = StepF64(step);
    Node warm = (s + 1.0) * (rate / static_cast<double>(warmup_steps));
    Node later = graph::ConvertDType(after(step, DType::Float64), DType::Float64);
    return graph::ConvertDType(
        graph::Where(graph::Less(s, F64(g, static_cast<double>(warmup_steps))), warm, later), dtype);
  };
}

Schedule CosineDecay(double rate, int64_t total_steps, int64_t warmup_steps, double min_rate) {
  if (total_steps <= warmup_steps)
    kiln::detail::Throw("CosineDecay: total_steps {} must exceed warmup_steps {}", total_steps, warmup_steps);
  Schedule cosine = [rate, total_steps, warmup_steps, min_rate](Node step, DType dtype) {
    Node s = StepF64(step);
    Node progress = graph::Clip(
        (s - static_cast<double>(warmup_steps)) / static_cast<double>(total_steps - warmup_steps), 0.0, 1.0);
    Node lr = (graph::Cos(progress * std::numbers::pi) + 1.0) * (0.5 * (rate - min_rate)) + min_rate;
    return graph::ConvertDType(lr, dtype);
  };
  return warmup_steps > 0 ? LinearWarmup(rate, warmup_steps, cosine) : cosine;
}

Schedule ExponentialDecay(double rate, double decay, int64_t decay_steps, bool staircase) {
  if (decay_steps < 1)
    kiln::detail::Throw("ExponentialDecay: decay_steps {} must be at least 1", decay_steps);
  return [rate, decay, decay_steps, staircase](Node step, DType dtype) {
    Node e = StepF64(step) / static_cast<double>(decay_steps);
    if (staircase) e = graph::Floor(e);
    Node lr = graph::Pow(F64(step.graph(), decay), e) * rate;
    return graph::ConvertDType(lr, dtype);
  };
}

namespace {

/// The non-trainable state variable `name` of `opt` for variable `v` ("/#optimizer/adam/w/m"),
/// starting at zeros.
model::Variable State(const model::Scope& scope, const std::string& opt, const model::Variable& v,
                      const std::string& name) {
  model::Initializer zeros = [](Graph& g, Node&, const Shape& s) { return graph::Zeros(g, s); };
  model::Scope at(scope.store(), "/#optimizer/" + opt + v.Path(), scope.graph(), zeros);
  model::Variable s = at.VariableWithShape(name, v.shape());
  s.SetTrainable(false);
  return s;
}

/// Gradients after clipping (by value, then by global norm as torch's clip_grad_norm_).
std::vector<Node> Clipped(const Common& c, std::vector<Node> grads) {
  if (c.clip_value > 0) {
    for (Node& g : grads) g = graph::Clip(g, -c.clip_value, c.clip_value);
  }
  if (c.clip_global_norm > 0 && !grads.empty()) {
    Node sum;
    for (const Node& g : grads) {
      Node g32 = g.dtype() == DType::Float64 ? g : graph::ConvertDType(g, DType::Float32);
      Node s = graph::ReduceAllSum(g32 * g32);
      if (s.dtype() != DType::Float64) s = graph::ConvertDType(s, DType::Float64);
      sum = sum.Ok() ? sum + s : s;
    }
    Node coef = graph::MinScalar(
        graph::Scalar(sum.graph(), DType::Float64, c.clip_global_norm) / (graph::Sqrt(sum) + 1e-6), 1.0);
    for (Node& g : grads) g = g * graph::ConvertDType(coef, g.dtype());
  }
  return grads;
}

/// Sets the variables and optimizer state of one step; with SkipNonFinite, a value is kept
/// unchanged when the step's gradients are not all finite (`ok` false).
class Assign {
 public:
  explicit Assign(Node ok) : ok_(std::move(ok)) {}
  void operator()(const model::Variable& v, Node value) const {
    if (ok_.Ok()) value = graph::Where(ok_, value, v.NodeValue(value.graph()));
    v.SetNodeValue(value);
  }

 private:
  Node ok_;
};

/// True when every element of every gradient is finite (a Bool scalar).
Node AllFinite(const std::vector<Node>& grads) {
  Node ok;
  for (const Node& g : grads) {
    Node f = graph::ReduceLogicalAnd(graph::IsFinite(g));
    ok = ok.Ok() ? graph::LogicalAnd(ok, f) : f;
  }
  return ok;
}

/// Shared frame: checks the lists, preprocesses the gradients, and calls
/// `update(v, w, g, lr, assign)` for each variable; the update sets values through `assign`.
template <typename Fn>
void ForEach(const char* name, const Common& c, const std::vector<model::Variable>& vars,
             const std::vector<Node>& grads_in, Node step, bool l2, Fn update) {
  if (vars.size() != grads_in.size())
    kiln::detail::Throw("optimizer {}: {} variables but {} gradients", name, vars.size(), grads_in.size());
  std::vector<Node> grads = Clipped(c, grads_in);
  const Assign assign(c.skip_non_finite && !grads.empty() ? AllFinite(grads) : Node());
  for (size_t i = 0; i < vars.size(); ++i) {
    const model::Variable& v = vars[i];
    if (!IsFloat(v.dtype()))
      kiln::detail::Throw("optimizer {}: variable \"{}\" is not float", name, v.Path());
    Node w = v.NodeValue(grads[i].graph());
    if (grads[i].shape() != w.shape()) {
      kiln::detail::Throw("optimizer {}: gradient {} for variable \"{}\" of shape {}", name, grads[i].shape(),
                          v.Path(), w.shape());
    }
    Node g = grads[i];
    if (l2 && c.weight_decay != 0) g = g + w * graph::ScalarLike(w, c.weight_decay);
    Node lr = c.schedule(step, w.dtype());
    update(v, w, g, lr, assign);
  }
}

class Sgd final : public Interface {
 public:
  Sgd(Common c, double momentum, bool nesterov)
      : c_(std::move(c)), momentum_(momentum), nesterov_(nesterov) {}
  std::string Name() const override { return "sgd"; }
  void UpdateGraph(model::Scope scope, const std::vector<model::Variable>& vars,
                   const std::vector<Node>& grads, Node step) override {
    ForEach("sgd", c_, vars, grads, step, true,
            [&](const model::Variable& v, Node w, Node g, Node lr, const Assign& assign) {
              if (momentum_ != 0) {
                model::Variable buf = State(scope, "sgd", v, "momentum");
                Node b = buf.NodeValue(w.graph()) * graph::ScalarLike(w, momentum_) + g;
                assign(buf, b);
                g = nesterov_ ? g + b * graph::ScalarLike(w, momentum_) : b;
              }
              assign(v, w - lr * g);
            });
  }

 private:
  Common c_;
  double momentum_;
  bool nesterov_;
};

class AdamOpt final : public Interface {
 public:
  AdamOpt(Common c, bool decoupled, bool adamax, bool amsgrad, double b1, double b2, double eps)
      : c_(std::move(c)),
        decoupled_(decoupled),
        adamax_(adamax),
        amsgrad_(amsgrad),
        b1_(b1),
        b2_(b2),
        eps_(eps) {}
  std::string Name() const override { return adamax_ ? "adamax" : decoupled_ ? "adamw" : "adam"; }
  void UpdateGraph(model::Scope scope, const std::vector<model::Variable>& vars,
                   const std::vector<Node>& grads, Node step) override {
    const std::string name = Name();
    ForEach(name.c_str(), c_, vars, grads, step, !decoupled_,
            [&](const model::Variable& v, Node w, Node g, Node lr, const Assign& assign) {
              Graph& gr = w.graph();
              model::Variable mv = State(scope, name, v, "m");
              // The first moment, for Adamax and AMSGrad (AdamUpdate computes its own).
              auto first_moment = [&] {
                return mv.NodeValue(gr) * graph::ScalarLike(w, b1_) + g * graph::ScalarLike(w, 1 - b1_);
              };
              // Bias corrections 1 - beta^t for t = step + 1, in float64, then in w's dtype.
              Node t = StepF64(step) + 1.0;
              Node bc1 = 1.0 - graph::Pow(F64(gr, b1_), t);
              Node step_size = lr / graph::ConvertDType(bc1, w.dtype());
              if (adamax_) {
                // torch.optim.Adamax: u = max(beta2·u, |g| + eps), no second bias correction.
                const Node m = first_moment();
                assign(mv, m);
                model::Variable uv = State(scope, name, v, "u");
                Node u = graph::Max(uv.NodeValue(gr) * graph::ScalarLike(w, b2_),
                                    graph::Abs(g) + graph::ScalarLike(w, eps_));
                assign(uv, u);
                assign(v, w - step_size * m / u);
                return;
              }
              model::Variable vv = State(scope, name, v, "v");
              if (!amsgrad_) {
                // One Composite per Float32 variable: one pass over its elements on the cpu backend.
                Node decay;
                if (decoupled_ && c_.weight_decay != 0)
                  decay = 1.0 - lr * graph::ScalarLike(w, c_.weight_decay);
                const Node sqrt_bc2 =
                    graph::ConvertDType(graph::Sqrt(1.0 - graph::Pow(F64(gr, b2_), t)), w.dtype());
                const std::vector<Node> r = AdamUpdate(w, g, mv.NodeValue(gr), vv.NodeValue(gr), step_size,
                                                       sqrt_bc2, b1_, b2_, eps_, decay);
                assign(mv, r[0]);
                assign(vv, r[1]);
                assign(v, r[2]);
                return;
              }
              const Node m = first_moment();
              assign(mv, m);
              Node s = vv.NodeValue(gr) * graph::ScalarLike(w, b2_) + g * g * graph::ScalarLike(w, 1 - b2_);
              assign(vv, s);
              if (amsgrad_) {
                model::Variable maxv = State(scope, name, v, "v_max");
                s = graph::Max(maxv.NodeValue(gr), s);
                assign(maxv, s);
              }
              Node bc2 = 1.0 - graph::Pow(F64(gr, b2_), t);
              Node denom = graph::Sqrt(s) / graph::ConvertDType(graph::Sqrt(bc2), w.dtype()) +
                           graph::ScalarLike(w, eps_);
              Node base = w;
              if (decoupled_ && c_.weight_decay != 0)
                base = w * (1.0 - lr * graph::ScalarLike(w, c_.weight_decay));
              assign(v, base - step_size * m / denom);
            });
  }

 private:
  Common c_;
  bool decoupled_, adamax_, amsgrad_;
  double b1_, b2_, eps_;
};

class RmsProp final : public Interface {
 public:
  RmsProp(Common c, double alpha, double eps, double momentum)
      : c_(std::move(c)), alpha_(alpha), eps_(eps), momentum_(momentum) {}
  std::string Name() const override { return "rmsprop"; }
  void UpdateGraph(model::Scope scope, const std::vector<model::Variable>& vars,
                   const std::vector<Node>& grads, Node step) override {
    ForEach("rmsprop", c_, vars, grads, step, true,
            [&](const model::Variable& v, Node w, Node g, Node lr, const Assign& assign) {
              Graph& gr = w.graph();
              model::Variable sq = State(scope, "rmsprop", v, "square_avg");
              Node s =
                  sq.NodeValue(gr) * graph::ScalarLike(w, alpha_) + g * g * graph::ScalarLike(w, 1 - alpha_);
              assign(sq, s);
              Node avg = graph::Sqrt(s) + graph::ScalarLike(w, eps_);
              if (momentum_ != 0) {
                model::Variable buf = State(scope, "rmsprop", v, "momentum");
                Node b = buf.NodeValue(gr) * graph::ScalarLike(w, momentum_) + g / avg;
                assign(buf, b);
                assign(v, w - lr * b);
              } else {
                assign(v, w - lr * g / avg);
              }
            });
  }

 private:
  Common c_;
  double alpha_, eps_, momentum_;
};

class AdagradOpt final : public Interface {
 public:
  AdagradOpt(Common c, double eps) : c_(std::move(c)), eps_(eps) {}
  std::string Name() const override { return "adagrad"; }
  void UpdateGraph(model::Scope scope, const std::vector<model::Variable>& vars,
                   const std::vector<Node>& grads, Node step) override {
    ForEach("adagrad", c_, vars, grads, step, true,
            [&](const model::Variable& v, Node w, Node g, Node lr, const Assign& assign) {
              model::Variable sum = State(scope, "adagrad", v, "sum");
              Node s = sum.NodeValue(w.graph()) + g * g;
              assign(sum, s);
              assign(v, w - lr * g / (graph::Sqrt(s) + graph::ScalarLike(w, eps_)));
            });
  }

 private:
  Common c_;
  double eps_;
};

Common WithDefaultRate(Common c, double rate) {
  if (!c.schedule) c.schedule = Constant(rate);
  return c;
}

}  // namespace

std::vector<Node> AdamUpdate(Node w, Node g, Node m, Node v, Node step_size, Node sqrt_bc2, double b1,
                             double b2, double eps, Node decay) {
  for (const Node* n : {&w, &g, &m, &v, &step_size, &sqrt_bc2})
    if (!n->Ok()) kiln::detail::Throw("optimizers::AdamUpdate: an operand is not a valid node");
  if (g.shape() != w.shape() || m.shape() != w.shape() || v.shape() != w.shape())
    kiln::detail::Throw("optimizers::AdamUpdate: w {}, g {}, m {} and v {} must have one shape", w.shape(),
                        g.shape(), m.shape(), v.shape());
  for (const Node* n : {&step_size, &sqrt_bc2, &decay}) {
    if (n->Ok() && (!n->shape().IsScalar() || n->dtype() != w.dtype()))
      kiln::detail::Throw("optimizers::AdamUpdate: step_size, sqrt_bc2 and decay must be {} scalars, got {}",
                          w.dtype(), n->shape());
  }
  // The update written with graph ops: the decomposition, and the graph itself for other dtypes.
  auto update = [b1, b2, eps](const std::vector<Node>& p) {
    const Node &pw = p[0], &pg = p[1];
    const Node m2 = p[2] * graph::ScalarLike(pw, b1) + pg * graph::ScalarLike(pw, 1 - b1);
    const Node v2 = p[3] * graph::ScalarLike(pw, b2) + pg * pg * graph::ScalarLike(pw, 1 - b2);
    const Node denom = graph::Sqrt(v2) / p[5] + graph::ScalarLike(pw, eps);
    const Node base = p.size() > 6 ? pw * p[6] : pw;
    return std::vector<Node>{m2, v2, base - p[4] * m2 / denom};
  };
  std::vector<Node> operands = {w, g, m, v, step_size, sqrt_bc2};
  if (decay.Ok()) operands.push_back(decay);
  if (w.dtype() != DType::Float32) return update(operands);
  namespace cm = compute::composite;
  auto bits = [](double x) { return static_cast<int64_t>(std::bit_cast<uint32_t>(static_cast<float>(x))); };
  std::vector<int64_t> values(cm::kNumAdamUpdateValues);
  values[cm::kAdamBeta1] = bits(b1);
  values[cm::kAdamOneMinusBeta1] = bits(1 - b1);
  values[cm::kAdamBeta2] = bits(b2);
  values[cm::kAdamOneMinusBeta2] = bits(1 - b2);
  values[cm::kAdamEpsilon] = bits(eps);
  values[cm::kAdamHasDecay] = decay.Ok() ? 1 : 0;
  return graph::Composite(cm::kAdamUpdate, values, operands, update);
}

SgdBuilder::SgdBuilder() = default;
Optimizer SgdBuilder::Done() {
  return std::make_shared<Sgd>(WithDefaultRate(common_, 0.1), momentum_, nesterov_);
}
SgdBuilder StochasticGradientDescent() { return SgdBuilder(); }

AdamBuilder::AdamBuilder(bool decoupled) : decoupled_(decoupled) {
  if (decoupled) common_.weight_decay = 0.01;  // torch.optim.AdamW's default.
}
Optimizer AdamBuilder::Done() {
  if (adamax_ && amsgrad_)
    kiln::detail::Throw("optimizer adamax: Amsgrad applies to Adam and AdamW, not Adamax");
  if (adamax_ && decoupled_)
    kiln::detail::Throw("optimizer adamax: decoupled weight decay (AdamW) applies to Adam only");
  return std::make_shared<AdamOpt>(WithDefaultRate(common_, 0.001), decoupled_, adamax_, amsgrad_, beta1_,
                                   beta2_, epsilon_);
}
AdamBuilder Adam() { return AdamBuilder(false); }
AdamBuilder AdamW() { return AdamBuilder(true); }
AdamBuilder Adamax() {
  AdamBuilder b(false);
  b.Adamax();
  return b;
}

RmsPropBuilder::RmsPropBuilder() = default;
Optimizer RmsPropBuilder::Done() {
  return std::make_shared<RmsProp>(WithDefaultRate(common_, 0.01), alpha_, epsilon_, momentum_);
}
RmsPropBuilder RMSProp() { return RmsPropBuilder(); }

AdagradBuilder::AdagradBuilder() = default;
Optimizer AdagradBuilder::Done() {
  return std::make_shared<AdagradOpt>(WithDefaultRate(common_, 0.01), epsilon_);
}
AdagradBuilder Adagrad() { return AdagradBuilder(); }

Optimizer FromStore(const model::Store& store) {
  model::Scope root = store.RootScope();
  const std::string name = model::GetParamOr(root, "optimizer", "adam");
  const double default_rate = name == "sgd" ? 0.1 : name == "rmsprop" || name == "adagrad" ? 0.01 : 0.001;
  const double rate = model::GetParamOr(root, "learning_rate", default_rate);
  Common c;
  c.schedule = Constant(rate);
  const int64_t warmup = model::GetParamOr(root, "learning_rate_warmup_steps", int64_t{0});
  const int64_t cosine = model::GetParamOr(root, "learning_rate_cosine_steps", int64_t{0});
  const double min_rate = model::GetParamOr(root, "learning_rate_min", 0.0);
  if (cosine > 0) {
    c.schedule = CosineDecay(rate, cosine, warmup, min_rate);
  } else if (warmup > 0) {
    c.schedule = LinearWarmup(rate, warmup);
  }
  c.clip_value = model::GetParamOr(root, "clip_step_by_value", 0.0);
  c.clip_global_norm = model::GetParamOr(root, "clip_global_norm", 0.0);
  c.weight_decay = model::GetParamOr(root, "weight_decay", 0.0);
  const bool skip = model::GetParamOr(root, "clip_nan", false);
  if (name == "adam" || name == "adamw" || name == "adamax") {
    AdamBuilder b(name == "adamw");
    b.WithSchedule(c.schedule).ClipValue(c.clip_value).ClipGlobalNorm(c.clip_global_norm).SkipNonFinite(skip);
    b.Betas(model::GetParamOr(root, "adam_beta1", 0.9), model::GetParamOr(root, "adam_beta2", 0.999));
    b.Epsilon(model::GetParamOr(root, "adam_epsilon", 1e-8));
    const double wd = model::GetParamOr(root, "adam_weight_decay", name == "adamw" ? 0.01 : c.weight_decay);
    b.WeightDecay(wd);
    b.Adamax(name == "adamax").Amsgrad(model::GetParamOr(root, "adam_amsgrad", false));
    return b.Done();
  }
  if (name == "sgd") {
    SgdBuilder b;
    b.WithSchedule(c.schedule)
        .ClipValue(c.clip_value)
        .ClipGlobalNorm(c.clip_global_norm)
        .WeightDecay(c.weight_decay)
        .SkipNonFinite(skip);
    b.Momentum(model::GetParamOr(root, "sgd_momentum", 0.0))
        .Nesterov(model::GetParamOr(root, "sgd_nesterov", false));
    return b.Done();
  }
  if (name == "rmsprop") {
    RmsPropBuilder b;
    b.WithSchedule(c.schedule)
        .ClipValue(c.clip_value)
        .ClipGlobalNorm(c.clip_global_norm)
        .WeightDecay(c.weight_decay)
        .SkipNonFinite(skip);
    b.Alpha(model::GetParamOr(root, "rmsprop_alpha", 0.99));
    return b.Done();
  }
  if (name == "adagrad") {
    AdagradBuilder b;
    b.WithSchedule(c.schedule)
        .ClipValue(c.clip_value)
        .ClipGlobalNorm(c.clip_global_norm)
        .WeightDecay(c.weight_decay)
        .SkipNonFinite(skip);
    return b.Done();
  }
  kiln::detail::Throw(
      "optimizers::FromStore: unknown optimizer \"{}\" (valid: adam, adamw, adamax, sgd, rmsprop, adagrad)",
      name);
}

}  // namespace kiln::optimizers
