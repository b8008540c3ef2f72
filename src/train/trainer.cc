// train::Trainer: the training and evaluation steps as model::Execs, and Eval over a dataset.

#include "kiln/train/trainer.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/check.h"
#include "kiln/compute/backend.h"
#include "kiln/compute/replicas.h"
#include "kiln/distributed/distributed.h"
#include "kiln/graph/collective.h"
#include "kiln/graph/gradient.h"
#include "kiln/model/exec.h"
#include "model/model_internal.h"

namespace kiln::train {

using graph::Node;

namespace {

/// Device d's part of a batch for a data-parallel step: examples d, d + devices, d + 2 devices...
/// (on device d).
std::vector<Tensor> SplitExamples(const Tensor& t, int devices, const compute::BackendPtr& backend) {
  if (devices == 1) return {t};
  if (t.rank() < 1 || t.shape().Dim(0) % devices != 0)
    kiln::detail::Throw("Trainer::DataParallel: a batch of shape {} does not split evenly over {} devices",
                        t.shape(), devices);
  std::vector<int64_t> dims = t.shape().Dimensions();
  const int64_t rows = dims[0], per = rows / devices;
  const int64_t row_bytes = rows == 0 ? 0 : t.shape().ByteSize() / rows;
  dims[0] = per;
  std::vector<Tensor> parts;
  t.ConstBytes([&](std::span<const uint8_t> src) {
    for (int d = 0; d < devices; ++d) {
      Tensor part = Tensor::FromShapeForBackend(backend, d, Shape(t.dtype(), dims));
      part.MutableBytes([&](std::span<uint8_t> dst) {
        for (int64_t j = 0; j < per; ++j)  // Example j * devices + d of the batch.
          std::memcpy(dst.data() + j * row_bytes, src.data() + (j * devices + d) * row_bytes,
                      static_cast<size_t>(row_bytes));
      });
      parts.push_back(std::move(part));
    }
  });
  return parts;
}

struct LossTerms {
  std::vector<Node> terms;
};

/// Every process's `local` numbers (of any length), in rank order, on every process: the lengths,
/// then the numbers, each through a sum over the processes of vectors that are zero outside the
/// sender's part (adding zeros keeps every value exactly).
std::vector<std::vector<double>> GatherFromEveryProcess(const std::vector<double>& local,
                                                        const std::string& what) {
  const int world = distributed::WorldSize(), rank = distributed::Rank();
  std::vector<double> lengths(static_cast<size_t>(world), 0.0);
  lengths[static_cast<size_t>(rank)] = static_cast<double>(local.size());
  distributed::AllReduceSum(lengths, what + " (lengths)");
  size_t total = 0, at = 0;
  for (int r = 0; r < world; ++r) {
    if (r < rank) at += static_cast<size_t>(lengths[static_cast<size_t>(r)]);
    total += static_cast<size_t>(lengths[static_cast<size_t>(r)]);
  }
  std::vector<double> all(total, 0.0);
  std::copy(local.begin(), local.end(), all.begin() + static_cast<long>(at));
  distributed::AllReduceSum(all, what);
  std::vector<std::vector<double>> parts;
  at = 0;
  for (int r = 0; r < world; ++r) {
    const size_t n = static_cast<size_t>(lengths[static_cast<size_t>(r)]);
    parts.emplace_back(all.begin() + static_cast<long>(at), all.begin() + static_cast<long>(at + n));
    at += n;
  }
  return parts;
}

}  // namespace

void AddLoss(const model::Scope& scope, Node term) {
  if (scope.graph() == nullptr)
    kiln::detail::Throw("train::AddLoss: the scope is not bound to a graph being built");
  if (!term.Ok() || term.rank() != 0 || !IsFloat(term.dtype()))
    kiln::detail::Throw("train::AddLoss: the term must be a float scalar, got {}",
                        term.Ok() ? term.shape().ToString() : "an invalid node");
  std::shared_ptr<void>& slot = scope.graph()->Attachment("kiln.train.losses");
  if (!slot) slot = std::make_shared<LossTerms>();
  static_cast<LossTerms*>(slot.get())->terms.push_back(term);
}

std::vector<Node> AddedLosses(graph::Graph& g) {
  std::shared_ptr<void>& slot = g.Attachment("kiln.train.losses");
  return slot ? static_cast<LossTerms*>(slot.get())->terms : std::vector<Node>{};
}

struct Trainer::State {
  compute::BackendPtr backend;
  model::Store store;
  ModelFn model;
  LossFn loss;
  optimizers::Optimizer optimizer;
  std::vector<metrics::Metric> train_metrics, eval_metrics;
  metrics::Metric moving_loss;
  std::unique_ptr<model::Exec> train_exec, eval_exec;
  size_t num_inputs = 0;  // Of the current call: inputs first, then labels, in the exec's nodes.
  std::any spec;
  int accumulate = 1;              // TrainSteps per optimizer update.
  bool started = false;            // A TrainStep has run (the training graph may be compiled).
  DType compute = DType::Invalid;  // WithMixedPrecision's dtype.
  std::shared_ptr<compute::ReplicaGroup> replicas;  // DataParallel's group, or null.
  std::vector<std::function<void(const data::DatasetPtr&, const std::vector<Tensor>&)>> on_eval;

