#pragma once
/// @file
/// Optimizers (kiln::optimizers): they append to a training graph the update of the trainable
/// variables from their gradients, keeping their state (moments, accumulators) as non-trainable
/// variables under "/#optimizer/<name>/..." in the store, so it is checkpointed and resumed.
///
///   optimizers::Optimizer adam = optimizers::Adam().LearningRate(0.003).Done();
///   optimizers::Optimizer fromStore = optimizers::FromStore(store);  // "optimizer", "learning_rate"...

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/graph/ops.h"
#include "kiln/model/store.h"

namespace kiln::optimizers {

using graph::Node;

/// The learning rate at a step: `step` is the global step (Int64 scalar) of the update being
/// built (0 for the first), the result a scalar of `dtype`.
using Schedule = std::function<Node(Node step, DType dtype)>;

/// A constant rate.
Schedule Constant(double rate);
/// Linear warm-up from 0 to `rate` over `warmup_steps`, then `after` (Constant(rate) by default).
Schedule LinearWarmup(double rate, int64_t warmup_steps, Schedule after = {});
/// Linear warm-up to `rate`, then cosine decay to `min_rate` at `total_steps` (held after).
Schedule CosineDecay(double rate, int64_t total_steps, int64_t warmup_steps = 0, double min_rate = 0);
/// rate · decay^(step / decay_steps) (continuous, or stepwise when `staircase`).
Schedule ExponentialDecay(double rate, double decay, int64_t decay_steps, bool staircase = false);

/// What every optimizer does.
class Interface {
 public:
  virtual ~Interface() = default;
  /// Appends to the graph the updates of `vars` from `grads` (same order and shapes), setting
  /// each variable's new value (SetNodeValue) and the optimizer's state. `scope` is bound to the
  /// graph being built; `step` is the global step before this update (Int64 scalar).
  virtual void UpdateGraph(model::Scope scope, const std::vector<model::Variable>& vars,
                           const std::vector<Node>& grads, Node step) = 0;
  /// "adam", "sgd"...
  virtual std::string Name() const = 0;
};
/// Shared handle to an optimizer (what Trainer takes).
using Optimizer = std::shared_ptr<Interface>;

/// Settings shared by the builders.
struct Common {
  Schedule schedule;             ///< The learning rate per step (empty: the optimizer's default rate).
  double clip_global_norm = 0;   ///< > 0: gradients scaled so their global L2 norm is at most this.
  double clip_value = 0;         ///< > 0: each gradient element clipped to [-v, v].
  double weight_decay = 0;       ///< L2 (added to the gradient); decoupled for AdamW.
  bool skip_non_finite = false;  ///< Skip a step whose gradients hold a NaN or an infinity.
};

/// Builder base: LearningRate / Schedule / ClipGlobalNorm / ClipValue / WeightDecay, then Done().
template <typename Derived>
class Builder {
 public:
  /// A constant learning rate (Constant(rate)).
  Derived& LearningRate(double rate) {
    common_.schedule = Constant(rate);
    return self();
  }
  /// A learning-rate schedule (LinearWarmup, CosineDecay...), replacing LearningRate.
  Derived& WithSchedule(Schedule s) {
    common_.schedule = std::move(s);
    return self();
  }
  /// Scales all gradients together so their global L2 norm is at most `norm` (0: off).
  Derived& ClipGlobalNorm(double norm) {
    common_.clip_global_norm = norm;
    return self();
  }
  /// Clips each gradient element to [-v, v] (0: off).
  Derived& ClipValue(double v) {
    common_.clip_value = v;
    return self();
  }
  /// Weight decay: wd·w added to each gradient (decoupled, applied to the weights, for AdamW).
  Derived& WeightDecay(double wd) {
    common_.weight_decay = wd;
    return self();
  }
  /// Skips every step whose gradients (any of them, after clipping) hold a NaN or an infinity:
  /// the variables and the optimizer's state keep their values (GoMLX's "clip_nan"). Training
  /// goes on past a spurious bad batch; a model whose every step is skipped stops learning.
  Derived& SkipNonFinite(bool skip = true) {
    common_.skip_non_finite = skip;
    return self();
  }

 protected:
  Common common_;  ///< The settings collected so far, read by the derived builder's Done().

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

/// Stochastic gradient descent with optional (Nesterov) momentum, as torch.optim.SGD.
class SgdBuilder : public Builder<SgdBuilder> {
 public:
  /// Plain SGD: no momentum; learning rate 0.1 unless set.
  SgdBuilder();
  /// Momentum factor (0: none), as torch's `momentum`.
  SgdBuilder& Momentum(double m) {
    momentum_ = m;
    return *this;
  }
  /// Nesterov momentum (with Momentum > 0), as torch's `nesterov`.
  SgdBuilder& Nesterov(bool n = true) {
    nesterov_ = n;
    return *this;
  }
  /// The optimizer, named "sgd".
  Optimizer Done();

