#pragma once
/// @file
/// train::Trainer: compiles, per input shapes, one training step (model, loss with the terms
/// added by train::AddLoss, gradients, optimizer update with donated variables, global step,
/// metrics) and one evaluation step, and runs them on batches.
///
///   train::Trainer trainer(backend, store, modelFn, losses::MeanSquaredError,
///                          optimizers::Adam().LearningRate(1e-3).Done(), trainMetrics, evalMetrics);
///   std::vector<Tensor> m = trainer.TrainStep(spec, inputs, labels);  // loss, ~loss, metrics...

#include <any>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/data/dataset.h"
#include "kiln/graph/debug.h"
#include "kiln/graph/graph.h"
#include "kiln/ml/metrics.h"
#include "kiln/ml/optimizers.h"
#include "kiln/model/store.h"

namespace kiln::train {

/// The model: scope, the dataset's spec and the inputs in, predictions out.
using ModelFn = std::function<std::vector<graph::Node>(model::Scope scope, const std::any& spec,
                                                       std::vector<graph::Node> inputs)>;
/// A loss: (labels, predictions) -> scalar, labels first as in GoMLX (kiln::losses' functions).
using LossFn = std::function<graph::Node(const std::vector<graph::Node>& labels,
                                         const std::vector<graph::Node>& predictions)>;

/// Adds `term` (a float scalar) to the loss of the graph `scope` is bound to (regularizers do;
/// the trainer adds the terms to the loss it differentiates).
void AddLoss(const model::Scope& scope, graph::Node term);
/// The terms added to graph `g` with AddLoss.
std::vector<graph::Node> AddedLosses(graph::Graph& g);

/// Builds and runs the training and evaluation steps of a model (GoMLX's train.Trainer): the
/// model function, the loss and the optimizer's update compiled into one step per batch shape.
class Trainer {
 public:
  /// A trainer of `model` with `loss` and `optimizer` on `backend`, its variables in `store`.
  /// `train_metrics` are reported by TrainStep, `eval_metrics` by Eval (mean metrics only).
  /// A null backend, model, loss or optimizer, or a moving-average eval metric, is a kiln::Error.
  Trainer(compute::BackendPtr backend, model::Store store, ModelFn model, LossFn loss,
          optimizers::Optimizer optimizer, std::vector<metrics::Metric> train_metrics,
          std::vector<metrics::Metric> eval_metrics);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Accumulates the gradients of `n` consecutive TrainSteps before each optimizer update (to
  /// train with an effective batch `n` times larger than fits in memory). Each TrainStep adds
  /// its gradients into non-trainable variables "/#accumulated_gradients/<variable path>/sum";
  /// every n-th step the optimizer applies their mean and the sums restart at zero. The global
  /// step still counts TrainSteps (batches), so loops, callbacks and checkpoints keep their
  /// meaning; the optimizer (Adam's bias correction, learning-rate schedules) is given the
  /// number of updates applied so far, global step / n. n = 1 is plain training. A kiln::Error
  /// for n < 1, or for a new n once training has started.
  Trainer& AccumulateGradients(int n);
  /// The `n` of AccumulateGradients (1 by default).
  int AccumulatedSteps() const;

  /// Makes axis 0 of every input and label the dynamic axis `name` ("" turns it off): on a
  /// backend with dynamic shapes the training and evaluation steps are built once for every batch
  /// size (a last partial batch, an evaluation batch of another size). The model, loss and
  /// metrics must then not depend on the batch size as a static number.
  Trainer& WithDynamicBatch(const std::string& name = "batch");
  /// Mixed-precision training: the model computes in `compute` (BFloat16) while the variables,
  /// the optimizer's state and the checkpoints stay Float32. Float32 inputs are converted to
  /// `compute` before the model function; variables the layers ask for in `compute` are kept as
  /// Float32 masters and read converted (the "mixed_precision" parameter of the store's root
  /// scope, see model::Variable::ComputeAs), so their gradients and updates are Float32; the
  /// predictions are converted back to Float32 before the loss and the metrics. bfloat16 keeps
  /// float32's exponent range, so no loss scaling is needed; Float16 (which would need it) is a
  /// kiln::Error, as is a call after training started.
  Trainer& WithMixedPrecision(DType compute = DType::BFloat16);
  /// The compute dtype of WithMixedPrecision (DType::Invalid: none).
  DType MixedPrecision() const;
  /// Data-parallel training over `group`'s replicas (by default every device of the backend in
  /// every process of the distributed job: distributed::NewReplicaGroup(backend->NumDevices())).
  /// Each TrainStep splits this process's batch over its devices (example j of the batch to
  /// device j mod Devices(); the batch must divide evenly), runs the step on every replica at
  /// once, and averages the gradients over all replicas with one AllReduce (in a fixed order, so
  /// every replica applies the same update and keeps identical variables). The loss, the train
  /// metrics and the state the model and the metrics update (moving averages, batch-norm
  /// statistics) are averaged over the replicas too: TrainStep returns means over the global
  /// batch, the same numbers in every layout. Eval runs on device 0 and sums its results over the
  /// processes. A kiln::Error after training started.
  Trainer& DataParallel(std::shared_ptr<compute::ReplicaGroup> group = nullptr);
  /// The group DataParallel set (null when the trainer is not data-parallel).
  const std::shared_ptr<compute::ReplicaGroup>& Replicas() const;
  /// The NaN check of the training and evaluation steps (model::Exec::SetNanCheck; initially
  /// KILN_NAN_CHECK's): a step whose forward pass, loss, gradients or update makes a NaN or an
  /// infinity from finite values is a kiln::Error naming the op and where it was built, and
  /// leaves the variables as they were before the step.
  Trainer& SetNanCheck(bool on);
  /// The function receiving the values of logged nodes (Node::SetLogged) after each training
  /// and evaluation step (graph::DefaultNodeLogger unless set).
  Trainer& SetNodeLogger(graph::NodeLogger logger);
  /// Graphs built so far for the training and the evaluation steps together.
  int NumBuilds() const;

  /// One training step on a batch: returns [batch loss, moving-average loss, each train metric]
  /// as Float32 scalars. The batch's tensors are donated to the step (the caller's handles are
  /// no longer Ok() afterwards).
  std::vector<Tensor> TrainStep(const std::any& spec, const std::vector<Tensor>& inputs,
                                const std::vector<Tensor>& labels);
  /// The loss and each eval metric on a batch (training flag off, no update).
  std::vector<Tensor> EvalStep(const std::any& spec, const std::vector<Tensor>& inputs,
                               const std::vector<Tensor>& labels);
  /// Resets `dataset`, runs it once and returns [mean loss, each eval metric], means weighted by
  /// the examples of each batch.
  std::vector<Tensor> Eval(const data::DatasetPtr& dataset);

  /// Names of what TrainStep returns: "Loss", "Moving Average Loss", then the train metrics'.
  std::vector<std::string> TrainMetricNames() const;
  /// Short names: "loss", "~loss", then the train metrics'.
  std::vector<std::string> TrainMetricShortNames() const;
  /// Names of what Eval returns: "Loss", then the eval metrics'.
  std::vector<std::string> EvalMetricNames() const;
  /// Short names of what Eval returns: "loss", then the eval metrics'.
  std::vector<std::string> EvalMetricShortNames() const;

  /// Called after every Eval with the dataset and its results (the plots use it).
  void OnEval(std::function<void(const data::DatasetPtr&, const std::vector<Tensor>&)> fn);

  /// The store holding the model's variables, the optimizer's state and the global step.
  const model::Store& store() const;
  /// The backend the steps are compiled for.
  const compute::BackendPtr& backend() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

/// Evaluates `trainer` on each dataset and prints the results, GoMLX's commandline.ReportEval:
/// "Results on NAME:" then one line per metric, "\tName (short name): value".
void ReportEval(Trainer& trainer, const std::vector<data::DatasetPtr>& datasets,
                std::ostream& out = std::cout);

}  // namespace kiln::train