  /// The model, the loss and the added terms: {loss, predictions...}.
  std::vector<Node> Forward(model::Scope scope, const std::vector<Node>& nodes, std::vector<Node>& labels,
                            std::vector<Node>& preds) {
    std::vector<Node> inputs(nodes.begin(), nodes.begin() + static_cast<long>(num_inputs));
    labels.assign(nodes.begin() + static_cast<long>(num_inputs), nodes.end());
    if (compute != DType::Invalid) {  // Mixed precision: float inputs in the compute dtype.
      for (Node& n : inputs)
        if (n.dtype() == DType::Float32) n = graph::ConvertDType(n, compute);
    }
    preds = model(scope, spec, inputs);
    if (preds.empty()) kiln::detail::Throw("Trainer: the model function returned no predictions");
    if (compute != DType::Invalid) {  // ...and the predictions back in Float32 for the loss.
      for (Node& n : preds)
        if (n.Ok() && n.dtype() == compute) n = graph::ConvertDType(n, DType::Float32);
    }
    Node l = loss(labels, preds);
    if (!l.Ok() || l.rank() != 0 || !IsFloat(l.dtype()))
      kiln::detail::Throw("Trainer: the loss must be a float scalar, got {}",
                          l.Ok() ? l.shape().ToString() : "nothing");
    for (Node t : AddedLosses(l.graph()))
      l = l + (t.dtype() == l.dtype() ? t : graph::ConvertDType(t, l.dtype()));
    return {l};
  }

  std::vector<Node> TrainGraph(model::Scope scope, const std::vector<Node>& nodes) {
    std::vector<Node> labels, preds;
    Node l = Forward(scope, nodes, labels, preds)[0];
    graph::Graph& g = l.graph();
    if (g.Replicas() > 1) return ReplicatedTrainGraph(scope, l, labels, preds);
    std::vector<model::Variable> vars;
    std::vector<Node> values;
    TrainableInputs(g, vars, values);
    std::vector<Node> grads = graph::Gradient(l, values);
    ApplyUpdate(scope, g, vars, grads);
    Node l32 = graph::ConvertDType(l, DType::Float32);
    std::vector<Node> out = {l32, moving_loss->UpdateGraph(scope, {l32}, {l32})};
    for (const metrics::Metric& m : train_metrics) out.push_back(m->UpdateGraph(scope, labels, preds));
    return out;
  }

  /// The optimizer's update of `vars` with `grads` (through the accumulators when accumulating)
  /// and the global step's increment.
  void ApplyUpdate(model::Scope scope, graph::Graph& g, const std::vector<model::Variable>& vars,
                   const std::vector<Node>& grads) {
    model::Variable step_var = store.GlobalStep();
    Node step = step_var.NodeValue(g);
    if (accumulate > 1)
      AccumulatedUpdate(scope, vars, grads, step);
    else
      optimizer->UpdateGraph(scope, vars, grads, step);
    step_var.SetNodeValue(step + int64_t{1});
  }

  /// The trainable variables graph `g` reads and their input nodes.
  static void TrainableInputs(graph::Graph& g, std::vector<model::Variable>& vars,
                              std::vector<Node>& values) {
    model::detail::GraphState& st = model::detail::StateOf(g);
    for (size_t i = 0; i < st.inputs.size(); ++i) {
      model::Variable v(st.inputs[i]);
      if (v.Trainable()) {
        vars.push_back(v);
        values.push_back(st.input_nodes[i]);
      }
    }
    if (vars.empty()) kiln::detail::Throw("Trainer: the model has no trainable variables");
  }

