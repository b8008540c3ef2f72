// ONNX's training losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (class axis 1,
// optional class weights, ignore_index, reductions none / sum / mean).

#include <fmt/format.h>

#include "kiln/graph/gather.h"
#include "kiln/graph/sort.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// -log_prob[n, target, d...] weighted and reduced as ONNX's NegativeLogLikelihoodLoss says.
/// `weight` may be invalid (no weights).
Node Nll(const Context& c, Node log_prob, Node target, Node weight) {
  if (log_prob.rank() < 2) c.Fail(fmt::format("input {} needs a class axis", log_prob.shape()));
  if (target.rank() != log_prob.rank() - 1)
    c.Fail(fmt::format("target {} must have rank {}", target.shape(), log_prob.rank() - 1));
  target = ConvertDType(target, DType::Int64);
  Node keep = OnesLike(ConvertDType(target, DType::Bool));
  if (c.HasAttr("ignore_index")) keep = NotEqual(target, ScalarLike(target, c.Int("ignore_index", 0)));
  Node safe = graph::Where(keep, target, ZerosLike(target));
  Node picked = Squeeze(TakeAlongAxis(log_prob, InsertAxes(safe, {1}), 1), {1});
  Node w = ConvertDType(keep, log_prob.dtype());
  if (weight.Ok()) w = w * graph::Gather(weight, InsertAxes(safe, {-1}));
  Node loss = Neg(picked) * w;
  const std::string reduction = c.String("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return ReduceAllSum(loss);
  if (reduction != "mean") c.Fail(fmt::format("reduction {} is not none, sum or mean", reduction));
  return ReduceAllSum(loss) / ReduceAllSum(w);
}

V NegativeLogLikelihoodLoss(const Context& c) {
  return {Nll(c, c.In(0), c.In(1), c.Has(2) ? c.In(2) : Node())};
}

V SoftmaxCrossEntropyLoss(const Context& c) {
  Node log_prob = LogSoftmax(c.In(0), {1});
  return {Nll(c, log_prob, c.In(1), c.Has(2) ? c.In(2) : Node()), log_prob};
}

}  // namespace

void AddLossConverters(std::map<std::string, Converter>& m) {
  m["NegativeLogLikelihoodLoss"] = NegativeLogLikelihoodLoss;
  m["SoftmaxCrossEntropyLoss"] = SoftmaxCrossEntropyLoss;
}

}  // namespace kiln::onnx::internal