 private:
  double momentum_ = 0;
  bool nesterov_ = false;
};
/// Starts an SGD optimizer: StochasticGradientDescent().LearningRate(0.1).Momentum(0.9).Done().
SgdBuilder StochasticGradientDescent();

/// Adam (and AdamW: decoupled weight decay), as torch.optim.Adam / AdamW.
class AdamBuilder : public Builder<AdamBuilder> {
 public:
  /// Adam, or AdamW when `decoupled` (then weight decay 0.01 by default, as torch's AdamW);
  /// learning rate 0.001 unless set.
  explicit AdamBuilder(bool decoupled);
  /// Decay rates of the first and second moment estimates (default 0.9, 0.999).
  AdamBuilder& Betas(double beta1, double beta2) {
    beta1_ = beta1;
    beta2_ = beta2;
    return *this;
  }
  /// Added to the second moment's square root in the denominator (default 1e-8).
  AdamBuilder& Epsilon(double eps) {
    epsilon_ = eps;
    return *this;
  }
  /// Adamax (GoMLX's Adamax(), torch.optim.Adamax): the second moment becomes an infinity
  /// norm, u = max(beta2·u, |g| + eps), and the step lr/(1 - beta1^t)·m/u. Named "adamax".
  AdamBuilder& Adamax(bool adamax = true) {
    adamax_ = adamax;
    return *this;
  }
  /// AMSGrad (torch's amsgrad=True): the denominator uses the largest second moment so far.
  AdamBuilder& Amsgrad(bool amsgrad = true) {
    amsgrad_ = amsgrad;
    return *this;
  }
  /// The optimizer, named "adam", "adamw" or "adamax". Adamax with Amsgrad, or with decoupled
  /// weight decay, is a kiln::Error.
  Optimizer Done();

 private:
  bool decoupled_;
  bool adamax_ = false, amsgrad_ = false;
  double beta1_ = 0.9, beta2_ = 0.999, epsilon_ = 1e-8;
};
/// Starts an Adam optimizer: Adam().LearningRate(0.001).Done().
AdamBuilder Adam();
/// Starts an AdamW optimizer (decoupled weight decay, 0.01 by default).
AdamBuilder AdamW();
/// Starts an Adamax optimizer: Adam().Adamax() (learning rate 0.001 unless set, as GoMLX's).
AdamBuilder Adamax();

/// The new values of one Adam step of tensor `w` with gradient `g` and moments `m`, `v`, for
/// graphs that keep their own state (Adam and AdamW apply it to each variable):
///   m' = m·b1 + g·(1 − b1),  v' = v·b2 + g·g·(1 − b2),
///   w' = w·decay − step_size·m' / (sqrt(v') / sqrt_bc2 + eps),
/// with the scalars (of w's dtype) step_size = lr / (1 − b1^t) and sqrt_bc2 = sqrt(1 − b2^t) for
/// step t = 1, 2, ..., and `decay` = 1 − lr·weight_decay for AdamW (omitted: no decay), as
/// torch.optim.Adam/AdamW compute them. Float32 tensors become one "kiln.adam_update" Composite
/// (the cpu backend runs it in one pass; kiln/compute/composite.h). Returns {m', v', w'}.
std::vector<Node> AdamUpdate(Node w, Node g, Node m, Node v, Node step_size, Node sqrt_bc2, double b1 = 0.9,
                             double b2 = 0.999, double eps = 1e-8, Node decay = Node());

/// RMSProp, as torch.optim.RMSprop (alpha 0.99, eps 1e-8, optional momentum).
class RmsPropBuilder : public Builder<RmsPropBuilder> {
 public:
  /// RMSProp with learning rate 0.01 unless set.
  RmsPropBuilder();
  /// Smoothing constant of the squared-gradient average (default 0.99).
  RmsPropBuilder& Alpha(double a) {
    alpha_ = a;
    return *this;
  }
  /// Added to the average's square root in the denominator (default 1e-8).
  RmsPropBuilder& Epsilon(double eps) {
    epsilon_ = eps;
    return *this;
  }
  /// Momentum factor (0: none).
  RmsPropBuilder& Momentum(double m) {
    momentum_ = m;
    return *this;
  }
  /// The optimizer, named "rmsprop".
  Optimizer Done();

 private:
  double alpha_ = 0.99, epsilon_ = 1e-8, momentum_ = 0;
};
/// Starts an RMSProp optimizer.
RmsPropBuilder RMSProp();

/// Adagrad, as torch.optim.Adagrad (eps 1e-10).
class AdagradBuilder : public Builder<AdagradBuilder> {
 public:
  /// Adagrad with learning rate 0.01 unless set.
  AdagradBuilder();
  /// Added to the accumulated squares' square root in the denominator (default 1e-10).
  AdagradBuilder& Epsilon(double eps) {
    epsilon_ = eps;
    return *this;
  }
  /// The optimizer, named "adagrad".
  Optimizer Done();

 private:
  double epsilon_ = 1e-10;
};
/// Starts an Adagrad optimizer.
AdagradBuilder Adagrad();

/// The optimizer the store's hyperparameters describe (GoMLX's keys): "optimizer" ("adam"
/// (default), "adamw", "adamax", "sgd", "rmsprop", "adagrad"), "learning_rate" (default 0.001;
/// 0.1 for sgd), "adam_epsilon", "adam_beta1", "adam_beta2", "adam_weight_decay",
/// "adam_amsgrad", "clip_nan" (SkipNonFinite), "sgd_momentum",
/// "sgd_nesterov", "rmsprop_alpha", "clip_step_by_value", "clip_global_norm",
/// "learning_rate_warmup_steps", "learning_rate_cosine_steps" (with "learning_rate_min"),
/// "weight_decay". An unknown optimizer name is a kiln::Error listing the valid ones.
Optimizer FromStore(const model::Store& store);

}  // namespace kiln::optimizers