  /// The step of one replica of a data-parallel run: the gradients, the loss, the train metrics
  /// and every float state the model and the metrics set are averaged over the replicas with one
  /// AllReduce per dtype (their concatenation), before the optimizer's update and the moving
  /// loss, which then see the same values on every replica.
  std::vector<Node> ReplicatedTrainGraph(model::Scope scope, Node l, const std::vector<Node>& labels,
                                         const std::vector<Node>& preds) {
    graph::Graph& g = l.graph();
    std::vector<model::Variable> vars;
    std::vector<Node> values;
    TrainableInputs(g, vars, values);
    std::vector<Node> grads = graph::Gradient(l, values);
    Node l32 = graph::ConvertDType(l, DType::Float32);
    std::vector<Node> metric_values;
    for (const metrics::Metric& m : train_metrics)
      metric_values.push_back(m->UpdateGraph(scope, labels, preds));
    // Everything to average: gradients, loss, metric values, the float states set so far.
    model::detail::GraphState& st = model::detail::StateOf(g);
    std::vector<Node*> averaged;
    for (Node& n : grads) averaged.push_back(&n);
    averaged.push_back(&l32);
    for (Node& n : metric_values) averaged.push_back(&n);
    for (auto& [v, node] : st.updates)
      if (IsFloat(node.dtype())) averaged.push_back(&node);
    AverageOverReplicas(averaged);
    ApplyUpdate(scope, g, vars, grads);
    std::vector<Node> out = {l32, moving_loss->UpdateGraph(scope, {l32}, {l32})};
    out.insert(out.end(), metric_values.begin(), metric_values.end());
    return out;
  }

  /// Replaces each node by its mean over the replicas: one AllReduce of the flattened nodes of
  /// each dtype, concatenated, then sliced back into their shapes.
  static void AverageOverReplicas(const std::vector<Node*>& nodes) {
    std::map<DType, std::vector<Node*>> by_dtype;
    for (Node* n : nodes) by_dtype[n->dtype()].push_back(n);
    for (auto& [dtype, group] : by_dtype) {
      std::vector<Node> flat;
      for (Node* n : group) flat.push_back(graph::Reshape(*n, {n->shape().Size()}));
      Node all = flat.size() == 1 ? flat[0] : graph::Concatenate(flat, 0);
      Node mean = graph::AllReduce(all, graph::ReduceOp::Mean);
      int64_t at = 0;
      for (Node* n : group) {
        const int64_t size = n->shape().Size();
        *n = graph::Reshape(graph::Slice(mean, {graph::AxisRange(at, at + size)}), n->shape().Dimensions());
        at += size;
      }
    }
  }

  /// Gradient accumulation: adds `grads` into the accumulator variables and, on every
  /// `accumulate`-th global step, applies the optimizer to their mean. The optimizer's graph is
  /// built unconditionally; each variable it sets (weights and its own state) takes the new value
  /// only on an update step, and keeps its value otherwise.
  void AccumulatedUpdate(model::Scope scope, const std::vector<model::Variable>& vars,
                         const std::vector<Node>& grads, Node step) {
    graph::Graph& g = step.graph();
    const int64_t n = accumulate;
    Node apply = graph::Equal(graph::ModScalar(step, n), graph::ScalarLike(step, n - 1));
    model::Initializer zeros = [](graph::Graph& gr, Node&, const Shape& shape) {
      return graph::Zeros(gr, shape);
    };
    std::vector<Node> means;
    std::vector<std::pair<model::Variable, Node>> sums;
    for (size_t i = 0; i < vars.size(); ++i) {
      model::Scope at(store, "/#accumulated_gradients" + vars[i].Path(), &g, zeros);
      model::Variable acc = at.VariableWithShape("sum", vars[i].shape());
      acc.SetTrainable(false);
      Node sum = acc.NodeValue(g) + grads[i];
      sums.emplace_back(acc, sum);
      means.push_back(graph::DivScalar(sum, static_cast<double>(n)));
    }
    // What each variable holds before the optimizer's update, to keep it on other steps.
    model::detail::GraphState& st = model::detail::StateOf(g);
    std::vector<std::pair<const void*, Node>> before;
    for (const auto& [v, node] : st.updates) before.emplace_back(v.get(), node);
    optimizer->UpdateGraph(scope, vars, means, graph::DivScalar(step, n));
    for (auto& [v, node] : st.updates) {
      Node old;
      for (const auto& [p, b] : before)
        if (p == v.get()) old = b;
      for (size_t i = 0; !old.Ok() && i < st.inputs.size(); ++i)  // Not set before: its input.
        if (st.inputs[i] == v) old = st.input_nodes[i];
      if (!old.Ok())
        kiln::detail::Throw(
            "Trainer: the optimizer set variable \"{}\" without reading it; gradient "
            "accumulation cannot keep its value between updates",
            v->path);
      if (old.id() == node.id()) continue;  // Not changed by the optimizer.
      node = graph::Where(apply, node, old);
    }
    for (auto& [acc, sum] : sums) acc.SetNodeValue(graph::Where(apply, graph::ZerosLike(sum), sum));
  }

  std::vector<Node> EvalGraph(model::Scope scope, const std::vector<Node>& nodes) {
    std::vector<Node> labels, preds;
    Node l = Forward(scope, nodes, labels, preds)[0];
    std::vector<Node> out = {graph::ConvertDType(l, DType::Float32)};
    for (const metrics::Metric& m : eval_metrics) out.push_back(m->UpdateGraph(scope, labels, preds));
    return out;
  }
};

Trainer::Trainer(compute::BackendPtr backend, model::Store store, ModelFn model, LossFn loss,
                 optimizers::Optimizer optimizer, std::vector<metrics::Metric> train_metrics,
                 std::vector<metrics::Metric> eval_metrics)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  if (!backend) kiln::detail::Throw("Trainer: null backend");
  if (!model) kiln::detail::Throw("Trainer: no model function");
  if (!loss) kiln::detail::Throw("Trainer: no loss function");
  if (!optimizer) kiln::detail::Throw("Trainer: no optimizer");
  s.backend = std::move(backend);
  s.store = std::move(store);
  s.model = std::move(model);
  s.loss = std::move(loss);
  s.optimizer = std::move(optimizer);
  s.train_metrics = std::move(train_metrics);
  s.eval_metrics = std::move(eval_metrics);
  for (const metrics::Metric& m : s.train_metrics) {
    if (m->NewAggregator() != nullptr)
      kiln::detail::Throw(
          "Trainer: train metric \"{}\" aggregates over an evaluation; make it an eval metric", m->Name());
  }
  for (const metrics::Metric& m : s.eval_metrics) {
    if (m->IsMovingAverage())
      kiln::detail::Throw("Trainer: eval metric \"{}\" is a moving average; evaluation needs mean metrics",
                          m->Name());
  }
  // The moving average of the loss: its batch function returns the loss itself.
  s.moving_loss =
      metrics::NewMovingAverage("Moving Average Loss", "~loss", 0.01,
                                [](const std::vector<Node>& l, const std::vector<Node>&) { return l[0]; });
  State* st = state_.get();
  s.train_exec = std::make_unique<model::Exec>(
      s.backend, s.store,
      [st](model::Scope scope, graph::Graph&, const std::vector<Node>& nodes) {
        return st->TrainGraph(scope, nodes);
      },
      -1, "train step");
  s.train_exec->OnNewGraph([](graph::Graph& g) { model::SetTraining(g, true); });
  s.eval_exec = std::make_unique<model::Exec>(
      s.backend, s.store,
      [st](model::Scope scope, graph::Graph&, const std::vector<Node>& nodes) {
        return st->EvalGraph(scope, nodes);
      },
      -1, "eval step");
}

Trainer::~Trainer() = default;

int Trainer::NumBuilds() const { return state_->train_exec->NumBuilds() + state_->eval_exec->NumBuilds(); }

Trainer& Trainer::WithMixedPrecision(DType compute) {
  State& s = *state_;
  if (compute != DType::BFloat16) {
    kiln::detail::Throw(
        "Trainer::WithMixedPrecision: {} is not supported (BFloat16 is; Float16 would need loss scaling)",
        compute);
  }
  if (s.started) kiln::detail::Throw("Trainer::WithMixedPrecision: training has started");
  s.compute = compute;
  s.store.RootScope().SetParam("mixed_precision", std::string(DTypeName(compute)));
  return *this;
}

DType Trainer::MixedPrecision() const { return state_->compute; }

Trainer& Trainer::WithDynamicBatch(const std::string& name) {
  state_->train_exec->WithDynamicBatch(name);
  state_->eval_exec->WithDynamicBatch(name);
  return *this;
}

Trainer& Trainer::SetNanCheck(bool on) {
  state_->train_exec->SetNanCheck(on);
  state_->eval_exec->SetNanCheck(on);
  return *this;
}

Trainer& Trainer::SetNodeLogger(graph::NodeLogger logger) {
  state_->train_exec->SetNodeLogger(logger);
  state_->eval_exec->SetNodeLogger(std::move(logger));
  return *this;
}

Trainer& Trainer::AccumulateGradients(int n) {
  if (n < 1) kiln::detail::Throw("Trainer::AccumulateGradients: n = {} must be at least 1", n);
  if (state_->started && n != state_->accumulate) {
    kiln::detail::Throw(
        "Trainer::AccumulateGradients({}): training has started (accumulating {}); set it before the first "
        "TrainStep",
        n, state_->accumulate);
  }
  state_->accumulate = n;
  return *this;
}

int Trainer::AccumulatedSteps() const { return state_->accumulate; }

std::vector<Tensor> Trainer::TrainStep(const std::any& spec, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& labels) {
  State& s = *state_;
  if (inputs.empty()) kiln::detail::Throw("Trainer::TrainStep: no inputs");
  s.started = true;
  s.spec = spec;
  s.num_inputs = inputs.size();
  if (s.replicas) {  // Each device gets its examples, in tensors of its own that are donated.
    const int devices = s.replicas->Devices();
    std::vector<std::vector<Tensor>> split(static_cast<size_t>(devices));
    std::vector<Tensor> all = inputs;
    all.insert(all.end(), labels.begin(), labels.end());
    for (const Tensor& t : all) {
      std::vector<Tensor> parts = SplitExamples(t, devices, s.backend);
      for (int d = 0; d < devices; ++d)
        split[static_cast<size_t>(d)].push_back(graph::Donate(parts[static_cast<size_t>(d)]));
    }
    return s.train_exec->CallReplicas(*s.replicas, split)[0];
  }
  std::vector<Tensor> all;
  for (const Tensor& t : inputs) all.push_back(graph::Donate(t));
  for (const Tensor& t : labels) all.push_back(graph::Donate(t));
  return s.train_exec->Call(all);
}

Trainer& Trainer::DataParallel(std::shared_ptr<compute::ReplicaGroup> group) {
  State& s = *state_;
  if (s.started) kiln::detail::Throw("Trainer::DataParallel: training has started");
  if (!group) group = distributed::NewReplicaGroup(s.backend->NumDevices());
  if (group->Devices() > s.backend->NumDevices())
    kiln::detail::Throw("Trainer::DataParallel: a group of {} devices per process on backend \"{}\" with {}",
                        group->Devices(), s.backend->Name(), s.backend->NumDevices());
  s.replicas = std::move(group);
  return *this;
}

const std::shared_ptr<compute::ReplicaGroup>& Trainer::Replicas() const { return state_->replicas; }

std::vector<Tensor> Trainer::EvalStep(const std::any& spec, const std::vector<Tensor>& inputs,
                                      const std::vector<Tensor>& labels) {
  State& s = *state_;
  if (inputs.empty()) kiln::detail::Throw("Trainer::EvalStep: no inputs");
  s.spec = spec;
  s.num_inputs = inputs.size();
  std::vector<Tensor> all = inputs;
  all.insert(all.end(), labels.begin(), labels.end());
  return s.eval_exec->Call(all);
}

std::vector<Tensor> Trainer::Eval(const data::DatasetPtr& dataset) {
  if (!dataset) kiln::detail::Throw("Trainer::Eval: null dataset");
  if (dataset->IsInfinite())
    kiln::detail::Throw("Trainer::Eval: dataset \"{}\" is infinite: evaluation needs a finite one",
                        dataset->Name());
  dataset->Reset();
  std::vector<double> sums(1 + state_->eval_metrics.size(), 0.0);
  // Metrics that are not means of their batches (a median) combine their values themselves.
  std::vector<std::unique_ptr<metrics::Aggregator>> aggregators(sums.size());
  for (size_t i = 0; i < state_->eval_metrics.size(); ++i)
    aggregators[i + 1] = state_->eval_metrics[i]->NewAggregator();
  double examples = 0;
  std::any spec;
  std::vector<Tensor> inputs, labels;
  while (dataset->Yield(spec, inputs, labels)) {
    const double n = inputs.at(0).rank() > 0 ? static_cast<double>(inputs[0].shape().Dim(0)) : 1.0;
    std::vector<Tensor> r = EvalStep(spec, inputs, labels);
    for (size_t i = 0; i < r.size(); ++i) {
      if (aggregators[i]) {
        aggregators[i]->Add(r[i], n);
      } else {
        sums[i] += n * r[i].Item<float>();
      }
    }
    examples += n;
  }
  if (state_->replicas && distributed::WorldSize() > 1) {
    // Every process evaluated its share: the weighted sums and counts add up over the job, and
    // the aggregators merge what every process gathered.
    std::vector<double> totals = sums;
    totals.push_back(examples);
    distributed::AllReduceSum(totals, "Trainer::Eval");
    examples = totals.back();
    totals.pop_back();
    sums = totals;
    for (size_t i = 1; i < aggregators.size(); ++i) {
      if (!aggregators[i]) continue;
      const std::string& name = state_->eval_metrics[i - 1]->Name();
      std::vector<double> gathered;
      try {
        gathered = aggregators[i]->Gathered();
      } catch (const Error& e) {
        kiln::detail::Throw("Trainer::Eval: metric \"{}\": {}", name, e.what());
      }
      aggregators[i] = state_->eval_metrics[i - 1]->NewAggregator();
      for (const std::vector<double>& part : GatherFromEveryProcess(gathered, "Trainer::Eval " + name))
        aggregators[i]->Merge(part);
    }
  }
  if (examples == 0)
    kiln::detail::Throw("Trainer::Eval: dataset \"{}\" yielded no examples", dataset->Name());
  std::vector<Tensor> out;
  for (size_t i = 0; i < sums.size(); ++i) {
    const double v = aggregators[i] ? aggregators[i]->Result() : sums[i] / examples;
    out.push_back(Tensor::FromScalar<float>(static_cast<float>(v)));
  }
  for (const auto& fn : state_->on_eval) fn(dataset, out);
  return out;
}

std::vector<std::string> Trainer::TrainMetricNames() const {
  std::vector<std::string> n = {"Loss", "Moving Average Loss"};
  for (const auto& m : state_->train_metrics) n.push_back(m->Name());
  return n;
}
std::vector<std::string> Trainer::TrainMetricShortNames() const {
  std::vector<std::string> n = {"loss", "~loss"};
  for (const auto& m : state_->train_metrics) n.push_back(m->ShortName());
  return n;
}
std::vector<std::string> Trainer::EvalMetricNames() const {
  std::vector<std::string> n = {"Loss"};
  for (const auto& m : state_->eval_metrics) n.push_back(m->Name());
  return n;
}
std::vector<std::string> Trainer::EvalMetricShortNames() const {
  std::vector<std::string> n = {"loss"};
  for (const auto& m : state_->eval_metrics) n.push_back(m->ShortName());
  return n;
}

void Trainer::OnEval(std::function<void(const data::DatasetPtr&, const std::vector<Tensor>&)> fn) {
  state_->on_eval.push_back(std::move(fn));
}

void ReportEval(Trainer& trainer, const std::vector<data::DatasetPtr>& datasets, std::ostream& out) {
  const std::vector<std::string> names = trainer.EvalMetricNames(), shorts = trainer.EvalMetricShortNames();
  for (const data::DatasetPtr& ds : datasets) {
    if (!ds) kiln::detail::Throw("ReportEval: null dataset");
    const std::vector<Tensor> values = trainer.Eval(ds);
    std::string text = fmt::format("Results on {}:\n", ds->Name());
    for (size_t i = 0; i < values.size() && i < names.size(); ++i)
      text += fmt::format("\t{} ({}): {}\n", names[i], shorts[i], values[i].Item<float>());
    out << text << std::flush;
  }
}

const model::Store& Trainer::store() const { return state_->store; }
const compute::BackendPtr& Trainer::backend() const { return state_->backend; }

}  // namespace kiln::train
